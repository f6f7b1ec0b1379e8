#include "UsageBucketModel.h"

#include "ModelFormat.h"
#include "Money.h"

UsageBucketModel::UsageBucketModel(DatabaseService &db, QObject *parent, int refreshDelayMs)
    : QAbstractTableModel(parent), m_db(db), m_account(db.defaultAccountId())
{
    m_coalesce.setSingleShot(true);
    m_coalesce.setInterval(refreshDelayMs);
    connect(&m_coalesce, &QTimer::timeout, this, &UsageBucketModel::reload);
    connect(&db, &DatabaseService::usageRecorded, this, [this](const UsageRecord &r) {
        if (r.accountId == m_account && !m_coalesce.isActive())
            m_coalesce.start();
    });
    m_rollover.setInterval(60'000);
    connect(&m_rollover, &QTimer::timeout, this, &UsageBucketModel::reload);
    m_rollover.start();
    reload();
}

int UsageBucketModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_buckets.size());
}

int UsageBucketModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant UsageBucketModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const UsageBucket &b = m_buckets.at(index.row());
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case StartColumn:
            return ModelFormat::time(b.start);
        case RequestsColumn:
            return b.requests;
        case CostColumn:
            return ModelFormat::credits(b.cost);
        }
    } else if (role == ValueRole) {
        switch (index.column()) {
        case StartColumn:
            return b.start.toMSecsSinceEpoch();
        case RequestsColumn:
            return b.requests;
        case CostColumn:
            return b.cost;
        }
    } else if (role == Qt::TextAlignmentRole && index.column() != StartColumn) {
        return int(Qt::AlignRight | Qt::AlignVCenter);
    }
    return {};
}

QVariant UsageBucketModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case StartColumn:
        return tr("From");
    case RequestsColumn:
        return tr("Requests");
    case CostColumn:
        return tr("Credits");
    }
    return {};
}

void UsageBucketModel::setBuckets(qint64 bucketMs, int count)
{
    if (bucketMs <= 0 || count <= 0)
        return;
    m_bucketMs = bucketMs;
    m_count = count;
    // A new shape makes an answer in flight useless: start over at once.
    ++m_generation;
    m_loading = false;
    m_stale = false;
    reload();
}

void UsageBucketModel::reload()
{
    if (m_loading) {
        m_stale = true;
        return;
    }
    m_loading = true;
    const quint64 generation = ++m_generation;
    const qint64 bucketMs = m_bucketMs;
    const int count = m_count;
    const qint64 account = m_account;
    const qint64 nowMs = QDateTime::currentMSecsSinceEpoch();
    const qint64 firstMs = (nowMs / bucketMs - (count - 1)) * bucketMs;
    m_db.read<QList<UsageBucket>>(
        this,
        [=](Store &s) {
            const QList<UsageBucket> found =
                s.usageBuckets(account, QDateTime::fromMSecsSinceEpoch(firstMs, Qt::UTC), bucketMs);
            QList<UsageBucket> all(count);
            for (int i = 0; i < count; ++i)
                all[i].start = QDateTime::fromMSecsSinceEpoch(firstMs + i * bucketMs, Qt::UTC);
            for (const UsageBucket &b : found) {
                const qint64 slot = (b.start.toMSecsSinceEpoch() - firstMs) / bucketMs;
                if (slot >= 0 && slot < count) {
                    all[slot].requests = b.requests;
                    all[slot].cost = b.cost;
                }
            }
            return all;
        },
        [this, generation](const DbResult<QList<UsageBucket>> &r) {
            if (generation != m_generation)
                return;
            m_loading = false;
            if (r.ok()) {
                apply(r.value);
                m_loaded = true;
                emit loaded();
            } else {
                emit loadFailed(r.error);
            }
            if (m_stale) {
                m_stale = false;
                reload();
            }
        });
}

void UsageBucketModel::apply(QList<UsageBucket> buckets)
{
    const bool sameShape = buckets.size() == m_buckets.size() &&
                           (buckets.isEmpty() || buckets.first().start == m_buckets.first().start);
    if (!sameShape) {
        beginResetModel();
        m_buckets = std::move(buckets);
        endResetModel();
        return;
    }
    for (qsizetype i = 0; i < buckets.size(); ++i) {
        UsageBucket &mine = m_buckets[i];
        if (mine.requests == buckets.at(i).requests && mine.cost == buckets.at(i).cost)
            continue;
        mine = buckets.at(i);
        emit dataChanged(index(int(i), RequestsColumn), index(int(i), CostColumn));
    }
}
