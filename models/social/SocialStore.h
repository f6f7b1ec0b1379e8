#pragma once

#include "Migrations.h"
#include "Store.h"

#include <optional>
#include <QByteArray>
#include <QString>

// The social-data family's table (server/social/README.md, "Catalog"): social_catalog keeps the
// last upstream catalog that parsed (one row), so a restart serves the same actions with the
// upstream down, and every instance on a shared database starts from the same catalog.
namespace SocialStore {

const Migrations::Component &migrations();

struct CachedCatalog
{
    QByteArray document; // the upstream's OpenAPI description, as fetched
    QString source;      // the URL (or file) it came from
    qint64 fetchedMs = 0;
    int actions = 0;
};

// The stored catalog, if any. Throws StoreError.
std::optional<CachedCatalog> load(Store &store);
// Replaces the stored catalog. Throws StoreError.
void save(Store &store, const CachedCatalog &catalog);

} // namespace SocialStore
