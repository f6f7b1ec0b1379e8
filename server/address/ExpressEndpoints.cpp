#include "AddressEndpoints.h"

#include "AddressCommon.h"
#include "ExpressExtractor.h"

// extract-express.
namespace AddressEndpoints {

using namespace AddressCommon;

// {text} -> {express_extract: {person_info, phone_info, prov_info, city_info, district_info,
// road_info, road_no_info, poi_info}}, every field a string, "" when absent.
Reply extractExpress(const AddressEngine &engine, const QJsonObject &request)
{
    Reply error;
    const auto text = requestText(request, &error);
    if (!text)
        return error;
    const ExpressExtractor::Result r = engine.expressExtractor().extract(*text);
    return ok({{"express_extract", QJsonObject{{"person_info", r.person},
                                               {"phone_info", r.phone},
                                               {"prov_info", r.province},
                                               {"city_info", r.city},
                                               {"district_info", r.district},
                                               {"road_info", r.road},
                                               {"road_no_info", r.roadNo},
                                               {"poi_info", r.poi}}}});
}

} // namespace AddressEndpoints
