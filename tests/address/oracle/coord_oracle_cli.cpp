// Reads "FROM TO LON LAT" lines on stdin (FROM and TO: wgs84, gcj02, bd09, cgcs2000; TO with
// the suffix "-onestep", e.g. wgs84-onestep, converts with Inverse::OneStep instead of Exact) and
// prints "LON LAT" per line with 17 significant digits, or "ERROR message". Used by compare.mjs
// against the npm coordtransform.
#include "CoordTransform.h"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

using namespace CoordTransform;

int main()
{
    std::ios::sync_with_stdio(false);
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string from, to;
        double lon = 0, lat = 0;
        if (!(in >> from >> to >> lon >> lat)) {
            std::cout << "ERROR malformed line\n";
            continue;
        }
        Inverse inverse = Inverse::Exact;
        const std::string suffix = "-onestep";
        if (to.size() > suffix.size() && to.ends_with(suffix)) {
            to.resize(to.size() - suffix.size());
            inverse = Inverse::OneStep;
        }
        const auto f = parseSystem(QString::fromStdString(from));
        const auto t = parseSystem(QString::fromStdString(to));
        if (!f || !t) {
            std::cout << "ERROR unknown system\n";
            continue;
        }
        const LonLat r = convert({lon, lat}, *f, *t, inverse);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g %.17g\n", r.lon, r.lat);
        std::cout << buf;
    }
    return 0;
}
