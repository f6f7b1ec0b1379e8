#include "AddressApi.h"

#include "CoordTransform.h"
#include "DivisionMatcher.h"
#include "PhoneExtractor.h"

#include <optional>
#include <QJsonArray>
#include <QThreadPool>

namespace {

using AddressApi::Reply;

Reply fail(const QString &param, const QString &message)
{
    Reply r;
    r.status = 400;
    r.param = param;
    r.error = message;
    return r;
}

Reply ok(QJsonObject body)
{
    Reply r;
    r.body = std::move(body);
    return r;
}

// transfer-coord: {text: "lon,lat", srcCoord, dstCoord?, inverse?} -> {coord_transfer: {...}}
Reply transferCoord(const QJsonObject &request)
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
    QJsonObject out;
    for (System t : targets)
        out.insert(CoordTransform::systemKey(t),
                   CoordTransform::formatCoordinate(
                       CoordTransform::convert(point.value, *src, t, inverse)));
    return ok({{"coord_transfer", out}});
}

// The {text} body every text endpoint takes: the text, or the 400 in *error.
std::optional<QString> addressText(const QJsonObject &body, Reply *error)
{
    const QJsonValue text = body.value("text");
    if (!text.isString()) {
        *error = fail(QStringLiteral("text"), QStringLiteral("text: required, a string"));
        return std::nullopt;
    }
    const QString t = text.toString();
    if (t.trimmed().isEmpty()) {
        *error = fail(QStringLiteral("text"), QStringLiteral("text: must not be empty"));
        return std::nullopt;
    }
    if (t.size() > AddressApi::kMaxText) {
        *error = fail(QStringLiteral("text"), QStringLiteral("text: at most %1 characters, got %2")
                                                  .arg(AddressApi::kMaxText)
                                                  .arg(t.size()));
        return std::nullopt;
    }
    return t;
}

Reply extractPhone(const QJsonObject &request)
{
    Reply error;
    const auto text = addressText(request, &error);
    if (!text)
        return error;
    QJsonArray found;
    for (const PhoneExtractor::Match &m : PhoneExtractor::extract(*text))
        found.append(QJsonObject{{"start", m.start}, {"end", m.end}, {"word", m.word}});
    return ok({{"phone_extract", found}});
}

// Built once (about half a second) and shared: it is immutable.
const DivisionMatcher &divisionMatcher()
{
    static const DivisionMatcher matcher;
    return matcher;
}

Reply divisionCode(const QJsonObject &request)
{
    Reply error;
    const auto text = addressText(request, &error);
    if (!text)
        return error;
    const DivisionMatcher::Result r = divisionMatcher().resolve(*text);
    auto name = [](const DivisionMatcher::Mention &m) {
        return m.division ? m.division->name : QString();
    };
    return ok(QJsonObject{
        {"division_info", QJsonObject{{"divcode", r.divcode()},
                                      {"division_province", name(r.province)},
                                      {"division_city", r.city.division ? r.cityName() : QString()},
                                      {"division_district", name(r.district)},
                                      {"division_street", name(r.town)}}},
        {"status", r.isEmpty() ? "NOT_FOUND" : "OK"}});
}

// geocode: the centre of the most specific division the text names that has one (the data has
// district and city centres; towns and streets are not located yet), with its level.
Reply geocode(const QJsonObject &request)
{
    Reply error;
    const auto text = addressText(request, &error);
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

} // namespace

namespace AddressApi {

QStringList endpoints()
{
    return {QStringLiteral("transfer-coord"), QStringLiteral("extract-phone"),
            QStringLiteral("division-code"), QStringLiteral("geocode")};
}

Reply call(const QString &endpoint, const QJsonObject &request)
{
    if (endpoint == u"transfer-coord")
        return transferCoord(request);
    if (endpoint == u"extract-phone")
        return extractPhone(request);
    if (endpoint == u"division-code")
        return divisionCode(request);
    if (endpoint == u"geocode")
        return geocode(request);
    Reply r;
    r.status = 404;
    r.error = QStringLiteral("Unknown address endpoint: %1").arg(endpoint);
    return r;
}

void warmUp()
{
    QThreadPool::globalInstance()->start([] { divisionMatcher(); });
}

} // namespace AddressApi
