#include "UsageModel.h"

#include "ModelFormat.h"
#include "Money.h"

#include <algorithm>

bool UsageFilter::matches(const UsageRecord &r) const
{
    if (keyId && r.keyId != keyId)
        return false;
    if (from.isValid() && r.time < from)
        return false;
    return !to.isValid() || r.time < to;
}

UsageModel::UsageModel(DatabaseService &db, QObject *parent, int pageSize, int maxRows)
    : PagedRecordModel(db, parent, pageSize, maxRows)
{
    connect(&db, &DatabaseService::usageRecorded, this, &UsageModel::onRecorded);
    reload();
}

int UsageModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount + int(m_meters.size());
}

void UsageModel::showRecords(const QList<UsageRecord> &records)
{
    QStringList names = m_meters;
    for (const UsageRecord &r : records)
        for (const UsageMeter &m : r.meters)
            if (!names.contains(m.name))
                names.append(m.name);
    if (names.size() == m_meters.size())
        return;
    names.sort();
    // Each new one at its place in name order, one column at a time.
    for (qsizetype i = 0; i < names.size(); ++i) {
        if (i < m_meters.size() && m_meters.at(i) == names.at(i))
            continue;
        beginInsertColumns(QModelIndex(), int(ColumnCount + i), int(ColumnCount + i));
        m_meters.insert(i, names.at(i));
        endInsertColumns();
    }
}

void UsageModel::setMeterSpecs(const QList<MeterSpec> &specs)
{
    m_specs = specs;
    if (!m_meters.isEmpty())
        emit headerDataChanged(Qt::Horizontal, ColumnCount, columnCount() - 1);
}

QVariant UsageModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    if (section >= ColumnCount && section < columnCount()) {
        const MeterSpec spec = UsageMeters::describe(m_specs, m_meters.at(section - ColumnCount));
        return spec.label.isEmpty() ? spec.name : spec.label;
    }
    static const char *const headers[ColumnCount] = {
        QT_TR_NOOP("Time"),           QT_TR_NOOP("Key"),       QT_TR_NOOP("Endpoint"),
        QT_TR_NOOP("Model"),          QT_TR_NOOP("Tokens in"), QT_TR_NOOP("Tokens out"),
        QT_TR_NOOP("Cost (credits)"), QT_TR_NOOP("Status"),    QT_TR_NOOP("Latency (ms)"),
        QT_TR_NOOP("Request ID")};
    return section >= 0 && section < ColumnCount ? tr(headers[section]) : QVariant();
}

QVariant UsageModel::cellData(const UsageRecord &r, int column, int role) const
{
    if (column >= ColumnCount) {
        const QString &name = m_meters.at(column - ColumnCount);
        const bool has = std::any_of(r.meters.begin(), r.meters.end(),
                                     [&name](const UsageMeter &m) { return m.name == name; });
        if (role == Qt::DisplayRole)
            return has ? QVariant(r.meter(name)) : QVariant();
        if (role == SortRole)
            return r.meter(name);
        if (role == Qt::TextAlignmentRole)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    }
    if (role == Qt::DisplayRole || role == SortRole) {
        // The display text, or the raw value behind it for sorting.
        const bool display = role == Qt::DisplayRole;
        switch (column) {
        case TimeColumn:
            if (display)
                return ModelFormat::time(r.time);
            return r.time.isValid() ? r.time.toMSecsSinceEpoch() : qint64(-1);
        case KeyColumn:
            if (!display)
                return r.keyId;
            if (r.keyId)
                return QString::number(r.keyId);
            return r.tokenId ? tr("token %1").arg(r.tokenId) : QString();
        case EndpointColumn:
            return r.endpoint;
        case ModelColumn:
            return r.model;
        case InputTokensColumn:
            return r.inputTokens;
        case OutputTokensColumn:
            return r.outputTokens;
        case CostColumn:
            if (display)
                return ModelFormat::credits(r.cost);
            return r.cost;
        case StatusColumn:
            return r.status;
        case LatencyColumn:
            return r.latencyMs;
        case RequestIdColumn:
            return r.requestId;
        }
    } else if (role == Qt::TextAlignmentRole) {
        switch (column) {
        case InputTokensColumn:
        case OutputTokensColumn:
        case CostColumn:
        case StatusColumn:
        case LatencyColumn:
            return int(Qt::AlignRight | Qt::AlignVCenter);
        }
    } else if (role == Qt::ToolTipRole) {
        switch (column) {
        case TimeColumn:
            return r.time.toUTC().toString(Qt::ISODateWithMs);
        case CostColumn:
            return r.estimated ? tr("%1 (estimated)").arg(Money::formatCredits(r.cost))
                               : Money::formatCredits(r.cost);
        }
    }
    return {};
}

void UsageModel::setFilter(const UsageFilter &filter)
{
    if (filter == m_filter && (isLoaded() || isReloading()))
        return;
    m_filter = filter;
    // Live records held for the old filter may not match the new one; the reload has them.
    dropPending();
    reload();
}

std::function<UsageModel::Page(Store &)> UsageModel::pageRead(qint64 beforeId, int limit) const
{
    UsageQuery query;
    query.accountId = m_account;
    query.keyId = m_filter.keyId;
    query.from = m_filter.from;
    query.to = m_filter.to;
    query.limit = limit;
    query.beforeId = beforeId;
    return [query](Store &s) {
        UsagePage usage = s.usage(query);
        return Page{std::move(usage.records), usage.hasMore, 0};
    };
}

void UsageModel::onRecorded(const UsageRecord &announced)
{
    UsageRecord record = announced;
    // The store stamps a record without a time with its insertion time, which the
    // announcement does not carry back; now is within milliseconds of it.
    if (!record.time.isValid())
        record.time = QDateTime::currentDateTimeUtc();
    if (m_filter.matches(record))
        queueLive(record);
}
