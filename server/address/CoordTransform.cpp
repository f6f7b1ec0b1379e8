#include "CoordTransform.h"

#include <QStringList>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace CoordTransform {

namespace {

// The constants and the evaluation order follow the standard algorithm as published (and as
// coordtransform 2.1.2 writes it), so results agree with it to the last bit or two.
constexpr double kPi = 3.1415926535897932384626;
constexpr double kXPi = 3.14159265358979324 * 3000.0 / 180.0;
constexpr double kA = 6378245.0;               // Krasovsky 1940 semi-major axis
constexpr double kEe = 0.00669342162296594323; // Krasovsky 1940 first eccentricity squared

double transformLat(double lng, double lat)
{
    double ret = -100.0 + 2.0 * lng + 3.0 * lat + 0.2 * lat * lat + 0.1 * lng * lat +
                 0.2 * std::sqrt(std::abs(lng));
    ret += (20.0 * std::sin(6.0 * lng * kPi) + 20.0 * std::sin(2.0 * lng * kPi)) * 2.0 / 3.0;
    ret += (20.0 * std::sin(lat * kPi) + 40.0 * std::sin(lat / 3.0 * kPi)) * 2.0 / 3.0;
    ret += (160.0 * std::sin(lat / 12.0 * kPi) + 320 * std::sin(lat * kPi / 30.0)) * 2.0 / 3.0;
    return ret;
}

double transformLng(double lng, double lat)
{
    double ret = 300.0 + lng + 2.0 * lat + 0.1 * lng * lng + 0.1 * lng * lat +
                 0.1 * std::sqrt(std::abs(lng));
    ret += (20.0 * std::sin(6.0 * lng * kPi) + 20.0 * std::sin(2.0 * lng * kPi)) * 2.0 / 3.0;
    ret += (20.0 * std::sin(lng * kPi) + 40.0 * std::sin(lng / 3.0 * kPi)) * 2.0 / 3.0;
    ret += (150.0 * std::sin(lng / 12.0 * kPi) + 300.0 * std::sin(lng / 30.0 * kPi)) * 2.0 / 3.0;
    return ret;
}

// The GCJ02 offset (degrees) at a point, without the bounding-box test.
LonLat offsetAt(double lng, double lat)
{
    double dlat = transformLat(lng - 105.0, lat - 35.0);
    double dlng = transformLng(lng - 105.0, lat - 35.0);
    const double radlat = lat / 180.0 * kPi;
    double magic = std::sin(radlat);
    magic = 1 - kEe * magic * magic;
    const double sqrtmagic = std::sqrt(magic);
    dlat = (dlat * 180.0) / ((kA * (1 - kEe)) / (magic * sqrtmagic) * kPi);
    dlng = (dlng * 180.0) / (kA / sqrtmagic * std::cos(radlat) * kPi);
    return {dlng, dlat};
}

// The exact inverse stops when the forward transform of its estimate is this close to the input
// (degrees, per axis): about 0.01 mm, far below the millimetre promised, and well above the
// rounding noise of doubles near 100 degrees (~1e-14).
constexpr double kInverseTolerance = 1e-10;
constexpr int kInverseMaxIterations = 30;

System canonical(System s)
{
    return s == System::Cgcs2000 ? System::Wgs84 : s;
}

// Whether s is one plain decimal number: [+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?,
// ASCII digits only (not other scripts' digits). By hand rather than with a QRegularExpression,
// which with QString::toDouble took 8% of an address worker's time under billed transfer-coord.
bool isDecimalNumber(QStringView s)
{
    const auto digit = [](QChar c) { return c >= u'0' && c <= u'9'; };
    qsizetype i = 0;
    const qsizetype n = s.size();
    const auto digits = [&] {
        const qsizetype from = i;
        while (i < n && digit(s[i]))
            ++i;
        return i - from;
    };
    if (i < n && (s[i] == u'+' || s[i] == u'-'))
        ++i;
    qsizetype mantissa = digits();
    if (i < n && s[i] == u'.') {
        ++i;
        mantissa += digits();
    }
    if (mantissa == 0)
        return false;
    if (i < n && (s[i] == u'e' || s[i] == u'E')) {
        ++i;
        if (i < n && (s[i] == u'+' || s[i] == u'-'))
            ++i;
        if (digits() == 0)
            return false;
    }
    return i == n;
}

QString quoted(const QString &s)
{
    constexpr int kShown = 32;
    if (s.size() > kShown)
        return QLatin1Char('"') + s.left(kShown) + QStringLiteral("...\"");
    return QLatin1Char('"') + s + QLatin1Char('"');
}

const QString kExpected = QStringLiteral(
    "expected \"longitude,latitude\" in decimal degrees, e.g. \"116.397128,39.916527\"");

ParseResult failure(const QString &message)
{
    ParseResult r;
    r.error = message;
    return r;
}

// Parses one trimmed field; on failure returns a message naming the field.
std::optional<double> parseNumber(QStringView field, const QString &what, QString *error)
{
    if (field.isEmpty()) {
        *error = QStringLiteral("%1 is missing; %2").arg(what, kExpected);
        return std::nullopt;
    }
    if (!isDecimalNumber(field)) {
        *error = QStringLiteral("%1 %2 is not a decimal number; %3")
                     .arg(what, quoted(field.toString()), kExpected);
        return std::nullopt;
    }
    // ASCII by now, and no longer than the whole text (kMaxCoordinateTextLength): narrowed on
    // the stack, not in a heap copy. from_chars rounds correctly, as QString::toDouble did, and
    // likewise refuses a value that overflows or underflows; it takes no '+'.
    std::array<char, kMaxCoordinateTextLength> ascii;
    const qsizetype n = std::min<qsizetype>(field.size(), qsizetype(ascii.size()));
    std::transform(field.begin(), field.begin() + n, ascii.begin(),
                   [](QChar c) { return char(c.unicode()); });
    const char *begin = ascii.data() + (ascii[0] == '+' ? 1 : 0);
    const char *end = ascii.data() + n;
    double v = 0;
    const auto [stop, ec] = std::from_chars(begin, end, v);
    if (ec != std::errc() || stop != end || !std::isfinite(v)) {
        *error = QStringLiteral("%1 %2 is not a finite number").arg(what, quoted(field.toString()));
        return std::nullopt;
    }
    return v;
}

} // namespace

bool outOfChina(double lon, double lat)
{
    return !(lon > 73.66 && lon < 135.05 && lat > 3.86 && lat < 53.55);
}

LonLat wgs84ToGcj02(LonLat p)
{
    if (outOfChina(p.lon, p.lat))
        return p;
    const LonLat d = offsetAt(p.lon, p.lat);
    return {p.lon + d.lon, p.lat + d.lat};
}

LonLat gcj02ToWgs84OneStep(LonLat p)
{
    if (outOfChina(p.lon, p.lat))
        return p;
    const LonLat d = offsetAt(p.lon, p.lat);
    // Written as coordtransform writes it (2p - (p + d)) so the two agree bit for bit.
    return {p.lon * 2 - (p.lon + d.lon), p.lat * 2 - (p.lat + d.lat)};
}

LonLat gcj02ToWgs84Exact(LonLat p, int *iterations)
{
    if (iterations)
        *iterations = 0;
    // The box test is made on the input, as the one-step inverse does; the iteration then uses
    // the offset without the test, so an estimate that strays just across the box edge does not
    // make the forward transform jump.
    if (outOfChina(p.lon, p.lat))
        return p;
    LonLat w = gcj02ToWgs84OneStep(p);
    for (int i = 1; i <= kInverseMaxIterations; ++i) {
        const LonLat d = offsetAt(w.lon, w.lat);
        const double errLon = (w.lon + d.lon) - p.lon;
        const double errLat = (w.lat + d.lat) - p.lat;
        if (std::abs(errLon) < kInverseTolerance && std::abs(errLat) < kInverseTolerance)
            break;
        w.lon -= errLon;
        w.lat -= errLat;
        if (iterations)
            *iterations = i;
    }
    return w;
}

LonLat gcj02ToBd09(LonLat p)
{
    const double lng = p.lon;
    const double lat = p.lat;
    const double z = std::sqrt(lng * lng + lat * lat) + 0.00002 * std::sin(lat * kXPi);
    const double theta = std::atan2(lat, lng) + 0.000003 * std::cos(lng * kXPi);
    return {z * std::cos(theta) + 0.0065, z * std::sin(theta) + 0.006};
}

LonLat bd09ToGcj02OneStep(LonLat p)
{
    const double x = p.lon - 0.0065;
    const double y = p.lat - 0.006;
    const double z = std::sqrt(x * x + y * y) - 0.00002 * std::sin(y * kXPi);
    const double theta = std::atan2(y, x) - 0.000003 * std::cos(x * kXPi);
    return {z * std::cos(theta), z * std::sin(theta)};
}

LonLat bd09ToGcj02Exact(LonLat p, int *iterations)
{
    if (iterations)
        *iterations = 0;
    LonLat g = bd09ToGcj02OneStep(p);
    for (int i = 1; i <= kInverseMaxIterations; ++i) {
        const LonLat b = gcj02ToBd09(g);
        const double errLon = b.lon - p.lon;
        const double errLat = b.lat - p.lat;
        if (std::abs(errLon) < kInverseTolerance && std::abs(errLat) < kInverseTolerance)
            break;
        g.lon -= errLon;
        g.lat -= errLat;
        if (iterations)
            *iterations = i;
    }
    return g;
}

LonLat convert(LonLat p, System from, System to, Inverse inverse)
{
    from = canonical(from);
    to = canonical(to);
    if (from == to)
        return p;
    // Through GCJ02, the system both others are defined against.
    LonLat gcj = p;
    if (from == System::Wgs84)
        gcj = wgs84ToGcj02(p);
    else if (from == System::Bd09)
        gcj = inverse == Inverse::Exact ? bd09ToGcj02Exact(p) : bd09ToGcj02OneStep(p);
    switch (to) {
    case System::Wgs84:
    case System::Cgcs2000:
        return inverse == Inverse::Exact ? gcj02ToWgs84Exact(gcj) : gcj02ToWgs84OneStep(gcj);
    case System::Bd09:
        return gcj02ToBd09(gcj);
    case System::Gcj02:
        return gcj;
    }
    return gcj;
}

std::optional<System> parseSystem(const QString &name)
{
    const QString n = name.trimmed().toLower();
    if (n == QLatin1String("wgs84"))
        return System::Wgs84;
    if (n == QLatin1String("gcj02"))
        return System::Gcj02;
    if (n == QLatin1String("bd09"))
        return System::Bd09;
    if (n == QLatin1String("cgcs2000"))
        return System::Cgcs2000;
    return std::nullopt;
}

QString systemKey(System system)
{
    return systemName(system).toUpper();
}

QString systemName(System system)
{
    switch (system) {
    case System::Wgs84:
        return QStringLiteral("wgs84");
    case System::Gcj02:
        return QStringLiteral("gcj02");
    case System::Bd09:
        return QStringLiteral("bd09");
    case System::Cgcs2000:
        return QStringLiteral("cgcs2000");
    }
    return QString();
}

QString acceptedSystemNames()
{
    return QStringLiteral("wgs84, gcj02, bd09 or cgcs2000");
}

ParseResult parseCoordinate(const QString &text)
{
    if (text.size() > kMaxCoordinateTextLength)
        return failure(QStringLiteral("coordinate text is too long (%1 characters, at most %2); %3")
                           .arg(text.size())
                           .arg(kMaxCoordinateTextLength)
                           .arg(kExpected));
    const QString t = text.trimmed();
    if (t.isEmpty())
        return failure(QStringLiteral("coordinate text is empty; ") + kExpected);

    QString normalized = t;
    normalized.replace(QChar(0xFF0C), QLatin1Char(',')); // full-width comma
    const QList<QStringView> parts = QStringView(normalized).split(u',');
    if (parts.size() == 1)
        return failure(QStringLiteral("coordinate text %1 has one value and no comma; %2")
                           .arg(quoted(t), kExpected));
    if (parts.size() > 2)
        return failure(QStringLiteral("coordinate text %1 has %2 comma-separated values, not 2; %3")
                           .arg(quoted(t))
                           .arg(parts.size())
                           .arg(kExpected));

    QString error;
    const auto lon = parseNumber(parts[0].trimmed(), QStringLiteral("longitude"), &error);
    if (!lon)
        return failure(error);
    const auto lat = parseNumber(parts[1].trimmed(), QStringLiteral("latitude"), &error);
    if (!lat)
        return failure(error);
    if (*lon < -180.0 || *lon > 180.0)
        return failure(
            QStringLiteral("longitude %1 is out of range (-180 to 180)").arg(parts[0].trimmed()));
    if (*lat < -90.0 || *lat > 90.0)
        return failure(
            QStringLiteral("latitude %1 is out of range (-90 to 90)").arg(parts[1].trimmed()));

    ParseResult r;
    r.ok = true;
    r.value = {*lon, *lat};
    return r;
}

QString formatCoordinate(LonLat p, int decimals)
{
    decimals = std::clamp(decimals, 0, 15);
    auto one = [decimals](double v) {
        QString s = QString::number(v, 'f', decimals);
        // "-0.000000" (a tiny negative rounded away) reads as a different point: print 0.
        if (s.startsWith(QLatin1Char('-')) && std::none_of(s.cbegin(), s.cend(), [](QChar c) {
                return c >= QLatin1Char('1') && c <= QLatin1Char('9');
            }))
            s.remove(0, 1);
        return s;
    };
    return one(p.lon) + QLatin1Char(',') + one(p.lat);
}

} // namespace CoordTransform
