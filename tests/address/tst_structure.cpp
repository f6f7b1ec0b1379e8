// StructureParser and the structure endpoint, on addresses invented for this test.
#include "AddressApi.h"
#include "AddressEndpoints.h"
#include "AddressEngine.h"
#include "StructureParser.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QTest>

using namespace Qt::Literals::StringLiterals;

namespace {

// The suite's engine, as one server has: no imported data, engines built on first use.
const AddressEngine &engine()
{
    static const AddressEngine e;
    return e;
}

const StructureParser &parser()
{
    return engine().structureParser();
}

// Whether `s` is well-formed UTF-16: every high surrogate followed by a low one and every low
// surrogate preceded by a high one.
bool validUtf16(QStringView s)
{
    for (qsizetype i = 0; i < s.size(); ++i) {
        if (s[i].isHighSurrogate()) {
            if (i + 1 >= s.size() || !s[i + 1].isLowSurrogate())
                return false;
            ++i;
        } else if (s[i].isLowSurrogate()) {
            return false;
        }
    }
    return true;
}

// "key=value | key=value", easier to read in a failure than the tab form.
QString describe(const QList<StructureParser::Segment> &segments)
{
    return StructureParser::format(segments).replace(u'\t', u" | "_s);
}

} // namespace

class TestStructure : public QObject
{
    Q_OBJECT

private slots:
    void keys();
    void parse_data();
    void parse();
    void segmentsAreOrderedAndMatchTheText_data();
    void segmentsAreOrderedAndMatchTheText();
    void nothingAddressLike_data();
    void nothingAddressLike();
    void nonBmpCharactersNeverSplit();
    void hugeAndRepetitiveInput();
    void longRunsOfLetters();
    void addressAfterALongNote();
    void format();
    void endpointShape();
    void endpointNonBmpOffsets();
    void endpointNotFound();
    void endpointErrors_data();
    void endpointErrors();
    void servedByTheApi();
};

void TestStructure::keys()
{
    const QStringList &k = StructureParser::keys();
    QCOMPARE(k.size(), 23);
    QCOMPARE(k.first(), u"country"_s);
    QCOMPARE(k.last(), u"otherInfo"_s);
    QVERIFY(k.contains(u"roadNo"_s));
    QCOMPARE(QSet<QString>(k.cbegin(), k.cend()).size(), 23);
    QCOMPARE(StructureParser::canonicalKey(u"roadno"), u"roadNo"_s);
    QCOMPARE(StructureParser::canonicalKey(u"DEVZONE"), u"devZone"_s);
    QCOMPARE(StructureParser::canonicalKey(u"subpoi"), u"subPoi"_s);
    QVERIFY(StructureParser::canonicalKey(u"street").isEmpty());
    QVERIFY(StructureParser::canonicalKey(u"").isEmpty());
}

void TestStructure::parse_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected"); // describe() of the parse

    // The contract's example shape, every division level written out.
    QTest::newRow("full chain") << u"浙江省杭州市余杭区文一西路969号"_s
                                << u"prov=浙江省 | city=杭州市 | district=余杭区 | road=文一西路 | "
                                   "roadNo=969号"_s;
    QTest::newRow("building parts")
        << u"江苏省南京市鼓楼区湖南路街道云南北路28号3幢2单元401室"_s
        << u"prov=江苏省 | city=南京市 | district=鼓楼区 | town=湖南路街道 | road=云南北路 | "
           "roadNo=28号 | houseNo=3幢 | cellNo=2单元 | roomNo=401室"_s;
    QTest::newRow("municipality is a city")
        << u"北京市海淀区中关村大街27号中关村大厦15层1502室"_s
        << u"city=北京市 | district=海淀区 | road=中关村大街 | roadNo=27号 | poi=中关村大厦 | "
           "floorNo=15层 | roomNo=1502室"_s;
    QTest::newRow("village")
        << u"山东省济南市历城区港沟街道神武村"_s
        << u"prov=山东省 | city=济南市 | district=历城区 | town=港沟街道 | community=神武村"_s;
    QTest::newRow("road part and assist")
        << u"四川省成都市武侯区人民南路四段12号附近"_s
        << u"prov=四川省 | city=成都市 | district=武侯区 | road=人民南路 | subRoad=四段 | "
           "subRoadNo=12号 | assist=附近"_s;
    QTest::newRow("crossing")
        << u"湖北省武汉市洪山区珞喻路与关山大道交叉口光谷广场"_s
        << u"prov=湖北省 | city=武汉市 | district=洪山区 | road=珞喻路 | assist=与 | "
           "subRoad=关山大道 | assist=交叉口 | poi=光谷广场"_s;
    QTest::newRow("dev zone")
        << u"浙江省宁波市北仑区经济技术开发区明州路88号"_s
        << u"prov=浙江省 | city=宁波市 | district=北仑区 | devZone=经济技术开发区 | road=明州路 | "
           "roadNo=88号"_s;
    QTest::newRow("dashed building numbers")
        << u"福建省厦门市思明区鹭江道100号9-2-301"_s
        << u"prov=福建省 | city=厦门市 | district=思明区 | road=鹭江道 | roadNo=100号 | "
           "houseNo=9 | redundant=- | cellNo=2 | redundant=- | roomNo=301"_s;
    QTest::newRow("number range")
        << u"浙江省绍兴市越城区环城西路12-14号"_s
        << u"prov=浙江省 | city=绍兴市 | district=越城区 | road=环城西路 | roadNo=12-14号"_s;
    QTest::newRow("lane")
        << u"上海市黄浦区复兴中路505弄7号"_s
        << u"city=上海市 | district=黄浦区 | road=复兴中路 | subRoad=505弄 | subRoadNo=7号"_s;
    QTest::newRow("letter building and floor")
        << u"广州市天河区体育西路191号中石化大厦B座18楼"_s
        << u"city=广州市 | district=天河区 | road=体育西路 | roadNo=191号 | poi=中石化大厦 | "
           "houseNo=B座 | floorNo=18楼"_s;
    QTest::newRow("short forms") << u"杭州余杭五常街道荆长大道"_s
                                 << u"city=杭州 | district=余杭 | town=五常街道 | road=荆长大道"_s;
    QTest::newRow("poi and sub poi")
        << u"浙江省温州市鹿城区锦绣路汇丰花园东区12幢"_s
        << u"prov=浙江省 | city=温州市 | district=鹿城区 | road=锦绣路 | poi=汇丰花园 | "
           "subPoi=东区 | houseNo=12幢"_s;
    // Noise around the address: punctuation runs are redundant, the parse goes on.
    QTest::newRow("noise")
        << u"  浙江省，杭州市--西湖区 文三路  90号！！"_s
        << u"redundant=   | prov=浙江省 | redundant=， | city=杭州市 | redundant=-- | "
           "district=西湖区 | redundant=  | road=文三路 | redundant=   | roadNo=90号 | "
           "redundant=！！"_s;
    QTest::newRow("words before the address")
        << u"收货地址：浙江省杭州市西湖区"_s
        << u"redundant=收货地址 | redundant=： | prov=浙江省 | city=杭州市 | district=西湖区"_s;
    QTest::newRow("pasted twice")
        << u"浙江省杭州市浙江省杭州市拱墅区湖墅南路"_s
        << u"redundant=浙江省 | redundant=杭州市 | prov=浙江省 | city=杭州市 | district=拱墅区 | "
           "road=湖墅南路"_s;
    // A province named inside a company name after the road is part of that name.
    QTest::newRow("division inside a name")
        << u"杭州市西湖区学院路77号浙江大学"_s
        << u"city=杭州市 | district=西湖区 | road=学院路 | roadNo=77号 | poi=浙江大学"_s;
    QTest::newRow("no divisions") << u"解放路88号银泰百货3楼"_s
                                  << u"road=解放路 | roadNo=88号 | poi=银泰百货 | floorNo=3楼"_s;
    // A name glued before a road without a suffix of its own: a road's stem is 2-3 characters.
    QTest::newRow("old town name before a road")
        << u"浙江省舟山市普陀区沈家门海滨路6号"_s
        << u"prov=浙江省 | city=舟山市 | district=普陀区 | town=沈家门 | road=海滨路 | "
           "roadNo=6号"_s;
    QTest::newRow("village name before a road")
        << u"浙江省嘉兴市嘉善县西塘镇荷池桂花西路15号"_s
        << u"prov=浙江省 | city=嘉兴市 | district=嘉善县 | town=西塘镇 | community=荷池 | "
           "road=桂花西路 | roadNo=15号"_s;
    QTest::newRow("estate name before a road")
        << u"宁波市北仑区科创工业城新碶六路8号"_s
        << u"city=宁波市 | district=北仑区 | poi=科创工业城 | road=新碶六路 | roadNo=8号"_s;
    QTest::newRow("numbered village group")
        << u"湖南省岳阳市平江县三市镇白石村刘家5组"_s
        << u"prov=湖南省 | city=岳阳市 | district=平江县 | town=三市镇 | community=白石村 | "
           "poi=刘家 | road=5组"_s;
    // Three-character stems and stems with a direction stay whole.
    QTest::newRow("three-character stem")
        << u"杭州市西湖区天目山西路18号"_s
        << u"city=杭州市 | district=西湖区 | road=天目山西路 | roadNo=18号"_s;
    QTest::newRow("stem with 中") << u"温州市鹿城区洋中路3号"_s
                                  << u"city=温州市 | district=鹿城区 | road=洋中路 | roadNo=3号"_s;
    QTest::newRow("market row")
        << u"义乌国际商贸城二区12街3号"_s
        << u"district=义乌 | poi=国际商贸城二区 | cellNo=12街 | roomNo=3号"_s;
    QTest::newRow("full-width digits")
        << u"杭州市上城区延安路１２３号"_s
        << u"city=杭州市 | district=上城区 | road=延安路 | roadNo=１２３号"_s;
}

void TestStructure::parse()
{
    QFETCH(QString, text);
    QFETCH(QString, expected);
    QCOMPARE(describe(parser().parse(text)), expected);
}

void TestStructure::segmentsAreOrderedAndMatchTheText_data()
{
    QTest::addColumn<QString>("text");
    QTest::newRow("plain") << u"浙江省嘉兴市南湖区中山东路1号"_s;
    QTest::newRow("noisy") << u"## 广东省 深圳市 南山区 ~~ 科苑路15号 8栋 5单元 1203室 ##"_s;
    QTest::newRow("emoji") << u"🏠浙江省杭州市🏠滨江区江南大道🏠100号"_s;
    QTest::newRow("mixed") << u"abc北京def朝阳ghi路123"_s;
    QTest::newRow("zip code first") << u"310012 浙江省杭州市"_s;
}

void TestStructure::segmentsAreOrderedAndMatchTheText()
{
    QFETCH(QString, text);
    const QList<StructureParser::Segment> segments = parser().parse(text);
    QVERIFY(!segments.isEmpty());
    qsizetype last = 0;
    for (const StructureParser::Segment &s : segments) {
        QVERIFY2(s.start >= last, qPrintable(describe(segments)));
        QVERIFY(s.end > s.start);
        QVERIFY(s.end <= text.size());
        QCOMPARE(s.text, text.mid(s.start, s.end - s.start));
        QVERIFY2(StructureParser::keys().contains(s.key), qPrintable(s.key));
        // Never cut a surrogate pair.
        QVERIFY(!text[s.start].isLowSurrogate());
        QVERIFY(!text[s.end - 1].isHighSurrogate());
        last = s.end;
    }
}

void TestStructure::nothingAddressLike_data()
{
    QTest::addColumn<QString>("text");
    QTest::newRow("empty") << QString();
    QTest::newRow("spaces") << u"   \t  "_s;
    QTest::newRow("punctuation") << u"，。！？——"_s;
    QTest::newRow("latin") << u"hello world"_s;
    QTest::newRow("digits") << u"12345"_s;
    QTest::newRow("emoji") << u"😀😀😀"_s;
    QTest::newRow("chat") << u"今天天气不错"_s;
}

void TestStructure::nothingAddressLike()
{
    QFETCH(QString, text);
    QVERIFY2(parser().parse(text).isEmpty(), qPrintable(describe(parser().parse(text))));
}

void TestStructure::nonBmpCharactersNeverSplit()
{
    QVERIFY(validUtf16(u"a𠮷b"_s));
    QVERIFY(!validUtf16(u"村𠮷"_s.left(2)));
    QVERIFY(!validUtf16(u"𠮷文"_s.mid(1)));
    // Characters outside the BMP of every sort: CJK extension ideographs (letters), an emoji
    // (noise), a mathematical digit (a number to Unicode, not to the parser).
    const QStringList extras = {u"𠮷"_s, u"𬌗"_s, u"😀"_s, u"𝟘"_s, u"𠮷𠀋"_s, u"𠮷路"_s};
    const QStringList addresses = {
        u"浙江省杭州市余杭区文一西路969号"_s,
        u"江苏省南京市鼓楼区湖南路街道云南北路28号3幢2单元401室"_s,
        u"浙江省嘉兴市嘉善县西塘镇荷池桂花西路15号"_s,
        u"宁波市北仑区科创工业城新碶六路8号"_s,
        u"湖南省岳阳市平江县三市镇白石村刘家5组"_s,
        u"杭州市西湖区天目山西路18号"_s,
        u"浙江省舟山市普陀区沈家门海滨路6号"_s,
        u"义乌国际商贸城二区12街3号"_s,
        u"湖北省武汉市洪山区珞喻路与关山大道交叉口光谷广场"_s,
        u"上海市黄浦区复兴中路505弄7号"_s,
        u"村文一西路"_s,
        u"福建省厦门市思明区鹭江道100号9-2-301"_s,
    };
    int checked = 0;
    for (const QString &address : addresses) {
        for (const QString &extra : extras) {
            for (qsizetype at = 0; at <= address.size(); ++at) {
                QString text = address;
                text.insert(at, extra);
                const QList<StructureParser::Segment> segments = parser().parse(text);
                qsizetype last = 0;
                for (const StructureParser::Segment &s : segments) {
                    const QByteArray where = (text + u" -> "_s + describe(segments)).toUtf8();
                    QVERIFY2(s.start >= last && s.end > s.start && s.end <= text.size(),
                             where.constData());
                    QVERIFY2(s.text == text.mid(s.start, s.end - s.start), where.constData());
                    QVERIFY2(validUtf16(s.text), where.constData());
                    last = s.end;
                }
                ++checked;
            }
        }
    }
    QVERIFY(checked > 1000);
    // The review's case: an ideograph glued before a road's name stays whole on one side.
    const QString glued = u"村𠮷文一西路"_s;
    const QList<StructureParser::Segment> segments = parser().parse(glued);
    QVERIFY(!segments.isEmpty());
    for (const StructureParser::Segment &s : segments)
        QVERIFY2(validUtf16(s.text), qPrintable(describe(segments)));
    QCOMPARE(segments.last().key, u"road"_s);
    QVERIFY(segments.last().text.endsWith(u"文一西路"_s));
}

void TestStructure::hugeAndRepetitiveInput()
{
    // Far longer than the endpoint accepts: the engine itself must still cope.
    QString text;
    for (int i = 0; text.size() < 5 * AddressApi::kMaxText; ++i)
        text += u"浙江省杭州市西湖区文三路"_s + QString::number(i) + u"号，"_s;
    const QList<StructureParser::Segment> segments = parser().parse(text);
    QVERIFY(!segments.isEmpty());
    QCOMPARE(segments.first().key, u"prov"_s);
    qsizetype last = 0;
    for (const StructureParser::Segment &s : segments) {
        QVERIFY(s.start >= last);
        last = s.end;
    }
    QVERIFY(last <= text.size());
    // Repetitive division names at the endpoint's limit: one chain, the rest redundant or names.
    for (const QString &unit : {u"北京朝阳长春朝阳"_s, u"江东区宁波鄞州"_s, u"杭州余杭临平"_s}) {
        QString repeated;
        while (repeated.size() < AddressApi::kMaxText)
            repeated += unit;
        repeated.truncate(AddressApi::kMaxText);
        DivisionMatcher::Result divisions;
        const QList<StructureParser::Segment> parsed = parser().parse(repeated, &divisions);
        QVERIFY2(!parsed.isEmpty(), qPrintable(unit));
        QVERIFY(!divisions.isEmpty());
        QCOMPARE(parsed.last().end, repeated.size());
    }
    // A long run with no keyword at all is one name, not thousands of segments.
    const QString letters(3000, u'啊');
    QVERIFY(parser().parse(letters).size() <= 1);
}

void TestStructure::longRunsOfLetters()
{
    // Latin letters are scanned as possible building numbers (A座) from every position: the
    // scan must not restart from each letter. A run of letters is no address; one after an
    // address does not change how the address reads.
    for (const int n : {1, 2, 3, 250, 2000}) {
        const QString letters(n, u'a');
        QVERIFY2(parser().parse(letters).isEmpty(), qPrintable(describe(parser().parse(letters))));
    }
    const QString address = u"杭州市西湖区文三路90号"_s;
    const QString tail(AddressApi::kMaxText - address.size() - 1, u'a');
    const QList<StructureParser::Segment> segments = parser().parse(address + u' ' + tail);
    QVERIFY2(describe(segments).startsWith(u"city=杭州市 | district=西湖区 | road=文三路 | "
                                           "roadNo=90号 | redundant=  | "_s),
             qPrintable(describe(segments).left(200)));
    QCOMPARE(segments.last().end, address.size() + 1 + tail.size());
    // Letters and digits mixed (a long code): still ends at the text's end, no overlap.
    QString code;
    while (code.size() < AddressApi::kMaxText)
        code += u"ab1-"_s;
    qsizetype last = 0;
    for (const StructureParser::Segment &s : parser().parse(u"文三路"_s + code)) {
        QVERIFY(s.start >= last);
        last = s.end;
    }
    QCOMPARE(last, 3 + code.size());
    // One division name repeated to the limit (each copy checked against the others once):
    // a single chain at the end, every earlier copy redundant.
    const QString repeated = u"西湖"_s.repeated(AddressApi::kMaxText / 2);
    const QList<StructureParser::Segment> copies = parser().parse(repeated);
    QVERIFY(!copies.isEmpty());
    qsizetype redundant = 0, district = 0;
    for (const StructureParser::Segment &s : copies) {
        redundant += s.key == u"redundant"_s ? 1 : 0;
        district += s.key == u"district"_s ? 1 : 0;
    }
    QCOMPARE(district, 1);
    QVERIFY2(redundant >= copies.size() - 2, qPrintable(describe(copies).left(200)));
    QCOMPARE(copies.last().end, repeated.size());
}

void TestStructure::addressAfterALongNote()
{
    // The divisions are resolved wherever the address starts, not only near the text's start.
    const QString note = u"备注：周末请提前打电话，"_s.repeated(10);
    const QList<StructureParser::Segment> segments =
        parser().parse(note + u"浙江杭州西湖文三路90号"_s);
    QVERIFY2(describe(segments).endsWith(u"prov=浙江 | city=杭州 | district=西湖 | road=文三路 | "
                                         "roadNo=90号"_s),
             qPrintable(describe(segments)));
}

void TestStructure::format()
{
    QList<StructureParser::Segment> segments;
    QCOMPARE(StructureParser::format(segments), QString());
    segments.append({u"prov"_s, 0, 3, u"浙江省"_s});
    QCOMPARE(StructureParser::format(segments), u"prov=浙江省"_s);
    segments.append({u"roadNo"_s, 3, 6, u"12号"_s});
    QCOMPARE(StructureParser::format(segments), u"prov=浙江省\troadNo=12号"_s);
    QVERIFY(StructureParser::find(segments, u"roadNo"));
    QCOMPARE(StructureParser::find(segments, u"roadNo")->text, u"12号"_s);
    QVERIFY(!StructureParser::find(segments, u"city"));
}

void TestStructure::endpointShape()
{
    const AddressApi::Reply r = AddressEndpoints::structure(
        engine(), QJsonObject{{"text", u"浙江省杭州市余杭区文一西路969号"_s}});
    QCOMPARE(r.status, 200);
    QVERIFY(r.billable);
    QCOMPARE(r.body.value("status").toString(), u"OK"_s);
    QCOMPARE(r.body.value("structure").toString(),
             u"prov=浙江省\tcity=杭州市\tdistrict=余杭区\troad=文一西路\troadNo=969号"_s);
    const QJsonArray segments = r.body.value("segments").toArray();
    QCOMPARE(segments.size(), 5);
    const QJsonObject first = segments.first().toObject();
    QCOMPARE(first.value("key").toString(), u"prov"_s);
    QCOMPARE(first.value("start").toInt(), 0);
    QCOMPARE(first.value("end").toInt(), 3);
    QCOMPARE(first.value("word").toString(), u"浙江省"_s);
    const QJsonObject last = segments.last().toObject();
    QCOMPARE(last.value("key").toString(), u"roadNo"_s);
    QCOMPARE(last.value("start").toInt(), 13);
    QCOMPARE(last.value("end").toInt(), 17);
    QCOMPARE(r.body.keys(), (QStringList{u"segments"_s, u"status"_s, u"structure"_s}));
}

void TestStructure::endpointNonBmpOffsets()
{
    // 𠀋 is one character (two UTF-16 units): offsets after it count it once.
    const QString text = u"𠀋𠀋浙江省杭州市"_s;
    const AddressApi::Reply r = AddressEndpoints::structure(engine(), QJsonObject{{"text", text}});
    QCOMPARE(r.status, 200);
    const QJsonArray segments = r.body.value("segments").toArray();
    QVERIFY(segments.size() >= 2);
    const QJsonObject city = segments.last().toObject();
    QCOMPARE(city.value("key").toString(), u"city"_s);
    QCOMPARE(city.value("start").toInt(), 5);
    QCOMPARE(city.value("end").toInt(), 8);
    QCOMPARE(city.value("word").toString(), u"杭州市"_s);
    const QJsonObject prov = segments.at(segments.size() - 2).toObject();
    QCOMPARE(prov.value("start").toInt(), 2);
}

void TestStructure::endpointNotFound()
{
    const AddressApi::Reply r =
        AddressEndpoints::structure(engine(), QJsonObject{{"text", u"hello, world"_s}});
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body.value("status").toString(), u"NOT_FOUND"_s);
    QCOMPARE(r.body.value("structure").toString(), QString());
    QVERIFY(r.body.value("structure").isString());
    QCOMPARE(r.body.value("segments").toArray().size(), 0);
}

void TestStructure::endpointErrors_data()
{
    QTest::addColumn<QJsonObject>("request");
    QTest::newRow("missing") << QJsonObject{};
    QTest::newRow("number") << QJsonObject{{"text", 12}};
    QTest::newRow("array") << QJsonObject{{"text", QJsonArray{u"浙江省"_s}}};
    QTest::newRow("null") << QJsonObject{{"text", QJsonValue::Null}};
    QTest::newRow("empty") << QJsonObject{{"text", u""_s}};
    QTest::newRow("blank") << QJsonObject{{"text", u"  \n "_s}};
    QTest::newRow("too long") << QJsonObject{{"text", QString(AddressApi::kMaxText + 1, u'路')}};
}

void TestStructure::endpointErrors()
{
    QFETCH(QJsonObject, request);
    const AddressApi::Reply r = AddressEndpoints::structure(engine(), request);
    QCOMPARE(r.status, 400);
    QCOMPARE(r.param, u"text"_s);
    QVERIFY(!r.error.isEmpty());
}

void TestStructure::servedByTheApi()
{
    QVERIFY(AddressApi::endpoints().contains(u"structure"_s));
    const AddressApi::Reply r =
        AddressApi::call(engine(), u"structure"_s, QJsonObject{{"text", u"杭州市西湖区"_s}});
    QCOMPARE(r.status, 200);
    QCOMPARE(r.body.value("structure").toString(), u"city=杭州市\tdistrict=西湖区"_s);
    // At the length bound exactly: accepted.
    const AddressApi::Reply atBound = AddressApi::call(
        engine(), u"structure"_s, QJsonObject{{"text", QString(AddressApi::kMaxText, u'路')}});
    QCOMPARE(atBound.status, 200);
}

QTEST_APPLESS_MAIN(TestStructure)
#include "tst_structure.moc"
