#include "AddressEndpoints.h"

#include "AddressCommon.h"
#include "CoordTransform.h"
#include "DivisionMatcher.h"
#include "LocalData.h"

// geocode and hp-geocode: an imported point of interest the text names (LocalData) when there
// is one, else the centre of the most specific division with a known centre (the gazetteer has
// district and city centres; towns have none).
namespace AddressEndpoints {

using namespace AddressCommon;
using Division = Gazetteer::Division;

namespace {

// wgs84, gcj02 and level of a GCJ-02 point, plus the fields the caller adds.
QJsonObject point(double lon, double lat, const QString &level)
{
    const CoordTransform::LonLat gcj{lon, lat};
    const CoordTransform::LonLat wgs =
        CoordTransform::convert(gcj, CoordTransform::System::Gcj02, CoordTransform::System::Wgs84);
    return QJsonObject{{"wgs84", CoordTransform::formatCoordinate(wgs)},
                       {"gcj02", CoordTransform::formatCoordinate(gcj)},
                       {"level", level}};
}

const Division *locatedDivision(const Division *d)
{
    while (d && !d->hasCentre())
        d = d->parent;
    return d;
}

struct Located
{
    QJsonObject point; // empty when nothing was found
    QString message;   // for hp-geocode: what data would make the answer more precise
};

// streets: hp-geocode (POIs by street address too, and a message when falling back).
Located locate(const AddressEngine &engine, const QString &text, bool streets)
{
    const DivisionMatcher::Result r = engine.divisionMatcher().resolve(text);
    const auto data = engine.localData();
    if (const auto poi = data->findPoi(text, r.leaf, streets)) {
        QJsonObject p = point(poi->poi->lon, poi->poi->lat, QStringLiteral("poi"));
        p.insert("matched", poi->poi->name);
        p.insert("divcode", poi->poi->division->codeString());
        return {p, {}};
    }
    const Division *d = locatedDivision(r.leaf);
    if (!d)
        return {};
    QJsonObject p = point(d->lon, d->lat, Gazetteer::levelName(d->level));
    p.insert("matched", d->name);
    p.insert("divcode", d->codeString());
    if (!streets) // geocode: no message
        return {p, {}};
    const QString where = Gazetteer::pathName(*r.leaf);
    const QString centre = QStringLiteral("this is the centre of %1").arg(Gazetteer::pathName(*d));
    const QString how = importHint("pois");
    QString message;
    if (data->poiCount() == 0) {
        message = QStringLiteral("No points of interest are imported, so %1; import POIs with %2 "
                                 "for a more precise point.")
                      .arg(centre, how);
    } else if (const qsizetype n = data->poiCountWithin(r.leaf); n == 0) {
        message = QStringLiteral("No point of interest is imported for %1, so %2; import its POIs "
                                 "with %3 for a more precise point.")
                      .arg(where, centre, how);
    } else {
        message = QStringLiteral("None of the %1 points of interest imported for %2 is named in "
                                 "the text or has its street address, so %3; name one, or "
                                 "import the place with %4.")
                      .arg(n)
                      .arg(where, centre, how);
    }
    if (d != r.leaf) {
        message += QStringLiteral(" The data has no centre for %1 (%2 level).")
                       .arg(r.leaf->name, Gazetteer::levelName(r.leaf->level));
    }
    return {p, message};
}

// The answer of geocode (field offline_geocode) and hp-geocode (hp_geocode, with streets and a
// message when it falls back to a division).
Reply answer(const AddressEngine &engine, const QJsonObject &request, const char *field,
             bool streets)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const Located l = locate(engine, *text, streets);
    if (l.point.isEmpty()) {
        return ok(QJsonObject{
            {QLatin1String(field),
             QJsonObject{
                 {"wgs84", ""}, {"gcj02", ""}, {"level", ""}, {"matched", ""}, {"divcode", ""}}},
            {"status", "NOT_FOUND"},
            {"message", "The text names no division with a known location and no imported "
                        "point of interest."}});
    }
    QJsonObject body{{QLatin1String(field), l.point}, {"status", "OK"}};
    if (!l.message.isEmpty())
        body.insert("message", l.message);
    return ok(body);
}

} // namespace

// geocode: {"offline_geocode": {wgs84, gcj02, level, matched, divcode}, "status"}.
Reply geocode(const AddressEngine &engine, const QJsonObject &request)
{
    return answer(engine, request, "offline_geocode", false);
}

// hp-geocode: the most precise point the data supports: a POI whose name and street address
// the text has > a POI by street address > a POI by name > district centre > city centre.
Reply hpGeocode(const AddressEngine &engine, const QJsonObject &request)
{
    return answer(engine, request, "hp_geocode", true);
}

} // namespace AddressEndpoints
