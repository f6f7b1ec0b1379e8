#include "AddressApi.h"

#include "AddressEndpoints.h"

namespace {

struct Endpoint
{
    const char *name; // as in the path
    AddressApi::Reply (*handler)(const AddressEngine &, const QJsonObject &);
};

// Served endpoints, in the contract's order (the address testing tool lists them so).
constexpr Endpoint kEndpoints[] = {
    {"extract", AddressEndpoints::extract},
    {"extract-name", AddressEndpoints::extractName},
    {"extract-phone", AddressEndpoints::extractPhone},
    {"division-code", AddressEndpoints::divisionCode},
    {"zipcode", AddressEndpoints::zipcode},
    {"structure", AddressEndpoints::structure},
    {"correct", AddressEndpoints::correct},
    {"complete", AddressEndpoints::complete},
    {"standardize", AddressEndpoints::standardize},
    {"assessment", AddressEndpoints::assessment},
    {"geocode", AddressEndpoints::geocode},
    {"hp-geocode", AddressEndpoints::hpGeocode},
    {"extract-express", AddressEndpoints::extractExpress},
    {"search", AddressEndpoints::search},
    {"input-search", AddressEndpoints::inputSearch},
    {"transfer-coord", AddressEndpoints::transferCoord},
};

} // namespace

namespace AddressApi {

QStringList endpoints()
{
    QStringList names;
    for (const Endpoint &e : kEndpoints)
        names.append(QLatin1String(e.name));
    return names;
}

Reply call(const AddressEngine &engine, const QString &endpoint, const QJsonObject &request)
{
    for (const Endpoint &e : kEndpoints) {
        if (endpoint == QLatin1String(e.name))
            return e.handler(engine, request);
    }
    Reply r;
    r.status = 404;
    r.error = QStringLiteral("Unknown address endpoint: %1").arg(endpoint);
    return r;
}

} // namespace AddressApi
