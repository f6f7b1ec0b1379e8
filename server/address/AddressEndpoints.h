#pragma once

#include "AddressApi.h"

#include <QJsonObject>

// One function per POST /v1/address/{name} endpoint: the request body in, the reply out.
// AddressApi.cpp lists the ones that are served; the comment names the file of each.
namespace AddressEndpoints {

using AddressApi::Reply;

Reply transferCoord(const QJsonObject &request);  // BasicEndpoints.cpp
Reply extractPhone(const QJsonObject &request);   // BasicEndpoints.cpp
Reply divisionCode(const QJsonObject &request);   // BasicEndpoints.cpp
Reply geocode(const QJsonObject &request);        // GeocodeEndpoints.cpp
Reply hpGeocode(const QJsonObject &request);      // GeocodeEndpoints.cpp
Reply zipcode(const QJsonObject &request);        // LocalDataEndpoints.cpp
Reply structure(const QJsonObject &request);      // StructureEndpoints.cpp
Reply extract(const QJsonObject &request);        // ExtractEndpoints.cpp
Reply extractName(const QJsonObject &request);    // ExtractEndpoints.cpp
Reply extractExpress(const QJsonObject &request); // ExpressEndpoints.cpp
Reply correct(const QJsonObject &request);        // NormalizeEndpoints.cpp
Reply complete(const QJsonObject &request);       // NormalizeEndpoints.cpp
Reply standardize(const QJsonObject &request);    // NormalizeEndpoints.cpp
Reply assessment(const QJsonObject &request);     // AssessmentEndpoints.cpp
Reply search(const QJsonObject &request);         // SearchEndpoints.cpp
Reply inputSearch(const QJsonObject &request);    // SearchEndpoints.cpp

} // namespace AddressEndpoints
