// extract (location_extract), extract-name (person_extract) and extract-express
// (express_extract): the answer shapes, offsets in characters, the 400s, and the rules of the
// extractors behind them (NameExtractor, LocationExtractor, ExpressExtractor).
#include "AddressApi.h"
#include "AddressEndpoints.h"
#include "AddressEngine.h"
#include "ExpressExtractor.h"
#include "LocationExtractor.h"
#include "NameExtractor.h"

#include <QJsonArray>
#include <QTest>

namespace {

// The suite's engine, as one server has: no imported data, engines built on first use.
const AddressEngine &engine()
{
    static const AddressEngine e;
    return e;
}

QStringList names(const QString &text)
{
    QStringList out;
    for (const NameExtractor::Match &m : engine().nameExtractor().extract(text))
        out.append(m.word);
    return out;
}

QStringList locations(const QString &text)
{
    QStringList out;
    for (const LocationExtractor::Location &l : engine().locationExtractor().extract(text))
        out.append(l.word);
    return out;
}

QJsonObject request(const QString &text)
{
    return QJsonObject{{"text", text}};
}

using Endpoint = AddressApi::Reply (*)(const AddressEngine &, const QJsonObject &);

} // namespace

class TestExtraction : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        // Built once here so the first test does not pay for the division index.
        QVERIFY(!engine().nameExtractor().extract(u"收件人：张伟"_qs).isEmpty());
    }

    // ---- extract-name ------------------------------------------------------------------------

    void nameShape()
    {
        const AddressApi::Reply r = AddressEndpoints::extractName(
            engine(), request(u"收件人：张伟 13812345678 浙江省杭州市西湖区文三路478号"_qs));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.keys(), QStringList{u"person_extract"_qs});
        const QJsonArray found = r.body.value("person_extract").toArray();
        QCOMPARE(found.size(), 1);
        const QJsonObject m = found[0].toObject();
        QCOMPARE(m.keys(), (QStringList{u"end"_qs, u"start"_qs, u"word"_qs}));
        QCOMPARE(m.value("start").toInt(), 4);
        QCOMPARE(m.value("end").toInt(), 6);
        QCOMPARE(m.value("word").toString(), u"张伟"_qs);
    }

    void nameOffsetsAfterNonBmp()
    {
        // 𠮷 (U+20BB7) is two UTF-16 units and one character.
        const AddressApi::Reply r =
            AddressEndpoints::extractName(engine(), request(u"𠮷𠮷 收件人：欧阳明 13812345678"_qs));
        QCOMPARE(r.status, 200);
        const QJsonArray found = r.body.value("person_extract").toArray();
        QCOMPARE(found.size(), 1);
        QCOMPARE(found[0].toObject().value("start").toInt(), 7);
        QCOMPARE(found[0].toObject().value("end").toInt(), 10);
        QCOMPARE(found[0].toObject().value("word").toString(), u"欧阳明"_qs);
    }

    void nameNone()
    {
        const AddressApi::Reply r = AddressEndpoints::extractName(
            engine(), request(u"请把快递放在小区门口的快递柜，谢谢"_qs));
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.value("person_extract").isArray());
        QCOMPARE(r.body.value("person_extract").toArray().size(), 0);
    }

    void nameRules_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("label") << u"收货人：李秀英，电话：021-62345678"_qs
                               << QStringList{u"李秀英"_qs};
        QTest::newRow("phone after") << u"张伟 13812345678"_qs << QStringList{u"张伟"_qs};
        QTest::newRow("compound") << u"联系人：司马青"_qs << QStringList{u"司马青"_qs};
        QTest::newRow("honorific keeps surname")
            << u"王先生 13812345678"_qs << QStringList{u"王先生"_qs};
        QTest::newRow("full name drops honorific")
            << u"王小明先生 13812345678"_qs << QStringList{u"王小明"_qs};
        QTest::newRow("glued to address")
            << u"张伟浙江省杭州市余杭区文一西路969号"_qs << QStringList{u"张伟"_qs};
        QTest::newRow("after address")
            << u"杭州市余杭区文一西路969号张伟13812345678"_qs << QStringList{u"张伟"_qs};
        QTest::newRow("two people") << u"寄件人：刘洋 13011112222 收件人：赵敏 15033334444"_qs
                                    << QStringList{u"刘洋"_qs, u"赵敏"_qs};
        QTest::newRow("receiver mark") << u"谢天宇收，13300004444"_qs << QStringList{u"谢天宇"_qs};
        QTest::newRow("road is no name") << u"张江路88弄 13812345678"_qs << QStringList{};
        QTest::newRow("village is no name") << u"李村 13812345678"_qs << QStringList{};
        QTest::newRow("landmark is no name") << u"王府井 13812345678"_qs << QStringList{};
        QTest::newRow("common words")
            << u"备注：周边有停车场，方便的话放快递柜"_qs << QStringList{};
        QTest::newRow("development zone") << u"高新区张江路88弄3号"_qs << QStringList{};
        QTest::newRow("city is no name") << u"黄山 13611112222"_qs << QStringList{};
        QTest::newRow("labelled city-like name")
            << u"收件人：黄山 13611112222"_qs << QStringList{u"黄山"_qs};
        QTest::newRow("weak surname needs context") << u"高兴 方便"_qs << QStringList{};
        QTest::newRow("weak surname with label") << u"姓名：高明"_qs << QStringList{u"高明"_qs};
        QTest::newRow("full-width phone")
            << u"丁宁 １８６１２３４５６７８"_qs << QStringList{u"丁宁"_qs};
        QTest::newRow("digits only") << u"13812345678 0571-88886666"_qs << QStringList{};
        QTest::newRow("surname alone") << u"张"_qs << QStringList{};
    }
    void nameRules()
    {
        QFETCH(QString, text);
        QFETCH(QStringList, expected);
        QCOMPARE(names(text), expected);
    }

    // ---- extract -----------------------------------------------------------------------------

    void locationShape()
    {
        const AddressApi::Reply r = AddressEndpoints::extract(
            engine(), request(u"我住在浙江省杭州市西湖区文三路478号，有空来玩"_qs));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.keys(), QStringList{u"location_extract"_qs});
        const QJsonArray found = r.body.value("location_extract").toArray();
        QCOMPARE(found.size(), 1);
        const QJsonObject l = found[0].toObject();
        QCOMPARE(l.keys(), (QStringList{u"end"_qs, u"start"_qs, u"type"_qs, u"word"_qs}));
        QCOMPARE(l.value("type").toString(), u"LOC"_qs);
        QCOMPARE(l.value("word").toString(), u"浙江省杭州市西湖区文三路478号"_qs);
        QCOMPARE(l.value("start").toInt(), 3);
        QCOMPARE(l.value("end").toInt(), 3 + 16);
    }

    void locationOffsetsAfterNonBmp()
    {
        const QString text = u"😀😀送到北京市朝阳区建国路88号"_qs;
        const AddressApi::Reply r = AddressEndpoints::extract(engine(), request(text));
        const QJsonArray found = r.body.value("location_extract").toArray();
        QCOMPARE(found.size(), 1);
        QCOMPARE(found[0].toObject().value("start").toInt(), 4); // 2 emoji + 送到
        QCOMPARE(found[0].toObject().value("end").toInt(), 4 + 12);
        QCOMPARE(found[0].toObject().value("word").toString(), u"北京市朝阳区建国路88号"_qs);
    }

    void locationNone()
    {
        for (const QString &text :
             {u"今天天气不错"_qs, u"张伟 13812345678"_qs, u"和平年代"_qs, u"12345 ABC !!"_qs}) {
            const AddressApi::Reply r = AddressEndpoints::extract(engine(), request(text));
            QCOMPARE(r.status, 200);
            QVERIFY2(r.body.value("location_extract").toArray().isEmpty(), qPrintable(text));
        }
    }

    void locationRules_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("two addresses")
            << u"从上海市浦东新区张江路500号寄到广州市天河区天河路385号"_qs
            << QStringList{u"上海市浦东新区张江路500号"_qs, u"广州市天河区天河路385号"_qs};
        QTest::newRow("name and phone end it")
            << u"浙江省杭州市余杭区文一西路969号阿里巴巴西溪园区张伟13812345678"_qs
            << QStringList{u"浙江省杭州市余杭区文一西路969号阿里巴巴西溪园区"_qs};
        QTest::newRow("spaces inside") << u"地址：山东省 青岛市 市南区 香港中路10号"_qs
                                       << QStringList{u"山东省 青岛市 市南区 香港中路10号"_qs};
        QTest::newRow("overlapping division names")
            << u"青岛市南区香港中路10号"_qs << QStringList{u"青岛市南区香港中路10号"_qs};
        QTest::newRow("road named after a city")
            << u"送到南京东路800号"_qs << QStringList{u"南京东路800号"_qs};
        QTest::newRow("city alone") << u"我明天去北京出差"_qs << QStringList{u"北京"_qs};
        QTest::newRow("building details")
            << u"北京市海淀区中关村大街27号中关村大厦10层1001室，谢谢"_qs
            << QStringList{u"北京市海淀区中关村大街27号中关村大厦10层1001室"_qs};
        QTest::newRow("road without division")
            << u"我在文三路100号等你"_qs << QStringList{u"文三路100号"_qs};
        QTest::newRow("short place word") << u"放在超市门口"_qs << QStringList{};
        QTest::newRow("dashes between divisions")
            << u"安徽-芜湖-弋江区"_qs << QStringList{u"安徽-芜湖-弋江区"_qs};
        QTest::newRow("room after road number") << u"上海市嘉定区定边路73号1641，谢谢"_qs
                                                << QStringList{u"上海市嘉定区定边路73号1641"_qs};
        QTest::newRow("chinese numeral units")
            << u"杭州市滨江区星耀城八幢三楼"_qs << QStringList{u"杭州市滨江区星耀城八幢三楼"_qs};
        QTest::newRow("longer town suffix") << u"浙江省庆元县黄田镇工业园区2号"_qs
                                            << QStringList{u"浙江省庆元县黄田镇工业园区2号"_qs};
        QTest::newRow("unit never starts a name")
            << u"环城南路868号新金海饭店"_qs << QStringList{u"环城南路868号新金海饭店"_qs};
    }
    void locationRules()
    {
        QFETCH(QString, text);
        QFETCH(QStringList, expected);
        QCOMPARE(locations(text), expected);
    }

    // ---- extract-express ---------------------------------------------------------------------

    void expressShape()
    {
        const AddressApi::Reply r = AddressEndpoints::extractExpress(
            engine(),
            request(
                u"收件人 张三 13812345678 浙江省杭州市余杭区文一西路969号 阿里巴巴西溪园区"_qs));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.keys(), QStringList{u"express_extract"_qs});
        const QJsonObject e = r.body.value("express_extract").toObject();
        QCOMPARE(e.keys(), (QStringList{u"city_info"_qs, u"district_info"_qs, u"person_info"_qs,
                                        u"phone_info"_qs, u"poi_info"_qs, u"prov_info"_qs,
                                        u"road_info"_qs, u"road_no_info"_qs}));
        for (const QString &key : e.keys())
            QVERIFY2(e.value(key).isString(), qPrintable(key));
        QCOMPARE(e.value("person_info").toString(), u"张三"_qs);
        QCOMPARE(e.value("phone_info").toString(), u"13812345678"_qs);
        QCOMPARE(e.value("prov_info").toString(), u"浙江省"_qs);
        QCOMPARE(e.value("city_info").toString(), u"杭州市"_qs);
        QCOMPARE(e.value("district_info").toString(), u"余杭区"_qs);
        QCOMPARE(e.value("road_info").toString(), u"文一西路"_qs);
        QCOMPARE(e.value("road_no_info").toString(), u"969号"_qs);
        QCOMPARE(e.value("poi_info").toString(), u"阿里巴巴西溪园区"_qs);
    }

    void expressEmptyFields()
    {
        const AddressApi::Reply r =
            AddressEndpoints::extractExpress(engine(), request(u"这段文字没有姓名也没有地址"_qs));
        QCOMPARE(r.status, 200);
        const QJsonObject e = r.body.value("express_extract").toObject();
        QCOMPARE(e.size(), 8);
        for (const QString &key : e.keys()) {
            QVERIFY2(e.value(key).isString(), qPrintable(key));
            QVERIFY2(e.value(key).toString().isEmpty(), qPrintable(key));
        }
    }

    void expressRules()
    {
        const ExpressExtractor &x = engine().expressExtractor();
        // Upper levels filled in from the district; the written short form kept.
        ExpressExtractor::Result r = x.extract(u"余杭区文一西路969号 张三 13812345678"_qs);
        QCOMPARE(r.province, u"浙江省"_qs);
        QCOMPARE(r.city, u"杭州市"_qs);
        QCOMPARE(r.district, u"余杭区"_qs);
        r = x.extract(u"杭州余杭区文一西路969号 张三 13812345678"_qs);
        QCOMPARE(r.city, u"杭州"_qs);
        // A municipality's city is the municipality.
        r = x.extract(u"北京市朝阳区建国路88号 李四 13900000000"_qs);
        QCOMPARE(r.province, u"北京市"_qs);
        QCOMPARE(r.city, u"北京市"_qs);
        // Ambiguous district: nothing invented above it.
        r = x.extract(u"朝阳区建国路88号，李四，13900000000"_qs);
        QCOMPARE(r.district, u"朝阳区"_qs);
        QCOMPARE(r.province, QString());
        QCOMPARE(r.city, QString());
        // The receiver wins over the sender, and the receiver's phone with them.
        r = x.extract(u"寄件人：刘洋 13011112222 江苏省南京市玄武区中山路18号 "
                      u"收件人：赵敏 15033334444 四川省成都市武侯区天府大道1700号环球中心"_qs);
        QCOMPARE(r.person, u"赵敏"_qs);
        QCOMPARE(r.phone, u"15033334444"_qs);
        QCOMPARE(r.district, u"武侯区"_qs);
        QCOMPARE(r.poi, u"环球中心"_qs);
        // Labels splitting the address; phone as written.
        r = x.extract(u"收件人:郑可欣 电话:+86 135 0000 3333 所在地区:山东省 青岛市 市南区 "
                      u"详细地址:香港中路10号颐和国际"_qs);
        QCOMPARE(r.phone, u"+86 135 0000 3333"_qs);
        QCOMPARE(r.city, u"青岛市"_qs);
        QCOMPARE(r.road, u"香港中路"_qs);
        QCOMPARE(r.roadNo, u"10号"_qs);
        QCOMPARE(r.poi, u"颐和国际"_qs);
        // Noise: order numbers are not phones, building details are not the POI.
        r = x.extract(u"快递单号：SF1234567890123【王先生】186-0000-1234 "
                      u"广州市天河区天河路385号太古汇一座2501室 #急件# 😀"_qs);
        QCOMPARE(r.person, u"王先生"_qs);
        QCOMPARE(r.phone, u"186-0000-1234"_qs);
        QCOMPARE(r.road, u"天河路"_qs);
        QCOMPARE(r.poi, u"太古汇"_qs);
        // No address at all.
        r = x.extract(u"张伟 13812345678"_qs);
        QCOMPARE(r.person, u"张伟"_qs);
        QCOMPARE(r.province, QString());
        QCOMPARE(r.road, QString());
    }

    // ---- errors and edges, for all three endpoints ----------------------------------------------

    void badRequests_data()
    {
        QTest::addColumn<int>("endpoint");
        QTest::addColumn<QJsonObject>("body");
        const QList<std::pair<const char *, QJsonObject>> bodies = {
            {"missing", QJsonObject{}},
            {"empty", QJsonObject{{"text", ""}}},
            {"blank", QJsonObject{{"text", " \t\u3000 "}}},
            {"number", QJsonObject{{"text", 42}}},
            {"array", QJsonObject{{"text", QJsonArray{u"张伟"_qs}}}},
            {"null", QJsonObject{{"text", QJsonValue::Null}}},
            {"too long", QJsonObject{{"text", QString(AddressApi::kMaxText + 1, u'张')}}}};
        for (int e = 0; e < 3; ++e) {
            for (const auto &[name, body] : bodies)
                QTest::addRow("%d %s", e, name) << e << body;
        }
    }
    void badRequests()
    {
        QFETCH(int, endpoint);
        QFETCH(QJsonObject, body);
        const Endpoint endpoints[] = {AddressEndpoints::extract, AddressEndpoints::extractName,
                                      AddressEndpoints::extractExpress};
        const AddressApi::Reply r = endpoints[endpoint](engine(), body);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.param, u"text"_qs);
        QVERIFY(!r.error.isEmpty());
    }

    void longestTextAccepted()
    {
        // The bound itself is accepted, and a text of many labels gives many names.
        const QString label = u"收件人：张伟 13812345678；"_qs;
        QString text;
        int labels = 0;
        for (; text.size() + label.size() <= AddressApi::kMaxText; ++labels)
            text += label;
        text = text.leftJustified(AddressApi::kMaxText, u' ');
        QCOMPARE(text.size(), AddressApi::kMaxText);
        const AddressApi::Reply r = AddressEndpoints::extractName(engine(), request(text));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.value("person_extract").toArray().size(), labels);
        QCOMPARE(AddressEndpoints::extract(engine(), request(text)).status, 200);
        QCOMPARE(AddressEndpoints::extractExpress(engine(), request(text)).status, 200);
    }

    void malformedText()
    {
        // Lone surrogates, control characters and only punctuation: answers, never a crash.
        QString odd = u"收件人："_qs;
        odd.append(QChar(0xD842)); // a high surrogate with no low one
        odd.append(u"张伟\u0000\u0007 浙江省杭州市\uFFFF"_qs);
        for (Endpoint e : {AddressEndpoints::extract, AddressEndpoints::extractName,
                           AddressEndpoints::extractExpress})
            QCOMPARE(e(engine(), request(odd)).status, 200);
        QCOMPARE(AddressEndpoints::extract(engine(), request(u"，。！？、；：“”"_qs))
                     .body.value("location_extract")
                     .toArray()
                     .size(),
                 0);
    }

    void servedThroughAddressApi()
    {
        for (const char *name : {"extract", "extract-name", "extract-express"}) {
            QVERIFY2(AddressApi::endpoints().contains(QLatin1String(name)), name);
            const AddressApi::Reply r = AddressApi::call(engine(), QLatin1String(name),
                                                         request(u"收件人：张伟 杭州市西湖区"_qs));
            QCOMPARE(r.status, 200);
            QVERIFY(r.billable);
        }
    }
};

QTEST_GUILESS_MAIN(TestExtraction)
#include "tst_extraction.moc"
