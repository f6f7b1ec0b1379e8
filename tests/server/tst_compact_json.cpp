// CompactJson: the same bytes as QJsonDocument::toJson(Compact), which answers were encoded
// with before, on chosen edges and on random documents.
#include "CompactJson.h"

#include <cmath>
#include <limits>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QTest>

namespace {

QByteArray qtBytes(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QByteArray qtBytes(const QJsonArray &a)
{
    return QJsonDocument(a).toJson(QJsonDocument::Compact);
}

// Strings drawn from the units that escaping and UTF-8 treat apart: control characters, quote,
// backslash, DEL, two- and three-byte characters, noncharacters, surrogate pairs, and lone or
// reversed surrogates.
QString randomString(QRandomGenerator &g)
{
    static const char16_t kUnits[] = {
        0x0,    0x1,    0x8,    0x9,    0xa,    0xc,    0xd,    0x1f,   '"',    '\\',   '/',
        ' ',    'a',    'Z',    '0',    0x7e,   0x7f,   0x80,   0xe9,   0x7ff,  0x800,  0x4e2d,
        0xfdd0, 0xfffe, 0xffff, 0xd83d, 0xde00, 0xdbff, 0xdfff, 0xd800, 0xdc00, 0x2028, 0x3000};
    QString s;
    const int n = int(g.bounded(12));
    for (int i = 0; i < n; ++i) {
        if (g.bounded(4) == 0) { // a valid pair now and then
            s += QChar(char16_t(0xd83d));
            s += QChar(char16_t(0xde00 + g.bounded(0x40)));
        } else {
            s += QChar(kUnits[g.bounded(int(std::size(kUnits)))]);
        }
    }
    return s;
}

QJsonValue randomValue(QRandomGenerator &g, int depth);

QJsonObject randomObject(QRandomGenerator &g, int depth)
{
    QJsonObject o;
    const int n = int(g.bounded(6));
    for (int i = 0; i < n; ++i)
        o.insert(randomString(g), randomValue(g, depth + 1));
    return o;
}

QJsonArray randomArray(QRandomGenerator &g, int depth)
{
    QJsonArray a;
    const int n = int(g.bounded(6));
    for (int i = 0; i < n; ++i)
        a.append(randomValue(g, depth + 1));
    return a;
}

double randomDouble(QRandomGenerator &g)
{
    static const double kEdges[] = {0.0,
                                    -0.0,
                                    1.0,
                                    0.1,
                                    1e6,
                                    123456.789,
                                    1e21,
                                    1e-7,
                                    0.0001,
                                    9007199254740993.0,
                                    -1e300,
                                    std::numeric_limits<double>::denorm_min(),
                                    std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN()};
    if (g.bounded(2))
        return kEdges[g.bounded(int(std::size(kEdges)))];
    return (g.generateDouble() - 0.5) * std::pow(10.0, g.bounded(40) - 20);
}

QJsonValue randomValue(QRandomGenerator &g, int depth)
{
    switch (g.bounded(depth < 4 ? 9 : 7)) {
    case 0:
        return QJsonValue::Null;
    case 1:
        return g.bounded(2) == 1;
    case 2:
        return qint64(g.generate64());
    case 3:
        return int(g.bounded(2000)) - 1000;
    case 4:
        return randomDouble(g);
    case 5:
    case 6:
        return randomString(g);
    case 7:
        return randomObject(g, depth);
    default:
        return randomArray(g, depth);
    }
}

} // namespace

class TestCompactJson : public QObject
{
    Q_OBJECT

private slots:
    void edges_data()
    {
        QTest::addColumn<QJsonObject>("object");
        QTest::newRow("empty") << QJsonObject{};
        QTest::newRow("nested empties")
            << QJsonObject{{"a", QJsonObject{}}, {"b", QJsonArray{}}, {"c", QJsonArray{{}}}};
        QTest::newRow("scalars") << QJsonObject{{"t", true},
                                                {"f", false},
                                                {"n", QJsonValue::Null},
                                                {"i", 42},
                                                {"neg", -7},
                                                {"big", qint64(9'007'199'254'740'993)},
                                                {"min", std::numeric_limits<qint64>::min()}};
        QTest::newRow("doubles") << QJsonObject{{"half", 0.5},
                                                {"whole", 3.0},
                                                {"million", 1e6},
                                                {"lng", 120.026208},
                                                {"tiny", 1e-7},
                                                {"inf", std::numeric_limits<double>::infinity()},
                                                {"nan", std::numeric_limits<double>::quiet_NaN()}};
        QTest::newRow("escapes") << QJsonObject{
            {"q\"b\\", QStringLiteral("tab\t nl\n cr\r ff\f bs\b nul") + QChar(0) + QChar(0x1f) +
                           QChar(0x7f)}};
        QTest::newRow("unicode") << QJsonObject{
            {QStringLiteral("收件人"), QStringLiteral("王小明 é \U0001F600 \u2028 \uFFFF")}};
        QTest::newRow("lone surrogates") << QJsonObject{
            {"high end", QString(QChar(char16_t(0xd800)))},
            {"high then a", QString(QChar(char16_t(0xdbff))) + u'a'},
            {"low", QString(QChar(char16_t(0xdc00))) + u'b'},
            {"reversed", QString(QChar(char16_t(0xdc00))) + QChar(char16_t(0xd800)) + u'c'}};
        // Longer than the writer's slices (4,096 units), with a pair across their edge.
        QTest::newRow("long") << QJsonObject{
            {"s", QString(4095, u'a') + QStringLiteral("\U0001F600") + QString(5000, u'\u00e9') +
                      QString(3000, u'"') + QChar(char16_t(0xd800))}};
        QTest::newRow("parsed") << QJsonDocument::fromJson(R"({"a":[1,2.5,"x",{"b":null}],
                                       "c":1e400,"d":-0,"e":1.0,"f":100000000000000000000})")
                                       .object();
    }
    void edges()
    {
        QFETCH(QJsonObject, object);
        QCOMPARE(CompactJson::encode(object), qtBytes(object));
        const QJsonArray wrapped{object, object};
        QCOMPARE(CompactJson::encode(wrapped), qtBytes(wrapped));
    }

    void randomDocuments()
    {
        QRandomGenerator g(20261127);
        for (int i = 0; i < 5000; ++i) {
            const QJsonObject o = randomObject(g, 0);
            const QByteArray ours = CompactJson::encode(o);
            const QByteArray theirs = qtBytes(o);
            if (ours != theirs)
                QFAIL(qPrintable(QStringLiteral("document %1 differs:\n ours %2\n Qt's %3")
                                     .arg(i)
                                     .arg(QString::fromLatin1(ours.toPercentEncoding()),
                                          QString::fromLatin1(theirs.toPercentEncoding()))));
            const QJsonArray a = randomArray(g, 0);
            QCOMPARE(CompactJson::encode(a), qtBytes(a));
        }
    }

    // What the writer makes reads back as the document it was given.
    void readsBack()
    {
        QRandomGenerator g(7);
        for (int i = 0; i < 500; ++i) {
            QJsonObject o = randomObject(g, 0);
            QJsonParseError error;
            const QJsonDocument back = QJsonDocument::fromJson(CompactJson::encode(o), &error);
            QCOMPARE(error.error, QJsonParseError::NoError);
            QVERIFY(back.isObject());
            QCOMPARE(back.object().size(), o.size());
        }
    }
};

QTEST_APPLESS_MAIN(TestCompactJson)
#include "tst_compact_json.moc"
