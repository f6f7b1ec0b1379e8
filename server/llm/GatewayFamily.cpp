#include "GatewayFamily.h"

#include "ConfigFields.h"
#include "Gateway.h"
#include "gateway/GatewayTables.h"
#include "GatewayRoutes.h"
#include "MessagesEnvelope.h"
#include "Money.h"
#include "ProviderRegistry.h"
#include "ProvidersControl.h"

#include <QJsonObject>

GatewayFamily::GatewayFamily()
    : m_registry(std::make_unique<ProviderRegistry>(GatewayConfig::defaults(), QString()))
{
}

GatewayFamily::~GatewayFamily() = default;

GatewayConfig GatewayFamily::parse(const QJsonObject &section, qint64 *minimumReservation)
{
    GatewayConfig config = GatewayConfig::fromJson(section);
    // Zero would admit every request, with no credit check at all (Pipeline::reserve).
    const qint64 units =
        ConfigFields(section, QStringLiteral("gateway"))
            .credits(QStringLiteral("min_reservation"), 0, QStringLiteral("0.001"), {.lo = 1});
    if (minimumReservation && units > 0)
        *minimumReservation = units;
    return config;
}

void GatewayFamily::configure(const QJsonObject &section, const ServerSettings &server)
{
    const GatewayConfig config = parse(section, &m_minimumReservation);
    m_registry = std::make_unique<ProviderRegistry>(config, server.configPath);
    m_maxStreamBuffer = server.maxStreamBuffer;
}

QList<Migrations::Component> GatewayFamily::migrations() const
{
    return {GatewayTables::migrations()};
}

QStringList GatewayFamily::scopes() const
{
    return {GatewayScopes::ProvidersRead, GatewayScopes::ProvidersWrite};
}

QList<ErrorPrefix> GatewayFamily::errorPrefixes() const
{
    return {{QStringLiteral("/v1/messages"), messagesErrorStyle()}};
}

QList<RateBucket> GatewayFamily::rateBuckets() const
{
    // Chat completions' bucket, shared with the decisions family's routes.
    return {{QStringLiteral("chat"), 60}};
}

void GatewayFamily::start(DatabaseService &db)
{
    m_registry->startCatalogSync(&db);
}

void GatewayFamily::stop()
{
    m_registry->stopCatalogSync();
}

QJsonArray GatewayFamily::modelsJson(const GatewaySnapshot &snapshot)
{
    QJsonArray data = snapshot.catalog.toJson();
    // Live-catalog models, priced as listed (or as overridden locally).
    for (auto p = snapshot.live.cbegin(); p != snapshot.live.cend(); ++p) {
        for (const CatalogModel &m : p.value())
            data.append(
                ModelCatalog::entryJson(ProviderRegistry::liveEntry(snapshot.config, p.key(), m)));
    }
    return data;
}

QJsonArray GatewayFamily::models() const
{
    return modelsJson(*m_registry->snapshot());
}

QList<RouteSpec> GatewayFamily::routes(const ServerScope &scope)
{
    auto *gateway = new Gateway(*m_registry, m_maxStreamBuffer, scope.parent());
    QList<RouteSpec> routes = gatewayRoutes(*gateway, m_minimumReservation);
    routes.append((new ProvidersControl(*m_registry, scope.parent()))->routes());
    return routes;
}

std::unique_ptr<ServiceFamily> makeFamily_llm()
{
    return std::make_unique<GatewayFamily>();
}
