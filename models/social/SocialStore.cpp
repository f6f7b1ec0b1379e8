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

} // namespace SocialStore
