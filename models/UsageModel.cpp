#include "UsageModel.h"

#include "ModelFormat.h"
#include "Money.h"

bool UsageFilter::matches(const UsageRecord &r) const
{
    if (keyId && r.keyId != keyId)
        return false;
    if (from.isValid() && r.time < from)
        return false;
    return !to.isValid() || r.time < to;
}

UsageModel::UsageModel(DatabaseService &db, QObject *parent, int pageSize, int maxRows)
    : RecordTableModel(Order::NewestFirst, parent), m_db(db), m_account(db.defaultAccountId()),
      m_pageSize(qMax(1, pageSize)), m_maxRows(qMax(m_pageSize, maxRows))
{
    m_flush.setSingleShot(true);
    m_flush.setInterval(50);
    connect(&m_flush, &QTimer::timeout, this, &UsageModel::flushPending);
    connect(&db, &DatabaseService::usageRecorded, this, &UsageModel::onRecorded);
    reload();
}

int UsageModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant UsageModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case TimeColumn:
        return tr("Time");
    case KeyColumn:
        return tr("Key");
    case EndpointColumn:
        return tr("Endpoint");
    case ModelColumn:
        return tr("Model");
    case InputTokensColumn:
        return tr("Tokens in");
    case OutputTokensColumn:
        return tr("Tokens out");
    case CostColumn:
        return tr("Cost (credits)");
    case StatusColumn:
        return tr("Status");
    case LatencyColumn:
        return tr("Latency (ms)");
    case RequestIdColumn:
        return tr("Request ID");
    }
    return {};
}

QVariant UsageModel::cellData(const UsageRecord &r, int column, int role) const
{
    if (role == Qt::DisplayRole) {
        switch (column) {
        case TimeColumn:
            return ModelFormat::time(r.time);
        case KeyColumn:
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
            return ModelFormat::credits(r.cost);
        case StatusColumn:
            return r.status;
        case LatencyColumn:
            return r.latencyMs;
        case RequestIdColumn:
            return r.requestId;
        }
    } else if (role == SortRole) {
        switch (column) {
        case TimeColumn:
            return r.time.isValid() ? r.time.toMSecsSinceEpoch() : qint64(-1);
        case KeyColumn:
            return r.keyId;
        case EndpointColumn:
            return r.endpoint;
        case ModelColumn:
            return r.model;
        case InputTokensColumn:
            return r.inputTokens;
        case OutputTokensColumn:
            return r.outputTokens;
        case CostColumn:
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
    if (filter == m_filter && (m_loaded || m_loading))
        return;
    m_filter = filter;
    // Live records held for the old filter may not match the new one; the reload has them.
    m_pending.clear();
    reload();
}

void UsageModel::reload()
{
    const quint64 generation = ++m_generation;
    m_loading = true;
    m_fetching = false;
    UsageQuery query;
    query.accountId = m_account;
    query.keyId = m_filter.keyId;
    query.from = m_filter.from;
    query.to = m_filter.to;
    query.limit = m_pageSize;
    m_db.read<UsagePage>(
        this, [query](Store &s) { return s.usage(query); },
        [this, generation](const DbResult<UsagePage> &r) {
            if (generation != m_generation)
                return;
            m_loading = false;
            if (!r.ok()) {
                emit loadFailed(r.error);
                return;
            }
            resetRows(r.value.records);
            m_hasMore = r.value.hasMore;
            m_loaded = true;
            flushPending();
            emit loaded();
        });
}

bool UsageModel::canFetchMore(const QModelIndex &parent) const
{
    return !parent.isValid() && m_loaded && m_hasMore && !m_fetching && !m_loading;
}

void UsageModel::fetchMore(const QModelIndex &parent)
{
    if (!canFetchMore(parent) || m_rows.isEmpty())
        return;
    m_fetching = true;
    const quint64 generation = m_generation;
    UsageQuery query;
    query.accountId = m_account;
    query.keyId = m_filter.keyId;
    query.from = m_filter.from;
    query.to = m_filter.to;
    query.limit = m_pageSize;
    query.beforeId = m_rows.last().id;
    m_db.read<UsagePage>(
        this, [query](Store &s) { return s.usage(query); },
        [this, generation](const DbResult<UsagePage> &r) {
            if (generation != m_generation)
                return;
            m_fetching = false;
            if (!r.ok()) {
                emit loadFailed(r.error);
                return;
            }
            m_hasMore = r.value.hasMore;
            insertRecords(r.value.records);
        });
}

void UsageModel::onRecorded(const UsageRecord &announced)
{
    UsageRecord record = announced;
    // The store stamps a record without a time with its insertion time, which the
    // announcement does not carry back; now is within milliseconds of it.
    if (!record.time.isValid())
        record.time = QDateTime::currentDateTimeUtc();
    if (record.accountId != m_account || !m_filter.matches(record))
        return;
    m_pending.append(record);
    if (!m_flush.isActive())
        m_flush.start();
}

void UsageModel::flushPending()
{
    if (!m_loaded || m_loading || m_pending.isEmpty())
        return;
    QList<UsageRecord> fresh;
    fresh.reserve(m_pending.size());
    const qint64 oldestShown = m_rows.isEmpty() ? 0 : m_rows.last().id;
    for (const UsageRecord &r : std::as_const(m_pending))
        if (!(m_hasMore && r.id < oldestShown)) // fetchMore() brings it in its place
            fresh.append(r);
    m_pending.clear();
    insertRecords(fresh);
    if (trimTo(m_maxRows))
        m_hasMore = true;
}
