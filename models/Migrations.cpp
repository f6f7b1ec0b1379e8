#include "Migrations.h"

#include <QDateTime>
#include <QSqlError>
#include <QSqlQuery>
#include <QStringList>

namespace {

// Dialect-neutral SQL: {ID} becomes the auto-increment primary key of each database; times are
// integer milliseconds since the epoch and money integer units on both.
const QList<QStringList> &steps()
{
    static const QList<QStringList> s = {
        // 1: accounts, credentials, ledger, usage
        {
            "CREATE TABLE accounts (id {ID}, name TEXT NOT NULL UNIQUE, "
            "balance BIGINT NOT NULL DEFAULT 0, created_ms BIGINT NOT NULL)",
            "CREATE TABLE api_keys (id {ID}, account_id BIGINT NOT NULL REFERENCES accounts(id), "
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
            "CREATE UNIQUE INDEX ledger_once ON ledger(kind, request_id) WHERE request_id <> ''",
            "CREATE TABLE usage_records (id {ID}, "
            "account_id BIGINT NOT NULL REFERENCES accounts(id), key_id BIGINT, token_id BIGINT, "
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
        // 2: the last good model list of each live-catalog provider, so a restart works offline
        {
            "CREATE TABLE catalog_cache (provider TEXT PRIMARY KEY, body TEXT NOT NULL, "
            "fetched_ms BIGINT NOT NULL)",
        },
        // 3: imported address data (zip codes, points of interest), shared by every instance;
        // coordinates GCJ-02, aliases separated by '|'
        {
            "CREATE TABLE address_zipcodes (divcode BIGINT NOT NULL, road TEXT NOT NULL, "
            "zipcode TEXT NOT NULL, imported_ms BIGINT NOT NULL, PRIMARY KEY (divcode, road))",
            "CREATE TABLE address_pois (id {ID}, divcode BIGINT NOT NULL, name TEXT NOT NULL, "
            "address TEXT NOT NULL, lon DOUBLE PRECISION NOT NULL, "
            "lat DOUBLE PRECISION NOT NULL, category TEXT NOT NULL, aliases TEXT NOT NULL, "
            "imported_ms BIGINT NOT NULL)",
            "CREATE UNIQUE INDEX address_pois_key ON address_pois(divcode, name)",
        },
    };
    return s;
}

void exec(QSqlQuery &q, const QString &sql)
{
    if (!q.exec(sql))
        throw StoreError(QStringLiteral("migration failed: %1 (%2)")
                             .arg(q.lastError().text(), sql.left(80))
                             .toStdString());
}

int currentVersion(QSqlDatabase db)
{
    QSqlQuery q(db);
    exec(q, QStringLiteral("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
    return q.next() ? q.value(0).toInt() : 0;
}

} // namespace

namespace Migrations {

int latestVersion()
{
    return int(steps().size());
}

int apply(QSqlDatabase db, DatabaseConfig::Kind kind)
{
    const bool pg = kind == DatabaseConfig::Kind::Postgres;
    const QString id = pg ? QStringLiteral("BIGSERIAL PRIMARY KEY")
                          : QStringLiteral("INTEGER PRIMARY KEY AUTOINCREMENT");
    QSqlQuery q(db);
    exec(q, QStringLiteral("CREATE TABLE IF NOT EXISTS schema_migrations "
                           "(version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL)"));
    for (int version = currentVersion(db) + 1; version <= latestVersion(); ++version) {
        exec(q, pg ? QStringLiteral("BEGIN") : QStringLiteral("BEGIN IMMEDIATE"));
        try {
            if (pg)
                exec(q, QStringLiteral("SELECT pg_advisory_xact_lock(7262937)"));
            if (currentVersion(db) >= version) { // another instance got there first
                exec(q, QStringLiteral("COMMIT"));
                continue;
            }
            const QString now = QString::number(QDateTime::currentMSecsSinceEpoch());
            for (QString sql : steps().at(version - 1)) {
                sql.replace(QLatin1String("{ID}"), id).replace(QLatin1String("{NOW}"), now);
                exec(q, sql);
            }
            exec(q, QStringLiteral("INSERT INTO schema_migrations (version, applied_ms) "
                                   "VALUES (%1, %2)")
                        .arg(version)
                        .arg(now));
            exec(q, QStringLiteral("COMMIT"));
        } catch (...) {
            q.exec(QStringLiteral("ROLLBACK"));
            throw;
        }
    }
    return currentVersion(db);
}

} // namespace Migrations
