#include "AddressApi.h"

#include "AddressCommon.h"
#include "AddressEndpoints.h"
#include "SearchIndex.h"
#include "StructureParser.h"

#include <QThreadPool>

namespace {

struct Endpoint
{
    const char *name; // as in the path
    AddressApi::Reply (*handler)(const QJsonObject &);
};

// Served endpoints, in the order the address testing tool lists them.
constexpr Endpoint kEndpoints[] = {
    {"transfer-coord", AddressEndpoints::transferCoord},
    {"extract-phone", AddressEndpoints::extractPhone},
    {"division-code", AddressEndpoints::divisionCode},
    {"geocode", AddressEndpoints::geocode},
    {"extract", AddressEndpoints::extract},
    {"extract-name", AddressEndpoints::extractName},
    {"extract-express", AddressEndpoints::extractExpress},
    {"hp-geocode", AddressEndpoints::hpGeocode},
    {"zipcode", AddressEndpoints::zipcode},
    {"structure", AddressEndpoints::structure},
    {"search", AddressEndpoints::search},
    {"input-search", AddressEndpoints::inputSearch},
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

Reply call(const QString &endpoint, const QJsonObject &request)
{
    for (const Endpoint &e : kEndpoints) {
        if (endpoint == QLatin1String(e.name))
            return e.handler(request);
    }
    Reply r;
    r.status = 404;
    r.error = QStringLiteral("Unknown address endpoint: %1").arg(endpoint);
    return r;
}

void warmUp()
{
    QThreadPool::globalInstance()->start([] {
        AddressCommon::divisionMatcher();
        StructureParser::shared();
        SearchIndex::shared(); // pinyin keys of every division and the prefix cache
    });
}

} // namespace AddressApi
