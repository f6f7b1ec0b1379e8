// Store::settleBatch: the group-committing writer's settlements in a few statements per batch.
// Measured with callgrind on 2,000 billed requests (tests/bench/README.md, "The charge path"):
// per settlement, the duplicate SELECT, UPDATE ... RETURNING, two INSERT ... RETURNING and
// their bindings cost about 300,000 instructions one by one, most of it SQLite opening
// ephemeral tables for RETURNING and starting and ending each statement. Batched, Qt SQL's
// binding (about 2,800 instructions a value: it names each position with QString::arg) and its
// per-execution result cache were the largest part left, so on SQLite the statements run on
// SQLite's own API (SqliteStatements.h). PostgreSQL's cost is round trips instead: it settles a
// batch in one statement (SettleBatchPostgres.cpp). A record's meters (usage_meters) are one
// more multi-row insert on SQLite and part of that one statement on PostgreSQL, in both only
// when the batch has any.
#include "SqliteStatements.h"
#include "Store.h"
#include "UsageColumns.h"

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>
#include <QHash>
#include <QMap>
#include <QSqlError>
#include <QStringEncoder>
#include <QVariant>
#include <sqlite3.h>
#include <utility>
#include <vector>

namespace {

// Rows per multi-row statement: powers of two up to kMaxRows, so that a batch of any size is a
// few statements each prepared once per connection (256 usage rows bind 4,864 values, within
// SQLite's 32,766).
constexpr int kSizes = 9;

using Texts = std::array<QByteArray, kSizes>;

QByteArray rowsOf(int columns, qsizetype rows)
{
    QByteArray row = "(?";
    for (int c = 1; c < columns; ++c)
        row += ", ?";
    row += ')';
    QByteArray out = row;
    for (qsizetype r = 1; r < rows; ++r)
        out += ", " + row;
    return out;
}

// The statement texts of every size, built once; their addresses key Store's prepared cache.
Texts texts(const QByteArray &head, int columns, const QByteArray &tail)
{
    Texts t;
    for (int i = 0; i < kSizes; ++i)
        t[i] = head + rowsOf(columns, qsizetype(1) << i) + tail;
    return t;
}

const Texts &duplicateTexts()
{
    static const Texts t = [] {
        Texts out;
        for (int i = 0; i < kSizes; ++i) {
            QByteArray list = "?";
            for (qsizetype r = 1; r < (qsizetype(1) << i); ++r)
                list += ", ?";
            out[i] = "SELECT id, account_id, kind, amount, balance_after, reason, request_id, "
                     "created_ms FROM ledger WHERE kind = 'charge' AND request_id <> '' AND "
                     "request_id IN (" +
                     list + ')';
        }
        return out;
    }();
    return t;
}

// SQLite gives a multi-row insert consecutive rowids in row order (the table is written by this
// one writer), read from last_insert_rowid(): RETURNING would cost an ephemeral table.
const Texts &ledgerTexts()
{
    static const Texts t = texts("INSERT INTO ledger (account_id, kind, amount, balance_after, "
                                 "reason, request_id, created_ms) VALUES ",
                                 7, {});
    return t;
}

const Texts &usageTexts()
{
    static const Texts t =
        texts("INSERT INTO usage_records (" + UsageColumns::names() + ") VALUES ",
              UsageColumns::count(), {});
    return t;
}

// The records' meters, after the records: a batch whose records have none runs none of these.
const Texts &meterTexts()
{
    static const Texts t =
        texts("INSERT INTO usage_meters (usage_id, meter, quantity) VALUES ", 3, {});
    return t;
}

// Splits n rows into chunks of the prepared sizes: (size index, first row).
QList<QPair<int, qsizetype>> chunks(qsizetype n)
{
    QList<QPair<int, qsizetype>> out;
    qsizetype at = 0;
    for (int i = kSizes - 1; i >= 0; --i) {
        const qsizetype size = qsizetype(1) << i;
        while (n - at >= size) {
            out.append({i, at});
            at += size;
        }
    }
    return out;
}

// A statement refused by a unique index: on the fast path, a charge stored by an earlier batch.
class DuplicateKey : public StoreError
{
public:
    using StoreError::StoreError;
};

// One execution of a statement prepared on SQLite's own API: bind in order, run, read the rows;
// reset when destroyed.
class SettleStatement
{
public:
    SettleStatement(SqliteStatements &cache, const char *sql) : m_cache(cache), m_s(cache.get(sql))
    {
    }
    SettleStatement(const SettleStatement &) = delete;
    SettleStatement &operator=(const SettleStatement &) = delete;
    ~SettleStatement()
    {
        sqlite3_reset(m_s);
        sqlite3_clear_bindings(m_s); // before m_blocks go
    }
    void bind(qint64 value) { check(sqlite3_bind_int64(m_s, ++m_at, value)); }
    void bind(const QString &value)
    {
        // UTF-8, the database's encoding, kept here until the statement is done: bound as
        // UTF-16 and copied, SQLite converted and allocated for every value and freed them all
        // again on the next use (a fifth of the writer's time in perf). Written into blocks of
        // this statement's, not a QByteArray per value (an allocation and a free each). A null
        // QString binds "", never SQL NULL (the columns are NOT NULL).
        const qsizetype need = m_utf8.requiredSpace(value.size());
        if (m_free < need) {
            const qsizetype size = std::max<qsizetype>(kBlock, need);
            m_blocks.push_back(std::make_unique<char[]>(size_t(size)));
            m_cursor = m_blocks.back().get();
            m_free = size;
        }
        const char *start = m_cursor ? m_cursor : "";
        if (m_cursor) {
            m_cursor = m_utf8.appendToBuffer(m_cursor, value);
            m_free -= m_cursor - start;
        }
        check(sqlite3_bind_text(m_s, ++m_at, start, int(m_cursor ? m_cursor - start : 0),
                                SQLITE_STATIC));
    }
    void bindNull() { check(sqlite3_bind_null(m_s, ++m_at)); }
    void run() { m_row = step(); }
    bool next()
    {
        if (m_row) {
            m_row = false;
            return true;
        }
        // Stepped again after SQLITE_DONE, SQLite would reset and run the statement anew.
        return !m_done && step();
    }
    qint64 integer(int column) { return sqlite3_column_int64(m_s, column); }
    bool isInteger(int column) { return sqlite3_column_type(m_s, column) == SQLITE_INTEGER; }
    QString text(int column)
    {
        const auto *data = static_cast<const char16_t *>(sqlite3_column_text16(m_s, column));
        return QString::fromUtf16(data, sqlite3_column_bytes16(m_s, column) / 2);
    }
    qint64 changes() { return sqlite3_changes64(m_cache.handle()); }
    qint64 lastInsertId() { return sqlite3_last_insert_rowid(m_cache.handle()); }

private:
    void check(int rc) const
    {
        if (rc != SQLITE_OK)
            m_cache.fail();
    }
    bool step()
    {
        const int rc = sqlite3_step(m_s);
        if (rc == SQLITE_ROW)
            return true;
        if (rc == SQLITE_DONE) {
            m_done = true;
            return false;
        }
        if (sqlite3_extended_errcode(m_cache.handle()) == SQLITE_CONSTRAINT_UNIQUE)
            throw DuplicateKey(sqlite3_errmsg(m_cache.handle()));
        m_cache.fail();
    }

    SqliteStatements &m_cache;
    sqlite3_stmt *m_s;
    // What the text bindings point to.
    static constexpr qsizetype kBlock = 8192;
    QStringEncoder m_utf8{QStringEncoder::Utf8, QStringConverter::Flag::Stateless};
    std::vector<std::unique_ptr<char[]>> m_blocks;
    char *m_cursor = nullptr;
    qsizetype m_free = 0;
    int m_at = 0;
    bool m_row = false;
    bool m_done = false;
};

// Runs one statement without parameters or rows (the savepoints).
void execute(SqliteStatements &cache, const char *sql)
{
    SettleStatement q(cache, sql);
    q.run();
}

} // namespace

void Store::settleBatch(QList<Settlement> &batch)
{
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    // What each settlement reports, cleared before every attempt.
    const auto clearOutcomes = [&batch] {
        for (Settlement &s : batch) {
            s.charge = {};
            s.error.clear();
            s.usage.id = 0;
        }
    };
    clearOutcomes();
    if (!isPostgres()) {
        if (settleSqliteAsNew(batch, now))
            return;
        clearOutcomes();
    }
    // A charge repeated within the batch is stored once: the repeats report the first's entry.
    QList<qsizetype> duplicateOf(batch.size(), -1);
    QList<qsizetype> rows; // the rest, in batch order
    QHash<QString, qsizetype> firstCharge;
    rows.reserve(batch.size());
    for (qsizetype i = 0; i < batch.size(); ++i) {
        const Settlement &s = batch[i];
        if (s.usage.cost > 0 && !s.usage.requestId.isEmpty()) {
            const auto first = firstCharge.constFind(s.usage.requestId);
            if (first != firstCharge.cend()) {
                duplicateOf[i] = *first;
                continue;
            }
            firstCharge.insert(s.usage.requestId, i);
        }
        rows.append(i);
    }
    if (isPostgres())
        settlePostgres(batch, rows, firstCharge, now);
    else
        settleSqlite(batch, rows, firstCharge, now);
    for (qsizetype i = 0; i < batch.size(); ++i)
        if (duplicateOf[i] >= 0) {
            batch[i].charge.status = ChargeResult::Status::Duplicate;
            batch[i].charge.entry = batch[duplicateOf[i]].charge.entry;
        }
}

bool Store::settleSqliteAsNew(QList<Settlement> &batch, qint64 now)
{
    // A charge settled again (a request id that a charge in this batch or an earlier one has)
    // is rare, and finding them first was about a tenth of the writer under load: the batch's
    // ids in a hash, then a lookup of them all in the ledger. So the batch is first written as
    // if none were; the ledger's unique index (ledger_once) refuses a repeat, and then what was
    // written is rolled back for settleSqlite.
    if (!m_sqlite)
        m_sqlite = std::make_shared<SqliteStatements>(m_db);
    SqliteStatements &cache = *m_sqlite;
    QList<qsizetype> rows(batch.size());
    std::iota(rows.begin(), rows.end(), qsizetype(0));
    execute(cache, "SAVEPOINT settle");
    try {
        writeSqlite(batch, rows, now);
        execute(cache, "RELEASE settle");
        return true;
    } catch (const DuplicateKey &) {
        execute(cache, "ROLLBACK TO settle");
        execute(cache, "RELEASE settle");
        return false;
    }
}

namespace {

// Marks the settlements whose charge an earlier batch stored (Duplicate, with that entry).
void markStoredCharges(SqliteStatements &cache, QList<Store::Settlement> &batch,
                       const QHash<QString, qsizetype> &firstCharge)
{
    const QStringList ids = firstCharge.keys();
    for (const auto &[size, at] : chunks(ids.size())) {
        SettleStatement q(cache, duplicateTexts()[size].constData());
        for (qsizetype r = 0; r < (qsizetype(1) << size); ++r)
            q.bind(ids[at + r]);
        q.run();
        while (q.next()) {
            const qsizetype i = firstCharge.value(q.text(6), -1);
            if (i < 0)
                continue;
            ChargeResult &charge = batch[i].charge;
            charge.status = ChargeResult::Status::Duplicate;
            charge.entry =
                LedgerEntry{q.integer(0), q.integer(1),
                            q.text(2),    q.integer(3),
                            q.integer(4), q.text(5),
                            q.text(6),    QDateTime::fromMSecsSinceEpoch(q.integer(7), Qt::UTC)};
        }
    }
}

} // namespace

void Store::settleSqlite(QList<Settlement> &batch, const QList<qsizetype> &rows,
                         const QHash<QString, qsizetype> &firstCharge, qint64 now)
{
    if (!firstCharge.isEmpty())
        markStoredCharges(*m_sqlite, batch, firstCharge);
    writeSqlite(batch, rows, now);
}

void Store::writeSqlite(QList<Settlement> &batch, const QList<qsizetype> &rows, qint64 now)
{
    SqliteStatements &cache = *m_sqlite;
    enum Role
    {
        Charge,    // a charge and its usage record
        UsageOnly, // cost 0: the usage record alone
        Duplicate, // charged before: nothing stored
        Failed     // refused alone (an unknown account)
    };
    QList<Role> role(batch.size(), UsageOnly);
    QList<qsizetype> charges;
    for (qsizetype i : rows) {
        if (batch[i].charge.status == ChargeResult::Status::Duplicate) {
            role[i] = Duplicate;
        } else if (batch[i].usage.cost > 0) {
            role[i] = Charge;
            charges.append(i);
        }
    }

    // One balance update per account; each entry's balance_after follows in batch order.
    QMap<qint64, qint64> total;
    for (qsizetype i : charges) {
        qint64 &t = total[batch[i].usage.accountId];
        if (__builtin_sub_overflow(t, batch[i].usage.cost, &t))
            throw StoreError("the batch's charges to one account are beyond a balance's range");
    }
    QHash<qint64, qint64> running; // account -> balance before the next entry
    for (auto it = total.cbegin(); it != total.cend(); ++it) {
        {
            SettleStatement upd(cache, "UPDATE accounts SET balance = balance + ? WHERE id = ?");
            upd.bind(it.value());
            upd.bind(it.key());
            upd.run();
            if (upd.changes() != 1)
                continue; // no such account: its settlements fail below
        }
        SettleStatement bal(cache, "SELECT balance FROM accounts WHERE id = ?");
        bal.bind(it.key());
        bal.run();
        if (!bal.next())
            throw StoreError("the account's balance could not be read back");
        // SQLite turns a sum beyond 64 bits into a floating-point number (PostgreSQL refuses
        // it): refused here too, so that a balance stays exact.
        if (!bal.isInteger(0))
            throw StoreError("the charge would take the balance beyond its range");
        running.insert(it.key(), bal.integer(0) - it.value());
    }
    for (qsizetype i : charges) {
        Settlement &s = batch[i];
        const auto acc = running.find(s.usage.accountId);
        if (acc == running.end()) {
            role[i] = Failed;
            s.charge.status = ChargeResult::Status::UnknownAccount;
            s.error = QStringLiteral("unknown account %1").arg(s.usage.accountId);
            continue;
        }
        *acc -= s.usage.cost;
        s.charge.entry = LedgerEntry{0,
                                     s.usage.accountId,
                                     QStringLiteral("charge"),
                                     -s.usage.cost,
                                     *acc,
                                     s.usage.endpoint,
                                     s.usage.requestId,
                                     QDateTime::fromMSecsSinceEpoch(now, Qt::UTC)};
    }
    charges.removeIf([&role](qsizetype i) { return role[i] != Charge; });

    // A usage record alone needs its account too: one lookup per account not charged above.
    QHash<qint64, bool> exists;
    for (qsizetype i : rows) {
        Settlement &s = batch[i];
        if (role[i] != UsageOnly || running.contains(s.usage.accountId))
            continue;
        auto known = exists.find(s.usage.accountId);
        if (known == exists.end()) {
            SettleStatement q(cache, "SELECT 1 FROM accounts WHERE id = ?");
            q.bind(s.usage.accountId);
            q.run();
            known = exists.insert(s.usage.accountId, q.next());
        }
        if (!*known) {
            role[i] = Failed;
            s.charge.status = ChargeResult::Status::UnknownAccount;
            s.error = QStringLiteral("unknown account %1").arg(s.usage.accountId);
        }
    }

    // The ledger entries, then the usage records, each in a few multi-row inserts.
    const auto insertRows = [&cache](const Texts &sql, const QList<qsizetype> &items,
                                     const std::function<void(SettleStatement &, qsizetype)> &bind,
                                     const std::function<void(qsizetype, qint64)> &setId) {
        for (const auto &[size, at] : chunks(items.size())) {
            const qsizetype n = qsizetype(1) << size;
            SettleStatement q(cache, sql[size].constData());
            for (qsizetype r = 0; r < n; ++r)
                bind(q, items[at + r]);
            q.run();
            const qint64 last = q.lastInsertId();
            for (qsizetype r = 0; r < n; ++r)
                setId(items[at + r], last - n + 1 + r);
        }
    };
    insertRows(
        ledgerTexts(), charges,
        [&batch](SettleStatement &q, qsizetype i) {
            const LedgerEntry &e = batch[i].charge.entry;
            q.bind(e.accountId);
            q.bind(e.kind);
            q.bind(e.amount);
            q.bind(e.balanceAfter);
            q.bind(e.reason);
            q.bind(e.requestId);
            q.bind(e.created.toMSecsSinceEpoch());
        },
        [&batch](qsizetype i, qint64 id) { batch[i].charge.entry.id = id; });

    QList<qsizetype> usage;
    for (qsizetype i : rows)
        if (role[i] == Charge || role[i] == UsageOnly)
            usage.append(i);
    insertRows(
        usageTexts(), usage,
        [&batch, now](SettleStatement &q, qsizetype i) {
            UsageColumns::bind(batch[i].usage, now, q);
        },
        [&batch](qsizetype i, qint64 id) { batch[i].usage.id = id; });

    std::vector<std::pair<qint64, const UsageMeter *>> meters; // (usage id, meter)
    for (qsizetype i : usage)
        for (const UsageMeter &m : batch[i].usage.meters)
            meters.emplace_back(batch[i].usage.id, &m);
    QList<qsizetype> meterRows(qsizetype(meters.size()));
    std::iota(meterRows.begin(), meterRows.end(), qsizetype(0));
    insertRows(
        meterTexts(), meterRows,
        [&meters](SettleStatement &q, qsizetype i) {
            q.bind(meters[size_t(i)].first);
            q.bind(meters[size_t(i)].second->name);
            q.bind(meters[size_t(i)].second->quantity);
        },
        [](qsizetype, qint64) {});
}
