#pragma once

#include "Migrations.h"
#include "Store.h"

#include <optional>
#include <QByteArray>
#include <QString>

// The social-data family's tables (server/social/README.md, "Catalog"): social_catalog keeps the
// last upstream catalog that parsed (one row), so a restart serves the same actions with the
// upstream down, and every instance on a shared database starts from the same catalog; on
// PostgreSQL social_responses is the response cache the instances share.
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

// The response cache shared by the instances on one PostgreSQL database (server/social/
// README.md, "Response cache"): social_responses, unlogged (a cache). PostgreSQL only.
struct SharedResponse
{
    int status = 200;
    QByteArray contentType;
    QByteArray body;
    qint64 expiresMs = 0;
};
// The answer stored under key, unless it expired before nowMs. Throws StoreError.
std::optional<SharedResponse> findResponse(Store &store, const QByteArray &key, qint64 nowMs);
// Stores (or replaces) the answer, drops the expired ones, and the soonest to expire while the
// table holds more than maxBytes of bodies. Throws StoreError.
void storeResponse(Store &store, const QByteArray &key, const SharedResponse &answer, qint64 nowMs,
                   qint64 maxBytes);

} // namespace SocialStore
