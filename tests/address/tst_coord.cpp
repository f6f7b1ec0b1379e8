#include "CoordTransform.h"

#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTest>

#include <cmath>

using namespace CoordTransform;

namespace {

// Ground distance in metres between two nearby points (equirectangular; exact enough for the
// sub-metre distances measured here).
double metres(LonLat a, LonLat b)
{
    constexpr double kMetresPerDegree = 111'319.49; // 2*pi*6378137/360
    const double midLat = (a.lat + b.lat) / 2 * M_PI / 180;
    const double dx = (a.lon - b.lon) * kMetresPerDegree * std::cos(midLat);
    const double dy = (a.lat - b.lat) * kMetresPerDegree;
    return std::hypot(dx, dy);
}

// A deterministic grid over mainland China's box, inset so every point stays inside it.
QList<LonLat> chinaGrid()
{
    QList<LonLat> pts;
    for (double lon = 74.0; lon <= 134.9; lon += 0.37)
        for (double lat = 4.0; lat <= 53.4; lat += 0.29)
            pts.append({lon, lat});
    return pts;
}

} // namespace

class TestCoord : public QObject
{
    Q_OBJECT
private slots:
    // Reference values: coordtransform 2.1.2 (the standard algorithm), and for Tiananmen the
    // points Amap (GCJ02) and Baidu (BD09) publish for it, to a few metres.
    void referencePoints()
    {
        constexpr double eps = 1e-9;
        // Tiananmen, Amap's point (GCJ02).
        const LonLat tiananmenGcj{116.397428, 39.90923};
        const LonLat w = gcj02ToWgs84OneStep(tiananmenGcj);
        QVERIFY(std::abs(w.lon - 116.39118437404233) < eps);
        QVERIFY(std::abs(w.lat - 39.90782649361369) < eps);
        const LonLat bd = gcj02ToBd09(tiananmenGcj);
        QVERIFY(std::abs(bd.lon - 116.40380056450005) < eps);
        QVERIFY(std::abs(bd.lat - 39.9155730161122) < eps);
        QVERIFY(metres(bd, {116.403874, 39.914888}) < 100); // Baidu's published Tiananmen
        const LonLat gBack = bd09ToGcj02Exact(bd);
        QVERIFY(std::abs(gBack.lon - tiananmenGcj.lon) < 1e-9);
        QVERIFY(std::abs(gBack.lat - tiananmenGcj.lat) < 1e-9);
        // The exact inverse lands within a metre or two of the one-step one, and maps back.
        const LonLat e = gcj02ToWgs84Exact(tiananmenGcj);
        QVERIFY(metres(e, w) < 3);
        QVERIFY(metres(wgs84ToGcj02(e), tiananmenGcj) < 1e-4);

        // Shanghai, People's Square (WGS84).
        const LonLat shanghai{121.4737, 31.2304};
        const LonLat g = wgs84ToGcj02(shanghai);
        QVERIFY(std::abs(g.lon - 121.47822305927693) < eps);
        QVERIFY(std::abs(g.lat - 31.22845773757727) < eps);
        const LonLat b = convert(shanghai, System::Wgs84, System::Bd09);
        QVERIFY(std::abs(b.lon - 121.484781468503) < eps);
        QVERIFY(std::abs(b.lat - 31.234310593689997) < eps);
        QVERIFY(metres(g, shanghai) > 100 && metres(g, shanghai) < 1000); // the usual offset

        // Shenzhen (BD09) down to WGS84, the one-step way.
        const LonLat sz =
            convert({114.064552, 22.548456}, System::Bd09, System::Wgs84, Inverse::OneStep);
        QVERIFY(std::abs(sz.lon - 114.05288622106471) < eps);
        QVERIFY(std::abs(sz.lat - 22.54551650742399) < eps);
    }

    void outsideChinaPassesThrough()
    {
        const LonLat paris{2.2945, 48.8584};
        QVERIFY(outOfChina(paris.lon, paris.lat));
        for (const LonLat p : {paris, LonLat{-122.4194, 37.7749}, LonLat{139.6917, 35.6895},
                               LonLat{135.06, 30.0}, LonLat{110.0, 53.56}, LonLat{100.0, 3.85}}) {
            QVERIFY(outOfChina(p.lon, p.lat));
            const LonLat g = wgs84ToGcj02(p);
            QCOMPARE(g.lon, p.lon);
            QCOMPARE(g.lat, p.lat);
            const LonLat w = gcj02ToWgs84Exact(p);
            QCOMPARE(w.lon, p.lon);
            QCOMPARE(w.lat, p.lat);
            const LonLat w1 = gcj02ToWgs84OneStep(p);
            QCOMPARE(w1.lon, p.lon);
            QCOMPARE(w1.lat, p.lat);
        }
        // BD09 still applies its own shift everywhere, as the standard algorithm does.
        const LonLat bd = gcj02ToBd09(paris);
        QVERIFY(std::abs(bd.lon - 2.300894448476437) < 1e-9);
        QVERIFY(std::abs(bd.lat - 48.86442139790451) < 1e-9);
        QVERIFY(!outOfChina(116.4, 39.9));
    }

    void wgsGcjRoundTrips()
    {
        double maxExact = 0, maxOneStep = 0, sumOneStep = 0;
        int maxIterations = 0;
        const QList<LonLat> pts = chinaGrid();
        for (const LonLat p : pts) {
            const LonLat g = wgs84ToGcj02(p);
            int iterations = 0;
            const LonLat exact = gcj02ToWgs84Exact(g, &iterations);
            const LonLat oneStep = gcj02ToWgs84OneStep(g);
            maxExact = std::max(maxExact, metres(exact, p));
            const double e1 = metres(oneStep, p);
            maxOneStep = std::max(maxOneStep, e1);
            sumOneStep += e1;
            maxIterations = std::max(maxIterations, iterations);
        }
        qInfo("WGS84 -> GCJ02 -> WGS84 over %lld grid points: exact inverse max error %.3g m "
              "(at most %d iterations); one-step inverse max error %.3f m, mean %.3f m",
              qint64(pts.size()), maxExact, maxIterations, maxOneStep, sumOneStep / pts.size());
        QVERIFY(maxExact < 0.001);      // the millimetre promised (in fact ~1e-5 m)
        QVERIFY(maxIterations <= 6);    // converges fast
        QVERIFY(maxOneStep < 6.0);      // the one-step error: bounded, but metres, not mm
        QVERIFY(maxOneStep > maxExact); // the iteration is worth having
    }

    void bd09RoundTrips()
    {
        double maxOneStep = 0, maxExact = 0, maxWgsBd = 0;
        int maxIterations = 0;
        for (const LonLat p : chinaGrid()) {
            const LonLat bd = gcj02ToBd09(p);
            maxOneStep = std::max(maxOneStep, metres(bd09ToGcj02OneStep(bd), p));
            int iterations = 0;
            maxExact = std::max(maxExact, metres(bd09ToGcj02Exact(bd, &iterations), p));
            maxIterations = std::max(maxIterations, iterations);
            const LonLat wbd = convert(p, System::Wgs84, System::Bd09);
            maxWgsBd = std::max(maxWgsBd, metres(convert(wbd, System::Bd09, System::Wgs84), p));
        }
        qInfo("GCJ02 -> BD09 -> GCJ02: standard (one-step) inverse max error %.3f m, exact "
              "inverse %.3g m (at most %d iterations); WGS84 -> BD09 -> WGS84 (exact) %.3g m",
              maxOneStep, maxExact, maxIterations, maxWgsBd);
        QVERIFY(maxOneStep < 0.5); // the standard BD09 inverse: decimetres
        QVERIFY(maxExact < 0.001);
        QVERIFY(maxIterations <= 6);
        QVERIFY(maxWgsBd < 0.001);
    }

    void convertEveryPair()
    {
        const LonLat p{116.397428, 39.90923};
        const System all[] = {System::Wgs84, System::Gcj02, System::Bd09, System::Cgcs2000};
        for (System from : all) {
            for (System to : all) {
                const LonLat there = convert(p, from, to);
                const LonLat back = convert(there, to, from);
                QVERIFY2(metres(back, p) < 0.001,
                         qPrintable(systemName(from) + QStringLiteral("->") + systemName(to)));
                const bool same = from == to || (from != System::Gcj02 && from != System::Bd09 &&
                                                 to != System::Gcj02 && to != System::Bd09);
                QCOMPARE(there.lon == p.lon && there.lat == p.lat, same);
            }
        }
        // CGCS2000 is WGS84 here.
        const LonLat a = convert(p, System::Gcj02, System::Cgcs2000);
        const LonLat b = convert(p, System::Gcj02, System::Wgs84);
        QCOMPARE(a.lon, b.lon);
        QCOMPARE(a.lat, b.lat);
        // Inverse::OneStep only changes the way down to WGS84.
        const LonLat c = convert(p, System::Wgs84, System::Bd09, Inverse::OneStep);
        const LonLat d = convert(p, System::Wgs84, System::Bd09, Inverse::Exact);
        QCOMPARE(c.lon, d.lon);
        const LonLat e = convert(p, System::Gcj02, System::Wgs84, Inverse::OneStep);
        const LonLat f = gcj02ToWgs84OneStep(p);
        QCOMPARE(e.lon, f.lon);
        QCOMPARE(e.lat, f.lat);
    }

    void systems()
    {
        QCOMPARE(parseSystem("wgs84"), System::Wgs84);
        QCOMPARE(parseSystem("WGS84"), System::Wgs84);
        QCOMPARE(parseSystem(" Gcj02 "), System::Gcj02);
        QCOMPARE(parseSystem("BD09"), System::Bd09);
        QCOMPARE(parseSystem("cgcs2000"), System::Cgcs2000);
        QCOMPARE(parseSystem("CGCS2000"), System::Cgcs2000);
        QVERIFY(!parseSystem("").has_value());
        QVERIFY(!parseSystem("gcj-02").has_value());
        QVERIFY(!parseSystem("bd09ll").has_value());
        QVERIFY(!parseSystem("mercator").has_value());
        QCOMPARE(systemKey(System::Bd09), QStringLiteral("BD09"));
        QCOMPARE(systemKey(System::Cgcs2000), QStringLiteral("CGCS2000"));
        QCOMPARE(systemName(System::Gcj02), QStringLiteral("gcj02"));
        QVERIFY(acceptedSystemNames().contains("cgcs2000"));
    }

    void parse_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<double>("lon");
        QTest::addColumn<double>("lat");
        QTest::addColumn<QString>("errorPart"); // a fragment the message must contain

        QTest::newRow("plain") << "116.397428,39.90923" << true << 116.397428 << 39.90923 << "";
        QTest::newRow("spaces") << "  116.4 ,\t39.9  " << true << 116.4 << 39.9 << "";
        QTest::newRow("full-width comma")
            << QString::fromUtf8("116.4，39.9") << true << 116.4 << 39.9 << "";
        QTest::newRow("full-width comma, ideographic spaces")
            << QString::fromUtf8("\u3000116.4 ，39.9\u3000") << true << 116.4 << 39.9 << "";
        QTest::newRow("signs") << "-73.5,+40" << true << -73.5 << 40.0 << "";
        QTest::newRow("integers") << "116,40" << true << 116.0 << 40.0 << "";
        QTest::newRow("leading dot") << ".5,-.25" << true << 0.5 << -0.25 << "";
        QTest::newRow("exponent") << "1.164e2,3.99E1" << true << 116.4 << 39.9 << "";
        QTest::newRow("bounds") << "-180,90" << true << -180.0 << 90.0 << "";
        QTest::newRow("other bounds") << "180,-90" << true << 180.0 << -90.0 << "";

        QTest::newRow("empty") << "" << false << 0.0 << 0.0 << "empty";
        QTest::newRow("blank") << "  \t " << false << 0.0 << 0.0 << "empty";
        QTest::newRow("one number") << "116.4" << false << 0.0 << 0.0 << "no comma";
        QTest::newRow("three numbers") << "116.4,39.9,10" << false << 0.0 << 0.0 << "3 comma";
        QTest::newRow("missing latitude")
            << "116.4," << false << 0.0 << 0.0 << "latitude is missing";
        QTest::newRow("missing longitude")
            << ",39.9" << false << 0.0 << 0.0 << "longitude is missing";
        QTest::newRow("letters") << "abc,def" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("unit suffix")
            << "116.4E,39.9N" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("space inside number")
            << "116 .4,39.9" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("two numbers no comma") << "116.4 39.9" << false << 0.0 << 0.0 << "no comma";
        QTest::newRow("semicolon") << "116.4;39.9" << false << 0.0 << 0.0 << "no comma";
        QTest::newRow("nan") << "nan,39.9" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("inf") << "116.4,inf" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("infinity") << "-Infinity,0" << false << 0.0 << 0.0 << "not a decimal";
        QTest::newRow("overflow") << "1e999,0" << false << 0.0 << 0.0 << "not a finite number";
        QTest::newRow("hex") << "0x10,20" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("full-width digits")
            << QString::fromUtf8("１１６,39") << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("decimal comma") << "116,4;39,9" << false << 0.0 << 0.0 << "3 comma";
        QTest::newRow("lon too big")
            << "180.000001,39.9" << false << 0.0 << 0.0 << "longitude 180.000001 is out of range";
        QTest::newRow("lon too small")
            << "-181,39.9" << false << 0.0 << 0.0 << "longitude -181 is out of range";
        QTest::newRow("lat too big")
            << "116.4,90.5" << false << 0.0 << 0.0 << "latitude 90.5 is out of range";
        QTest::newRow("swapped") << "39.9,116.4" << false << 0.0 << 0.0 << "latitude 116.4";
        QTest::newRow("too long") << QString(200, QLatin1Char('1')) << false << 0.0 << 0.0
                                  << "too long";
        QTest::newRow("trailing dot") << "5.,6" << true << 5.0 << 6.0 << "";
        QTest::newRow("lone dot") << ".,6" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("sign alone") << "-,6" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("two signs") << "+-5,6" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("bare exponent") << "5e,6" << false << 0.0 << 0.0 << "not a decimal number";
        QTest::newRow("underflow") << "1e-999,6" << false << 0.0 << 0.0 << "not a finite number";
    }
    void parse()
    {
        QFETCH(QString, text);
        QFETCH(bool, ok);
        QFETCH(double, lon);
        QFETCH(double, lat);
        QFETCH(QString, errorPart);
        const ParseResult r = parseCoordinate(text);
        QVERIFY2(r.ok == ok, qPrintable(r.error));
        if (ok) {
            QVERIFY(r.error.isEmpty());
            QCOMPARE(r.value.lon, lon);
            QCOMPARE(r.value.lat, lat);
        } else {
            QVERIFY2(r.error.contains(errorPart), qPrintable(r.error));
        }
    }

    // The number grammar and its value against the reading they replaced (a regular
    // expression, then QString::toDouble), over random fields: grammar-shaped ones, with parts
    // dropped or doubled, and strings of the same characters at random.
    void parseMatchesRegexAndToDouble()
    {
        const QRegularExpression pattern(
            QStringLiteral("\\A[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?\\z"));
        QRandomGenerator rng(20261127);
        const auto pick = [&rng](const char *from) {
            return QChar::fromLatin1(from[rng.bounded(int(qstrlen(from)))]);
        };
        const auto digits = [&](int most) {
            QString d;
            for (int n = int(rng.bounded(most + 1)); n > 0; --n)
                d += pick("0123456789");
            return d;
        };
        int accepted = 0, refused = 0, notFinite = 0;
        for (int i = 0; i < 20000; ++i) {
            QString field;
            if (i % 2) {
                if (rng.bounded(3) == 0)
                    field += pick("+-");
                field += digits(3);
                if (rng.bounded(2))
                    field += u'.' + digits(3);
                if (rng.bounded(3) == 0) {
                    field += pick("eE");
                    if (rng.bounded(2))
                        field += pick("+-");
                    field += digits(3);
                }
                if (rng.bounded(10) == 0)
                    field.insert(int(rng.bounded(field.size() + 1)), pick("+-.eEx"));
            } else {
                for (int n = 1 + int(rng.bounded(6)); n > 0; --n)
                    field += pick("0123456789.+-eE");
            }
            const ParseResult r = parseCoordinate(field + QStringLiteral(",1"));
            bool ok = false;
            const double v = field.toDouble(&ok);
            if (field.isEmpty()) {
                QVERIFY(!r.ok);
            } else if (!pattern.match(field).hasMatch()) {
                QVERIFY2(!r.ok && r.error.contains(u"not a decimal number"), qPrintable(field));
                ++refused;
            } else if (!ok || !std::isfinite(v)) {
                QVERIFY2(!r.ok && r.error.contains(u"not a finite number"), qPrintable(field));
                ++notFinite;
            } else if (v < -180.0 || v > 180.0) {
                QVERIFY2(!r.ok && r.error.contains(u"out of range"), qPrintable(field));
            } else {
                QVERIFY2(r.ok, qPrintable(field + u' ' + r.error));
                QCOMPARE(r.value.lon, v);
                ++accepted;
            }
        }
        QVERIFY(accepted > 2000 && refused > 2000 && notFinite > 10);
    }

    void format()
    {
        QCOMPARE(formatCoordinate({116.39118437404233, 39.90782649361369}),
                 QStringLiteral("116.391184,39.907826"));
        QCOMPARE(formatCoordinate({116.4, -39.9}), QStringLiteral("116.400000,-39.900000"));
        QCOMPARE(formatCoordinate({-0.0000001, -0.0}), QStringLiteral("0.000000,0.000000"));
        QCOMPARE(formatCoordinate({-0.0000006, 0}), QStringLiteral("-0.000001,0.000000"));
        QCOMPARE(formatCoordinate({116.123456789, 39.5}, 8),
                 QStringLiteral("116.12345679,39.50000000"));
        QCOMPARE(formatCoordinate({116.25, 39.75}, 0), QStringLiteral("116,40"));
        QCOMPARE(formatCoordinate({1, 2}, 99),
                 QStringLiteral("1.000000000000000,2.000000000000000"));
        // Parsing what we format gives the point back (to the printed precision).
        const LonLat p{121.47822305927693, 31.22845773757727};
        const ParseResult r = parseCoordinate(formatCoordinate(p));
        QVERIFY(r.ok);
        QVERIFY(std::abs(r.value.lon - p.lon) <= 5e-7);
        QVERIFY(std::abs(r.value.lat - p.lat) <= 5e-7);
    }
};

QTEST_GUILESS_MAIN(TestCoord)
#include "tst_coord.moc"
