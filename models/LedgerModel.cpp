#include "LedgerModel.h"

#include "ModelFormat.h"
#include "Money.h"

#include <QPointer>

namespace {

struct LedgerSnapshot
{
    QList<LedgerEntry> entries;
    bool hasMore = false;
    qint64 balance = 0;
};

} // namespace

LedgerModel::LedgerModel(DatabaseService &db, QObject *parent, int pageSize, int maxRows)
    : RecordTableModel(Order::NewestFirst, parent), m_db(db), m_account(db.defaultAccountId()),
      m_pageSize(qMax(1, pageSize)), m_maxRows(qMax(m_pageSize, maxRows))
{
    m_flush.setSingleShot(true);
    m_flush.setInterval(50);
    connect(&m_flush, &QTimer::timeout, this, &LedgerModel::flushPending);
    connect(&db, &DatabaseService::ledgerAppended, this, &LedgerModel::onAppended);
    reload();
}

int LedgerModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant LedgerModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case TimeColumn:
        return tr("Time");
    case KindColumn:
        return tr("Kind");
    case AmountColumn:
        return tr("Amount");
    case BalanceColumn:
        return tr("Balance after");
    case ReasonColumn:
        return tr("Reason");
    case RequestIdColumn:
        return tr("Request ID");
    }
    return {};
}

QVariant LedgerModel::cellData(const LedgerEntry &entry, int column, int role) const
{
    if (role == Qt::DisplayRole) {
        switch (column) {
        case TimeColumn:
            return ModelFormat::time(entry.created);
        case KindColumn:
            return entry.kind;
        case AmountColumn:
            return ModelFormat::credits(entry.amount);
        case BalanceColumn:
            return ModelFormat::credits(entry.balanceAfter);
        case ReasonColumn:
            return entry.reason;
        case RequestIdColumn:
            return entry.requestId;
        }
    } else if (role == SortRole) {
        switch (column) {
        case TimeColumn:
            return entry.created.isValid() ? entry.created.toMSecsSinceEpoch() : qint64(-1);
        case KindColumn:
            return entry.kind;
        case AmountColumn:
            return entry.amount;
        case BalanceColumn:
            return entry.balanceAfter;
        case ReasonColumn:
            return entry.reason;
        case RequestIdColumn:
            return entry.requestId;
        }
    } else if (role == Qt::TextAlignmentRole) {
        if (column == AmountColumn || column == BalanceColumn)
            return int(Qt::AlignRight | Qt::AlignVCenter);
    } else if (role == Qt::ToolTipRole) {
        switch (column) {
        case TimeColumn:
            return entry.created.toUTC().toString(Qt::ISODateWithMs);
        case AmountColumn:
            return Money::formatCredits(entry.amount);
        case BalanceColumn:
            return Money::formatCredits(entry.balanceAfter);
        }
    }
    return {};
}

void LedgerModel::reload()
{
    const quint64 generation = ++m_generation;
    m_loading = true;
    m_fetching = false;
    const qint64 account = m_account;
    const int pageSize = m_pageSize;
    m_db.read<LedgerSnapshot>(
        this,
        [account, pageSize](Store &s) {
            LedgerSnapshot snap;
            // Entries before the balance: an entry committed in between is newer than every
            // listed one and reaches us through ledgerAppended, so noteBalance() settles it.
            snap.entries = s.ledger(account, pageSize + 1);
            snap.balance = s.balance(account);
            if (snap.entries.size() > pageSize) {
                snap.hasMore = true;
                snap.entries.removeLast();
            }
            return snap;
        },
        [this, generation](const DbResult<LedgerSnapshot> &r) {
            if (generation != m_generation)
                return;
            m_loading = false;
            if (!r.ok()) {
                emit loadFailed(r.error);
                return;
            }
            resetRows(r.value.entries);
            m_hasMore = r.value.hasMore;
            m_balanceEntryId = r.value.entries.isEmpty() ? 0 : r.value.entries.first().id;
            const bool announce = !m_loaded || m_balance != r.value.balance;
            m_balance = r.value.balance;
            m_loaded = true;
            if (announce)
                emit balanceChanged(m_balance);
            flushPending();
            emit loaded();
        });
}

bool LedgerModel::canFetchMore(const QModelIndex &parent) const
{
    return !parent.isValid() && m_loaded && m_hasMore && !m_fetching && !m_loading;
}

void LedgerModel::fetchMore(const QModelIndex &parent)
{
    if (!canFetchMore(parent) || m_rows.isEmpty())
        return;
    m_fetching = true;
    const quint64 generation = m_generation;
    const qint64 account = m_account;
    const int pageSize = m_pageSize;
    const qint64 beforeId = m_rows.last().id;
    m_db.read<QList<LedgerEntry>>(
        this, [=](Store &s) { return s.ledger(account, pageSize + 1, beforeId); },
        [this, generation, pageSize](const DbResult<QList<LedgerEntry>> &r) {
            if (generation != m_generation)
                return;
            m_fetching = false;
            if (!r.ok()) {
                emit loadFailed(r.error);
                return;
            }
            QList<LedgerEntry> page = r.value;
            m_hasMore = page.size() > pageSize;
            if (m_hasMore)
                page.removeLast();
            insertRecords(page);
        });
}

void LedgerModel::grantCredits(qint64 units, const QString &note, QObject *context,
                               std::function<void(const DbResult<ChargeResult> &)> done)
{
    QPointer<QObject> guard(context);
    const bool hasContext = context != nullptr;
    auto finish = [guard, hasContext, done = std::move(done)](const DbResult<ChargeResult> &r) {
        if (done && (guard || !hasContext))
            done(r);
    };
    if (units <= 0) {
        QMetaObject::invokeMethod(
            this,
            [finish, error = tr("A grant must be a positive amount.")] {
                finish(DbResult<ChargeResult>{{}, error});
            },
            Qt::QueuedConnection);
        return;
    }
    // A grant never lowers the balance, so the floor is irrelevant; no request id: grants are
    // not deduplicated.
    m_db.applyLedger(this, m_account, QStringLiteral("grant"), units, note, QString(), 0,
                     std::move(finish));
}

void LedgerModel::onAppended(const LedgerEntry &entry)
{
    if (entry.accountId != m_account)
        return;
    m_pending.append(entry);
    if (!m_flush.isActive())
        m_flush.start();
}

void LedgerModel::flushPending()
{
    // While a reload is in flight its answer decides the rows; keep the burst until then.
    if (!m_loaded || m_loading || m_pending.isEmpty())
        return;
    QList<LedgerEntry> fresh;
    fresh.reserve(m_pending.size());
    const qint64 oldestShown = m_rows.isEmpty() ? 0 : m_rows.last().id;
    for (const LedgerEntry &e : std::as_const(m_pending)) {
        noteBalance(e.id, e.balanceAfter);
        // Below the oldest loaded row with more pages to come: fetchMore() will bring it in
        // its place; inserting it now would make the paging cursor skip entries.
        if (!(m_hasMore && e.id < oldestShown))
            fresh.append(e);
    }
    m_pending.clear();
    insertRecords(fresh);
    if (trimTo(m_maxRows))
        m_hasMore = true;
}

void LedgerModel::noteBalance(qint64 entryId, qint64 balanceAfter)
{
    if (entryId <= m_balanceEntryId)
        return;
    m_balanceEntryId = entryId;
    if (balanceAfter != m_balance) {
        m_balance = balanceAfter;
        emit balanceChanged(m_balance);
    }
}
