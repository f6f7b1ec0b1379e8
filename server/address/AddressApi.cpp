#include "AddressApi.h"

#include "AddressAssessor.h"
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
        AddressAssessor::shared(); // the corrector, completer and area codes
        SearchIndex::shared();     // pinyin keys of every division and the prefix cache
    });
}

} // namespace AddressApi
