#include "AddressTables.h"

namespace AddressTables {

const Migrations::Component &migrations()
{
    static const Migrations::Component c{
        QStringLiteral("address"),
        {
            // 1 (before components: schema_migrations version 3)
            {
                "CREATE TABLE address_zipcodes (divcode BIGINT NOT NULL, road TEXT NOT NULL, "
                "zipcode TEXT NOT NULL, imported_ms BIGINT NOT NULL, "
                "PRIMARY KEY (divcode, road))",
                "CREATE TABLE address_pois (id {ID}, divcode BIGINT NOT NULL, name TEXT NOT NULL, "
                "address TEXT NOT NULL, lon DOUBLE PRECISION NOT NULL, "
                "lat DOUBLE PRECISION NOT NULL, category TEXT NOT NULL, aliases TEXT NOT NULL, "
                "imported_ms BIGINT NOT NULL)",
                "CREATE UNIQUE INDEX address_pois_key ON address_pois(divcode, name)",
            },
        },
        3}; // legacyVersion
    return c;
}

} // namespace AddressTables
