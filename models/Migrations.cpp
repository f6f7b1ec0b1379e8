#include "Migrations.h"

#include <QDateTime>
#include <QSqlError>
#include <QSqlQuery>
#include <QStringList>
#include <utility>

namespace {

// Dialect-neutral SQL: {ID} becomes the auto-increment primary key of each database, {BLOB} its
// binary type; times are integer milliseconds since the epoch and money integer units on both.
const Migrations::Component &core()
{
    static const Migrations::Component c{
        QStringLiteral("core"),
        {
            // 1: accounts, credentials, ledger, usage
            {
                "CREATE TABLE accounts (id {ID}, name TEXT NOT NULL UNIQUE, "
                "balance BIGINT NOT NULL DEFAULT 0, created_ms BIGINT NOT NULL)",
                "CREATE TABLE api_keys (id {ID}, account_id BIGINT NOT NULL REFERENCES "
                "accounts(id), "
                "name TEXT NOT NULL, prefix TEXT NOT NULL, secret_hash TEXT NOT NULL UNIQUE, "
                "tier TEXT NOT NULL DEFAULT 'default', created_ms BIGINT NOT NULL, "
                "last_used_ms BIGINT, revoked_ms BIGINT)",
                "CREATE INDEX api_keys_account ON api_keys(account_id)",
                "CREATE TABLE control_tokens (id {ID}, "
                "account_id BIGINT NOT NULL REFERENCES accounts(id), name TEXT NOT NULL, "
                "prefix TEXT NOT NULL, secret_hash TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL, "
                "created_ms BIGINT NOT NULL, expires_ms BIGINT, last_used_ms BIGINT, "
                "revoked_ms BIGINT)",
                "CREATE INDEX control_tokens_account ON control_tokens(account_id)",
                "CREATE TABLE ledger (id {ID}, account_id BIGINT NOT NULL REFERENCES accounts(id), "
                "kind TEXT NOT NULL CHECK (kind IN ('grant', 'charge', 'refund')), "
                "amount BIGINT NOT NULL, balance_after BIGINT NOT NULL, reason TEXT NOT NULL, "
                "request_id TEXT NOT NULL, created_ms BIGINT NOT NULL)",
                "CREATE INDEX ledger_account ON ledger(account_id, id)",
                // A request is charged (or refunded) at most once.
                "CREATE UNIQUE INDEX ledger_once ON ledger(kind, request_id) WHERE request_id <> "
                "''",
                "CREATE TABLE usage_records (id {ID}, "
                "account_id BIGINT NOT NULL REFERENCES accounts(id), key_id BIGINT, token_id "
                "BIGINT, "
                "time_ms BIGINT NOT NULL, endpoint TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', "
                "input_tokens BIGINT NOT NULL DEFAULT 0, output_tokens BIGINT NOT NULL DEFAULT 0, "
                "cache_read_tokens BIGINT NOT NULL DEFAULT 0, "
                "cache_write_tokens BIGINT NOT NULL DEFAULT 0, "
                "characters BIGINT NOT NULL DEFAULT 0, audio_ms BIGINT NOT NULL DEFAULT 0, "
                "requests BIGINT NOT NULL DEFAULT 1, cost BIGINT NOT NULL DEFAULT 0, "
                "status INTEGER NOT NULL, latency_ms INTEGER NOT NULL, request_id TEXT NOT NULL, "
                "estimated INTEGER NOT NULL DEFAULT 0)",
                "CREATE INDEX usage_account_time ON usage_records(account_id, time_ms)",
                "CREATE INDEX usage_request ON usage_records(request_id)",
                "INSERT INTO accounts (name, balance, created_ms) VALUES ('default', 0, {NOW})",
            },
            // 2: images billed by the image-task family (server/images)
            {
                "ALTER TABLE usage_records ADD COLUMN images BIGINT NOT NULL DEFAULT 0",
            },
            // 3: no query looks usage up by request id; the index cost every billed request a
            // page write (tests/bench/README.md, "The charge path")
            {
                "DROP INDEX IF EXISTS usage_request",
            },
            // 4: SQLite codes CHECK (kind IN (...)) as a temporary table built for every row
            // inserted (about a tenth of a settlement's work in callgrind); the same rule as
            // comparisons. SQLite cannot alter a constraint, so the table is rebuilt, ids and
            // AUTOINCREMENT sequence kept. PostgreSQL keeps its constraint (an array test).
            {
                "{SQLITE}CREATE TABLE ledger_new (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "account_id BIGINT NOT NULL REFERENCES accounts(id), kind TEXT NOT NULL CHECK "
                "(kind = 'grant' OR kind = 'charge' OR kind = 'refund'), amount BIGINT NOT NULL, "
                "balance_after BIGINT NOT NULL, reason TEXT NOT NULL, request_id TEXT NOT NULL, "
                "created_ms BIGINT NOT NULL)",
                "{SQLITE}INSERT INTO ledger_new (id, account_id, kind, amount, balance_after, "
                "reason, request_id, created_ms) SELECT id, account_id, kind, amount, "
                "balance_after, reason, request_id, created_ms FROM ledger ORDER BY id",
                "{SQLITE}DELETE FROM sqlite_sequence WHERE name = 'ledger_new'",
                "{SQLITE}UPDATE sqlite_sequence SET name = 'ledger_new' WHERE name = 'ledger'",
                "{SQLITE}DROP TABLE ledger",
                "{SQLITE}ALTER TABLE ledger_new RENAME TO ledger",
                "{SQLITE}CREATE INDEX ledger_account ON ledger(account_id, id)",
                "{SQLITE}CREATE UNIQUE INDEX ledger_once ON ledger(kind, request_id) WHERE "
                "request_id <> ''",
            },
            // 5: PostgreSQL checked each ledger entry's and usage record's account with a
            // trigger per row, about a quarter of a settlement batch's time there. Accounts are
            // never deleted, and the writes check the account themselves: a charge updates its
            // account first, a usage record is stored only when its account exists (Store.h).
            // SQLite's check is an index lookup, and dropping it would rebuild both tables.
            {
                "{POSTGRES}ALTER TABLE ledger DROP CONSTRAINT IF EXISTS ledger_account_id_fkey",
                "{POSTGRES}ALTER TABLE usage_records DROP CONSTRAINT IF EXISTS "
                "usage_records_account_id_fkey",
            },
        }};
    return c;
}

void exec(QSqlQuery &q, const QString &sql)
{
    if (!q.exec(sql))
        throw StoreError(QStringLiteral("migration failed: %1 (%2)")
                             .arg(q.lastError().text(), sql.left(80))
                             .toStdString());
}

int appliedVersion(QSqlDatabase db, const QString &component)
{
    QSqlQuery q(db);
    q.prepare(QStringLiteral(
        "SELECT COALESCE(MAX(version), 0) FROM schema_components WHERE component = ?"));
    q.addBindValue(component);
    if (!q.exec())
        throw StoreError(
            QStringLiteral("migration failed: %1").arg(q.lastError().text()).toStdString());
    return q.next() ? q.value(0).toInt() : 0;
}

// Databases made before migrations had components kept one sequence in schema_migrations:
// 1 the core, 2 the gateway's catalog cache, 3 the address data. Recorded once, under the lock.
void adoptLegacyVersions(QSqlDatabase db, QSqlQuery &q, const QString &now)
{
    if (!db.tables().contains(QStringLiteral("schema_migrations")))
        return;
    exec(q, QStringLiteral("SELECT COUNT(*) FROM schema_components"));
    if (q.next() && q.value(0).toInt() > 0)
        return;
    exec(q, QStringLiteral("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
    const int legacy = q.next() ? q.value(0).toInt() : 0;
    const char *components[] = {"core", "gateway", "address"};
    for (int v = 1; v <= legacy && v <= 3; ++v)
        exec(q, QStringLiteral("INSERT INTO schema_components (component, version, applied_ms) "
                               "VALUES ('%1', 1, %2)")
                    .arg(QLatin1String(components[v - 1]), now));
}

} // namespace

namespace Migrations {

const Component &coreComponent()
{
    return core();
}

int latestVersion(const QList<Component> &families)
{
    qsizetype n = core().steps.size();
    for (const Component &c : families)
        n += c.steps.size();
    return int(n);
}

int apply(QSqlDatabase db, DatabaseConfig::Kind kind, const QList<Component> &families)
{
    const bool pg = kind == DatabaseConfig::Kind::Postgres;
    const QString id = pg ? QStringLiteral("BIGSERIAL PRIMARY KEY")
                          : QStringLiteral("INTEGER PRIMARY KEY AUTOINCREMENT");
    const QString blob = pg ? QStringLiteral("BYTEA") : QStringLiteral("BLOB");
    QSqlQuery q(db);
    exec(q, QStringLiteral("CREATE TABLE IF NOT EXISTS schema_components (component TEXT NOT NULL, "
                           "version INTEGER NOT NULL, applied_ms BIGINT NOT NULL, "
                           "PRIMARY KEY (component, version))"));
    auto begin = [&] {
        exec(q, pg ? QStringLiteral("BEGIN") : QStringLiteral("BEGIN IMMEDIATE"));
        if (pg) // several instances starting together take turns
            exec(q, QStringLiteral("SELECT pg_advisory_xact_lock(7262937)"));
    };
    {
        begin();
        try {
            adoptLegacyVersions(db, q, QString::number(QDateTime::currentMSecsSinceEpoch()));
            exec(q, QStringLiteral("COMMIT"));
        } catch (...) {
            q.exec(QStringLiteral("ROLLBACK"));
            throw;
        }
    }
    QList<Component> all{core()};
    all.append(families);
    int applied = 0;
    for (const Component &c : all) {
        for (int version = appliedVersion(db, c.name) + 1; version <= c.steps.size(); ++version) {
            begin();
            try {
                if (appliedVersion(db, c.name) >= version) { // another instance got there first
                    exec(q, QStringLiteral("COMMIT"));
                    continue;
                }
                const QString now = QString::number(QDateTime::currentMSecsSinceEpoch());
                for (QString sql : c.steps.at(version - 1)) {
                    for (const auto &[prefix, only] :
                         {std::pair{QLatin1String("{SQLITE}"), false},
                          std::pair{QLatin1String("{POSTGRES}"), true}})
                        if (sql.startsWith(prefix)) {
                            sql = pg == only ? sql.mid(prefix.size()) : QString();
                            break;
                        }
                    if (sql.isEmpty())
                        continue;
                    sql.replace(QLatin1String("{ID}"), id)
                        .replace(QLatin1String("{BLOB}"), blob)
                        .replace(QLatin1String("{NOW}"), now);
                    exec(q, sql);
                }
                exec(q, QStringLiteral("INSERT INTO schema_components (component, version, "
                                       "applied_ms) VALUES ('%1', %2, %3)")
                            .arg(c.name)
                            .arg(version)
                            .arg(now));
                exec(q, QStringLiteral("COMMIT"));
            } catch (...) {
                q.exec(QStringLiteral("ROLLBACK"));
                throw;
            }
        }
        applied += appliedVersion(db, c.name);
    }
    return applied;
}

} // namespace Migrations
