#include "AddressEndpoints.h"

#include "AddressCommon.h"
#include "CoordTransform.h"

// geocode (and later hp-geocode).
namespace AddressEndpoints {

using namespace AddressCommon;

// geocode: the centre of the most specific division the text names that has one (the data has
// district and city centres; towns and streets are not located yet), with its level.
Reply geocode(const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const DivisionMatcher::Result r = divisionMatcher().resolve(*text);
    const Gazetteer::Division *d = r.leaf;
    while (d && !d->hasCentre())
        d = d->parent;
    if (!d) {
        return ok(QJsonObject{
            {"offline_geocode", QJsonObject{{"wgs84", ""}, {"gcj02", ""}, {"level", ""}}},
            {"status", "NOT_FOUND"},
            {"message", "The text names no division with a known "
                        "location."}});
    }
    static const char *levels[] = {"", "province", "city", "district", "town"};
    const CoordTransform::LonLat gcj{d->lon, d->lat};
    const CoordTransform::LonLat wgs =
        CoordTransform::convert(gcj, CoordTransform::System::Gcj02, CoordTransform::System::Wgs84);
    return ok(QJsonObject{
        {"offline_geocode", QJsonObject{{"wgs84", CoordTransform::formatCoordinate(wgs)},
                                        {"gcj02", CoordTransform::formatCoordinate(gcj)},
                                        {"level", levels[int(d->level)]},
                                        {"divcode", d->codeString()}}},
        {"status", "OK"}});
}

} // namespace AddressEndpoints
