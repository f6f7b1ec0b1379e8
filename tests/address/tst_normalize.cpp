#include "AddressApi.h"
#include "AddressCompleter.h"
#include "AddressCorrector.h"
#include "AddressEngine.h"

#include <QFile>
#include <QJsonArray>
#include <QTest>

using namespace Qt::Literals::StringLiterals;

namespace {

// The suite's engine, as one server has: no imported data, engines built on first use.
const AddressEngine &engine()
{
    static const AddressEngine e;
    return e;
}

AddressApi::Reply call(const char *endpoint, const QString &text)
{
    return AddressApi::call(engine(), QLatin1String(endpoint), QJsonObject{{"text", text}});
}

// The text with the answer's corrections applied (offsets count characters).
QString applied(const QString &text, const QJsonArray &corrections)
{
    QList<uint> chars = text.toUcs4();
    for (const QJsonValue &v : corrections) {
        const QJsonObject c = v.toObject();
        const QList<uint> to = c.value("to").toString().toUcs4();
        chars.remove(c.value("start").toInt(), c.value("end").toInt() - c.value("start").toInt());
        for (qsizetype i = 0; i < to.size(); ++i)
            chars.insert(c.value("start").toInt() + i, to[i]);
    }
    return QString::fromUcs4(reinterpret_cast<const char32_t *>(chars.constData()), chars.size());
}

// What the case file compares for each endpoint (see its header).
QString observed(const QString &endpoint, const QString &text, const QJsonObject &body)
{
    if (endpoint == u"correct")
        return applied(text, body.value("corrections").toArray());
    if (endpoint == u"complete")
        return body.value("complete").toString().replace(u'\t', u' ');
    if (endpoint == u"standardize")
        return body.value("street_std").toString();
    const QJsonObject a = body.value("address_assessment").toObject();
    QStringList codes;
    for (const QJsonValue &f : a.value("findings").toArray())
        codes.append(f.toObject().value("code").toString());
    return a.value("code").toString() + u':' + codes.join(u',');
}

} // namespace

class TestNormalize : public QObject
{
    Q_OBJECT

private slots:
    void endpointsServed();
    void correctShape();
    void corrects_data();
    void corrects();
    void leavesValidAndDoubtfulNamesAlone_data();
    void leavesValidAndDoubtfulNamesAlone();
    void ambiguousGivesSeveralReadings();
    void completeShape();
    void completes_data();
    void completes();
    void completeWithoutDivisions();
    void standardizes_data();
    void standardizes();
    void nonBmpOffsets();
    void badRequests_data();
    void badRequests();
    void hugeText();
    void caseFile();
};

void TestNormalize::endpointsServed()
{
    const QStringList served = AddressApi::endpoints();
    for (const char *name : {"correct", "complete", "standardize", "assessment"})
        QVERIFY2(served.contains(QLatin1String(name)), name);
}

void TestNormalize::correctShape()
{
    const AddressApi::Reply r = call("correct", u"浙江省杭洲市余航区文一西路969号"_s);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body.value("status").toString(), u"CORRECTED"_s);
    const QJsonArray strings = r.body.value("address_correct").toArray();
    QCOMPARE(strings.size(), 1);
    // Value first, tab-separated, the corrected names as the text wrote them (full here).
    QCOMPARE(strings[0].toString(), u"浙江省=prov\t杭州市=city\t余杭区=district"_s);
    const QJsonArray corrections = r.body.value("corrections").toArray();
    QCOMPARE(corrections.size(), 2);
    QCOMPARE(corrections[0].toObject(),
             (QJsonObject{
                 {"start", 3}, {"end", 6}, {"from", "杭洲市"}, {"to", "杭州市"}, {"key", "city"}}));
    QCOMPARE(
        corrections[1].toObject(),
        (QJsonObject{
            {"start", 6}, {"end", 9}, {"from", "余航区"}, {"to", "余杭区"}, {"key", "district"}}));

    // Nothing to correct: the regions unchanged, status OK.
    const AddressApi::Reply clean = call("correct", u"浙江杭州余杭区五常街道"_s);
    QCOMPARE(clean.body.value("status").toString(), u"OK"_s);
    QCOMPARE(clean.body.value("address_correct").toArray(),
             QJsonArray{u"浙江=prov\t杭州=city\t余杭区=district\t五常街道=town"_s});
    QVERIFY(clean.body.value("corrections").toArray().isEmpty());

    // No region at all.
    const AddressApi::Reply none = call("correct", u"明天下午开会"_s);
    QCOMPARE(none.status, 200);
    QCOMPARE(none.body.value("status").toString(), u"NOT_FOUND"_s);
    QVERIFY(none.body.value("address_correct").toArray().isEmpty());
}

void TestNormalize::corrects_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected"); // the first address_correct string

    QTest::newRow("short city before its district")
        << u"杭洲余杭区文一西路"_s << u"杭州=city\t余杭区=district"_s;
    QTest::newRow("short city before its town")
        << u"杭洲余杭区良渚街道"_s << u"杭州=city\t余杭区=district\t良渚街道=town"_s;
    QTest::newRow("district alone, full name, unique")
        << u"余航区文一西路"_s << u"余杭区=district"_s;
    QTest::newRow("district under its province")
        << u"浙江省余航区"_s << u"浙江省=prov\t余杭区=district"_s;
    QTest::newRow("short city after its province")
        << u"江苏苏洲姑苏区"_s << u"江苏=prov\t苏州=city\t姑苏区=district"_s;
    QTest::newRow("town full name under its district")
        << u"余杭区五长街道"_s << u"余杭区=district\t五常街道=town"_s;
    QTest::newRow("town short form right after its district")
        << u"杭州市余杭区五尝荆长大道"_s << u"杭州市=city\t余杭区=district\t五常=town"_s;
    QTest::newRow("polyphone (行 hang)")
        << u"浙江省杭州市余行区"_s << u"浙江省=prov\t杭州市=city\t余杭区=district"_s;
}

void TestNormalize::corrects()
{
    QFETCH(QString, text);
    QFETCH(QString, expected);
    const AddressApi::Reply r = call("correct", text);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body.value("status").toString(), u"CORRECTED"_s);
    QCOMPARE(r.body.value("address_correct").toArray().first().toString(), expected);
}

void TestNormalize::leavesValidAndDoubtfulNamesAlone_data()
{
    QTest::addColumn<QString>("text");

    QTest::newRow("valid full chain") << u"浙江省杭州市余杭区五常街道文一西路969号"_s;
    QTest::newRow("valid short forms") << u"浙江杭州余杭文一西路"_s;
    // 淀 (dian) and 定 (ding) do not sound alike: a shape or key slip is not guessed.
    QTest::newRow("not a homophone") << u"北京市海定区中关村大街"_s;
    // A suffix change is a renamed division (余杭县 became 余杭区), not a typo.
    QTest::newRow("suffix differs") << u"余杭县文一西路"_s;
    // Two characters with nothing to confirm them.
    QTest::newRow("lone short form") << u"杭洲文一西路"_s;
    QTest::newRow("inside a word after its district") << u"杭州市萧山区银河商务中心"_s;
    QTest::newRow("short form before a road suffix") << u"浙江省杭州市杭洲路8号"_s;
    // A name that exists somewhere is never changed, even next to a similar one.
    QTest::newRow("existing town name") << u"福建省泉州市惠安县罗阳镇"_s;
    // Off the chain the rest names: 杭州 is not in 江苏.
    QTest::newRow("off the chain") << u"江苏省杭洲市"_s;
    QTest::newRow("market, not a city") << u"杭洲市场"_s;
    QTest::newRow("no Chinese") << u"221B Baker Street"_s;
}

void TestNormalize::leavesValidAndDoubtfulNamesAlone()
{
    QFETCH(QString, text);
    const QList<AddressCorrector::Reading> readings = engine().corrector().correct(text);
    QCOMPARE(readings.size(), 1);
    QCOMPARE(readings[0].text, text);
    QVERIFY(readings[0].corrections.isEmpty());
    const AddressApi::Reply r = call("correct", text);
    QVERIFY(r.body.value("corrections").toArray().isEmpty());
    QVERIFY(r.body.value("status").toString() != u"CORRECTED");
}

void TestNormalize::ambiguousGivesSeveralReadings()
{
    // 孟津区 has 马屯镇 and 麻屯镇; 蚂 (ma) is one character from both and sounds like both.
    const AddressApi::Reply r = call("correct", u"河南省洛阳市孟津区蚂屯镇"_s);
    QCOMPARE(r.status, 200);
    const QJsonArray strings = r.body.value("address_correct").toArray();
    QCOMPARE(strings.size(), 2);
    QCOMPARE(strings[0].toString(), u"河南省=prov\t洛阳市=city\t孟津区=district\t马屯镇=town"_s);
    QCOMPARE(strings[1].toString(), u"河南省=prov\t洛阳市=city\t孟津区=district\t麻屯镇=town"_s);
    // The corrections describe the first (best) reading.
    QCOMPARE(r.body.value("corrections").toArray().size(), 1);
    QCOMPARE(r.body.value("corrections").toArray()[0].toObject().value("to").toString(),
             u"马屯镇"_s);
    // maxReadings bounds the list.
    QCOMPARE(engine().corrector().correct(u"河南省洛阳市孟津区蚂屯镇"_s, 1).size(), 1);
    // With no chain at all, an ambiguous full name is not corrected.
    QVERIFY(engine().corrector().correct(u"蚂屯镇"_s).first().corrections.isEmpty());
}

void TestNormalize::completeShape()
{
    const AddressApi::Reply r = call("complete", u"余杭区五常街道文一西路969号"_s);
    QCOMPARE(r.status, 200);
    QCOMPARE(
        r.body.value("complete").toString(),
        u"prov=浙江省\tcity=杭州市\tdistrict=余杭区\ttown=五常街道\troad=文一西路\troadNo=969号"_s);
    QCOMPARE(r.body.value("filled").toArray(), (QJsonArray{"prov", "city"}));
    QCOMPARE(r.body.value("status").toString(), u"OK"_s);
}

void TestNormalize::completes_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("complete");
    QTest::addColumn<QStringList>("filled");

    QTest::newRow("short district to full chain")
        << u"余杭文一西路969号"_s
        << u"prov=浙江省\tcity=杭州市\tdistrict=余杭区\troad=文一西路\troadNo=969号"_s
        << QStringList{u"prov"_s, u"city"_s};
    QTest::newRow("town short form after its district")
        << u"余杭区五常荆长大道"_s
        << u"prov=浙江省\tcity=杭州市\tdistrict=余杭区\ttown=五常街道\troad=荆长大道"_s
        << QStringList{u"prov"_s, u"city"_s};
    QTest::newRow("town alone fills district, city, province")
        << u"五常街道文一西路"_s
        << u"prov=浙江省\tcity=杭州市\tdistrict=余杭区\ttown=五常街道\troad=文一西路"_s
        << QStringList{u"prov"_s, u"city"_s, u"district"_s};
    QTest::newRow("municipality city shown as the province")
        << u"朝阳区建国路88号"_s
        << u"prov=北京市\tcity=北京市\tdistrict=朝阳区\troad=建国路\troadNo=88号"_s
        << QStringList{u"prov"_s, u"city"_s};
    QTest::newRow("city without districts")
        << u"东莞市虎门镇连升路5号"_s
        << u"prov=广东省\tcity=东莞市\ttown=虎门镇\troad=连升路\troadNo=5号"_s
        << QStringList{u"prov"_s};
    QTest::newRow("already complete")
        << u"浙江省杭州市余杭区文一西路969号"_s
        << u"prov=浙江省\tcity=杭州市\tdistrict=余杭区\troad=文一西路\troadNo=969号"_s
        << QStringList{};
    QTest::newRow("road-like town short form with a number is the road")
        << u"上海黄浦区南京东路200号"_s
        << u"prov=上海市\tcity=上海市\tdistrict=黄浦区\troad=南京东路\troadNo=200号"_s
        << QStringList{u"*"_s}; // which of prov or city 上海 fills is the parser's reading
}

void TestNormalize::completes()
{
    QFETCH(QString, text);
    QFETCH(QString, complete);
    QFETCH(QStringList, filled);
    const AddressApi::Reply r = call("complete", text);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body.value("complete").toString(), complete);
    if (filled != QStringList{u"*"_s})
        QCOMPARE(r.body.value("filled").toArray(), QJsonArray::fromStringList(filled));
    QCOMPARE(r.body.value("status").toString(), u"OK"_s);
}

void TestNormalize::completeWithoutDivisions()
{
    const AddressApi::Reply r = call("complete", u"明天下午开会"_s);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body.value("status").toString(), u"NOT_FOUND"_s);
    QVERIFY(r.body.value("filled").toArray().isEmpty());
    QVERIFY(!r.body.value("complete").toString().contains(u"prov="));
}

void TestNormalize::standardizes_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("street");
    QTest::addColumn<QString>("status");

    QTest::newRow("corrected and completed")
        << u"浙江杭洲余航文一西路969号"_s << u"浙江省杭州市余杭区文一西路969号"_s << u"OK"_s;
    QTest::newRow("short forms to full names, spaces dropped")
        << u"杭州 西湖 文三路8号"_s << u"浙江省杭州市西湖区文三路8号"_s << u"OK"_s;
    QTest::newRow("noise dropped")
        << u"余杭区文一西路969号，，"_s << u"浙江省杭州市余杭区文一西路969号"_s << u"OK"_s;
    QTest::newRow("municipality not doubled")
        << u"北京朝阳区建国路88号"_s << u"北京市朝阳区建国路88号"_s << u"OK"_s;
    QTest::newRow("no divisions") << u"明天下午开会"_s << QString() << u"NOT_FOUND"_s;
}

void TestNormalize::standardizes()
{
    QFETCH(QString, text);
    QFETCH(QString, street);
    QFETCH(QString, status);
    const AddressApi::Reply r = call("standardize", text);
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body.value("street_std").toString(), street);
    QCOMPARE(r.body.value("status").toString(), status);
    // The structure holds exactly the values street_std joins (a city equal to the province
    // is written once).
    QString joined;
    QString prov;
    for (const QString &pair :
         r.body.value("structure").toString().split(u'\t', Qt::SkipEmptyParts)) {
        const QString key = pair.section(u'=', 0, 0);
        const QString value = pair.section(u'=', 1);
        QVERIFY2(!AddressCompleter::isNoise(key), qPrintable(pair));
        if (key == u"prov")
            prov = value;
        if (!(key == u"city" && value == prov))
            joined += value;
    }
    QCOMPARE(joined, street);
}

void TestNormalize::nonBmpOffsets()
{
    // 𠮷 is one character but two UTF-16 units: offsets count characters.
    const QString text = u"𠮷𠮷 浙江省杭洲市余杭区"_s;
    const AddressApi::Reply r = call("correct", text);
    const QJsonObject c = r.body.value("corrections").toArray().first().toObject();
    QCOMPARE(c.value("start").toInt(), 6);
    QCOMPARE(c.value("end").toInt(), 9);
    QCOMPARE(applied(text, r.body.value("corrections").toArray()), u"𠮷𠮷 浙江省杭州市余杭区"_s);
    const AddressApi::Reply s = call("standardize", text);
    QCOMPARE(s.body.value("corrections").toArray().first().toObject().value("start").toInt(), 6);
    QVERIFY(s.body.value("street_std").toString().startsWith(u"浙江省杭州市余杭区"_s));
}

void TestNormalize::badRequests_data()
{
    QTest::addColumn<QString>("endpoint");
    QTest::addColumn<QJsonObject>("body");

    for (const char *e : {"correct", "complete", "standardize", "assessment"}) {
        const QString name = QLatin1String(e);
        QTest::addRow("%s missing", e) << name << QJsonObject{};
        QTest::addRow("%s empty", e) << name << QJsonObject{{"text", ""}};
        QTest::addRow("%s blank", e) << name << QJsonObject{{"text", " \t\n"}};
        QTest::addRow("%s number", e) << name << QJsonObject{{"text", 12}};
        QTest::addRow("%s array", e) << name << QJsonObject{{"text", QJsonArray{"杭州"}}};
        QTest::addRow("%s null", e) << name << QJsonObject{{"text", QJsonValue::Null}};
        QTest::addRow("%s too long", e)
            << name << QJsonObject{{"text", QString(AddressApi::kMaxText + 1, u'杭')}};
    }
}

void TestNormalize::badRequests()
{
    QFETCH(QString, endpoint);
    QFETCH(QJsonObject, body);
    const AddressApi::Reply r = AddressApi::call(engine(), endpoint, body);
    QCOMPARE(r.status, 400);
    QCOMPARE(r.param, u"text"_s);
    QVERIFY(!r.error.isEmpty());
}

void TestNormalize::hugeText()
{
    // At the bound: an address in a long text of other words is answered, not rejected.
    QString text = u"浙江省杭洲市余航区文一西路969号 "_s;
    while (text.size() + 7 <= AddressApi::kMaxText)
        text += u"今天天气不错。"_s;
    QCOMPARE(text.size() > AddressApi::kMaxText - 7, true);
    for (const char *e : {"correct", "complete", "standardize", "assessment"}) {
        const AddressApi::Reply r = call(e, text);
        QVERIFY2(r.status == 200, e);
    }
    QCOMPARE(call("correct", text).body.value("status").toString(), u"CORRECTED"_s);
    // Several misspellings repeated: each copy corrected.
    const QString repeated = u"浙江省杭洲市余航区，浙江省杭洲市余航区"_s;
    QCOMPARE(engine().corrector().correct(repeated).first().text,
             u"浙江省杭州市余杭区，浙江省杭州市余杭区"_s);
}

void TestNormalize::caseFile()
{
    QFile file(QStringLiteral(NORMALIZE_CASES));
    QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(file.fileName()));
    int total = 0;
    int right = 0;
    for (const QByteArray &raw : file.readAll().split('\n')) {
        const QString line = QString::fromUtf8(raw);
        if (line.trimmed().isEmpty() || line.startsWith(u'#'))
            continue;
        const QStringList f = line.split(u'\t');
        QCOMPARE(f.size(), 3);
        const AddressApi::Reply r = AddressApi::call(engine(), f[0], QJsonObject{{"text", f[1]}});
        QCOMPARE(r.status, 200);
        const QString got = observed(f[0], f[1], r.body);
        ++total;
        if (got == f[2])
            ++right;
        else
            qWarning().noquote() << "case" << f[0] << f[1] << "got" << got << "expected" << f[2];
    }
    QVERIFY(total >= 40);
    qInfo("normalize-cases.tsv: %d of %d right (%.1f%%)", right, total, 100.0 * right / total);
    // A floor, raised as the parser and the corrector improve.
    QVERIFY(right >= total * 9 / 10);
}

QTEST_GUILESS_MAIN(TestNormalize)
#include "tst_normalize.moc"
