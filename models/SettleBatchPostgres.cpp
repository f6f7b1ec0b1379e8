// Store::settlePostgres: a settlement batch on PostgreSQL in one statement, one round trip.
// A batch was six (BEGIN, the duplicate check, the balance update, the two inserts, COMMIT) plus
// a savepoint's two per job grouped with it. The statement's data-modifying CTEs run in one
// snapshot and commit together, so it needs no transaction around it (DbWorker::Commit::Alone).
// Measured with tests/bench/thread-costs.sh --pg (tests/bench/README.md, "The charge path"):
// the writer's CPU per billed request 21.8 -> 7.3 us, billed transfer-coord 8,100-9,000 ->
// 11,700-13,400 req/s; at concurrency 1 p50 0.86-0.89 -> 0.74-0.79 ms, of which PostgreSQL
// spends about 0.3 ms executing the statement and 0.15 ms flushing its commit. The rows go as
// one array per column, bound as text through Qt SQL (QPSQL binds no arrays). A batch of one
// row, every batch at concurrency 1, takes a shorter statement of scalars (settleOneText).
#include "PgArrayLiteral.h"
#include "Store.h"
#include "UsageColumns.h"

#include <algorithm>
#include <bit>
#include <QSqlError>
#include <QVariant>
#include <vector>

namespace {

// One row per settlement, with its position in the batch (ord). Then: ledger rows already
// charging a request id (dup); the new charges (fresh) with each account's running total in
// batch order; the accounts locked in id order, as the row-by-row updates did, so that two
// batches never wait on each other in a cycle (FOR NO KEY UPDATE, as an UPDATE takes: foreign-key
// checks on the account do not wait for it); one balance update per account; the ledger entries
// and usage records with ids drawn in batch order, a record without a charge only when its
// account exists (no foreign key checks it: Migrations.cpp, core step 5). Sums are cast back to
// bigint: numeric would reach Qt as a double. The result: 'c' a charge made, 'u' a usage
// record stored, 'd' an earlier charge of the same request id. A charge with neither 'c' nor
// 'd', or a record without a charge and without 'u', had no account.
//
// Without lookup (settleNewText), the same with no dup: every charge is taken for new, and the
// ledger's unique index (ledger_once) refuses the statement when one is not (settlePostgres).
//
// With meters, three more arrays after the time (each meter's ord, name and quantity) and the
// stored records' meters inserted into usage_meters by the same statement; a batch without
// meters runs the text without them.
QByteArray settleTextOf(bool lookup, bool meters)
{
    QByteArray arrays, names = UsageColumns::names();
    const UsageRecord none;
    UsageColumns::forEach(none, [&](const UsageColumns::Column &c, const auto &) {
        arrays += QByteArray(", ?::") + c.pgType + "[]";
    });
    const QByteArray dup =
        lookup ? "dup AS MATERIALIZED (SELECT l.id, l.account_id, l.amount, l.balance_after, "
                 "l.reason, l.request_id, l.created_ms FROM ledger l WHERE l.kind = 'charge' AND "
                 "l.request_id <> '' AND l.request_id IN (SELECT request_id FROM rows WHERE cost "
                 "> 0 AND request_id <> '')), "
               : "";
    const QByteArray notDup =
        lookup ? " AND NOT EXISTS (SELECT 1 FROM dup WHERE dup.request_id = r.request_id)" : "";
    const QByteArray dupRows = lookup ? " UNION ALL SELECT 'd', NULL, id, account_id, amount, "
                                        "balance_after, reason, request_id, created_ms FROM dup"
                                      : "";
    return "WITH rows AS MATERIALIZED (SELECT * FROM unnest(?::int[]" + arrays + ") AS r(ord, " +
           names + ")), " + dup +
           "fresh AS MATERIALIZED (SELECT r.ord, r.account_id, r.cost, r.endpoint, "
           "r.request_id, (sum(r.cost) OVER (PARTITION BY r.account_id ORDER BY "
           "r.ord))::bigint AS upto FROM rows r WHERE r.cost > 0" +
           notDup +
           "), "
           "locked AS MATERIALIZED (SELECT a.id FROM accounts a WHERE a.id IN (SELECT "
           "account_id FROM fresh) ORDER BY a.id FOR NO KEY UPDATE), "
           "upd AS (UPDATE accounts a SET balance = a.balance - t.total FROM (SELECT "
           "f.account_id, sum(f.cost)::bigint AS total FROM fresh f JOIN locked k ON k.id = "
           "f.account_id GROUP BY f.account_id) t WHERE a.id = t.account_id RETURNING a.id, "
           "a.balance + t.total AS before), "
           "charged AS MATERIALIZED (SELECT nextval('ledger_id_seq') AS id, c.* FROM (SELECT "
           "f.ord, f.account_id, f.cost, u.before - f.upto AS balance_after, f.endpoint, "
           "f.request_id FROM fresh f JOIN upd u ON u.id = f.account_id ORDER BY f.ord) c), "
           "ledger_rows AS (INSERT INTO ledger (id, account_id, kind, amount, balance_after, "
           "reason, request_id, created_ms) SELECT id, account_id, 'charge', -cost, "
           "balance_after, endpoint, request_id, ? FROM charged), "
           "stored AS MATERIALIZED (SELECT nextval('usage_records_id_seq') AS id, s.* FROM "
           "(SELECT * FROM rows r WHERE r.ord IN (SELECT ord FROM charged) OR (r.cost <= 0 "
           "AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = r.account_id)) ORDER BY r.ord) "
           "s), "
           "usage_rows AS (INSERT INTO usage_records (id, " +
           names + ") SELECT id, " + names + " FROM stored) " +
           (meters ? ", meter_rows AS (INSERT INTO usage_meters (usage_id, meter, quantity) "
                     "SELECT s.id, m.meter, m.quantity FROM stored s JOIN unnest(?::int[], "
                     "?::text[], ?::bigint[]) AS m(ord, meter, quantity) ON m.ord = s.ord) "
                   : "") +
           "SELECT 'c', ord, id, account_id, -cost, balance_after, NULL::text, NULL::text, "
           "NULL::bigint FROM charged "
           "UNION ALL SELECT 'u', ord, id, NULL, NULL, NULL, NULL, NULL, NULL FROM stored" +
           dupRows;
}

const QByteArray &settleText(bool meters)
{
    static const QByteArray text[2] = {settleTextOf(true, false), settleTextOf(true, true)};
    return text[meters];
}

const QByteArray &settleNewText(bool meters)
{
    static const QByteArray text[2] = {settleTextOf(false, false), settleTextOf(false, true)};
    return text[meters];
}

// One settlement alone, as every batch is at concurrency 1: the rules above without unnest, the
// running totals, the grouping or the lock ordering, none of which one row needs. r is inlined
// (NOT MATERIALIZED), so its columns plan as the parameters themselves. The same result rows.
// Measured with pgbench at concurrency 1, commit included: 0.40-0.41 ms a settlement as a batch
// of one, 0.30-0.33 ms in this form. Through Qt SQL the gain is larger, the arrays' text gone:
// tests/bench/gateway-bench.sh --quick --pg, two builds alternated twice on new databases, added
// p50 at concurrency 1 +0.95, +0.88 -> +0.54, +0.55 ms, p99 +1.78, +1.60 -> +0.92, +1.03 ms.
// With meters, two more arrays after the time: the record's meter names and quantities.
QByteArray settleOneTextOf(bool meters)
{
    QByteArray params, names = UsageColumns::names();
    const UsageRecord none;
    UsageColumns::forEach(none, [&](const UsageColumns::Column &c, const auto &) {
        params += QByteArray(", ?::") + c.pgType + " AS " + c.name;
    });
    return "WITH r AS NOT MATERIALIZED (SELECT ?::int AS ord" + params +
           ", ?::bigint AS now), "
           "dup AS MATERIALIZED (SELECT l.id, l.account_id, l.amount, l.balance_after, "
           "l.reason, l.request_id, l.created_ms FROM ledger l, r WHERE l.kind = 'charge' AND "
           "l.request_id <> '' AND l.request_id = r.request_id AND r.cost > 0), "
           "upd AS (UPDATE accounts a SET balance = a.balance - r.cost FROM r WHERE a.id = "
           "r.account_id AND r.cost > 0 AND NOT EXISTS (SELECT 1 FROM dup) RETURNING a.id, "
           "a.balance), "
           "charged AS (INSERT INTO ledger (account_id, kind, amount, balance_after, reason, "
           "request_id, created_ms) SELECT u.id, 'charge', -r.cost, u.balance, r.endpoint, "
           "r.request_id, r.now FROM upd u, r RETURNING id, account_id, amount, "
           "balance_after), "
           "stored AS (INSERT INTO usage_records (" +
           names + ") SELECT " + names +
           " FROM r WHERE EXISTS (SELECT 1 FROM charged) OR (r.cost <= 0 AND EXISTS (SELECT "
           "1 FROM accounts a WHERE a.id = r.account_id)) RETURNING id) " +
           (meters ? ", meter_rows AS (INSERT INTO usage_meters (usage_id, meter, "
                     "quantity) SELECT s.id, m.meter, m.quantity FROM stored s, "
                     "unnest(?::text[], ?::bigint[]) AS m(meter, quantity)) "
                   : "") +
           "SELECT 'c', (SELECT ord FROM r), id, account_id, amount, balance_after, "
           "NULL::text, NULL::text, NULL::bigint FROM charged "
           "UNION ALL SELECT 'u', (SELECT ord FROM r), id, NULL, NULL, NULL, NULL, NULL, NULL "
           "FROM stored "
           "UNION ALL SELECT 'd', NULL, id, account_id, amount, balance_after, reason, "
           "request_id, created_ms FROM dup";
}

const QByteArray &settleOneText(bool meters)
{
    static const QByteArray text[2] = {settleOneTextOf(false), settleOneTextOf(true)};
    return text[meters];
}

// Binds the parameters of settleOneText(): a single settlement's columns as scalars.
void bindOne(QSqlQuery &q, const UsageRecord &usage, qsizetype ord, qint64 now)
{
    struct Sink
    {
        QSqlQuery &q;
        void bind(qint64 v) { q.addBindValue(v); }
        void bind(const QString &v) { q.addBindValue(v.isNull() ? QStringLiteral("") : v); }
        void bindNull() { q.addBindValue(QVariant(QMetaType::fromType<qint64>())); }
    };
    q.addBindValue(int(ord));
    UsageColumns::bind(usage, now, Sink{q});
    q.addBindValue(now);
    if (!usage.meters.isEmpty()) {
        const auto [names, quantities] = UsageColumns::meterArrays(usage.meters);
        q.addBindValue(names);
        q.addBindValue(quantities);
    }
}

// Whether any of the rows has meters: the statement's form with them.
bool hasMeters(const QList<Store::Settlement> &batch, const QList<qsizetype> &rows)
{
    return std::any_of(rows.begin(), rows.end(),
                       [&batch](qsizetype i) { return !batch[i].usage.meters.isEmpty(); });
}

// Binds the parameters of settleText(): one array per column, then the meters' when `meters`.
void bindArrays(QSqlQuery &q, const QList<Store::Settlement> &batch, const QList<qsizetype> &rows,
                qint64 now, bool meters)
{
    ArrayLiteral ord;
    std::vector<ArrayLiteral> col(size_t(UsageColumns::count()));
    for (qsizetype i : rows) {
        ord.add(i);
        struct Sink
        {
            std::vector<ArrayLiteral>::iterator at;
            void bind(qint64 v) { (at++)->add(v); }
            void bind(const QString &v) { (at++)->add(v); }
            void bindNull() { (at++)->addNull(); }
        };
        UsageColumns::bind(batch[i].usage, now, Sink{col.begin()});
    }
    q.addBindValue(ord.take());
    for (ArrayLiteral &c : col)
        q.addBindValue(c.take());
    q.addBindValue(now);
    if (!meters)
        return;
    ArrayLiteral meterOrd, names, quantities;
    for (qsizetype i : rows)
        for (const UsageMeter &m : batch[i].usage.meters) {
            meterOrd.add(i);
            names.add(m.name);
            quantities.add(m.quantity);
        }
    q.addBindValue(meterOrd.take());
    q.addBindValue(names.take());
    q.addBindValue(quantities.take());
}

} // namespace

void Store::settlePostgres(QList<Settlement> &batch, const QList<qsizetype> &rows,
                           const QHash<QString, qsizetype> &firstCharge, qint64 now)
{
    const auto run = [this](const char *sql) {
        QSqlQuery t(m_db);
        if (!t.exec(QString::fromLatin1(sql)))
            throw StoreError(t.lastError().text().toStdString());
    };
    QSqlQuery *statement = nullptr;
    const bool meters = hasMeters(batch, rows);
    // A savepoint guarding the statement, released once its rows are read: a statement run
    // before then would discard them (QPSQL reads a forward-only result as it goes).
    bool releaseAfter = false;
    if (rows.size() == 1) {
        statement = &prepared(settleOneText(meters).constData());
        bindOne(*statement, batch[rows.first()].usage, rows.first(), now);
        exec(*statement);
    } else {
        // A batch is first settled as if no charge had been stored before: a charge settled
        // again is rare, and looking every request id up was a share of each statement. When
        // the ledger's unique index refuses one (unique_violation, 23505), the statement has
        // done nothing and the batch runs again with the lookup. Inside a transaction a refused
        // statement would abort it, so a savepoint guards the attempt there.
        const bool mayRepeat = !firstCharge.isEmpty();
        const bool guard = mayRepeat && m_inTransaction;
        statement = &prepared(settleNewText(meters).constData());
        bindArrays(*statement, batch, rows, now, meters);
        if (guard)
            run("SAVEPOINT settle");
        if (statement->exec()) {
            releaseAfter = guard;
        } else if (mayRepeat &&
                   statement->lastError().nativeErrorCode() == QLatin1String("23505")) {
            if (guard) {
                run("ROLLBACK TO SAVEPOINT settle");
                run("RELEASE SAVEPOINT settle");
            }
            statement = &prepared(settleText(meters).constData());
            bindArrays(*statement, batch, rows, now, meters);
            exec(*statement);
        } else {
            throw StoreError(statement->lastError().text().toStdString());
        }
    }
    QSqlQuery &q = *statement;

    QList<bool> settled(batch.size(), false);
    while (q.next()) {
        const QChar what = q.value(0).toString().at(0);
        const qint64 id = q.value(2).toLongLong();
        if (what == u'u') {
            const qsizetype i = q.value(1).toLongLong();
            batch[i].usage.id = id;
            if (batch[i].usage.cost <= 0)
                settled[i] = true;
            continue;
        }
        const qint64 account = q.value(3).toLongLong();
        const qint64 amount = q.value(4).toLongLong();
        const qint64 balanceAfter = q.value(5).toLongLong();
        if (what == u'c') {
            const qsizetype i = q.value(1).toLongLong();
            const UsageRecord &r = batch[i].usage;
            batch[i].charge.entry = LedgerEntry{id,
                                                account,
                                                QStringLiteral("charge"),
                                                amount,
                                                balanceAfter,
                                                r.endpoint,
                                                r.requestId,
                                                QDateTime::fromMSecsSinceEpoch(now, Qt::UTC)};
            settled[i] = true;
            continue;
        }
        const qsizetype i = firstCharge.value(q.value(7).toString(), -1);
        if (i < 0)
            continue;
        batch[i].charge.status = ChargeResult::Status::Duplicate;
        batch[i].charge.entry =
            LedgerEntry{id,
                        account,
                        QStringLiteral("charge"),
                        amount,
                        balanceAfter,
                        q.value(6).toString(),
                        q.value(7).toString(),
                        QDateTime::fromMSecsSinceEpoch(q.value(8).toLongLong(), Qt::UTC)};
        settled[i] = true;
    }
    q.finish();
    if (releaseAfter)
        run("RELEASE SAVEPOINT settle");
    for (qsizetype i : rows) {
        Settlement &s = batch[i];
        if (!settled[i]) {
            s.charge.status = ChargeResult::Status::UnknownAccount;
            s.error = QStringLiteral("unknown account %1").arg(s.usage.accountId);
        }
    }
    // PostgreSQL keeps the plan it made for a prepared statement until the tables' statistics
    // change. Made on a fresh database, that plan finds duplicates by reading the whole ledger,
    // which grows with every batch, until autovacuum first analyzes it (up to a minute). Prepared
    // again each time the rows settled here double (1,000, 2,000, 4,000...), the plan follows
    // the tables' real size.
    const qint64 before = m_pgSettled;
    m_pgSettled += rows.size();
    if (std::bit_width(quint64(m_pgSettled / 1000)) > std::bit_width(quint64(before / 1000))) {
        for (bool withMeters : {false, true}) {
            m_prepared.remove(settleText(withMeters).constData());
            m_prepared.remove(settleNewText(withMeters).constData());
            m_prepared.remove(settleOneText(withMeters).constData());
        }
    }
}
