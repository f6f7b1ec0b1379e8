#include "GatewayTables.h"

namespace GatewayTables {

const Migrations::Component &migrations()
{
    static const Migrations::Component c{
        QStringLiteral("gateway"),
        {
            // 1 (before components: schema_migrations version 2)
            {
                "CREATE TABLE catalog_cache (provider TEXT PRIMARY KEY, body TEXT NOT NULL, "
                "fetched_ms BIGINT NOT NULL)",
            },
            // 2: a live catalog one instance fetched is installed by every other at once (the
            // "catalogs" topic of the core's change feed, models/ChangeFeed.h)
            {
                "INSERT INTO change_counters (topic, n) VALUES ('catalogs', 0) ON CONFLICT "
                "(topic) DO NOTHING",
                "{SQLITE}CREATE TRIGGER IF NOT EXISTS catalogs_added AFTER INSERT ON "
                "catalog_cache BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = "
                "'catalogs'; END",
                "{SQLITE}CREATE TRIGGER IF NOT EXISTS catalogs_changed AFTER UPDATE ON "
                "catalog_cache BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = "
                "'catalogs'; END",
                "{POSTGRES}DROP TRIGGER IF EXISTS catalogs_changed ON catalog_cache",
                "{POSTGRES}CREATE TRIGGER catalogs_changed AFTER INSERT OR UPDATE ON "
                "catalog_cache FOR EACH STATEMENT EXECUTE FUNCTION switchyard_changed('catalogs')",
            },
        },
        2}; // legacyVersion
    return c;
}

} // namespace GatewayTables
