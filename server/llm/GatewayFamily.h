#pragma once

#include "GatewayConfig.h"
#include "ServiceFamily.h"

#include <memory>
#include <QJsonArray>

class ProviderRegistry;
struct GatewaySnapshot;

namespace GatewayScopes {
inline constexpr QLatin1StringView ProvidersRead{"providers:read"};
inline constexpr QLatin1StringView ProvidersWrite{"providers:write"};
} // namespace GatewayScopes

// The text-generation gateway (chat completions, responses, messages and GET /v1/models) as a
// service family:
//   config     the "gateway" section (GatewayConfig: providers, models, auto_model,
//              keepalive_ms, default_max_output_tokens, default_context_window) and
//              gateway.min_reservation (credits, default "0.001": the least a text request
//              holds; its worst case, CostBound.h, is held when more);
//   tables     catalog_cache (models/gateway/GatewayTables.h);
//   start      the live catalogs: loaded from the cache, refreshed at start and on timers;
//   routes     chat completions, responses, messages (GatewayRoutes.h), GET /v1/models,
//              and the providers' control API (ProvidersControl.h);
//   scopes     providers:read, providers:write.
// The registry of providers is the family's and outlives every server; the window's Providers
// panel edits it (registry()).
class GatewayFamily : public ServiceFamily
{
public:
    GatewayFamily();
    ~GatewayFamily() override;

    QString name() const override { return QStringLiteral("gateway"); }
    void configure(const QJsonObject &section, const ServerSettings &server) override;
    QList<Migrations::Component> migrations() const override;
    QStringList scopes() const override;
    QList<ErrorPrefix> errorPrefixes() const override;
    QList<RateBucket> rateBuckets() const override;
    void start(DatabaseService &db) override;
    QList<RouteSpec> routes(const ServerScope &scope) override;
    QJsonArray models() const override;
    void stop() override;

    ProviderRegistry &registry() { return *m_registry; }
    // The least a text request holds (the routes' reservation), in credit units.
    qint64 minimumReservation() const { return m_minimumReservation; }

    // Parses the section like configure(), without keeping it; throws std::runtime_error naming
    // the bad field.
    static GatewayConfig parse(const QJsonObject &section, qint64 *minimumReservation = nullptr);
    // The data of GET /v1/models: the catalog and every live catalog's models with prices.
    static QJsonArray modelsJson(const GatewaySnapshot &snapshot);

private:
    std::unique_ptr<ProviderRegistry> m_registry;
    qint64 m_minimumReservation = 1'000'000; // 0.001 credits
    qint64 m_maxStreamBuffer = 16 * 1024 * 1024;
};
