#include "ControlTokensPanel.h"

#include "Confirm.h"
#include "ControlTokenModel.h"
#include "CreatedSecretDialog.h"
#include "RecordTable.h"
#include "Scopes.h"

#include <QCheckBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

namespace {
constexpr int kMaxExpiryDays = 3650;
constexpr int kScopeColumns = 4;
} // namespace

ControlTokensPanel::ControlTokensPanel(ControlTokenModel *model, QWidget *parent)
    : QWidget(parent), m_model(model)
{
    setObjectName(QStringLiteral("controlTokensPanel"));

    auto *title = new QLabel(tr("<h2>Control Tokens</h2>"), this);
    auto *hint = new QLabel(tr("Control tokens (lpc_) authenticate the management API under "
                               "/api/v1, limited to the scopes chosen here. The full token is "
                               "shown once, when it is created."),
                            this);
    hint->setWordWrap(true);

    auto *form = new QGroupBox(tr("New token"), this);
    m_name = new QLineEdit(form);
    m_name->setObjectName(QStringLiteral("tokenNameEdit"));
    m_name->setMaxLength(100);
    m_name->setPlaceholderText(tr("Optional"));
    auto *scopeGrid = new QGridLayout;
    const QStringList scopes = m_model->knownScopes();
    for (int i = 0; i < scopes.size(); ++i) {
        auto *box = new QCheckBox(scopes.at(i), form);
        box->setObjectName(QStringLiteral("scope_") + scopes.at(i));
        // Kept apart from the label, which a platform theme may decorate with accelerators.
        box->setProperty("scope", scopes.at(i));
        connect(box, &QCheckBox::toggled, this, &ControlTokensPanel::updateActions);
        scopeGrid->addWidget(box, i / kScopeColumns, i % kScopeColumns);
        m_scopes.append(box);
    }
    m_expiryDays = new QSpinBox(form);
    m_expiryDays->setObjectName(QStringLiteral("tokenExpirySpin"));
    m_expiryDays->setRange(0, kMaxExpiryDays);
    m_expiryDays->setSpecialValueText(tr("Never"));
    m_expiryDays->setSuffix(tr(" days"));
    m_create = new QPushButton(tr("Create Token"), form);
    m_create->setObjectName(QStringLiteral("createTokenButton"));
    auto *formLayout = new QFormLayout(form);
    formLayout->addRow(tr("&Name:"), m_name);
    formLayout->addRow(tr("Scopes:"), scopeGrid);
    formLayout->addRow(tr("&Expires after:"), m_expiryDays);
    formLayout->addRow(QString(), m_create);

    m_view = makeSortedTable(model, ControlTokenModel::SortRole, ControlTokenModel::CreatedColumn,
                             QStringLiteral("controlTokensTable"), this);

    m_revoke = new QPushButton(tr("Revoke"), this);
    m_revoke->setObjectName(QStringLiteral("revokeTokenButton"));
    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("messageLabel"));
    m_message->setWordWrap(true);
    m_message->hide();

    connect(m_create, &QPushButton::clicked, this, &ControlTokensPanel::createToken);
    connect(m_revoke, &QPushButton::clicked, this, &ControlTokensPanel::revokeSelected);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &ControlTokensPanel::updateActions);
    connect(model, &QAbstractItemModel::dataChanged, this, &ControlTokensPanel::updateActions);
    connect(model, &QAbstractItemModel::rowsRemoved, this, &ControlTokensPanel::updateActions);
    connect(model, &QAbstractItemModel::modelReset, this, &ControlTokensPanel::updateActions);
    connect(model, &ControlTokenModel::loadFailed, this, [this](const QString &error) {
        showMessage(tr("Could not load the tokens: %1").arg(error));
    });

    auto *actions = new QHBoxLayout;
    actions->addWidget(m_revoke);
    actions->addStretch(1);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(title);
    layout->addWidget(hint);
    layout->addWidget(form);
    layout->addWidget(m_message);
    layout->addLayout(actions);
    layout->addWidget(m_view, 1);
    updateActions();
}

void ControlTokensPanel::createToken()
{
    const QStringList scopes = checkedScopes();
    if (scopes.isEmpty() || m_creating)
        return;
    const int days = m_expiryDays->value();
    const QDateTime expires =
        days > 0 ? QDateTime::currentDateTimeUtc().addDays(days) : QDateTime();
    m_creating = true;
    m_message->hide();
    updateActions();
    m_model->createToken(
        m_name->text().trimmed(), scopes, expires, this, [this](const DbResult<CreatedSecret> &r) {
            m_creating = false;
            updateActions();
            if (!r.ok()) {
                showMessage(tr("The token could not be created: %1").arg(r.error));
                return;
            }
            m_name->clear();
            for (QCheckBox *box : std::as_const(m_scopes))
                box->setChecked(false);
            m_expiryDays->setValue(0);
            CreatedSecretDialog::showOnce(
                tr("Control token created"),
                tr("Your new control token. Send it as \"Authorization: Bearer <token>\" to "
                   "/api/v1."),
                r.value.secret, this);
        });
}

void ControlTokensPanel::revokeSelected()
{
    const qint64 id = selectedId();
    const int row = m_model->rowOfId(id);
    if (row < 0)
        return;
    const ControlTokenRecord &token = m_model->recordAt(row);
    const QString label =
        token.name.isEmpty() ? token.prefix : tr("\"%1\" (%2)").arg(token.name, token.prefix);
    confirmThen(this, QStringLiteral("revokeConfirmation"), tr("Revoke control token"),
                tr("Revoke %1? Requests using this token will be refused from now on. This "
                   "cannot be undone.")
                    .arg(label),
                tr("Revoke"), [this, id] {
                    m_model->revokeToken(id, this, [this](const DbResult<bool> &r) {
                        if (!r.ok())
                            showMessage(tr("The token could not be revoked: %1").arg(r.error));
                    });
                });
}

QStringList ControlTokensPanel::checkedScopes() const
{
    QStringList scopes;
    for (const QCheckBox *box : m_scopes)
        if (box->isChecked())
            scopes.append(box->property("scope").toString());
    return scopes;
}

qint64 ControlTokensPanel::selectedId() const
{
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    return rows.isEmpty() ? 0 : rows.first().data(ControlTokenModel::IdRole).toLongLong();
}

void ControlTokensPanel::updateActions()
{
    m_create->setEnabled(!m_creating && !checkedScopes().isEmpty());
    const int row = m_model->rowOfId(selectedId());
    m_revoke->setEnabled(row >= 0 && !m_model->recordAt(row).isRevoked());
}

void ControlTokensPanel::showMessage(const QString &message)
{
    m_message->setText(message);
    m_message->show();
}
