#include "AddressEndpoints.h"

#include "AddressCommon.h"
#include "LocationExtractor.h"
#include "NameExtractor.h"

#include <QJsonArray>

// extract (location_extract) and extract-name (person_extract).
namespace AddressEndpoints {

using namespace AddressCommon;

// {text} -> {location_extract: [{start, end, type: "LOC", word}]}, offsets in characters.
Reply extract(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    QJsonArray found;
    for (const LocationExtractor::Location &l : engine.locationExtractor().extract(*text))
        found.append(QJsonObject{{"start", charOffset(*text, l.start)},
                                 {"end", charOffset(*text, l.end)},
                                 {"type", "LOC"},
                                 {"word", l.word}});
    return ok({{"location_extract", found}});
}

// {text} -> {person_extract: [{start, end, word}]}, offsets in characters.
Reply extractName(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    QJsonArray found;
    for (const NameExtractor::Match &m : engine.nameExtractor().extract(*text))
        found.append(QJsonObject{{"start", charOffset(*text, m.start)},
                                 {"end", charOffset(*text, m.end)},
                                 {"word", m.word}});
    return ok({{"person_extract", found}});
}

} // namespace AddressEndpoints
