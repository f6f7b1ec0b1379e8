#pragma once

#include "CatalogKeeper.h"
#include "FamilyThread.h"
#include "ResponseCache.h"
#include "ServiceFamily.h"
#include "SocialConfig.h"

#include <memory>
#include <QMutex>
#include <QPointer>
#include <QSet>

// Pass-through social-media data and video extraction as a service family; server/social/README.md
// has the routes, the errors, the billing, the catalog and the configuration.
//   config   the "social" section (SocialConfig.h): the upstream, platforms, price, cache;
//   tables   social_catalog (models/social/SocialStore.h): the last catalog that parsed;
//   routes   GET|POST /v1/social-media/data/{action}, GET /v1/social-media/video/extract,
//            GET /openapi.json (public), and the control API /api/v1/social/catalog[/refresh]
//            (scopes social:read, social:write); the API key, the "social" rate-limit bucket;
//   thread   the catalog keeper (CatalogKeeper.h) runs on the family's own thread.
class SocialFamily : public ServiceFamily
{
public:
    SocialFamily();
    ~SocialFamily() override;

    QString name() const override { return QStringLiteral("social"); }
    void configure(const QJsonObject &section, const ServerSettings &server) override;
    QList<Migrations::Component> migrations() const override;
    QStringList scopes() const override;
    QList<ErrorPrefix> errorPrefixes() const override;
    QList<RateBucket> rateBuckets() const override;
    void start(DatabaseService &db) override;
    QList<RouteSpec> routes(const ServerScope &scope) override;
    void stop() override;

    // The social-data error envelope of its routes and of unclaimed paths under its prefix.
    static ErrorStyle errorStyle();
    const SocialConfig &config() const { return m_config; }
    KeyRotation &keys() { return m_keys; }
    // The response cache, or null when it is off.
    const std::shared_ptr<ResponseCache> &cache() const { return m_cache; }
    // On PostgreSQL with the cache on: the database whose social_responses the instances
    // share, behind this instance's own cache (a miss here is looked up there). Else null.
    DatabaseService *sharedCache() const { return m_sharedCache; }
    // Null before start() and after stop().
    CatalogKeeper *catalog() const { return m_keeper.data(); }
    // The served catalog's upstream platform names (cached per catalog); thread-safe.
    QSet<QString> platformNames(const std::shared_ptr<const SocialCatalog> &catalog) const;
    // The control API's and the window's view: the status and every platform with its rule.
    QJsonObject statusJson() const;

private:
    SocialConfig m_config;
    KeyRotation m_keys;
    std::shared_ptr<ResponseCache> m_cache;
    DatabaseService *m_sharedCache = nullptr;
    FamilyThread m_thread{QStringLiteral("social")};
    QPointer<CatalogKeeper> m_keeper;
    mutable QMutex m_platformsMutex;
    mutable std::weak_ptr<const SocialCatalog> m_platformsOf;
    mutable QSet<QString> m_platforms;
};
