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
        }};
    return c;
}

} // namespace GatewayTables
