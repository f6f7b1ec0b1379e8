#pragma once

#include "DatabaseConfig.h"
#include "Records.h"

#include <functional>
#include <memory>
#include <optional>
#include <QHash>
#include <QSqlQuery>

class SqliteStatements;

struct UsageQuery
{
    qint64 accountId = 0;
    QDateTime from; // inclusive; invalid: unbounded
    QDateTime to;   // exclusive; invalid: unbounded
    qint64 keyId = 0;
    QString model;
    qint64 beforeId = 0; // cursor: records with a smaller id (newest first)
    int limit = 100;
};

// One group of GET /api/v1/usage/summary: requests, cost, tokens and meters summed over the
// records of a key, a model or a day (UTC).
struct UsageSummaryRow
{
    QString group; // the key's id, the model, or the day (YYYY-MM-DD)
    qint64 requests = 0;
    qint64 cost = 0;
    qint64 inputTokens = 0;
    qint64 outputTokens = 0;
    qint64 cacheReadTokens = 0;
    qint64 cacheWriteTokens = 0;
    QList<UsageMeter> meters; // by name, none of them 0
};

struct UsagePage
{
    QList<UsageRecord> records;
    bool hasMore = false;
};

struct UsageBucket
{
    QDateTime start;
    qint64 requests = 0;
    qint64 cost = 0;
};

struct ChargeResult
{
    enum class Status
    {
        Committed,
        Insufficient,
        Duplicate,
        UnknownAccount
    };
    Status status = Status::Committed;
    LedgerEntry entry; // for Duplicate: the entry recorded earlier
};

// Synchronous data access on one thread's connection. The CLI uses it directly; the server
// reaches it only through DatabaseService's reader and writer threads. Methods throw
// StoreError; they do not open transactions of their own except transaction().
class Store
{
public:
    explicit Store(QSqlDatabase db, DatabaseConfig::Kind kind);

    QSqlDatabase database() const { return m_db; }
    bool isPostgres() const { return m_kind == DatabaseConfig::Kind::Postgres; }
    void transaction(const std::function<void()> &body);

    qint64 defaultAccountId();

    CreatedSecret createApiKey(qint64 accountId, const QString &name, const QString &tier,
                               const KeyRules &rules = {});
    // Changes a key's tier and rules (the name when non-empty); false: no such key. A revoked
    // key may be changed (its rules show in the list) but stays revoked.
    bool updateApiKey(qint64 accountId, qint64 id, const QString &name, const QString &tier,
                      const KeyRules &rules);
    // What a key's usage records cost from fromMs (inclusive) to toMs (exclusive; 0: no end),
    // in credit units: its settled spending in a budget period.
    qint64 keySpent(qint64 keyId, qint64 fromMs, qint64 toMs = 0);
    QList<ApiKeyRecord> listApiKeys(qint64 accountId);
    std::optional<ApiKeyRecord> apiKey(qint64 accountId, qint64 id);
    std::optional<ApiKeyRecord> findApiKeyByHash(const QByteArray &hash);
    bool revokeApiKey(qint64 accountId, qint64 id); // false: no such live key

    CreatedSecret createControlToken(qint64 accountId, const QString &name,
                                     const QStringList &scopes, const QDateTime &expires);
    QList<ControlTokenRecord> listControlTokens(qint64 accountId);
    std::optional<ControlTokenRecord> findControlTokenByHash(const QByteArray &hash);
    bool revokeControlToken(qint64 accountId, qint64 id);

    // Writes last-used times; values older than what is stored are ignored.
    void touchApiKey(qint64 id, const QDateTime &when);
    void touchControlToken(qint64 id, const QDateTime &when);

    qint64 balance(qint64 accountId);
    // The balance with the id of the account's newest ledger entry (0: none), read together,
    // so that readers of balances at different times can tell which is newer.
    struct BalanceMark
    {
        qint64 balance = 0;
        qint64 ledgerId = 0;
    };
    BalanceMark balanceMark(qint64 accountId);
    // Appends a ledger entry and moves the balance in the same statement pair. amount is the
    // signed change; for charges the balance must stay >= floor or nothing is written.
    // A kind + requestId pair already present is reported as Duplicate and not applied twice.
    ChargeResult applyLedger(qint64 accountId, const QString &kind, qint64 amount,
                             const QString &reason, const QString &requestId, qint64 floor);
    QList<LedgerEntry> ledger(qint64 accountId, int limit, qint64 beforeId = 0);
    qint64 ledgerSum(qint64 accountId);

    // Stores a usage record with its meters and returns its id; throws StoreError when its
    // account does not exist (on PostgreSQL no foreign key checks that: Migrations.cpp, core
    // step 5).
    qint64 insertUsage(const UsageRecord &record);
    // The id of a stored usage record with the record's account, time and request id (0: none;
    // an empty request id matches nothing). For a settlement retried after a lost connection,
    // which may have committed it (DatabaseService::settleOne); found through the account and
    // time index.
    qint64 storedUsageId(const UsageRecord &record);

    // One settlement of a batch: a usage record and, when its cost is positive, its charge.
    struct Settlement
    {
        UsageRecord usage;   // in: the record (time set); out: with its id when stored
        ChargeResult charge; // out
        QString error;       // out: why this one alone was not stored (UnknownAccount)
    };
    // Settles a batch as applyLedger("charge", -cost, endpoint, requestId, no floor) then
    // insertUsage for each item in order would (a duplicate charge stores no usage record), in
    // a few statements per batch rather than several per item: on SQLite one balance update
    // per account and multi-row inserts of the ledger entries and usage records, written again
    // after the duplicate checks when the ledger's unique index refuses a repeated charge
    // (models/SettleBatch.cpp); on PostgreSQL all of it in one statement, which is
    // atomic without a transaction (DbWorker::Commit::Alone). Inside the caller's transaction
    // if any (on PostgreSQL only transaction()'s, which it knows of: a statement refused there
    // aborts the transaction unless a savepoint guards it); throws StoreError when a statement
    // fails, and then the caller must roll back whatever the batch wrote.
    void settleBatch(QList<Settlement> &batch);
    // Frees what the connection keeps only for speed, all of it made again on use: SQLite's
    // page cache (up to 2 MB) and settleBatch's statements (about 1.5 MB once batches of 256
    // have been settled). For a connection that has gone quiet (DbWorker); nothing on
    // PostgreSQL, whose caches are the server's. Not inside a transaction.
    void releaseMemory();
    // The records with their meters.
    UsagePage usage(const UsageQuery &query);
    // query's filters (not its cursor or limit), grouped by "key", "model" or "day" (UTC),
    // ordered by group.
    QList<UsageSummaryRow> usageSummary(const UsageQuery &query, const QString &groupBy);
    QList<UsageBucket> usageBuckets(qint64 accountId, const QDateTime &from, qint64 bucketMs);

    // Changes seen by every process (Migrations.cpp, core step 6): each topic's counter
    // ("keys", "tokens", "credits"), bumped by triggers whoever writes.
    QHash<QString, qint64> changeCounters();

    // State shared by the instances on one PostgreSQL database (server/SharedState.h), on the
    // core's unlogged tables and function (step 7).
    // A batch of a server's calls in one round trip (switchyard_admit): the hand-backs, then
    // each request's rate-limit take (bucket empty: none) and, when allowed, its hold (amount
    // 0: none): on the key's budget first when keyId is set, then on the account's credit.
    // One result per request, in order.
    struct SharedCall
    {
        QString bucket;
        int perMinute = 0;
        qint64 accountId = 0;
        qint64 amount = 0;
        qint64 keyId = 0;  // 0: no budget to hold against
        qint64 budget = 0; // the key's budget and the bounds of its period (toMs 0: none)
        qint64 fromMs = 0;
        qint64 toMs = 0;
    };
    struct SharedAnswer
    {
        bool allowed = true;
        double tokens = 0;
        bool admitted = false;
        qint64 balance = 0;
        qint64 held = 0;
        bool withinBudget = true; // false: the key's budget refused (admitted is false)
        qint64 keySpent = 0;      // settled in the period
        qint64 keyHeld = 0;       // every live instance's holds on the key's budget
    };
    QList<SharedAnswer> sharedAdmit(const QString &instance, qint64 aliveMs,
                                    const QHash<qint64, qint64> &releases,
                                    const QList<SharedCall> &calls);
    // Sets the instance's holds to `held` (account -> amount; accounts not in it: none), in a
    // transaction of its own.
    void sharedSetHolds(const QString &instance, const QHash<qint64, qint64> &held);
    // Notes the instance alive now; true when its row was missing (new, reaped, or the
    // database lost its unlogged tables in a crash).
    bool sharedHeartbeat(const QString &instance);
    // Instances seen within aliveMs.
    int sharedInstances(qint64 aliveMs);
    // Forgets instances not seen within deadMs with their holds, and token buckets idle long
    // enough to be full again (a minute).
    void sharedSweep(qint64 deadMs);
    void sharedLeave(const QString &instance);

    // Alerts (server/Alerts.h): sets whether the alert `subject` has fired; true when this
    // call changed it (or made it), so that of the instances seeing one crossing exactly one
    // fires.
    bool setAlertState(const QString &subject, bool fired, qint64 nowMs);
    // Forgets what no longer decides anything: alerts not fired (absent reads the same), and
    // fired budget alerts of periods that began before cutoffMs (a total budget's, whose
    // period begins at 0, are kept). Returns the rows removed.
    int pruneAlertStates(qint64 cutoffMs);

    // Live model catalogs: the raw list per provider and when it was fetched.
    struct CatalogCacheEntry
    {
        QString provider;
        QByteArray body;
        QDateTime fetched;
    };
    void saveCatalogCache(const QString &provider, const QByteArray &body, const QDateTime &when);
    QList<CatalogCacheEntry> catalogCache();

private:
    // settleBatch's two ways, given the settlements to store (all but the batch's repeated
    // charges; firstCharge maps a request id to the one charging it): SQLite in a few statements on
    // its own API once settleSqliteAsNew has found a repeat (SettleBatch.cpp), PostgreSQL in one
    // statement (SettleBatchPostgres.cpp).
    void settleSqlite(QList<Settlement> &batch, const QList<qsizetype> &rows,
                      const QHash<QString, qsizetype> &firstCharge, qint64 now);
    void settlePostgres(QList<Settlement> &batch, const QList<qsizetype> &rows,
                        const QHash<QString, qsizetype> &firstCharge, qint64 now);
    // SQLite: the whole batch written as if no charge repeated one stored before or in the
    // batch; false, with nothing written (the outcomes to be cleared), when one did
    // (SettleBatch.cpp).
    bool settleSqliteAsNew(QList<Settlement> &batch, qint64 now);
    // settleSqlite's writes, the rows already marked Duplicate left out.
    void writeSqlite(QList<Settlement> &batch, const QList<qsizetype> &rows, qint64 now);
    // A statement prepared once per connection, keyed by the address of its text (which must
    // outlive the Store: a literal or static storage).
    QSqlQuery &prepared(const char *sql);
    bool accountExists(qint64 accountId);
    // Fills the records' meters from usage_meters (each list empty before).
    void readMeters(QList<UsageRecord> &records);
    static void exec(QSqlQuery &q);

    QSqlDatabase m_db;
    DatabaseConfig::Kind m_kind;
    QHash<const char *, QSqlQuery> m_prepared;
    std::shared_ptr<SqliteStatements> m_sqlite; // SQLite: settleBatch's statements
    // PostgreSQL: rows settled on this connection; settlePostgres prepares its statement again
    // as they double (SettleBatchPostgres.cpp).
    qint64 m_pgSettled = 0;
    // Inside transaction(): settlePostgres then guards a statement that may be refused with a
    // savepoint, since a failed statement aborts the transaction around it.
    bool m_inTransaction = false;
    qint64 m_defaultAccount = 0;
};
