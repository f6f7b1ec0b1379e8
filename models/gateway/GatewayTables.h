#pragma once

#include "Migrations.h"

// The text gateway's tables: catalog_cache, the last good model list of each live-catalog
// provider, so a restart resolves and prices its models without the upstream (read and written
// by Store::saveCatalogCache / loadCatalogCache).
namespace GatewayTables {
const Migrations::Component &migrations();
}
