#include "AddressEndpoints.h"

#include "AddressCommon.h"
#include "CoordTransform.h"
#include "DivisionMatcher.h"
#include "PhoneExtractor.h"

#include <QJsonArray>

// transfer-coord, extract-phone and division-code.
namespace AddressEndpoints {

using namespace AddressCommon;

// transfer-coord: {text: "lon,lat", srcCoord, dstCoord?, inverse?} -> {coord_transfer: {...}}
Reply transferCoord(const AddressEngine &, const QJsonObject &request)
{
    const QJsonObject *body = &request;
    const QJsonValue text = body->value("text");
    if (!text.isString())
        return fail(QStringLiteral("text"),
                    QStringLiteral("text: required, a string \"longitude,latitude\""));
    const CoordTransform::ParseResult point = CoordTransform::parseCoordinate(text.toString());
    if (!point.ok)
        return fail(QStringLiteral("text"), QStringLiteral("text: %1").arg(point.error));
    Reply error;
    auto system = [&](const char *field, bool required) -> std::optional<CoordTransform::System> {
        const QJsonValue v = body->value(QLatin1String(field));
        if (v.isUndefined() || v.isNull()) {
            if (required)
                error = fail(QLatin1String(field),
                             QStringLiteral("%1: required, one of %2")
                                 .arg(QLatin1String(field), CoordTransform::acceptedSystemNames()));
            return std::nullopt;
        }
        const auto s = v.isString() ? CoordTransform::parseSystem(v.toString()) : std::nullopt;
        if (!s)
            error = fail(QLatin1String(field),
                         QStringLiteral("%1: unknown coordinate system '%2'; use %3")
                             .arg(QLatin1String(field), v.toVariant().toString(),
                                  CoordTransform::acceptedSystemNames()));
        return s;
    };
    const auto src = system("srcCoord", true);
    if (!src)
        return error;
    std::optional<CoordTransform::System> dst;
    if (body->contains("dstCoord") && !body->value("dstCoord").isNull()) {
        dst = system("dstCoord", false);
        if (!dst)
            return error;
    }
    CoordTransform::Inverse inverse = CoordTransform::Inverse::Exact;
    const QJsonValue inv = body->value("inverse");
    if (!inv.isUndefined() && !inv.isNull()) {
        if (inv.toString() == u"one_step")
            inverse = CoordTransform::Inverse::OneStep;
        else if (inv.toString() != u"exact")
            return fail(QStringLiteral("inverse"),
                        QStringLiteral("inverse: must be exact (the default) or one_step"));
    }
    using CoordTransform::System;
    const QList<System> targets =
        dst ? QList<System>{*dst}
            : QList<System>{System::Bd09, System::Cgcs2000, System::Wgs84, System::Gcj02};
    // CGCS2000 is given as WGS84 (CoordTransform.h), so the exact inverse, the costly step,
    // runs once for the two.
    QJsonObject out;
    QString wgs84;
    for (System t : targets) {
        const bool asWgs84 = t == System::Wgs84 || t == System::Cgcs2000;
        QString value = asWgs84 ? wgs84 : QString();
        if (value.isEmpty())
            value = CoordTransform::formatCoordinate(
                CoordTransform::convert(point.value, *src, t, inverse));
        if (asWgs84)
            wgs84 = value;
        out.insert(CoordTransform::systemKey(t), value);
    }
    return ok({{"coord_transfer", out}});
}

Reply extractPhone(const AddressEngine &, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    QJsonArray found;
    for (const PhoneExtractor::Match &m : PhoneExtractor::extract(*text))
        found.append(QJsonObject{{"start", m.start}, {"end", m.end}, {"word", m.word}});
    return ok({{"phone_extract", found}});
}

Reply divisionCode(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const DivisionMatcher::Result r = engine.divisionMatcher().resolve(*text);
    auto name = [](const DivisionMatcher::Mention &m) {
        return m.division ? m.division->name : QString();
    };
    // Old names the text used (江东区, now 鄞州区): the answer names the current division, and
    // says so, so a caller can update its records.
    QJsonArray former;
    for (const DivisionMatcher::Mention *m : r.formerMentions())
        former.append(QJsonObject{{"name", text->mid(m->start, m->end - m->start)},
                                  {"level", Gazetteer::levelName(m->division->level)},
                                  {"start", charOffset(*text, m->start)},
                                  {"end", charOffset(*text, m->end)},
                                  {"current", m->division->name},
                                  {"divcode", m->division->codeString()},
                                  {"year", m->former->year},
                                  {"kind", Gazetteer::formerKindName(m->former->kind)}});
    return ok(QJsonObject{
        {"former_names", former},
        {"division_info", QJsonObject{{"divcode", r.divcode()},
                                      {"division_province", name(r.province)},
                                      {"division_city", r.city.division ? r.cityName() : QString()},
                                      {"division_district", name(r.district)},
                                      {"division_street", name(r.town)}}},
        {"status", r.isEmpty() ? "NOT_FOUND" : "OK"}});
}

} // namespace AddressEndpoints
