#include "AddressEndpoints.h"

#include "AddressCommon.h"
#include "AddressCompleter.h"
#include "AddressCorrector.h"

#include <QJsonArray>

// correct, complete and standardize (shapes: resources/address/README.md).
namespace AddressEndpoints {

using namespace AddressCommon;

namespace {

using Level = Gazetteer::Level;

// "杭州=city\t余杭区=district": the divisions as the (corrected) text writes them, value first.
QString regions(const AddressCorrector::Reading &r)
{
    QStringList pairs;
    for (Level level : {Level::Province, Level::City, Level::District, Level::Town}) {
        const DivisionMatcher::Mention &m = r.divisions.at(level);
        if (m.division && !m.inferred())
            pairs.append(r.text.mid(m.start, m.end - m.start) + u'=' +
                         AddressCorrector::levelKey(level));
    }
    return pairs.join(u'\t');
}

QJsonArray corrections(const QString &text, const AddressCorrector::Reading &r)
{
    QJsonArray out;
    for (const AddressCorrector::Correction &c : r.corrections)
        out.append(QJsonObject{{"start", charOffset(text, c.start)},
                               {"end", charOffset(text, c.end)},
                               {"from", c.from},
                               {"to", c.to},
                               {"key", AddressCorrector::levelKey(c.division->level)}});
    return out;
}

} // namespace

// {address_correct: ["杭州=city\t余杭区=district", ...], corrections: [...], status}
Reply correct(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const QList<AddressCorrector::Reading> readings = engine.corrector().correct(*text);
    QJsonArray strings;
    for (const AddressCorrector::Reading &r : readings) {
        const QString s = regions(r);
        if (!s.isEmpty() && !strings.contains(s))
            strings.append(s);
    }
    const AddressCorrector::Reading &best = readings.constFirst();
    const char *status = strings.isEmpty()            ? "NOT_FOUND"
                         : best.corrections.isEmpty() ? "OK"
                                                      : "CORRECTED";
    return ok({{"address_correct", strings},
               {"corrections", corrections(*text, best)},
               {"status", status}});
}

// {complete: "prov=...\tcity=...", filled: ["prov", "city"], status}
Reply complete(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const AddressCompleter::Result r = engine.completer().complete(*text);
    return ok({{"complete", StructureParser::format(r.segments)},
               {"filled", QJsonArray::fromStringList(r.filled)},
               {"status", r.divisions.isEmpty() ? "NOT_FOUND" : "OK"}});
}

// {street_std, structure, corrections, status}
Reply standardize(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const AddressCorrector::Reading best = engine.corrector().correct(*text, 1).constFirst();
    const AddressCompleter::Result r = engine.completer().complete(best.text);
    QList<StructureParser::Segment> kept;
    for (const StructureParser::Segment &s : r.segments) {
        if (!AddressCompleter::isNoise(s.key))
            kept.append(s);
    }
    return ok({{"street_std", AddressCompleter::standardText(kept)},
               {"structure", StructureParser::format(kept)},
               {"corrections", corrections(*text, best)},
               {"status", r.divisions.isEmpty() ? "NOT_FOUND" : "OK"}});
}

} // namespace AddressEndpoints
