#include "AddressEndpoints.h"
#include "AddressEngine.h"
#include "Pinyin.h"
#include "SearchIndex.h"

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

const SearchIndex &index()
{
    return SearchIndex::builtin();
}

QStringList names(const QList<SearchIndex::Hit> &hits)
{
    QStringList out;
    for (const SearchIndex::Hit &h : hits)
        out << index().entry(h.entry).name;
    return out;
}

QString firstCode(const QList<SearchIndex::Hit> &hits)
{
    return hits.isEmpty() ? QString() : QString::number(index().entry(hits.first().entry).divcode);
}

QList<const Gazetteer::Division *> region(qint64 code)
{
    const Gazetteer::Division *d = Gazetteer::builtin().byCode(code);
    Q_ASSERT(d);
    return {d};
}

} // namespace

class TestSearch : public QObject
{
    Q_OBJECT

private slots:
    void pinyinReadings();
    void pinyinNormalize_data();
    void pinyinNormalize();
    void pinyinRejectsMalformedTables_data();
    void pinyinRejectsMalformedTables();
    void findsTheDivision_data();
    void findsTheDivision();
    void polyphonePlaceNames_data();
    void polyphonePlaceNames();
    void tolerantOnlyInSearch();
    void rankingOrder();
    void prefixAutocomplete();
    void parentNarrows();
    void regionRestricts();
    void nothingForGarbage_data();
    void nothingForGarbage();
    void limits();
    void extraEntries();
    void endpointShapes();
    void endpointValidation_data();
    void endpointValidation();
};

void TestSearch::pinyinReadings()
{
    const Pinyin &p = Pinyin::builtin();
    QVERIFY(p.characterCount() > 20000);
    QCOMPARE(p.readings(U'长').value(0), u"chang"_s);
    QVERIFY(p.readings(U'长').contains(u"zhang"_s));
    QVERIFY(p.readings(U'厦').contains(u"xia"_s));
    QCOMPARE(p.readings(U'绿').value(0), u"lv"_s);
    QVERIFY(p.readings(U'a').isEmpty());
    QVERIFY(p.readings(0x20000).isEmpty());
    // Place names read in context; the same characters elsewhere keep their first reading.
    QCOMPARE(p.syllables(u"长沙市"), (QStringList{u"chang"_s, u"sha"_s, u"shi"_s}));
    QCOMPARE(p.full(u"厦门"), u"xiamen"_s);
    QCOMPARE(p.full(u"六安市"), u"luanshi"_s);
    QCOMPARE(p.full(u"蚌埠"), u"bengbu"_s);
    QCOMPARE(p.full(u"六个"), u"liuge"_s);
    QCOMPARE(p.initials(u"杭州市余杭区"), u"hzsyhq"_s);
    // Letters and digits are one syllable each run; punctuation is not read; a character with no
    // reading (outside the table's block) stays itself.
    QCOMPARE(p.syllables(u"K11·购物"), (QStringList{u"k11"_s, u"gou"_s, u"wu"_s}));
    QCOMPARE(p.syllables(u"𠀀门"), (QStringList{u"𠀀"_s, u"men"_s}));
    QCOMPARE(p.initials(u"798艺术区"), u"798ysq"_s);
    QVERIFY(p.syllables(u"").isEmpty());
    // Alternatives: the first reading first, the per-character reading next, bounded.
    const QList<QStringList> alt = p.alternatives(u"六安", 3);
    QCOMPARE(alt.value(0).join(u' '), u"lu an"_s);
    QCOMPARE(alt.value(1).join(u' '), u"liu an"_s);
    QVERIFY(alt.size() <= 3);
    QCOMPARE(p.alternatives(u"长长长长长长长长长长长长", 4).size(), 4);
    QVERIFY(p.alternatives(u"杭州", 0).isEmpty());
}

void TestSearch::pinyinNormalize_data()
{
    QTest::addColumn<QString>("input");
    QTest::addColumn<QString>("normalized");
    QTest::newRow("case and spaces") << u" Hang Zhou "_s << u"hangzhou"_s;
    QTest::newRow("apostrophe") << u"xi'an"_s << u"xian"_s;
    QTest::newRow("full-width") << u"ＨＡＮＧ’ｚｈｏｕ"_s << u"hangzhou"_s;
    QTest::newRow("u umlaut") << u"Lüliang"_s << u"lvliang"_s;
    QTest::newRow("u colon") << u"lu:liang"_s << u"lvliang"_s;
    QTest::newRow("chinese kept") << u"杭州 余杭"_s << u"杭州余杭"_s;
    QTest::newRow("mixed") << u"hangzhou-余杭!"_s << u"hangzhou余杭"_s;
    QTest::newRow("punctuation only") << u"，。！?"_s << QString();
    QTest::newRow("non-BMP kept") << u"𠀀 a"_s << u"𠀀a"_s;
}

void TestSearch::pinyinNormalize()
{
    QFETCH(QString, input);
    QFETCH(QString, normalized);
    QCOMPARE(Pinyin::normalize(input), normalized);
}

void TestSearch::pinyinRejectsMalformedTables_data()
{
    QTest::addColumn<QByteArray>("tsv");
    QTest::newRow("empty") << QByteArray();
    QTest::newRow("comments only") << QByteArray("# nothing\n");
    QTest::newRow("two fields") << QByteArray("c\t长\n");
    QTest::newRow("bad syllable") << QByteArray("c\t长\tchang2\n");
    QTest::newRow("not CJK") << QByteArray("c\ta\ta\n");
    QTest::newRow("duplicate") << QByteArray("c\t长\tchang\nc\t长\tzhang\n");
    QTest::newRow("word length") << QByteArray("c\t长\tchang\nw\t长沙\tchang\n");
    QTest::newRow("unknown type") << QByteArray("x\t长\tchang\n");
}

void TestSearch::pinyinRejectsMalformedTables()
{
    QFETCH(QByteArray, tsv);
    Pinyin p;
    QString error;
    QVERIFY(!p.loadFromData(tsv, &error));
    QVERIFY(!error.isEmpty());

    Pinyin good;
    QVERIFY2(good.loadFromData("c\t长\tchang zhang\nc\t沙\tsha\nw\t长沙\tzhang sha\n", &error),
             qPrintable(error));
    QCOMPARE(good.full(u"长沙长"), u"zhangshachang"_s);
}

void TestSearch::findsTheDivision_data()
{
    QTest::addColumn<QString>("query");
    QTest::addColumn<QString>("code"); // of the first result
    QTest::newRow("name") << u"杭州市"_s << u"330100000000"_s;
    QTest::newRow("short form") << u"杭州"_s << u"330100000000"_s;
    QTest::newRow("province short") << u"内蒙古"_s << u"150000000000"_s;
    QTest::newRow("pinyin") << u"hangzhou"_s << u"330100000000"_s;
    QTest::newRow("pinyin any case") << u"HangZhou"_s << u"330100000000"_s;
    QTest::newRow("pinyin spaced") << u"hang zhou"_s << u"330100000000"_s;
    QTest::newRow("pinyin apostrophes") << u"hang'zhou'shi"_s << u"330100000000"_s;
    QTest::newRow("pinyin full-width") << u"ｈａｎｇｚｈｏｕ"_s << u"330100000000"_s;
    QTest::newRow("initials district") << u"hzyhq"_s << u"330110000000"_s;
    QTest::newRow("mixed") << u"hangzhou余杭"_s << u"330110000000"_s;
    QTest::newRow("mixed initials") << u"hz余杭"_s << u"330110000000"_s;
    QTest::newRow("town") << u"良渚街道"_s << u"330110010000"_s;
    QTest::newRow("typo chinese homophone") << u"杭洲"_s << u"330100000000"_s;
    QTest::newRow("typo chinese other") << u"余航区"_s << u"330110000000"_s;
    QTest::newRow("typo pinyin dropped") << u"hangzou"_s << u"330100000000"_s;
    QTest::newRow("typo pinyin swapped") << u"hnagzhou"_s << u"330100000000"_s;
    QTest::newRow("typo pinyin wrong") << u"hangzhoy"_s << u"330100000000"_s;
}

void TestSearch::findsTheDivision()
{
    QFETCH(QString, query);
    QFETCH(QString, code);
    const QList<SearchIndex::Hit> hits = index().search(query, 5);
    QVERIFY2(!hits.isEmpty(), qPrintable(query));
    QCOMPARE(firstCode(hits), code);
}

void TestSearch::polyphonePlaceNames_data()
{
    QTest::addColumn<QString>("query");
    QTest::addColumn<QString>("name");
    QTest::newRow("长沙") << u"changsha"_s << u"长沙市"_s;
    QTest::newRow("厦门") << u"xiamen"_s << u"厦门市"_s;
    QTest::newRow("六安") << u"luan"_s << u"六安市"_s;
    QTest::newRow("蚌埠") << u"bengbu"_s << u"蚌埠市"_s;
    QTest::newRow("重庆") << u"chongqing"_s << u"重庆市"_s;
    QTest::newRow("番禺") << u"panyu"_s << u"番禺区"_s;
    QTest::newRow("铅山") << u"yanshan"_s << u"铅山县"_s;
    // The naive reading still finds the place, as an alternative below the first readings.
    QTest::newRow("六安 naive") << u"liuan"_s << u"六安市"_s;
}

void TestSearch::polyphonePlaceNames()
{
    QFETCH(QString, query);
    QFETCH(QString, name);
    const QStringList found = names(index().search(query, 5));
    QVERIFY2(found.contains(name), qPrintable(found.join(u',')));
    if (query != u"liuan" && query != u"yanshan") // 燕山 etc. share yanshan
        QCOMPARE(found.value(0), name);
}

void TestSearch::tolerantOnlyInSearch()
{
    // input-search is prefix only: a wrong character finds nothing there.
    QVERIFY(!names(index().complete(u"杭洲", 10)).contains(u"杭州市"_s));
    QVERIFY(!names(index().complete(u"hangzou", 10)).contains(u"杭州市"_s));
    const QList<SearchIndex::Hit> tolerant = index().search(u"杭洲", 5);
    QCOMPARE(tolerant.value(0).match, SearchIndex::Match::Homophone);
    const QList<SearchIndex::Hit> fuzzy = index().search(u"hangzou", 5);
    QCOMPARE(fuzzy.value(0).match, SearchIndex::Match::Fuzzy);
    QCOMPARE(fuzzy.value(0).score, 0.59); // fuzzy 0.6 less 0.01 for a city
}

void TestSearch::rankingOrder()
{
    // 朝阳: the city (辽宁) and every 朝阳区 match exactly; the city comes first, then the
    // districts, then prefix matches; scores never rise.
    const QList<SearchIndex::Hit> hits = index().search(u"朝阳", 20);
    QVERIFY(hits.size() >= 5);
    QCOMPARE(index().entry(hits[0].entry).name, u"朝阳市"_s);
    QCOMPARE(hits[0].match, SearchIndex::Match::Exact);
    QCOMPARE(hits[0].score, 0.99);
    bool seenPrefix = false;
    int lastLevel = 0;
    for (qsizetype i = 0; i < hits.size(); ++i) {
        if (i > 0)
            QVERIFY(hits[i].score <= hits[i - 1].score);
        const QString kind = index().entry(hits[i].entry).kind;
        const int level =
            QStringList{u"province"_s, u"city"_s, u"district"_s, u"town"_s}.indexOf(kind);
        if (hits[i].match == SearchIndex::Match::Prefix) {
            seenPrefix = true;
        } else {
            QVERIFY2(!seenPrefix, "an exact match after a prefix match");
            QVERIFY(level >= lastLevel);
            lastLevel = level;
        }
    }
    QVERIFY(names(hits).contains(u"朝阳区"_s));
    // Same class and level: stable by code (北京's 朝阳区 before 长春's).
    const QList<SearchIndex::Hit> districts = index().search(u"朝阳区", 5);
    QCOMPARE(firstCode(districts), u"110105000000"_s);
    QCOMPARE(index().search(u"朝阳区", 5).first().entry, districts.first().entry);
}

void TestSearch::prefixAutocomplete()
{
    // Every keystroke of 杭州 and of its pinyin keeps 杭州 in the suggestions, city first.
    for (const QString &q : {u"杭"_s, u"hang"_s, u"hangzh"_s, u"hangzhou"_s}) {
        const QList<SearchIndex::Hit> hits = index().complete(q, 10);
        QVERIFY2(names(hits).contains(u"杭州市"_s), qPrintable(q));
    }
    QCOMPARE(index().entry(index().complete(u"杭", 10).first().entry).name, u"杭州市"_s);
    // Initials as typed.
    QVERIFY(names(index().complete(u"h", 20)).size() == 20);
    QVERIFY(names(index().complete(u"hz", 10)).contains(u"杭州市"_s));
    QVERIFY(names(index().complete(u"yhq", 10)).contains(u"余杭区"_s));
    // Typing on after a parent: 杭州余 suggests 余杭区.
    QCOMPARE(index().entry(index().complete(u"杭州余", 10).value(0).entry).name, u"余杭区"_s);
    QCOMPARE(index().entry(index().complete(u"hangzhouyuh", 10).value(0).entry).name, u"余杭区"_s);
    // A prefix is a prefix class, and a complete key is exact.
    QCOMPARE(index().complete(u"杭州", 1).value(0).match, SearchIndex::Match::Exact);
    QCOMPARE(index().complete(u"杭", 1).value(0).match, SearchIndex::Match::Prefix);
}

void TestSearch::parentNarrows()
{
    for (const QString &q : {u"杭州 余杭"_s, u"杭州余杭"_s, u"浙江杭州余杭"_s,
                             u"浙江省杭州市余杭区"_s, u"hangzhou yuhang"_s, u"杭州 yuhang"_s}) {
        const QList<SearchIndex::Hit> hits = index().search(q, 5);
        QVERIFY2(!hits.isEmpty(), qPrintable(q));
        QCOMPARE(firstCode(hits), u"330110000000"_s);
    }
    // 朝阳 under 北京 is 北京's 朝阳区, not 辽宁's 朝阳市.
    QCOMPARE(firstCode(index().search(u"北京 朝阳", 5)), u"110105000000"_s);
    QCOMPARE(firstCode(index().search(u"长春朝阳", 5)), u"220104000000"_s);
    // A parent never narrows to itself: nothing inside 余杭区 is called 余杭区.
    QVERIFY(!names(index().search(u"余杭区余杭区", 5)).contains(u"余杭区"_s));
}

void TestSearch::regionRestricts()
{
    const QList<SearchIndex::Hit> hits = index().search(u"朝阳", 20, region(110000000000));
    QVERIFY(!hits.isEmpty());
    for (const SearchIndex::Hit &h : hits) {
        const qint64 code = index().entry(h.entry).divcode;
        QVERIFY2(code >= 110000000000 && code < 120000000000, qPrintable(QString::number(code)));
    }
    QCOMPARE(firstCode(hits), u"110105000000"_s);
    // The region itself may be the answer.
    QCOMPARE(firstCode(index().complete(u"hangzhou", 5, region(330100000000))), u"330100000000"_s);
    // Nothing of another province.
    QVERIFY(index().search(u"杭州", 5, region(110000000000)).isEmpty() ||
            firstCode(index().search(u"杭州", 5, region(110000000000))).startsWith(u"11"));
    // Large regions with a one-letter prefix still answer, all inside.
    const QList<SearchIndex::Hit> many = index().complete(u"h", 20, region(440000000000));
    QCOMPARE(many.size(), 20);
    for (const SearchIndex::Hit &h : many)
        QVERIFY(QString::number(index().entry(h.entry).divcode).startsWith(u"44"));
    // A parent named in the query may contain the region.
    QCOMPARE(firstCode(index().search(u"杭州 良渚", 5, region(330110000000))), u"330110010000"_s);
}

void TestSearch::nothingForGarbage_data()
{
    QTest::addColumn<QString>("query");
    QTest::newRow("empty") << QString();
    QTest::newRow("blank") << u"   \t "_s;
    QTest::newRow("punctuation") << u"!!!，。？"_s;
    QTest::newRow("non-BMP") << u"𠀀𠀁𠀂"_s;
    QTest::newRow("emoji") << u"😀😀"_s;
    QTest::newRow("nonsense letters") << u"qqqqxxxxzzzz"_s;
    QTest::newRow("huge") << QString(2000, u'龘');
    QTest::newRow("huge latin") << QString(2000, u'q');
    QTest::newRow("lone surrogate") << QString(QChar(0xD800));
}

void TestSearch::nothingForGarbage()
{
    QFETCH(QString, query);
    QVERIFY(index().complete(query, 10).isEmpty());
    QVERIFY(index().search(query, 5).isEmpty());
}

void TestSearch::limits()
{
    QCOMPARE(index().complete(u"h", 20).size(), 20);
    QCOMPARE(index().complete(u"h", 3).size(), 3);
    QCOMPARE(index().search(u"朝阳", 1).size(), 1);
    QVERIFY(index().search(u"朝阳", 0).isEmpty());
    QVERIFY(index().complete(u"朝阳", -1).isEmpty());
    // Distinct entries only, even when several keys of one entry match.
    const QList<SearchIndex::Hit> hits = index().complete(u"yuhang", 20);
    QSet<qsizetype> seen;
    for (const SearchIndex::Hit &h : hits) {
        QVERIFY(!seen.contains(h.entry));
        seen.insert(h.entry);
    }
    QVERIFY(!seen.isEmpty());
}

void TestSearch::extraEntries()
{
    QList<SearchIndex::Entry> extra;
    SearchIndex::Entry a;
    a.name = u"云栖晓风测试园"_s;
    a.aliases = {u"晓风园"_s};
    a.kind = u"poi"_s;
    a.divcode = 330106000000; // 西湖区
    a.gcj02 = SearchIndex::Point{120.1, 30.2};
    SearchIndex::Entry b = a; // same name and division: kept in the order given
    b.address = u"浙江省杭州市西湖区某路1号"_s;
    b.gcj02.reset();
    SearchIndex::Entry c;
    c.name = u"K11晓风中心"_s;
    c.kind = u"poi"_s; // no division
    extra << a << b << c;
    const SearchIndex idx(Gazetteer::builtin(), Pinyin::builtin(), extra);
    QCOMPARE(idx.size(), index().size() + 3);

    const QList<SearchIndex::Hit> hits = idx.search(u"yunqixiaofeng", 5);
    QCOMPARE(hits.size(), 2);
    const SearchIndex::Entry &first = idx.entry(hits[0].entry);
    QCOMPARE(first.address, u"浙江省杭州市西湖区"_s); // filled from the division
    QVERIFY(first.gcj02.has_value());
    QCOMPARE(idx.entry(hits[1].entry).address, u"浙江省杭州市西湖区某路1号"_s);
    QCOMPARE(first.kind, u"poi"_s);
    QCOMPARE(hits[0].score, 0.76); // a prefix (0.8) of an entry that is no division (-0.04)
    QCOMPARE(hits[0].match, SearchIndex::Match::Prefix);
    QCOMPARE(idx.search(u"晓风园", 5).value(0).match, SearchIndex::Match::Exact);
    QCOMPARE(idx.entry(idx.search(u"晓风园", 5).value(0).entry).name, u"云栖晓风测试园"_s);
    QCOMPARE(idx.entry(idx.search(u"k11xf", 5).value(0).entry).name, u"K11晓风中心"_s);
    QCOMPARE(idx.entry(idx.search(u"K11晓风", 5).value(0).entry).name, u"K11晓风中心"_s);
    QCOMPARE(idx.entry(idx.search(u"杭州 晓风园", 5).value(0).entry).name, u"云栖晓风测试园"_s);
    // Regions: inside 西湖区, not inside 余杭区; no division means no region selects it.
    QCOMPARE(idx.search(u"晓风园", 5, region(330106000000)).size(), 2);
    QVERIFY(idx.search(u"晓风园", 5, region(330110000000)).isEmpty());
    QVERIFY(idx.search(u"K11晓风中心", 5, region(330000000000)).isEmpty());
    // Divisions still rank first at the same class: 西湖区 before a point named 西湖...
    QCOMPARE(idx.entry(idx.complete(u"xihu", 1).value(0).entry).kind, u"district"_s);
}

void TestSearch::endpointShapes()
{
    // Served through AddressApi, so the HTTP routes and the window's tool answer the same.
    QVERIFY(AddressApi::endpoints().contains(u"search"_s));
    QVERIFY(AddressApi::endpoints().contains(u"input-search"_s));
    QCOMPARE(AddressApi::call(engine(), u"input-search"_s, {{"text", u"yuhang"_s}})
                 .body.value("input_search")
                 .toArray()
                 .first()
                 .toObject()
                 .value("name"),
             u"余杭区"_s);

    const AddressApi::Reply r = AddressEndpoints::search(engine(), {{"text", u"杭州"_s}});
    QVERIFY(r.ok());
    QCOMPARE(r.body.value("status").toString(), u"OK"_s);
    const QJsonArray results = r.body.value("search_result").toArray();
    QCOMPARE(results.size(), 5);
    const QJsonObject top = results.first().toObject();
    QCOMPARE(top.keys(), (QStringList{u"address"_s, u"divcode"_s, u"gcj02"_s, u"kind"_s, u"name"_s,
                                      u"score"_s, u"wgs84"_s}));
    QCOMPARE(top.value("name").toString(), u"杭州市"_s);
    QCOMPARE(top.value("address").toString(), u"浙江省杭州市"_s);
    QCOMPARE(top.value("kind").toString(), u"city"_s);
    QCOMPARE(top.value("divcode").toString(), u"330100000000"_s);
    QCOMPARE(top.value("score").toDouble(), 0.99);
    const QStringList gcj = top.value("gcj02").toString().split(u',');
    const QStringList wgs = top.value("wgs84").toString().split(u',');
    QCOMPARE(gcj.size(), 2);
    QCOMPARE(wgs.size(), 2);
    // WGS84 lies a few hundred metres from GCJ-02 in China, never equal.
    QVERIFY(std::abs(gcj[0].toDouble() - wgs[0].toDouble()) > 1e-4);
    QVERIFY(std::abs(gcj[0].toDouble() - wgs[0].toDouble()) < 0.02);
    QVERIFY(gcj[0].toDouble() > 118.3 && gcj[0].toDouble() < 120.8); // within 杭州's extent
    QVERIFY(gcj[1].toDouble() > 29.2 && gcj[1].toDouble() < 30.6);

    const AddressApi::Reply in = AddressEndpoints::inputSearch(engine(), {{"text", u"hang"_s}});
    QVERIFY(in.ok());
    const QJsonArray suggestions = in.body.value("input_search").toArray();
    QCOMPARE(suggestions.size(), 10);
    QCOMPARE(suggestions.first().toObject().keys(),
             (QStringList{u"address"_s, u"divcode"_s, u"kind"_s, u"name"_s}));
    QCOMPARE(in.body.value("status").toString(), u"OK"_s);

    const AddressApi::Reply none =
        AddressEndpoints::search(engine(), {{"text", u"qqqqxxxxzzzz"_s}});
    QVERIFY(none.ok());
    QCOMPARE(none.body.value("status").toString(), u"NOT_FOUND"_s);
    QVERIFY(none.body.value("search_result").toArray().isEmpty());
    const AddressApi::Reply noneIn = AddressEndpoints::inputSearch(engine(), {{"text", u"😀"_s}});
    QCOMPARE(noneIn.body.value("status").toString(), u"NOT_FOUND"_s);

    // limit and region honoured.
    const AddressApi::Reply limited = AddressEndpoints::search(
        engine(), {{"text", u"朝阳"_s}, {"limit", 20}, {"region", u"北京"_s}});
    QVERIFY(limited.ok());
    for (const QJsonValue &v : limited.body.value("search_result").toArray())
        QVERIFY(v.toObject().value("divcode").toString().startsWith(u"11"));
    QCOMPARE(AddressEndpoints::inputSearch(engine(), {{"text", u"h"_s}, {"limit", 20}})
                 .body.value("input_search")
                 .toArray()
                 .size(),
             20);
    QCOMPARE(
        AddressEndpoints::search(engine(), {{"text", u"朝阳"_s}, {"region", u"110105000000"_s}})
            .body.value("search_result")
            .toArray()
            .first()
            .toObject()
            .value("divcode"),
        u"110105000000"_s);
    QVERIFY(AddressEndpoints::search(engine(), {{"text", u"余杭"_s}, {"region", u"浙江省杭州市"_s}})
                .ok());
    QVERIFY(AddressEndpoints::search(engine(), {{"text", u"余杭"_s}, {"region", u"3301"_s}}).ok());
}

void TestSearch::endpointValidation_data()
{
    QTest::addColumn<QJsonObject>("request");
    QTest::addColumn<QString>("param");
    QTest::newRow("no text") << QJsonObject{} << u"text"_s;
    QTest::newRow("text number") << QJsonObject{{"text", 5}} << u"text"_s;
    QTest::newRow("text blank") << QJsonObject{{"text", u"  "_s}} << u"text"_s;
    QTest::newRow("text too long") << QJsonObject{{"text", QString(2001, u'杭')}} << u"text"_s;
    QTest::newRow("limit 0") << QJsonObject{{"text", u"杭州"_s}, {"limit", 0}} << u"limit"_s;
    QTest::newRow("limit 21") << QJsonObject{{"text", u"杭州"_s}, {"limit", 21}} << u"limit"_s;
    QTest::newRow("limit fraction")
        << QJsonObject{{"text", u"杭州"_s}, {"limit", 2.5}} << u"limit"_s;
    QTest::newRow("limit string") << QJsonObject{{"text", u"杭州"_s}, {"limit", u"5"_s}}
                                  << u"limit"_s;
    QTest::newRow("limit bool") << QJsonObject{{"text", u"杭州"_s}, {"limit", true}} << u"limit"_s;
    QTest::newRow("limit negative")
        << QJsonObject{{"text", u"杭州"_s}, {"limit", -3}} << u"limit"_s;
    QTest::newRow("region unknown")
        << QJsonObject{{"text", u"杭州"_s}, {"region", u"月球背面"_s}} << u"region"_s;
    QTest::newRow("region code unknown")
        << QJsonObject{{"text", u"杭州"_s}, {"region", u"990000000000"_s}} << u"region"_s;
    QTest::newRow("region too many digits")
        << QJsonObject{{"text", u"杭州"_s}, {"region", u"3301000000001"_s}} << u"region"_s;
    QTest::newRow("region number")
        << QJsonObject{{"text", u"杭州"_s}, {"region", 330100}} << u"region"_s;
    QTest::newRow("region empty") << QJsonObject{{"text", u"杭州"_s}, {"region", u""_s}}
                                  << u"region"_s;
    QTest::newRow("region array") << QJsonObject{{"text", u"杭州"_s}, {"region", QJsonArray{}}}
                                  << u"region"_s;
}

void TestSearch::endpointValidation()
{
    QFETCH(QJsonObject, request);
    QFETCH(QString, param);
    for (auto endpoint : {AddressEndpoints::search, AddressEndpoints::inputSearch}) {
        const AddressApi::Reply r = endpoint(engine(), request);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.param, param);
        QVERIFY(!r.error.isEmpty());
    }
}

QTEST_GUILESS_MAIN(TestSearch)
#include "tst_search.moc"
