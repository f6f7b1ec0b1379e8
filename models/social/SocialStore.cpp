#include "SocialStore.h"

#include "DatabaseConfig.h"

#include <QSqlError>
#include <QSqlQuery>

namespace SocialStore {

namespace {

void run(QSqlQuery &q)
{
    if (!q.exec())
        throw StoreError(q.lastError().text().toStdString());
}

} // namespace

const Migrations::Component &migrations()
{
    static const Migrations::Component c{
        QStringLiteral("social"),
        {
            {
                "CREATE TABLE social_catalog (id INTEGER PRIMARY KEY, source TEXT NOT NULL, "
                "fetched_ms BIGINT NOT NULL, actions INTEGER NOT NULL, document {BLOB})",
            },
            // 2: the response cache the instances on PostgreSQL share
            {
                "{POSTGRES}CREATE UNLOGGED TABLE IF NOT EXISTS social_responses (cache_key TEXT "
                "PRIMARY KEY, status INTEGER NOT NULL, content_type TEXT NOT NULL, body BYTEA "
                "NOT NULL, expires_ms BIGINT NOT NULL)",
                "{POSTGRES}CREATE INDEX IF NOT EXISTS social_responses_expiry ON "
                "social_responses(expires_ms)",
            },
        }};
    return c;
}

std::optional<CachedCatalog> load(Store &store)
{
    QSqlQuery q(store.database());
    q.setForwardOnly(true);
    q.prepare(QStringLiteral(
        "SELECT document, source, fetched_ms, actions FROM social_catalog WHERE id = 1"));
    run(q);
    if (!q.next())
        return std::nullopt;
    return CachedCatalog{q.value(0).toByteArray(), q.value(1).toString(), q.value(2).toLongLong(),
                         q.value(3).toInt()};
}

void save(Store &store, const CachedCatalog &catalog)
{
    // One statement on both databases: an upsert of the single row.
    QSqlQuery q(store.database());
    q.prepare(QStringLiteral(
        "INSERT INTO social_catalog (id, source, fetched_ms, actions, document) VALUES "
        "(1, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET source = excluded.source, "
        "fetched_ms = excluded.fetched_ms, actions = excluded.actions, "
        "document = excluded.document"));
    q.addBindValue(catalog.source);
    q.addBindValue(catalog.fetchedMs);
    q.addBindValue(catalog.actions);
    q.addBindValue(catalog.document);
    run(q);
}

std::optional<SharedResponse> findResponse(Store &store, const QByteArray &key, qint64 nowMs)
{
    QSqlQuery q(store.database());
    q.setForwardOnly(true);
    q.prepare(QStringLiteral("SELECT status, content_type, body, expires_ms FROM "
                             "social_responses WHERE cache_key = ? AND expires_ms > ?"));
    q.addBindValue(QString::fromUtf8(key));
    q.addBindValue(nowMs);
    run(q);
    if (!q.next())
        return std::nullopt;
    return SharedResponse{q.value(0).toInt(), q.value(1).toString().toUtf8(),
                          q.value(2).toByteArray(), q.value(3).toLongLong()};
}

void storeResponse(Store &store, const QByteArray &key, const SharedResponse &answer, qint64 nowMs,
                   qint64 maxBytes)
{
    QSqlQuery q(store.database());
    q.prepare(QStringLiteral(
        "INSERT INTO social_responses (cache_key, status, content_type, body, expires_ms) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (cache_key) DO UPDATE SET status = "
        "EXCLUDED.status, content_type = EXCLUDED.content_type, body = EXCLUDED.body, "
        "expires_ms = EXCLUDED.expires_ms"));
    q.addBindValue(QString::fromUtf8(key));
    q.addBindValue(answer.status);
    q.addBindValue(QString::fromUtf8(answer.contentType));
    q.addBindValue(answer.body);
    q.addBindValue(answer.expiresMs);
    run(q);
    q.prepare(QStringLiteral("DELETE FROM social_responses WHERE expires_ms <= ?"));
    q.addBindValue(nowMs);
    run(q);
    // The bound: the bodies that expire last are kept, up to maxBytes.
    q.prepare(QStringLiteral(
        "DELETE FROM social_responses WHERE cache_key IN (SELECT cache_key FROM (SELECT "
        "cache_key, SUM(octet_length(body)) OVER (ORDER BY expires_ms DESC, cache_key) AS "
        "running FROM social_responses) AS r WHERE r.running > ?)"));
    q.addBindValue(maxBytes);
    run(q);
}

} // namespace SocialStore
