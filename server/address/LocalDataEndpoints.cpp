#include "AddressEndpoints.h"

#include "AddressCommon.h"
#include "DivisionMatcher.h"
#include "LocalData.h"

// zipcode: answered only from imported data (LocalData); never an invented code.
namespace AddressEndpoints {

using namespace AddressCommon;

Reply zipcode(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const DivisionMatcher::Result r = engine.divisionMatcher().resolve(*text);
    if (r.isEmpty()) {
        Reply reply = ok(QJsonObject{{"zipcode", ""},
                                     {"status", "NOT_FOUND"},
                                     {"message", "The text names no administrative division."}});
        reply.billable = false;
        return reply;
    }
    const auto data = engine.localData();
    const auto match = data->zipcode(r.leaf, *text);
    if (!match) {
        Reply reply = ok(QJsonObject{
            {"zipcode", ""},
            {"status", "NO_DATA"},
            {"divcode", r.divcode()},
            {"message", QStringLiteral("no zip code is imported for %1; import a CSV with %2")
                            .arg(Gazetteer::pathName(*r.leaf), importHint("zipcodes"))}});
        reply.billable = false;
        return reply;
    }
    const Gazetteer::Division *d = match->division;
    return ok(QJsonObject{
        {"zipcode", match->entry->zipcode},
        {"status", "OK"},
        {"level", match->byRoad ? QStringLiteral("road") : Gazetteer::levelName(d->level)},
        {"divcode", d->codeString()},
        {"matched", match->byRoad ? match->entry->road : Gazetteer::pathName(*d)}});
}

} // namespace AddressEndpoints
