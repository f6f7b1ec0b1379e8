#include "AddressEndpoints.h"

#include "AddressCommon.h"
#include "CoordTransform.h"
#include "DivisionMatcher.h"
#include "SearchIndex.h"

#include <QJsonArray>

#include <cmath>

// search and input-search, over the engine's search index.
namespace AddressEndpoints {

using namespace AddressCommon;

namespace {

constexpr int kMaxLimit = SearchIndex::kCacheSize;

// `limit`: absent means `fallback`; otherwise an integer 1..kMaxLimit.
std::optional<int> requestLimit(const QJsonObject &request, int fallback, Reply *error)
{
    const QJsonValue v = request.value("limit");
    if (v.isUndefined() || v.isNull())
        return fallback;
    const double d = v.toDouble(std::nan(""));
    if (!v.isDouble() || std::floor(d) != d || d < 1 || d > kMaxLimit) {
        *error = fail(QStringLiteral("limit"),
                      QStringLiteral("limit: an integer from 1 to %1").arg(kMaxLimit));
        return std::nullopt;
    }
    return int(d);
}

bool allDigits(QStringView s)
{
    for (QChar c : s) {
        if (c < u'0' || c > u'9')
            return false;
    }
    return !s.isEmpty();
}

// `region`: absent means everywhere; a 12-digit code (or its 2/4/6/9-digit head), a division's
// name or short form (every division of that name: 朝阳区 is in 北京 and in 长春), or a path of
// names (浙江省杭州市).
std::optional<QList<const Gazetteer::Division *>>
requestRegion(const AddressEngine &engine, const QJsonObject &request, Reply *error)
{
    const QJsonValue v = request.value("region");
    if (v.isUndefined() || v.isNull())
        return QList<const Gazetteer::Division *>{};
    const QString region = v.toString().trimmed();
    if (!v.isString() || region.isEmpty() || region.size() > 100) {
        *error = fail(QStringLiteral("region"),
                      QStringLiteral("region: a division name or 12-digit code, as a string"));
        return std::nullopt;
    }
    const Gazetteer &g = engine.divisionMatcher().gazetteer();
    QList<const Gazetteer::Division *> found;
    if (allDigits(region)) {
        const Gazetteer::Division *d = region.size() <= 12 ? g.byCode(region) : nullptr;
        if (d)
            found.append(d);
    } else {
        for (const Gazetteer::Division *d : g.findByName(region)) {
            if (!d->placeholder)
                found.append(d);
        }
        if (found.isEmpty()) {
            const DivisionMatcher::Result r = engine.divisionMatcher().resolve(region);
            if (r.leaf && !r.ambiguous)
                found.append(r.leaf);
        }
    }
    if (found.isEmpty()) {
        *error = fail(QStringLiteral("region"),
                      QStringLiteral("region: '%1' names no division").arg(region));
        return std::nullopt;
    }
    return found;
}

struct Query
{
    QString text;
    int limit = 0;
    QList<const Gazetteer::Division *> regions;
};

std::optional<Query> parse(const AddressEngine &engine, const QJsonObject &request,
                           int defaultLimit, Reply *error)
{
    const auto text = requestText(request, error);
    if (!text)
        return std::nullopt;
    const auto limit = requestLimit(request, defaultLimit, error);
    if (!limit)
        return std::nullopt;
    const auto regions = requestRegion(engine, request, error);
    if (!regions)
        return std::nullopt;
    return Query{*text, *limit, *regions};
}

QString divcodeString(qint64 code)
{
    return code > 0 ? QString::number(code).rightJustified(12, u'0') : QString();
}

} // namespace

// search: {text, limit? (1..20, default 5), region?} ->
// {search_result: [{name, address, kind, divcode, gcj02, wgs84, score}], status: OK|NOT_FOUND}
Reply search(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto q = parse(engine, request, 5, &error);
    if (!q)
        return error;
    const std::shared_ptr<const SearchIndex> index = engine.searchIndex();
    QJsonArray results;
    for (const SearchIndex::Hit &h : index->search(q->text, q->limit, q->regions)) {
        const SearchIndex::Entry &e = index->entry(h.entry);
        QString gcj;
        QString wgs;
        if (e.gcj02) {
            const CoordTransform::LonLat p{e.gcj02->lon, e.gcj02->lat};
            gcj = CoordTransform::formatCoordinate(p);
            wgs = CoordTransform::formatCoordinate(CoordTransform::convert(
                p, CoordTransform::System::Gcj02, CoordTransform::System::Wgs84));
        }
        results.append(QJsonObject{{"name", e.name},
                                   {"address", e.address},
                                   {"kind", e.kind},
                                   {"divcode", divcodeString(e.divcode)},
                                   {"gcj02", gcj},
                                   {"wgs84", wgs},
                                   {"score", h.score}});
    }
    const bool found = !results.isEmpty();
    return ok({{"search_result", results}, {"status", found ? "OK" : "NOT_FOUND"}});
}

// input-search: {text, limit? (1..20, default 10), region?} ->
// {input_search: [{name, address, kind, divcode}], status: OK|NOT_FOUND}
Reply inputSearch(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto q = parse(engine, request, 10, &error);
    if (!q)
        return error;
    const std::shared_ptr<const SearchIndex> index = engine.searchIndex();
    QJsonArray results;
    for (const SearchIndex::Hit &h : index->complete(q->text, q->limit, q->regions)) {
        const SearchIndex::Entry &e = index->entry(h.entry);
        results.append(QJsonObject{{"name", e.name},
                                   {"address", e.address},
                                   {"kind", e.kind},
                                   {"divcode", divcodeString(e.divcode)}});
    }
    const bool found = !results.isEmpty();
    return ok({{"input_search", results}, {"status", found ? "OK" : "NOT_FOUND"}});
}

} // namespace AddressEndpoints
