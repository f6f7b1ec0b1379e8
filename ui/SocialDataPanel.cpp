#include "SocialDataPanel.h"

#include "RecordTable.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPointer>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

namespace {

QStandardItem *item(const QString &text)
{
    auto *i = new QStandardItem(text);
    i->setEditable(false);
    return i;
}

QStandardItem *number(int value)
{
    auto *i = item(QString());
    i->setData(value, Qt::DisplayRole); // sorts as a number
    return i;
}

QString when(const QJsonValue &rfc3339)
{
    if (!rfc3339.isString())
        return QObject::tr("never");
    const QDateTime t = QDateTime::fromString(rfc3339.toString(), Qt::ISODateWithMs);
    return QLocale().toString(t.toLocalTime(), QLocale::ShortFormat);
}

} // namespace

SocialDataPanel::SocialDataPanel(SocialFamily *family, QWidget *parent)
    : QWidget(parent), m_family(family)
{
    setObjectName(QStringLiteral("socialDataPanel"));
    auto *layout = new QVBoxLayout(this);
    auto *header = new QHBoxLayout;
    header->addWidget(new QLabel(tr("<h2>Social-media data</h2>"), this));
    header->addStretch(1);
    layout->addLayout(header);

    if (!family || !family->catalog()) {
        auto *label = new QLabel(family ? tr("The social-data family has not started, so there "
                                             "is no catalog to show.")
                                        : tr("This build has no social-data family."),
                                 this);
        label->setObjectName(QStringLiteral("unavailableLabel"));
        label->setWordWrap(true);
        layout->addWidget(label);
        layout->addStretch(1);
        return;
    }

    m_refresh = new QPushButton(tr("Refresh catalog"), this);
    m_refresh->setObjectName(QStringLiteral("refreshButton"));
    m_refresh->setToolTip(tr("Fetch the upstream's catalog of actions now; the catalog in use "
                             "is kept when the fetch fails"));
    header->addWidget(m_refresh);

    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("statusLabel"));
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->setWordWrap(true);
    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("messageLabel"));
    m_message->setWordWrap(true);
    m_message->hide();

    m_platforms = new QStandardItemModel(0, PlatformColumns, this);
    m_platforms->setHorizontalHeaderLabels(
        {tr("Platform"), tr("Enabled"), tr("Published as"), tr("Actions")});
    m_actions = new QStandardItemModel(0, ActionColumns, this);
    m_actions->setHorizontalHeaderLabels(
        {tr("Path"), tr("Method"), tr("Required parameters"), tr("Summary")});
    m_actionFilter = new QSortFilterProxyModel(this);
    m_actionFilter->setSourceModel(m_actions);
    m_actionFilter->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_actionFilter->setFilterKeyColumn(-1); // any column

    m_platformView = makeRecordTable(m_platforms, QStringLiteral("platformsTable"), this);
    m_platformView->setSortingEnabled(true);
    m_platformView->sortByColumn(NameColumn, Qt::AscendingOrder);
    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("actionsFilterEdit"));
    m_filter->setPlaceholderText(tr("Path, parameter or summary contains..."));
    m_filter->setClearButtonEnabled(true);
    m_actionView = makeRecordTable(m_actionFilter, QStringLiteral("actionsTable"), this);
    m_actionView->setSortingEnabled(true);
    m_actionView->sortByColumn(PathColumn, Qt::AscendingOrder);

    auto *actions = new QWidget(this);
    auto *actionsLayout = new QVBoxLayout(actions);
    actionsLayout->setContentsMargins(0, 0, 0, 0);
    actionsLayout->addWidget(m_filter);
    actionsLayout->addWidget(m_actionView, 1);
    auto *split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(m_platformView);
    split->addWidget(actions);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 5);

    layout->addWidget(m_status);
    layout->addWidget(m_message);
    layout->addWidget(split, 1);

    connect(m_refresh, &QPushButton::clicked, this, &SocialDataPanel::refreshCatalog);
    connect(m_filter, &QLineEdit::textChanged, m_actionFilter,
            &QSortFilterProxyModel::setFilterFixedString);
    connect(m_platformView->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &SocialDataPanel::showActions);
    // Emitted on the keeper's thread: queued to this one.
    connect(family->catalog(), &CatalogKeeper::changed, this, &SocialDataPanel::reload,
            Qt::QueuedConnection);
    reload();
}

QString SocialDataPanel::selectedPlatform() const
{
    if (!m_platformView)
        return {};
    const QModelIndexList rows = m_platformView->selectionModel()->selectedRows(NameColumn);
    return rows.isEmpty() ? QString() : rows.first().data().toString();
}

bool SocialDataPanel::selectPlatform(const QString &name)
{
    if (!m_platforms)
        return false;
    const QList<QStandardItem *> found = m_platforms->findItems(name, Qt::MatchExactly, NameColumn);
    if (found.isEmpty())
        return false;
    m_platformView->selectionModel()->select(
        found.first()->index(), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_platformView->scrollTo(found.first()->index());
    return true;
}

void SocialDataPanel::reload()
{
    if (!m_platforms)
        return;
    const QJsonObject s = m_family->statusJson();
    const QString source = s.value("source").toString();
    QStringList lines;
    if (source.isEmpty())
        lines << tr("No catalog yet: data requests are refused with 503 until one is fetched.");
    else
        lines << tr("%1 actions (upstream version %2) from the %3, %4, fetched %5.")
                     .arg(s.value("actions").toInt())
                     .arg(s.value("version").toString(tr("unknown")), source,
                          s.value("url").toString(), when(s.value("fetched_at")));
    if (s.value("refreshing").toBool())
        lines << tr("Refreshing from the upstream...");
    else if (const QString error = s.value("last_error").toString(); !error.isEmpty())
        lines
            << tr("The last refresh (%1) failed: %2").arg(when(s.value("last_attempt_at")), error);
    lines << (s.value("next_refresh_at").isString()
                  ? tr("Next refresh: %1.").arg(when(s.value("next_refresh_at")))
                  : tr("Refreshed only at start and on demand."));
    m_status->setText(lines.join(u'\n'));
    m_refresh->setEnabled(!m_refreshing && !s.value("refreshing").toBool());

    const auto catalog = m_family->catalog()->current();
    const QString selected = selectedPlatform();
    const QJsonArray platforms = s.value("platforms").toArray();
    m_platformView->setSortingEnabled(false);
    m_platforms->setRowCount(0);
    for (const QJsonValue &v : platforms) {
        const QJsonObject p = v.toObject();
        const bool enabled = p.value("enabled").toBool();
        m_platforms->appendRow({item(p.value("name").toString()),
                                item(enabled ? tr("yes") : tr("no")),
                                item(enabled ? p.value("public_name").toString() : QString()),
                                number(p.value("actions").toInt())});
    }
    m_platformView->setSortingEnabled(true);
    if (catalog != m_shown || !selectPlatform(selected)) {
        m_shown = catalog;
        if (!selectPlatform(selected))
            showActions();
    }
}

void SocialDataPanel::showActions()
{
    const QString platform = selectedPlatform();
    m_actionView->setSortingEnabled(false);
    m_actions->setRowCount(0);
    if (m_shown && !platform.isEmpty()) {
        const QString publicName = m_family->config().publicName(platform);
        for (const SocialAction &a : m_shown->actions()) {
            if (a.platform != platform)
                continue;
            // The path a client calls: the public prefix, or the upstream's for a disabled one.
            const QString path =
                (publicName.isEmpty() ? platform : publicName) + a.path.mid(a.platform.size());
            m_actions->appendRow({item(path), item(QString::fromLatin1(a.method)),
                                  item(a.requiredParams().join(QLatin1String(", "))),
                                  item(a.summary)});
        }
    }
    m_actionView->setSortingEnabled(true);
}

void SocialDataPanel::refreshCatalog()
{
    CatalogKeeper *keeper = m_family ? m_family->catalog() : nullptr;
    if (!keeper || m_refreshing)
        return;
    m_refreshing = true;
    m_refresh->setEnabled(false);
    m_message->setText(tr("Fetching the catalog from the upstream..."));
    m_message->show();
    QPointer<SocialDataPanel> self(this);
    QMetaObject::invokeMethod(keeper, [keeper, self] {
        keeper->refresh([self](bool ok, const QString &message) {
            QMetaObject::invokeMethod(qApp, [self, ok, message] {
                if (!self)
                    return;
                self->m_refreshing = false;
                self->m_message->setText(
                    ok ? tr("Catalog refreshed: %1.").arg(message)
                       : tr("The catalog could not be refreshed: %1. The catalog in use is "
                            "kept.")
                             .arg(message));
                self->reload();
                emit self->refreshFinished(ok);
            });
        });
    });
}
