#include "AddressRoutes.h"

#include "CoordTransform.h"
#include "DivisionMatcher.h"
#include "PhoneExtractor.h"
#include "Pipeline.h"
#include "ServerSettings.h"

#include <optional>
#include <QJsonArray>
#include <QJsonObject>
#include <QThreadPool>

namespace {

constexpr int kMaxAddressText = 2000; // characters of `text` the text endpoints accept

// transfer-coord: {text: "lon,lat", srcCoord, dstCoord?, inverse?} -> {coord_transfer: {...}}
void transferCoord(const ContextPtr &ctx, qint64 price)
{
    const auto body = ctx->jsonBody();
    if (!body)
        return;
    const QJsonValue text = body->value("text");
    if (!text.isString()) {
        ctx->respondError(400, QStringLiteral("text: required, a string \"longitude,latitude\""),
                          {}, QStringLiteral("text"));
        return;
    }
    const CoordTransform::ParseResult point = CoordTransform::parseCoordinate(text.toString());
    if (!point.ok) {
        ctx->respondError(400, QStringLiteral("text: %1").arg(point.error), {},
                          QStringLiteral("text"));
        return;
    }
    auto system = [&](const char *field, bool required) -> std::optional<CoordTransform::System> {
        const QJsonValue v = body->value(QLatin1String(field));
        if (v.isUndefined() || v.isNull()) {
            if (required)
                ctx->respondError(
                    400,
                    QStringLiteral("%1: required, one of %2")
                        .arg(QLatin1String(field), CoordTransform::acceptedSystemNames()),
                    {}, QLatin1String(field));
            return std::nullopt;
        }
        const auto s = v.isString() ? CoordTransform::parseSystem(v.toString()) : std::nullopt;
        if (!s)
            ctx->respondError(400,
                              QStringLiteral("%1: unknown coordinate system '%2'; use %3")
                                  .arg(QLatin1String(field), v.toVariant().toString(),
                                       CoordTransform::acceptedSystemNames()),
                              {}, QLatin1String(field));
        return s;
    };
    const auto src = system("srcCoord", true);
    if (!src)
        return;
    std::optional<CoordTransform::System> dst;
    if (body->contains("dstCoord") && !body->value("dstCoord").isNull()) {
        dst = system("dstCoord", false);
        if (!dst)
            return;
    }
    CoordTransform::Inverse inverse = CoordTransform::Inverse::Exact;
    const QJsonValue inv = body->value("inverse");
    if (!inv.isUndefined() && !inv.isNull()) {
        if (inv.toString() == u"one_step")
            inverse = CoordTransform::Inverse::OneStep;
        else if (inv.toString() != u"exact") {
            ctx->respondError(400,
                              QStringLiteral("inverse: must be exact (the default) or "
                                             "one_step"),
                              {}, QStringLiteral("inverse"));
            return;
        }
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
    ctx->usage().cost = price;
    ctx->respondJson(200, QJsonObject{{"coord_transfer", out}});
}

// The {text} body every text endpoint takes; answers 400 and returns nullopt when it is bad.
std::optional<QString> addressText(const ContextPtr &ctx)
{
    const auto body = ctx->jsonBody();
    if (!body)
        return std::nullopt;
    const QJsonValue text = body->value("text");
    if (!text.isString()) {
        ctx->respondError(400, QStringLiteral("text: required, a string"), {},
                          QStringLiteral("text"));
        return std::nullopt;
    }
    const QString t = text.toString();
    if (t.trimmed().isEmpty()) {
        ctx->respondError(400, QStringLiteral("text: must not be empty"), {},
                          QStringLiteral("text"));
        return std::nullopt;
    }
    if (t.size() > kMaxAddressText) {
        ctx->respondError(400,
                          QStringLiteral("text: at most %1 characters, got %2")
                              .arg(kMaxAddressText)
                              .arg(t.size()),
                          {}, QStringLiteral("text"));
        return std::nullopt;
    }
    return t;
}

void extractPhone(const ContextPtr &ctx, qint64 price)
{
    const auto text = addressText(ctx);
    if (!text)
        return;
    QJsonArray found;
    for (const PhoneExtractor::Match &m : PhoneExtractor::extract(*text))
        found.append(QJsonObject{{"start", m.start}, {"end", m.end}, {"word", m.word}});
    ctx->usage().cost = price;
    ctx->respondJson(200, QJsonObject{{"phone_extract", found}});
}

// Built once (about half a second) and shared: it is immutable.
const DivisionMatcher &divisionMatcher()
{
    static const DivisionMatcher matcher;
    return matcher;
}

void divisionCode(const ContextPtr &ctx, qint64 price)
{
    const auto text = addressText(ctx);
    if (!text)
        return;
    const DivisionMatcher::Result r = divisionMatcher().resolve(*text);
    auto name = [](const DivisionMatcher::Mention &m) {
        return m.division ? m.division->name : QString();
    };
    ctx->usage().cost = price;
    ctx->respondJson(
        200, QJsonObject{{"division_info",
                          QJsonObject{{"divcode", r.divcode()},
                                      {"division_province", name(r.province)},
                                      {"division_city", r.city.division ? r.cityName() : QString()},
                                      {"division_district", name(r.district)},
                                      {"division_street", name(r.town)}}},
                         {"status", r.isEmpty() ? "NOT_FOUND" : "OK"}});
}

// geocode: the centre of the most specific division the text names that has one (the data has
// district and city centres; towns and streets are not located yet), with its level.
void geocode(const ContextPtr &ctx, qint64 price)
{
    const auto text = addressText(ctx);
    if (!text)
        return;
    const DivisionMatcher::Result r = divisionMatcher().resolve(*text);
    const Gazetteer::Division *d = r.leaf;
    while (d && !d->hasCentre())
        d = d->parent;
    ctx->usage().cost = price;
    if (!d) {
        ctx->respondJson(200,
                         QJsonObject{{"offline_geocode",
                                      QJsonObject{{"wgs84", ""}, {"gcj02", ""}, {"level", ""}}},
                                     {"status", "NOT_FOUND"},
                                     {"message", "The text names no division with a known "
                                                 "location."}});
        return;
    }
    static const char *levels[] = {"", "province", "city", "district", "town"};
    const CoordTransform::LonLat gcj{d->lon, d->lat};
    const CoordTransform::LonLat wgs =
        CoordTransform::convert(gcj, CoordTransform::System::Gcj02, CoordTransform::System::Wgs84);
    ctx->respondJson(200, QJsonObject{{"offline_geocode",
                                       QJsonObject{{"wgs84", CoordTransform::formatCoordinate(wgs)},
                                                   {"gcj02", CoordTransform::formatCoordinate(gcj)},
                                                   {"level", levels[int(d->level)]},
                                                   {"divcode", d->codeString()}}},
                                      {"status", "OK"}});
}

} // namespace

void registerAddressRoutes(Pipeline &pipeline, const ServerSettings &settings)
{
    RouteSpec spec;
    spec.method = "POST";
    spec.pattern = QStringLiteral("/v1/address/transfer-coord");
    spec.family = QStringLiteral("address");
    spec.auth = AuthMode::ApiKey;
    spec.bucket = QStringLiteral("address");
    const qint64 price = settings.addressPricePerRequest;
    spec.reservation = price;
    spec.handler = [price](const ContextPtr &ctx) { transferCoord(ctx, price); };
    pipeline.addRoute(spec);

    spec.pattern = QStringLiteral("/v1/address/division-code");
    spec.handler = [price](const ContextPtr &ctx) { divisionCode(ctx, price); };
    pipeline.addRoute(spec);

    spec.pattern = QStringLiteral("/v1/address/geocode");
    spec.handler = [price](const ContextPtr &ctx) { geocode(ctx, price); };
    pipeline.addRoute(spec);

    // The division index takes about half a second to build: build it before the first request.
    QThreadPool::globalInstance()->start([] { divisionMatcher(); });

    spec.pattern = QStringLiteral("/v1/address/extract-phone");
    spec.handler = [price](const ContextPtr &ctx) { extractPhone(ctx, price); };
    pipeline.addRoute(spec);
}
