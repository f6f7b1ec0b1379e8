#pragma once

#include <QString>

#include <optional>

// Coordinate conversions between the systems used for Chinese maps, for the offline address
// engine (POST /v1/address/transfer-coord, server/address/README.md). A plain library: no HTTP, no
// I/O.
//
// Systems:
//   WGS84     GPS, the world's reference (EPSG:4326).
//   CGCS2000  China's geodetic datum. It differs from WGS84 by centimetres at most, below
//             anything these conversions can resolve, so it is treated as equal to WGS84.
//   GCJ02     the obfuscated "Mars" system required for published maps in mainland China (Amap,
//             Tencent, Google China): WGS84 plus a non-linear offset of typically 100 to 700 m.
//   BD09      Baidu's system: GCJ02 with a further rotation and shift (the standard x_pi
//             formulas).
//
// The offset is applied only inside mainland China's bounding box, the same test the npm package
// coordtransform (our oracle) and most published implementations use: longitude strictly between
// 73.66 and 135.05, latitude strictly between 3.86 and 53.55. Points outside pass through
// WGS84 <-> GCJ02 unshifted (the BD09 <-> GCJ02 step applies everywhere, as in the standard
// algorithm). The box is coarse: parts of neighbouring countries inside it are shifted too.
//
// GCJ02 -> WGS84 has no closed form. Two inverses are provided:
//   - gcj02ToWgs84OneStep: subtracts the offset computed at the GCJ02 point itself. This is what
//     the anchor product, coordtransform's gcj02towgs84 and most tools return. Its error is the
//     change of the offset over the offset's own length: mean ~0.8 m, up to ~4.7 m near the
//     edges of the box (tst_coord measures and bounds it).
//   - gcj02ToWgs84Exact: a fixed-point iteration that refines the estimate until the forward
//     transform of the estimate matches the GCJ02 input within 1e-10 degrees (about 0.01 mm);
//     it converges in a handful of iterations.
//
// BD09 -> GCJ02 is the same story on a smaller scale: the standard x_pi formula for it is not
// the exact inverse of GCJ02 -> BD09 (round trips miss by up to ~0.2 m), so it too comes as
// bd09ToGcj02OneStep (the standard formula, coordtransform's bd09togcj02) and bd09ToGcj02Exact
// (the same fixed-point iteration and tolerance against gcj02ToBd09).
//
// The endpoint's default is the exact (iterative) inverses, Inverse::Exact. Reason: they return
// the true point to well under a millimetre, so WGS84 -> GCJ02 -> WGS84 and every BD09 round trip
// give back the input, whereas the one-step error (measured over China's box: mean ~0.8 m, up to
// ~4.7 m near its edges) shows in the 5th or 6th decimal of answers formatted with 6 decimals
// (~0.1 m). The price is disagreeing with one-step tools (the anchor product, coordtransform) by
// that same amount in the WGS84/CGCS2000 (and BD09 -> GCJ02) answers; forward conversions agree
// with them to the last bit or two (the oracle test measures 0 to 3e-14 degrees). Callers who must
// reproduce those tools can ask for Inverse::OneStep.
//
// Within the offset's length (< 0.01 degree) of the box edge, an exact inverse may land just
// outside the box, where the forward transform no longer shifts: the box test is made on the
// input, as the one-step inverse makes it, and the answer is still the iteration's.
namespace CoordTransform {

enum class System
{
    Wgs84,
    Gcj02,
    Bd09,
    Cgcs2000
};

enum class Inverse
{
    Exact,  // iterative, < 1 mm; the default
    OneStep // the common approximations (coordtransform's gcj02towgs84 and bd09togcj02)
};

struct LonLat
{
    double lon = 0; // degrees, -180..180
    double lat = 0; // degrees, -90..90
};

// True when the point lies outside the bounding box above (no GCJ02 offset applied).
bool outOfChina(double lon, double lat);

LonLat wgs84ToGcj02(LonLat p);
LonLat gcj02ToWgs84OneStep(LonLat p);
// iterations, when given, receives the number of refinement steps taken (0 outside China).
LonLat gcj02ToWgs84Exact(LonLat p, int *iterations = nullptr);
LonLat gcj02ToBd09(LonLat p);
LonLat bd09ToGcj02OneStep(LonLat p);
LonLat bd09ToGcj02Exact(LonLat p, int *iterations = nullptr);

// Any pair of systems; from == to (or WGS84 <-> CGCS2000) returns p unchanged. inverse picks
// the GCJ02 -> WGS84 and BD09 -> GCJ02 steps; the forward steps are the same either way.
LonLat convert(LonLat p, System from, System to, Inverse inverse = Inverse::Exact);

// "wgs84", "gcj02", "bd09", "cgcs2000": case-insensitive, surrounding whitespace ignored.
std::optional<System> parseSystem(const QString &name);
// The contract's response keys: "WGS84", "GCJ02", "BD09", "CGCS2000".
QString systemKey(System system);
// Lower-case request spelling: "wgs84", "gcj02", "bd09", "cgcs2000".
QString systemName(System system);
// For error messages: "wgs84, gcj02, bd09 or cgcs2000".
QString acceptedSystemNames();

struct ParseResult
{
    bool ok = false;
    LonLat value;
    QString error; // when !ok: a sentence for the client, naming what is wrong
};

// Longest text parseCoordinate accepts (characters); longer input is refused unread.
inline constexpr int kMaxCoordinateTextLength = 128;

// Parses "lon,lat": two decimal numbers (optional sign, optional fraction, optional exponent)
// separated by one ',' or a full-width '，' (U+FF0C), with any whitespace around either number.
// Refused with a message: empty text, text longer than kMaxCoordinateTextLength, not exactly two
// numbers, anything that is not a plain decimal number (letters, hex, "nan", "inf"), longitude
// outside -180..180 or latitude outside -90..90 (bounds included).
ParseResult parseCoordinate(const QString &text);

// Digits after the decimal point in formatCoordinate's output by default. Six decimals resolve
// 0.11 m of latitude: finer than consumer GPS and than the one-step inverse's error (so the
// choice of inverse stays visible), and the precision map APIs commonly return. Callers that need
// the exact inverse's full accuracy (round trips through text) can pass 8 (~1 mm) or more.
inline constexpr int kDefaultDecimals = 6;

// "lon,lat" with a fixed number of decimals (clamped to 0..15), no spaces, '.' as the decimal
// point whatever the locale, and never "-0.000000" (negative zero after rounding prints as 0).
QString formatCoordinate(LonLat p, int decimals = kDefaultDecimals);

} // namespace CoordTransform
