#pragma once

#include "AddressApi.h"
#include "AddressEngine.h"

#include <QJsonObject>

// One function per POST /v1/address/{name} endpoint: the engine to answer from and the request
// body in, the reply out. AddressApi.cpp lists the ones that are served; the comment names the
// file of each.
namespace AddressEndpoints {

using AddressApi::Reply;

Reply transferCoord(const AddressEngine &, const QJsonObject &);  // BasicEndpoints.cpp
Reply extractPhone(const AddressEngine &, const QJsonObject &);   // BasicEndpoints.cpp
Reply divisionCode(const AddressEngine &, const QJsonObject &);   // BasicEndpoints.cpp
Reply geocode(const AddressEngine &, const QJsonObject &);        // GeocodeEndpoints.cpp
Reply hpGeocode(const AddressEngine &, const QJsonObject &);      // GeocodeEndpoints.cpp
Reply zipcode(const AddressEngine &, const QJsonObject &);        // LocalDataEndpoints.cpp
Reply structure(const AddressEngine &, const QJsonObject &);      // StructureEndpoints.cpp
Reply extract(const AddressEngine &, const QJsonObject &);        // ExtractEndpoints.cpp
Reply extractName(const AddressEngine &, const QJsonObject &);    // ExtractEndpoints.cpp
Reply extractExpress(const AddressEngine &, const QJsonObject &); // ExpressEndpoints.cpp
Reply correct(const AddressEngine &, const QJsonObject &);        // NormalizeEndpoints.cpp
Reply complete(const AddressEngine &, const QJsonObject &);       // NormalizeEndpoints.cpp
Reply standardize(const AddressEngine &, const QJsonObject &);    // NormalizeEndpoints.cpp
Reply assessment(const AddressEngine &, const QJsonObject &);     // AssessmentEndpoints.cpp
Reply search(const AddressEngine &, const QJsonObject &);         // SearchEndpoints.cpp
Reply inputSearch(const AddressEngine &, const QJsonObject &);    // SearchEndpoints.cpp

} // namespace AddressEndpoints
