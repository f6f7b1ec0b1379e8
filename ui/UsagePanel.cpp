#include "UsagePanel.h"

#include "ApiKeyModel.h"
#include "CsvExport.h"
#include "CsvFileExport.h"
#include "ModelFormat.h"
#include "UsageBucketModel.h"
#include "UsageChartView.h"
#include "UsageModel.h"

#include <QComboBox>
#include <QDateTimeEdit>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

namespace {
constexpr int kHourBuckets = 48;
constexpr int kDayBuckets = 30;
} // namespace

UsagePanel::UsagePanel(UsageModel *usage, UsageBucketModel *buckets, ApiKeyModel *keys,
                       QWidget *parent)
    : QWidget(parent), m_usage(usage), m_buckets(buckets), m_keys(keys)
{
    setObjectName(QStringLiteral("usagePanel"));
    auto *title = new QLabel(tr("<h2>Usage</h2>"), this);

    m_key = new QComboBox(this);
    m_key->setObjectName(QStringLiteral("keyFilterCombo"));
    m_key->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_modelText = new QLineEdit(this);
    m_modelText->setObjectName(QStringLiteral("modelFilterEdit"));
    m_modelText->setPlaceholderText(tr("Model contains..."));
    m_modelText->setClearButtonEnabled(true);
    m_range = new QComboBox(this);
    m_range->setObjectName(QStringLiteral("rangeCombo"));
    m_range->addItem(tr("Last hour"), LastHour);
    m_range->addItem(tr("Last 24 hours"), LastDay);
    m_range->addItem(tr("Last 7 days"), LastWeek);
    m_range->addItem(tr("Last 30 days"), LastMonth);
    m_range->addItem(tr("All time"), AllTime);
    m_range->addItem(tr("Custom"), Custom);
    m_range->setCurrentIndex(m_range->findData(AllTime));
    const QDateTime now = QDateTime::currentDateTime();
    m_from = new QDateTimeEdit(now.addDays(-1), this);
    m_from->setObjectName(QStringLiteral("fromEdit"));
    m_from->setCalendarPopup(true);
    m_to = new QDateTimeEdit(now.addSecs(3600), this);
    m_to->setObjectName(QStringLiteral("toEdit"));
    m_to->setCalendarPopup(true);
    auto *refresh = new QPushButton(tr("Refresh"), this);
    refresh->setObjectName(QStringLiteral("refreshButton"));
    auto *exportButton = new QPushButton(tr("Export CSV..."), this);
    exportButton->setObjectName(QStringLiteral("exportCsvButton"));
    connect(exportButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Export usage"), QStringLiteral("usage.csv"), tr("CSV files (*.csv)"));
        if (!path.isEmpty())
            exportCsv(path);
    });
    m_groupBy = new QComboBox(this);
    m_groupBy->setObjectName(QStringLiteral("breakdownCombo"));
    m_groupBy->addItem(tr("By key"), QStringLiteral("key"));
    m_groupBy->addItem(tr("By model"), QStringLiteral("model"));
    m_breakdown = new QTableWidget(0, 5, this);
    m_breakdown->setObjectName(QStringLiteral("breakdownTable"));
    m_breakdown->setHorizontalHeaderLabels(
        {tr("Key"), tr("Requests"), tr("Credits"), tr("Input tokens"), tr("Output tokens")});
    m_breakdown->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_breakdown->verticalHeader()->hide();
    m_breakdown->horizontalHeader()->setStretchLastSection(true);
    connect(m_groupBy, &QComboBox::currentIndexChanged, this, &UsagePanel::refreshBreakdown);
    connect(usage, &UsageModel::loaded, this, &UsagePanel::refreshBreakdown);

    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setObjectName(QStringLiteral("usageProxy"));
    m_proxy->setSourceModel(usage);
    m_proxy->setSortRole(UsageModel::SortRole);
    m_proxy->setFilterKeyColumn(UsageModel::ModelColumn);
    m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_view = new QTableView(this);
    m_view->setObjectName(QStringLiteral("usageTable"));
    m_view->setModel(m_proxy);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(UsageModel::TimeColumn, Qt::DescendingOrder);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setWordWrap(false);
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 8);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);

    m_bucket = new QComboBox(this);
    m_bucket->setObjectName(QStringLiteral("bucketCombo"));
    m_bucket->addItem(tr("Per hour (last 48 hours)"), UsageBucketModel::kHourMs);
    m_bucket->addItem(tr("Per day (last 30 days)"), UsageBucketModel::kDayMs);
    m_chart = new UsageChartView(buckets, this);

    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("messageLabel"));
    m_message->hide();

    auto updateCustom = [this] {
        const bool custom = m_range->currentData().toInt() == Custom;
        m_from->setEnabled(custom);
        m_to->setEnabled(custom);
    };
    updateCustom();
    connect(m_range, &QComboBox::currentIndexChanged, this, [this, updateCustom] {
        updateCustom();
        applyFilter();
    });
    connect(m_from, &QDateTimeEdit::dateTimeChanged, this, &UsagePanel::applyFilter);
    connect(m_to, &QDateTimeEdit::dateTimeChanged, this, &UsagePanel::applyFilter);
    connect(m_key, &QComboBox::currentIndexChanged, this, &UsagePanel::applyFilter);
    connect(refresh, &QPushButton::clicked, this, [this] {
        applyFilter();
        m_usage->reload(); // also when the filter is unchanged
        m_buckets->reload();
    });
    connect(m_modelText, &QLineEdit::textChanged, m_proxy,
            &QSortFilterProxyModel::setFilterFixedString);
    connect(m_bucket, &QComboBox::currentIndexChanged, this, &UsagePanel::applyBuckets);
    connect(usage, &UsageModel::loadFailed, this, [this](const QString &error) {
        m_message->setText(tr("Could not load usage: %1").arg(error));
        m_message->show();
    });
    connect(usage, &UsageModel::loaded, m_message, &QLabel::hide);
    // Fit the columns to the first data once; afterwards the operator's widths stay.
    connect(usage, &UsageModel::loaded, this, [this] {
        if (m_usage->rowCount() > 0 && !m_columnsFitted) {
            m_columnsFitted = true;
            m_view->resizeColumnsToContents();
        }
    });
    // A meter column that appears later (the first record with that meter) is fitted too.
    connect(m_proxy, &QAbstractItemModel::columnsInserted, this,
            [this](const QModelIndex &, int first, int last) {
                if (!m_columnsFitted)
                    return;
                for (int c = first; c <= last; ++c)
                    m_view->resizeColumnToContents(c);
            });
    connect(keys, &QAbstractItemModel::modelReset, this, &UsagePanel::rebuildKeyChoices);
    connect(keys, &QAbstractItemModel::rowsInserted, this, &UsagePanel::rebuildKeyChoices);
    connect(keys, &QAbstractItemModel::rowsRemoved, this, &UsagePanel::rebuildKeyChoices);
    connect(keys, &QAbstractItemModel::dataChanged, this, &UsagePanel::rebuildKeyChoices);

    auto *filters = new QHBoxLayout;
    filters->addWidget(new QLabel(tr("Key:"), this));
    filters->addWidget(m_key);
    filters->addWidget(m_modelText, 1);
    filters->addWidget(new QLabel(tr("Time:"), this));
    filters->addWidget(m_range);
    filters->addWidget(m_from);
    filters->addWidget(new QLabel(tr("to"), this));
    filters->addWidget(m_to);
    filters->addWidget(refresh);
    filters->addWidget(exportButton);

    auto *chartBox = new QWidget(this);
    auto *chartLayout = new QVBoxLayout(chartBox);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    auto *chartHeader = new QHBoxLayout;
    chartHeader->addWidget(new QLabel(tr("Requests and credits"), chartBox));
    chartHeader->addStretch(1);
    chartHeader->addWidget(m_bucket);
    chartLayout->addLayout(chartHeader);
    chartLayout->addWidget(m_chart, 1);

    auto *breakdownBox = new QWidget(this);
    auto *breakdownLayout = new QVBoxLayout(breakdownBox);
    breakdownLayout->setContentsMargins(0, 0, 0, 0);
    auto *breakdownHeader = new QHBoxLayout;
    breakdownHeader->addWidget(new QLabel(tr("Breakdown"), breakdownBox));
    breakdownHeader->addStretch(1);
    breakdownHeader->addWidget(m_groupBy);
    breakdownLayout->addLayout(breakdownHeader);
    breakdownLayout->addWidget(m_breakdown, 1);
    auto *lower = new QSplitter(Qt::Horizontal, this);
    lower->addWidget(chartBox);
    lower->addWidget(breakdownBox);
    lower->setStretchFactor(0, 3);
    lower->setStretchFactor(1, 2);

    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_view);
    split->addWidget(lower);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(title);
    layout->addLayout(filters);
    layout->addWidget(m_message);
    layout->addWidget(split, 1);

    rebuildKeyChoices();
    applyBuckets();
    applyFilter();
}

UsageQuery UsagePanel::query() const
{
    UsageQuery q;
    q.accountId = m_usage->account();
    q.keyId = m_usage->filter().keyId;
    q.from = m_usage->filter().from;
    q.to = m_usage->filter().to;
    return q;
}

void UsagePanel::exportCsv(const QString &path)
{
    const QList<MeterSpec> meters = UsageMeters::catalog(m_usage->meterSpecs());
    m_message->setText(tr("Exporting usage to %1...").arg(path));
    m_message->show();
    auto *job = CsvFileExport::start(
        m_usage->database(), path, CsvExport::usageHeader(meters),
        [q = query(), meters](Store &s, qint64 cursor) {
            return CsvExport::usagePage(s, q, cursor, meters);
        },
        this);
    connect(job, &CsvFileExport::progress, this, [this, path](qint64 rows) {
        m_message->setText(tr("Exporting usage to %1: %2 records...").arg(path).arg(rows));
    });
    connect(job, &CsvFileExport::finished, this,
            [this, path](bool ok, qint64 rows, const QString &error) {
                m_message->setText(ok ? tr("Exported %1 usage records to %2.").arg(rows).arg(path)
                                      : tr("The export failed: %1").arg(error));
                emit exported(ok);
            });
}

void UsagePanel::refreshBreakdown()
{
    const QString groupBy = m_groupBy->currentData().toString();
    m_breakdown->horizontalHeaderItem(0)->setText(groupBy == u"key" ? tr("Key") : tr("Model"));
    // Key ids as the keys table names them.
    QHash<QString, QString> keyNames;
    for (int row = 0; row < m_keys->rowCount(); ++row)
        keyNames.insert(QString::number(m_keys->recordAt(row).id), m_keys->recordAt(row).name);
    m_usage->database().read<QList<UsageSummaryRow>>(
        this, [q = query(), groupBy](Store &s) { return s.usageSummary(q, groupBy); },
        [this, groupBy, keyNames](const DbResult<QList<UsageSummaryRow>> &r) {
            if (!r.ok() || m_groupBy->currentData().toString() != groupBy)
                return;
            m_breakdown->setSortingEnabled(false);
            m_breakdown->setRowCount(int(r.value.size()));
            for (int i = 0; i < r.value.size(); ++i) {
                const UsageSummaryRow &row = r.value[i];
                QString label = row.group;
                if (groupBy == u"key")
                    label = row.group == u"0"
                                ? tr("(control tokens)")
                                : keyNames.value(row.group, tr("key %1").arg(row.group));
                const auto number = [](qint64 v) {
                    auto *item = new QTableWidgetItem;
                    item->setData(Qt::DisplayRole, v);
                    return item;
                };
                m_breakdown->setItem(i, 0, new QTableWidgetItem(label));
                m_breakdown->setItem(i, 1, number(row.requests));
                auto *credits = new QTableWidgetItem(ModelFormat::credits(row.cost));
                credits->setData(Qt::UserRole, row.cost);
                m_breakdown->setItem(i, 2, credits);
                m_breakdown->setItem(i, 3, number(row.inputTokens));
                m_breakdown->setItem(i, 4, number(row.outputTokens));
            }
            m_breakdown->setSortingEnabled(true);
        });
}

void UsagePanel::applyFilter()
{
    UsageFilter filter;
    filter.keyId = m_key->currentData().toLongLong();
    const QDateTime now = QDateTime::currentDateTimeUtc();
    switch (m_range->currentData().toInt()) {
    case LastHour:
        filter.from = now.addSecs(-3600);
        break;
    case LastDay:
        filter.from = now.addDays(-1);
        break;
    case LastWeek:
        filter.from = now.addDays(-7);
        break;
    case LastMonth:
        filter.from = now.addDays(-30);
        break;
    case Custom:
        filter.from = m_from->dateTime().toUTC();
        filter.to = m_to->dateTime().toUTC();
        break;
    default:
        break;
    }
    m_usage->setFilter(filter);
    refreshBreakdown();
}

void UsagePanel::applyBuckets()
{
    const qint64 bucketMs = m_bucket->currentData().toLongLong();
    const int count = bucketMs >= UsageBucketModel::kDayMs ? kDayBuckets : kHourBuckets;
    if (bucketMs != m_buckets->bucketMs() || count != m_buckets->bucketCount())
        m_buckets->setBuckets(bucketMs, count);
}

void UsagePanel::rebuildKeyChoices()
{
    const qint64 current = m_key->currentData().toLongLong();
    const QSignalBlocker quiet(m_key);
    m_key->clear();
    m_key->addItem(tr("All keys"), qint64(0));
    for (int row = 0; row < m_keys->rowCount(); ++row) {
        const ApiKeyRecord &key = m_keys->recordAt(row);
        const QString label =
            key.name.isEmpty() ? key.prefix : QStringLiteral("%1 (%2)").arg(key.name, key.prefix);
        m_key->addItem(key.isRevoked() ? tr("%1, revoked").arg(label) : label, key.id);
    }
    const int index = m_key->findData(current);
    m_key->setCurrentIndex(index >= 0 ? index : 0);
    // The chosen key left the list: the table falls back to all keys, like the combo box.
    if (index < 0 && current != 0)
        applyFilter();
}
