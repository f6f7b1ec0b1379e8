#include "AddressEndpoints.h"

#include "AddressCommon.h"
#include "StructureParser.h"

#include <QJsonArray>

// structure: {text} -> {structure: "key=value\t...", status, segments: [{key, start, end, word}]}
namespace AddressEndpoints {

using namespace AddressCommon;

Reply structure(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const QList<StructureParser::Segment> segments = engine.structureParser().parse(*text);
    QJsonArray spans;
    for (const StructureParser::Segment &s : segments)
        spans.append(QJsonObject{{"key", s.key},
                                 {"start", charOffset(*text, s.start)},
                                 {"end", charOffset(*text, s.end)},
                                 {"word", s.text}});
    return ok({{"structure", StructureParser::format(segments)},
               {"status", segments.isEmpty() ? "NOT_FOUND" : "OK"},
               {"segments", spans}});
}

} // namespace AddressEndpoints
