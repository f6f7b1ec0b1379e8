// Imported zip codes and POIs: the CSV reader, the snapshot's lookups and swap, and the
// zipcode, geocode and hp-geocode endpoints answered from it (in process).

#include "AddressApi.h"
#include "AddressEngine.h"
#include "CoordTransform.h"
#include "LocalData.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTest>
#include <QThread>

#include <atomic>

using namespace Qt::Literals::StringLiterals;

namespace {

QByteArray fixture(const char *name)
{
    QFile f(QStringLiteral(FIXTURE_DIR "/") + QLatin1String(name));
    if (!f.open(QIODevice::ReadOnly))
        qFatal("missing fixture %s", name);
    return f.readAll();
}

// A snapshot from CSV text, through the same parser the import uses.
std::shared_ptr<const LocalData> snapshot(const QByteArray &zipCsv, const QByteArray &poiCsv)
{
    std::vector<LocalData::ZipEntry> zips;
    for (const auto &r : LocalDataCsv::parseZipcodes(zipCsv).rows)
        zips.push_back({r.zipcode, r.divcode, r.road});
    std::vector<LocalData::Poi> pois;
    for (const auto &r : LocalDataCsv::parsePois(poiCsv).rows) {
        LocalData::Poi p;
        p.name = r.name;
        p.aliases = r.aliases;
        p.divcode = r.divcode;
        p.address = r.address;
        p.lon = r.lon;
        p.lat = r.lat;
        p.category = r.category;
        pois.push_back(p);
    }
    return LocalData::build(std::move(zips), std::move(pois));
}

const Gazetteer::Division *division(const QString &province, const QString &city = {},
                                    const QString &district = {}, const QString &town = {})
{
    QString error;
    const auto *d =
        LocalDataCsv::resolveRegion(Gazetteer::builtin(), {province, city, district, town}, &error);
    if (!d)
        qFatal("test region: %s", qPrintable(error));
    return d;
}

QJsonObject call(const AddressEngine &engine, const char *endpoint, const QString &text,
                 bool *billable = nullptr)
{
    const AddressApi::Reply r =
        AddressApi::call(engine, QLatin1String(endpoint), QJsonObject{{"text", text}});
    if (!r.ok())
        qFatal("%s: %d %s", endpoint, r.status, qPrintable(r.error));
    if (billable)
        *billable = r.billable;
    return r.body;
}

} // namespace

class TestLocalData : public QObject
{
    Q_OBJECT

    // What the endpoints answer from; each test starts with no data installed.
    AddressEngine m_engine;
    QJsonObject call(const char *endpoint, const QString &text, bool *billable = nullptr)
    {
        return ::call(m_engine, endpoint, text, billable);
    }

private slots:
    void cleanup() { m_engine.install(nullptr); }

    void records_data()
    {
        QTest::addColumn<QString>("csv");
        QTest::addColumn<QList<QStringList>>("fields");
        QTest::addColumn<QList<int>>("lines");
        QTest::newRow("plain") << u"a,b,c\n1,2,3\n"_s
                               << QList<QStringList>{{"a", "b", "c"}, {"1", "2", "3"}}
                               << QList<int>{1, 2};
        QTest::newRow("crlf, no final break")
            << u"a,b\r\n1,2"_s << QList<QStringList>{{"a", "b"}, {"1", "2"}} << QList<int>{1, 2};
        QTest::newRow("quoted comma and quote")
            << u"\"x,y\",\"say \"\"hi\"\"\"\n"_s << QList<QStringList>{{"x,y", "say \"hi\""}}
            << QList<int>{1};
        QTest::newRow("line break inside quotes keeps line numbers")
            << u"\"two\nlines\",b\nnext,row\n"_s
            << QList<QStringList>{{"two\nlines", "b"}, {"next", "row"}} << QList<int>{1, 3};
        QTest::newRow("blank lines skipped")
            << u"\n\na\n\r\n\nb\n"_s << QList<QStringList>{{"a"}, {"b"}} << QList<int>{3, 6};
        QTest::newRow("blank columns and trimming")
            << u" a , ,\"\" ,\n"_s << QList<QStringList>{{"a", "", "", ""}} << QList<int>{1};
        QTest::newRow("empty") << QString() << QList<QStringList>{} << QList<int>{};
    }
    void records()
    {
        QFETCH(QString, csv);
        QFETCH(QList<QStringList>, fields);
        QFETCH(QList<int>, lines);
        const QList<LocalDataCsv::Record> records = LocalDataCsv::parseRecords(csv);
        QCOMPARE(records.size(), fields.size());
        for (qsizetype i = 0; i < records.size(); ++i) {
            QCOMPARE(records[i].fields, fields[i]);
            QCOMPARE(records[i].line, lines[i]);
            QVERIFY2(records[i].error.isEmpty(), qPrintable(records[i].error));
        }
    }

    void malformedRecords()
    {
        auto records = LocalDataCsv::parseRecords(u"a,b\n\"open,never closed\nx,y\n"_s);
        QCOMPARE(records.size(), 2);
        QCOMPARE(records[1].line, 2);
        QVERIFY(records[1].error.contains("never closed"));
        records = LocalDataCsv::parseRecords(u"a,b\"c\n1,2\n"_s);
        QCOMPARE(records.size(), 2);
        QVERIFY(records[0].error.contains("quote inside unquoted field 2"));
        QVERIFY(records[1].error.isEmpty()); // the next record reads normally
        records = LocalDataCsv::parseRecords(u"\"a\"b,c\n"_s);
        QVERIFY(records[0].error.contains("after a closing quote"));
        QCOMPARE(records[0].fields.size(), 2);
    }

    void zipcodesFixture()
    {
        const auto parsed = LocalDataCsv::parseZipcodes(fixture("zipcodes-fixture.csv"));
        QVERIFY(parsed.fatal.isEmpty());
        QCOMPARE(parsed.records, 10);
        QCOMPARE(parsed.rows.size(), 7);
        QCOMPARE(parsed.errors.size(), 3);
        QCOMPARE(parsed.errors[0].line, 9);
        QVERIFY(parsed.errors[0].reason.contains("5 digits, expected 6"));
        QCOMPARE(parsed.errors[1].line, 10);
        QVERIFY(parsed.errors[1].reason.contains("other than digits"));
        QCOMPARE(parsed.errors[2].line, 11);
        QVERIFY(parsed.errors[2].reason.contains("unknown region '杭洲市'"));
        // Short forms and a municipality's repeated or blank city resolve.
        QCOMPARE(parsed.rows[2].divcode,
                 division(u"浙江省"_s, u"杭州市"_s, u"余杭区"_s, u"五常街道"_s)->code);
        QCOMPARE(parsed.rows[4].divcode, division(u"北京市"_s, {}, u"东城区"_s)->code);
        QCOMPARE(Gazetteer::builtin().byCode(parsed.rows[5].divcode)->name, u"东华门街道"_s);
        QCOMPARE(parsed.rows[3].road, u"文一西路"_s);
        QCOMPARE(parsed.rows[6].zipcode, u"200001"_s);
        QCOMPARE(parsed.rows[6].road, u"南京东路"_s);
    }

    void zipcodeRowErrors_data()
    {
        QTest::addColumn<QString>("row");
        QTest::addColumn<QString>("reason");
        QTest::newRow("empty zip") << u",浙江省,杭州市"_s << u"zipcode missing"_s;
        QTest::newRow("7 digits") << u"3100001,浙江省"_s << u"7 digits"_s;
        QTest::newRow("full-width digits") << u"３１００００,浙江省"_s << u"other than digits"_s;
        QTest::newRow("no region") << u"310000,,,,,"_s << u"no region"_s;
        QTest::newRow("unknown province") << u"310000,火星省"_s << u"unknown region '火星省'"_s;
        QTest::newRow("district in wrong city")
            << u"310000,浙江省,宁波市,余杭区"_s << u"unknown region '余杭区' in 浙江省宁波市"_s;
        QTest::newRow("ambiguous") << u"100020,,,朝阳区"_s << u"ambiguous region '朝阳区'"_s;
        QTest::newRow("too many fields") << u"310000,浙江省,,,,,extra"_s << u"7 fields"_s;
    }
    void zipcodeRowErrors()
    {
        QFETCH(QString, row);
        QFETCH(QString, reason);
        const QByteArray csv = "zipcode,province,city,district,town,road\n" + row.toUtf8() + "\n";
        const auto parsed = LocalDataCsv::parseZipcodes(csv);
        QVERIFY(parsed.fatal.isEmpty());
        QCOMPARE(parsed.rows.size(), 0);
        QCOMPARE(parsed.errors.size(), 1);
        QCOMPARE(parsed.errors[0].line, 2);
        QVERIFY2(parsed.errors[0].reason.contains(reason), qPrintable(parsed.errors[0].reason));
    }

    void fileErrors_data()
    {
        QTest::addColumn<QByteArray>("csv");
        QTest::addColumn<QString>("fatal");
        QTest::newRow("empty") << QByteArray() << u"empty"_s;
        QTest::newRow("only a BOM") << QByteArray("\xEF\xBB\xBF") << u"empty"_s;
        QTest::newRow("no zipcode column")
            << QByteArray("province,city\n浙江省,杭州市\n") << u"needs a zipcode column"_s;
        QTest::newRow("unknown column")
            << QByteArray("zipcode,province,zip_note\n") << u"unknown column 'zip_note'"_s;
        QTest::newRow("duplicate column")
            << QByteArray("zipcode,province,Province\n") << u"appears twice"_s;
        QTest::newRow("not utf-8")
            << QByteArray("zipcode,province\n310000,\xD5\xE3\xBD\xAD\n") << u"not UTF-8"_s;
    }
    void fileErrors()
    {
        QFETCH(QByteArray, csv);
        QFETCH(QString, fatal);
        const auto parsed = LocalDataCsv::parseZipcodes(csv);
        QVERIFY2(parsed.fatal.contains(fatal), qPrintable(parsed.fatal));
        QVERIFY(parsed.rows.isEmpty());
        QVERIFY(parsed.errors.isEmpty());
    }

    void bomHeaderCaseAndDivcode()
    {
        const QByteArray csv = "\xEF\xBB\xBF"
                               "ZipCode , DIVCODE,road\r\n"
                               "311100,330110000000,\r\n"
                               "311122,330110,文一西路\r\n"
                               "311199,33011,\r\n"
                               "311198,999999999999,\r\n";
        const auto parsed = LocalDataCsv::parseZipcodes(csv);
        QVERIFY(parsed.fatal.isEmpty());
        QCOMPARE(parsed.rows.size(), 2);
        QCOMPARE(parsed.rows[0].divcode, 330110000000);
        QCOMPARE(parsed.rows[1].divcode, 330110000000); // 6 digits are padded
        QCOMPARE(parsed.errors.size(), 2);
        QVERIFY(parsed.errors[0].reason.contains("12-digit"));
        QVERIFY(parsed.errors[1].reason.contains("unknown divcode"));
    }

    void poisFixture()
    {
        const auto parsed = LocalDataCsv::parsePois(fixture("pois-fixture.csv"));
        QVERIFY(parsed.fatal.isEmpty());
        QCOMPARE(parsed.records, 7);
        QCOMPARE(parsed.rows.size(), 4);
        QCOMPARE(parsed.errors.size(), 3);
        QCOMPARE(parsed.errors[0].line, 6);
        QCOMPARE(parsed.errors[0].reason, u"missing name"_s);
        QCOMPARE(parsed.errors[1].line, 7);
        QVERIFY(parsed.errors[1].reason.contains("out of range"));
        QCOMPARE(parsed.errors[2].line, 8);
        QVERIFY(parsed.errors[2].reason.contains("outside China"));

        const auto &keda = parsed.rows[0];
        QCOMPARE(keda.aliases, (QStringList{u"西溪科创"_s, u"科创大厦"_s}));
        QCOMPARE(keda.lon, 120.0521); // gcj02 stored as given
        QCOMPARE(keda.category, u"写字楼"_s);
        QCOMPARE(parsed.rows[1].lon, 120.0312); // blank coord: gcj02
        // wgs84 and bd09 are stored as GCJ-02.
        const auto gcj = CoordTransform::wgs84ToGcj02({116.4001, 39.9131});
        QCOMPARE(parsed.rows[2].lon, gcj.lon);
        QCOMPARE(parsed.rows[2].lat, gcj.lat);
        const auto fromBd = CoordTransform::convert(
            {121.4905, 31.2397}, CoordTransform::System::Bd09, CoordTransform::System::Gcj02);
        QCOMPARE(parsed.rows[3].lon, fromBd.lon);
        QCOMPARE(parsed.rows[3].name, u"外滩\"观景台\""_s);
    }

    void poiRowErrors_data()
    {
        QTest::addColumn<QString>("row");
        QTest::addColumn<QString>("reason");
        QTest::newRow("letters") << u"甲,浙江省,,,,,abc,30"_s << u"not decimal degrees"_s;
        QTest::newRow("nan") << u"甲,浙江省,,,,,nan,30"_s << u"not decimal degrees"_s;
        QTest::newRow("blank lat") << u"甲,浙江省,,,,,120,"_s << u"not decimal degrees"_s;
        QTest::newRow("lon 200") << u"甲,浙江省,,,,,200,30"_s << u"out of range"_s;
        QTest::newRow("unknown coord") << u"甲,浙江省,,,,,120.1,30.2,utm"_s << u"unknown coord"_s;
        QTest::newRow("no region") << u"甲,,,,,,120.1,30.2"_s << u"no region"_s;
    }
    void poiRowErrors()
    {
        QFETCH(QString, row);
        QFETCH(QString, reason);
        const QByteArray csv =
            "name,province,city,district,town,address,lon,lat,coord,category,aliases\n" +
            row.toUtf8();
        const auto parsed = LocalDataCsv::parsePois(csv);
        QVERIFY(parsed.fatal.isEmpty());
        QCOMPARE(parsed.rows.size(), 0);
        QCOMPARE(parsed.errors.size(), 1);
        QVERIFY2(parsed.errors[0].reason.contains(reason), qPrintable(parsed.errors[0].reason));
        QVERIFY(LocalDataCsv::parsePois("name,province\n甲,浙江省\n").fatal.contains("lon"));
    }

    void zipLookupPrefersTheMostSpecificRow()
    {
        const auto data = snapshot(fixture("zipcodes-fixture.csv"), {});
        QCOMPARE(data->zipCount(), 7);
        const auto *wuchang = division(u"浙江"_s, u"杭州"_s, u"余杭区"_s, u"五常街道"_s);
        const auto *yuhang = wuchang->parent;
        const auto *xihu = division(u"浙江省"_s, u"杭州市"_s, u"西湖区"_s);
        auto m = data->zipcode(wuchang, u"五常街道文一西路88号"_s);
        QVERIFY(m && m->byRoad);
        QCOMPARE(m->entry->zipcode, u"311122"_s);
        // The road is found from the district when the text skips the town.
        m = data->zipcode(yuhang, u"余杭区文一西路88号"_s);
        QVERIFY(m && m->byRoad);
        m = data->zipcode(wuchang, u"五常街道某小区"_s);
        QVERIFY(m && !m->byRoad);
        QCOMPARE(m->entry->zipcode, u"311121"_s);
        m = data->zipcode(yuhang, u"余杭区"_s);
        QCOMPARE(m->entry->zipcode, u"311100"_s);
        m = data->zipcode(xihu, u"西湖区文一西路"_s); // the road row is in another district
        QCOMPARE(m->entry->zipcode, u"310000"_s);
        QCOMPARE(m->division->level, Gazetteer::Level::City);
        QVERIFY(!data->zipcode(division(u"江苏省"_s), u"江苏省"_s));
        QVERIFY(!data->zipcode(nullptr, u"文一西路"_s));
        QVERIFY(!m_engine.localData()->zipcode(wuchang, u"五常街道"_s)); // empty snapshot
    }

    void duplicateKeysLastRowWins()
    {
        const auto data = snapshot("zipcode,province,city,road\n"
                                   "310001,浙江省,杭州市,\n"
                                   "310002,浙江省,杭州市,\n",
                                   {});
        QCOMPARE(data->zipCount(), 1);
        QCOMPARE(data->zipcode(division(u"浙江省"_s, u"杭州市"_s), u"杭州"_s)->entry->zipcode,
                 u"310002"_s);
    }

    void poiLookup()
    {
        const auto data = snapshot({}, fixture("pois-fixture.csv"));
        QCOMPARE(data->poiCount(), 4);
        const auto *yuhang = division(u"浙江省"_s, u"杭州市"_s, u"余杭区"_s);
        const auto *wuchang = division(u"浙江省"_s, u"杭州市"_s, u"余杭区"_s, u"五常街道"_s);
        const auto *liangzhu = division(u"浙江省"_s, u"杭州市"_s, u"余杭区"_s, u"良渚街道"_s);

        auto m = data->findPoi(u"余杭区西溪科创大厦3楼"_s, yuhang);
        QVERIFY(m);
        QCOMPARE(m->poi->name, u"西溪科创大厦"_s);
        QVERIFY(m->byName && !m->byStreet);
        m = data->findPoi(u"余杭区科创大厦"_s, wuchang); // an alias; the district POI's town
        QVERIFY(m);
        QCOMPARE(m->matchedText, u"科创大厦"_s);
        QVERIFY(!data->findPoi(u"科创大厦"_s, liangzhu)); // a sibling town: not this one
        // By street: the address with its division names stripped.
        m = data->findPoi(u"余杭区玉鸟路12号"_s, yuhang);
        QVERIFY(m && m->byStreet && !m->byName);
        QCOMPARE(m->poi->name, u"良渚文化村图书馆"_s);
        QCOMPARE(m->poi->street, u"玉鸟路12号"_s);
        QVERIFY(!data->findPoi(u"余杭区玉鸟路12号"_s, yuhang, false)); // streets off
        QVERIFY(!data->findPoi(u"余杭区玉鸟路13号"_s, yuhang));
        // No region named: a unique name still matches.
        m = data->findPoi(u"东华门小学门口"_s, nullptr);
        QVERIFY(m);
        QCOMPARE(m->poi->division->name, u"东华门街道"_s);
        QVERIFY(!data->findPoi(QString(), nullptr));
        QVERIFY(!data->findPoi(QString(2000, u'科'), nullptr));
        QCOMPARE(data->poiCountWithin(yuhang), 2);
        QCOMPARE(data->poiCountWithin(nullptr), 4);
    }

    void samePoiNameInTwoDistricts()
    {
        const auto data = snapshot({}, "name,province,city,district,lon,lat\n"
                                       "人民公园,浙江省,杭州市,西湖区,120.10,30.25\n"
                                       "人民公园,浙江省,宁波市,海曙区,121.55,29.87\n");
        QCOMPARE(data->poiCount(), 2);
        QVERIFY(!data->findPoi(u"人民公园"_s, nullptr)); // which one: not guessed
        const auto m = data->findPoi(u"宁波人民公园"_s, division(u"浙江省"_s, u"宁波市"_s));
        QVERIFY(m);
        QCOMPARE(m->poi->lon, 121.55);
    }

    // A chain with a branch in every district, its name repeated across a long text: every
    // occurrence of a key gives the same hits, so each distinct key is handled once.
    void repeatedKeyIsHandledOnce()
    {
        const Gazetteer &g = Gazetteer::builtin();
        std::vector<LocalData::Poi> pois;
        const auto *zhejiang = division(u"浙江省"_s);
        for (const Gazetteer::Division *city : g.children(*zhejiang)) {
            for (const Gazetteer::Division *district : g.children(*city)) {
                LocalData::Poi p;
                p.name = u"快乐汉堡"_s;
                p.divcode = district->code;
                p.lon = 120.1;
                p.lat = 30.2;
                pois.push_back(p);
            }
        }
        const qsizetype branches = qsizetype(pois.size());
        QVERIFY(branches > 50);
        LocalData::Poi other;
        other.name = u"西溪书屋"_s;
        other.divcode = division(u"浙江省"_s, u"杭州市"_s, u"西湖区"_s)->code;
        other.lon = 120.1;
        other.lat = 30.25;
        pois.push_back(other);
        const auto data = LocalData::build({}, std::move(pois));

        const QString once = u"快乐汉堡"_s;
        QString repeated;
        while (repeated.size() + once.size() <= 2000)
            repeated += once;
        const auto *yuhang = division(u"浙江省"_s, u"杭州市"_s, u"余杭区"_s);

        // No region: a tie between the branches either way, after one pass over them.
        LocalData::FindPoiStats single;
        LocalData::FindPoiStats many;
        QVERIFY(!data->findPoi(once, nullptr, true, &single));
        QVERIFY(!data->findPoi(repeated, nullptr, true, &many));
        QCOMPARE(single.keys, 1);
        QCOMPARE(single.hits, branches);
        QCOMPARE(many.keys, 1);
        QCOMPARE(many.hits, branches);

        // With a region: the same branch and match for the repeated text.
        const auto a = data->findPoi(once, yuhang);
        const auto b = data->findPoi(repeated, yuhang, true, &many);
        QVERIFY(a && b);
        QCOMPARE(b->poi, a->poi);
        QCOMPARE(b->poi->divcode, yuhang->code);
        QCOMPARE(b->matchedText, once);
        QVERIFY(b->byName && !b->byStreet);
        QCOMPARE(many.keys, 1);
        QCOMPARE(many.hits, 1);

        // Two distinct keys, each repeated: both counted once; the unique one wins.
        const QString mixed =
            repeated.left(1000) + u"西溪书屋"_s + repeated.left(900) + u"西溪书屋"_s;
        const auto c = data->findPoi(mixed, nullptr, true, &many);
        QCOMPARE(many.keys, 2);
        QCOMPARE(many.hits, branches + 1);
        QVERIFY(!c); // the chain's tie has the same tier and length as the unique name
        const auto d = data->findPoi(u"西溪书屋西溪书屋"_s, nullptr);
        QVERIFY(d);
        QCOMPARE(d->poi->name, u"西溪书屋"_s);
    }

    void snapshotSwap()
    {
        const quint64 before = m_engine.generation();
        QCOMPARE(m_engine.localData()->zipCount(), 0);
        auto data = snapshot(fixture("zipcodes-fixture.csv"), fixture("pois-fixture.csv"));
        const auto held = m_engine.localData();
        m_engine.install(data);
        QCOMPARE(m_engine.generation(), before + 1);
        QCOMPARE(m_engine.localData().get(), data.get());
        QCOMPARE(held->zipCount(), 0); // a reader keeps the snapshot it took
        // A load that began before this install does not replace it.
        QVERIFY(!m_engine.installIf(before, nullptr));
        QCOMPARE(m_engine.localData().get(), data.get());
        QVERIFY(m_engine.installIf(before + 1, nullptr));
        QCOMPARE(m_engine.localData()->zipCount(), 0);
        QVERIFY(m_engine.localData()); // never null
    }

    // Engines are independent: data installed in one is not in another (two servers in one
    // process each have their own).
    void enginesDoNotShareData()
    {
        AddressEngine other;
        m_engine.install(snapshot(fixture("zipcodes-fixture.csv"), fixture("pois-fixture.csv")));
        QCOMPARE(m_engine.localData()->zipCount(), 7);
        QCOMPARE(other.localData()->zipCount(), 0);
        QCOMPARE(other.generation(), quint64(0));
        const QString text = u"浙江省杭州市余杭区五常街道文一西路100号西溪科创大厦"_s;
        QCOMPARE(call("zipcode", text).value("zipcode").toString(), u"311122"_s);
        QCOMPARE(::call(other, "zipcode", text).value("status").toString(), u"NO_DATA"_s);
        QCOMPARE(::call(other, "hp-geocode", text)
                     .value("hp_geocode")
                     .toObject()
                     .value("level")
                     .toString(),
                 u"district"_s);
        // The search index follows each engine's own POIs.
        QVERIFY(m_engine.waitForSearchIndex(60000));
        const auto top = [](const AddressEngine &engine) {
            const AddressApi::Reply r =
                AddressApi::call(engine, u"search"_s, {{"text", u"西溪科创大厦"_s}});
            const QJsonObject first = r.body.value("search_result").toArray().first().toObject();
            return first.value("kind").toString();
        };
        QCOMPARE(top(m_engine), u"poi"_s);
        QVERIFY(top(other) != u"poi"_s);
    }

    void concurrentReadersDuringSwaps()
    {
        const auto full = snapshot(fixture("zipcodes-fixture.csv"), fixture("pois-fixture.csv"));
        std::atomic<bool> stop{false};
        std::atomic<int> bad{0};
        std::atomic<int> reads{0};
        const auto *wuchang = division(u"浙江省"_s, u"杭州市"_s, u"余杭区"_s, u"五常街道"_s);
        QList<QThread *> readers;
        for (int t = 0; t < 3; ++t) {
            readers << QThread::create([&] {
                while (!stop) {
                    const auto d = m_engine.localData();
                    const auto m = d->zipcode(wuchang, u"五常街道"_s);
                    // Either snapshot, never a torn one.
                    if ((d->zipCount() == 7) != bool(m))
                        ++bad;
                    ++reads;
                }
            });
            readers.last()->start();
        }
        for (int i = 0; i < 2000; ++i)
            m_engine.install(i % 2 ? full : nullptr);
        while (reads < 1000)
            QThread::yieldCurrentThread();
        stop = true;
        for (QThread *t : readers) {
            t->wait();
            delete t;
        }
        QCOMPARE(bad.load(), 0);
    }

    void zipcodeEndpoint()
    {
        bool billable = true;
        QJsonObject r = call("zipcode", u"浙江省杭州市余杭区良渚街道"_s, &billable);
        QCOMPARE(r.value("status").toString(), u"NO_DATA"_s);
        QCOMPARE(r.value("zipcode").toString(), QString());
        QVERIFY(r.value("message").toString().contains(
            u"no zip code is imported for 浙江省杭州市余杭区良渚街道"_s));
        QVERIFY(r.value("message").toString().contains(u"address import zipcodes"_s));
        QVERIFY(!billable);

        m_engine.install(snapshot(fixture("zipcodes-fixture.csv"), {}));
        r = call("zipcode", u"浙江省杭州市余杭区良渚街道"_s, &billable);
        QCOMPARE(r.value("status").toString(), u"OK"_s);
        QCOMPARE(r.value("zipcode").toString(), u"311100"_s);
        QCOMPARE(r.value("level").toString(), u"district"_s);
        QCOMPARE(r.value("divcode").toString(), u"330110000000"_s);
        QVERIFY(billable);
        r = call("zipcode", u"杭州余杭区五常街道文一西路100号"_s);
        QCOMPARE(r.value("zipcode").toString(), u"311122"_s);
        QCOMPARE(r.value("level").toString(), u"road"_s);
        QCOMPARE(r.value("matched").toString(), u"文一西路"_s);
        r = call("zipcode", u"杭州市滨江区"_s);
        QCOMPARE(r.value("zipcode").toString(), u"310000"_s);
        QCOMPARE(r.value("level").toString(), u"city"_s);
        r = call("zipcode", u"江苏省南京市玄武区"_s, &billable);
        QCOMPARE(r.value("status").toString(), u"NO_DATA"_s);
        QVERIFY(!billable);
        r = call("zipcode", u"just some words"_s, &billable);
        QCOMPARE(r.value("status").toString(), u"NOT_FOUND"_s);
        QCOMPARE(r.value("zipcode").toString(), QString());
        QVERIFY(!billable);
        QCOMPARE(AddressApi::call(m_engine, u"zipcode"_s, QJsonObject{{"text", 5}}).status, 400);
    }

    void geocodeEndpoints()
    {
        // Without POIs: the district centre, and hp-geocode says what would help.
        QJsonObject r = call("hp-geocode", u"杭州市余杭区五常街道西溪科创大厦"_s);
        QJsonObject g = r.value("hp_geocode").toObject();
        QCOMPARE(r.value("status").toString(), u"OK"_s);
        QCOMPARE(g.value("level").toString(), u"district"_s);
        QCOMPARE(g.value("matched").toString(), u"余杭区"_s);
        QVERIFY(r.value("message").toString().contains(u"No points of interest are imported"_s));
        QVERIFY(r.value("message").toString().contains(u"no centre for 五常街道"_s));

        m_engine.install(snapshot({}, fixture("pois-fixture.csv")));
        r = call("hp-geocode", u"杭州市余杭区五常街道西溪科创大厦"_s);
        g = r.value("hp_geocode").toObject();
        QCOMPARE(g.value("level").toString(), u"poi"_s);
        QCOMPARE(g.value("matched").toString(), u"西溪科创大厦"_s);
        QCOMPARE(g.value("gcj02").toString(), u"120.052100,30.285300"_s);
        QCOMPARE(g.value("divcode").toString(),
                 division(u"浙江省"_s, u"杭州市"_s, u"余杭区"_s, u"五常街道"_s)->codeString());
        QVERIFY(!r.contains("message"));
        const auto wgs = CoordTransform::parseCoordinate(g.value("wgs84").toString());
        const auto back = CoordTransform::wgs84ToGcj02(wgs.value);
        QVERIFY(qAbs(back.lon - 120.0521) < 2e-6 && qAbs(back.lat - 30.2853) < 2e-6);

        // By street address: hp-geocode only; geocode stays at the district.
        r = call("hp-geocode", u"余杭区玉鸟路12号"_s);
        QCOMPARE(r.value("hp_geocode").toObject().value("matched").toString(),
                 u"良渚文化村图书馆"_s);
        r = call("geocode", u"余杭区玉鸟路12号"_s);
        QCOMPARE(r.value("offline_geocode").toObject().value("level").toString(), u"district"_s);
        r = call("geocode", u"余杭区良渚文化村图书馆"_s);
        QCOMPARE(r.value("offline_geocode").toObject().value("level").toString(), u"poi"_s);

        // POIs imported, but none in this district: the message names it.
        r = call("hp-geocode", u"南京市玄武区某某路1号"_s);
        QCOMPARE(r.value("hp_geocode").toObject().value("level").toString(), u"district"_s);
        QVERIFY(r.value("message").toString().contains(
            u"No point of interest is imported for 江苏省南京市玄武区"_s));
        // POIs in the district, none named.
        r = call("hp-geocode", u"余杭区某某路1号"_s);
        QVERIFY(r.value("message").toString().contains(u"None of the 2 points of interest"_s));

        r = call("hp-geocode", u"nothing to see"_s);
        QCOMPARE(r.value("status").toString(), u"NOT_FOUND"_s);
        QCOMPARE(r.value("hp_geocode").toObject().value("gcj02").toString(), QString());
        QCOMPARE(AddressApi::call(m_engine, u"hp-geocode"_s, QJsonObject{}).status, 400);
        QCOMPARE(
            AddressApi::call(m_engine, u"hp-geocode"_s, QJsonObject{{"text", QString(2001, u'路')}})
                .status,
            400);
    }

    void largeImportParsesAndIndexes()
    {
        // Every district of the gazetteer with a code, plus a road row each.
        QByteArray csv = "zipcode,divcode,road\n";
        int districts = 0;
        for (const auto &d : Gazetteer::builtin().all()) {
            if (d.level != Gazetteer::Level::District)
                continue;
            const QByteArray zip = QByteArray::number(100000 + districts % 800000);
            csv += zip + ',' + d.codeString().toLatin1() + ",\n";
            csv += zip + ',' + d.codeString().toLatin1() + ",测试路" +
                   QByteArray::number(districts) + "\n";
            ++districts;
        }
        const auto parsed = LocalDataCsv::parseZipcodes(csv);
        QVERIFY(parsed.errors.isEmpty());
        QCOMPARE(parsed.rows.size(), 2 * districts);
        const auto data = snapshot(csv, {});
        QCOMPARE(data->zipCount(), 2 * districts);
    }
};

QTEST_GUILESS_MAIN(TestLocalData)
#include "tst_local_data.moc"
