#include "LedgerModel.h"

#include "ModelFormat.h"
#include "Money.h"

#include <QPointer>

LedgerModel::LedgerModel(DatabaseService &db, QObject *parent, int pageSize, int maxRows)
    : PagedRecordModel(db, parent, pageSize, maxRows)
{
    connect(&db, &DatabaseService::ledgerAppended, this,
            [this](const LedgerEntry &entry) { queueLive(entry); });
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
    static const char *const headers[ColumnCount] = {
        QT_TR_NOOP("Time"),          QT_TR_NOOP("Kind"),   QT_TR_NOOP("Amount"),
        QT_TR_NOOP("Balance after"), QT_TR_NOOP("Reason"), QT_TR_NOOP("Request ID")};
    return section >= 0 && section < ColumnCount ? tr(headers[section]) : QVariant();
}

QVariant LedgerModel::cellData(const LedgerEntry &entry, int column, int role) const
{
    if (role == Qt::DisplayRole || role == SortRole) {
        // The display text, or the raw value behind it for sorting.
        const bool display = role == Qt::DisplayRole;
        switch (column) {
        case TimeColumn:
            if (display)
                return ModelFormat::time(entry.created);
            return entry.created.isValid() ? entry.created.toMSecsSinceEpoch() : qint64(-1);
        case KindColumn:
            return entry.kind;
        case AmountColumn:
            if (display)
                return ModelFormat::credits(entry.amount);
            return entry.amount;
        case BalanceColumn:
            if (display)
                return ModelFormat::credits(entry.balanceAfter);
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

std::function<LedgerModel::Page(Store &)> LedgerModel::pageRead(qint64 beforeId, int limit) const
{
    return [account = m_account, beforeId, limit](Store &s) {
        Page page;
        // Entries before the balance: an entry committed in between is newer than every listed
        // one and reaches us through ledgerAppended, so noteLive() settles it.
        page.records = s.ledger(account, limit + 1, beforeId);
        if (beforeId == 0)
            page.balance = s.balance(account);
        if (page.records.size() > limit) {
            page.hasMore = true;
            page.records.removeLast();
        }
        return page;
    };
}

void LedgerModel::reloaded(const Page &page, bool first)
{
    m_balanceEntryId = page.records.isEmpty() ? 0 : page.records.first().id;
    const bool announce = first || m_balance != page.balance;
    m_balance = page.balance;
    if (announce)
        emit balanceChanged(m_balance);
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

void LedgerModel::noteLive(const LedgerEntry &entry)
{
    if (entry.id <= m_balanceEntryId)
        return;
    m_balanceEntryId = entry.id;
    if (entry.balanceAfter != m_balance) {
        m_balance = entry.balanceAfter;
        emit balanceChanged(m_balance);
    }
}
