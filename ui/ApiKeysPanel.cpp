#include "ApiKeysPanel.h"

#include "ApiKeyModel.h"
#include "Confirm.h"
#include "CreateApiKeyDialog.h"
#include "CreatedSecretDialog.h"
#include "RecordTable.h"

#include <QApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPointer>
#include <QPushButton>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QVBoxLayout>

namespace {

// Paints a key whose rules refuse it in the error colours of the palette's highlight of bad
// input, and the budget cell as a bar of what was spent.
class KeyRowDelegate : public QStyledItemDelegate
{
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    void paint(QPainter *painter, const QStyleOptionViewItem &option,
               const QModelIndex &index) const override
    {
        const bool refused = index.data(ApiKeyModel::RefusedRole).toBool();
        if (refused)
            painter->fillRect(option.rect, QColor(220, 53, 69, 40));
        const QVariant fraction = index.data(ApiKeyModel::SpentFractionRole);
        if (index.column() == ApiKeyModel::BudgetColumn && fraction.isValid()) {
            QStyleOptionProgressBar bar;
            bar.rect = option.rect.adjusted(2, 3, -2, -3);
            bar.minimum = 0;
            bar.maximum = 1000;
            bar.progress = int(qBound(0.0, fraction.toDouble(), 1.0) * 1000);
            bar.text = index.data().toString();
            bar.textVisible = true;
            bar.state = option.state | QStyle::State_Horizontal;
            QApplication::style()->drawControl(QStyle::CE_ProgressBar, &bar, painter);
            return;
        }
        QStyleOptionViewItem opt = option;
        if (refused)
            opt.palette.setColor(QPalette::Text, QColor(160, 20, 30));
        QStyledItemDelegate::paint(painter, opt, index);
    }
};

} // namespace

ApiKeysPanel::ApiKeysPanel(ApiKeyModel *model, QWidget *parent) : QWidget(parent), m_model(model)
{
    setObjectName(QStringLiteral("apiKeysPanel"));

    auto *title = new QLabel(tr("<h2>API Keys</h2>"), this);
    auto *hint = new QLabel(tr("API keys (sk-) authenticate requests to /v1. The full key is "
                               "shown once, when it is created; this list keeps only a prefix."),
                            this);
    hint->setWordWrap(true);

    m_view = makeSortedTable(model, ApiKeyModel::SortRole, ApiKeyModel::CreatedColumn,
                             QStringLiteral("apiKeysTable"), this);

    m_create = new QPushButton(tr("Create Key"), this);
    m_create->setObjectName(QStringLiteral("createKeyButton"));
    m_revoke = new QPushButton(tr("Revoke"), this);
    m_revoke->setObjectName(QStringLiteral("revokeKeyButton"));
    m_edit = new QPushButton(tr("Edit Rules"), this);
    m_edit->setObjectName(QStringLiteral("editKeyButton"));
    m_view->setItemDelegate(new KeyRowDelegate(m_view));
    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("messageLabel"));
    m_message->setWordWrap(true);
    m_message->hide();

    connect(m_create, &QPushButton::clicked, this, &ApiKeysPanel::createKey);
    connect(m_revoke, &QPushButton::clicked, this, &ApiKeysPanel::revokeSelected);
    connect(m_edit, &QPushButton::clicked, this, &ApiKeysPanel::editSelected);
    connect(m_view, &QTableView::doubleClicked, this, &ApiKeysPanel::editSelected);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &ApiKeysPanel::updateActions);
    // A revocation (here or elsewhere) changes what the selected row allows.
    connect(model, &QAbstractItemModel::dataChanged, this, &ApiKeysPanel::updateActions);
    connect(model, &QAbstractItemModel::rowsRemoved, this, &ApiKeysPanel::updateActions);
    connect(model, &QAbstractItemModel::modelReset, this, &ApiKeysPanel::updateActions);
    connect(model, &ApiKeyModel::loadFailed, this, [this](const QString &error) {
        showError(tr("Could not load the keys: %1").arg(error));
    });

    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_create);
    buttons->addWidget(m_edit);
    buttons->addWidget(m_revoke);
    buttons->addStretch(1);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(title);
    layout->addWidget(hint);
    layout->addLayout(buttons);
    layout->addWidget(m_message);
    layout->addWidget(m_view, 1);
    updateActions();
}

void ApiKeysPanel::createKey()
{
    auto *dialog = new CreateApiKeyDialog(knownTiers(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        const QString name = dialog->name();
        m_create->setEnabled(false);
        m_message->hide();
        m_model->createKey(
            name, dialog->tier(), dialog->rules(), this, [this](const DbResult<CreatedSecret> &r) {
                m_create->setEnabled(true);
                if (!r.ok()) {
                    showError(tr("The key could not be created: %1").arg(r.error));
                    return;
                }
                CreatedSecretDialog::showOnce(
                    tr("API key created"),
                    tr("Your new API key. Send it as \"Authorization: Bearer <key>\" or "
                       "\"X-API-Key: <key>\"."),
                    r.value.secret, this);
            });
    });
    dialog->open();
}

void ApiKeysPanel::editSelected()
{
    const qint64 id = selectedId();
    const int row = m_model->rowOfId(id);
    if (row < 0 || m_model->recordAt(row).isRevoked())
        return;
    auto *dialog = new CreateApiKeyDialog(knownTiers(), m_model->recordAt(row), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog, id] {
        m_message->hide();
        m_model->updateKey(id, dialog->name(), dialog->tier(), dialog->rules(), this,
                           [this](const DbResult<bool> &r) {
                               if (!r.ok() || !r.value)
                                   showError(
                                       tr("The key could not be changed: %1")
                                           .arg(r.ok() ? tr("it no longer exists") : r.error));
                           });
    });
    dialog->open();
}

void ApiKeysPanel::revokeSelected()
{
    const qint64 id = selectedId();
    const int row = m_model->rowOfId(id);
    if (row < 0)
        return;
    const ApiKeyRecord &key = m_model->recordAt(row);
    const QString label =
        key.name.isEmpty() ? key.prefix : tr("\"%1\" (%2)").arg(key.name, key.prefix);
    confirmThen(this, QStringLiteral("revokeConfirmation"), tr("Revoke API key"),
                tr("Revoke %1? Requests using this key will be refused from now on. This cannot "
                   "be undone.")
                    .arg(label),
                tr("Revoke"), [this, id] {
                    m_model->revokeKey(id, this, [this](const DbResult<bool> &r) {
                        if (!r.ok())
                            showError(tr("The key could not be revoked: %1").arg(r.error));
                    });
                });
}

qint64 ApiKeysPanel::selectedId() const
{
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    if (rows.isEmpty())
        return 0;
    return rows.first().data(ApiKeyModel::IdRole).toLongLong();
}

void ApiKeysPanel::updateActions()
{
    const int row = m_model->rowOfId(selectedId());
    m_revoke->setEnabled(row >= 0 && !m_model->recordAt(row).isRevoked());
    m_edit->setEnabled(row >= 0 && !m_model->recordAt(row).isRevoked());
}

void ApiKeysPanel::showError(const QString &message)
{
    m_message->setText(message);
    m_message->show();
}

QStringList ApiKeysPanel::knownTiers() const
{
    // The tiers already in use, "default" first: the server configuration's tier names are
    // not visible from here, and a typed name is accepted too.
    QStringList tiers{QStringLiteral("default")};
    for (int row = 0; row < m_model->rowCount(); ++row)
        if (!tiers.contains(m_model->recordAt(row).tier))
            tiers.append(m_model->recordAt(row).tier);
    return tiers;
}
