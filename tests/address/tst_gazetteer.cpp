#include "Gazetteer.h"

#include <QElapsedTimer>
#include <QFile>
#include <QSet>
#include <QTest>

namespace {

using Division = Gazetteer::Division;
using Level = Gazetteer::Level;

// Resident set size in bytes (Linux), 0 where unknown.
qint64 residentBytes()
{
    QFile f(QStringLiteral("/proc/self/statm"));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    const QList<QByteArray> parts = f.readAll().split(' ');
    return parts.size() > 1 ? parts[1].toLongLong() * 4096 : 0;
}

QString names(const QList<const Division *> &list)
{
    QStringList out;
    for (const Division *d : list)
        out << d->codeString() + u' ' + d->name;
    return out.join(u", ");
}

} // namespace

class TestGazetteer : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase();
    void codesAndParents();
    void countsPerLevel();
    void zhejiangHangzhouYuhang();
    void beijingMunicipality();
    void shortForms_data();
    void shortForms();
    void shortFormLookups();
    void ambiguousNamesResolvedByParent();
    void citiesWithoutDistricts();
    void everyDistrictHasCentreOrIsReported();
    void malformedDataIsRejected();
    void formerNamesTable();
    void formerNameLookups();
    void formerShortForms();
    void malformedFormerNamesAreRejected();
    void lookupSpeed();

private:
    const Gazetteer *g = nullptr;
};

void TestGazetteer::initTestCase()
{
    const qint64 before = residentBytes();
    QElapsedTimer timer;
    timer.start();
    g = &Gazetteer::builtin();
    const double ms = double(timer.nsecsElapsed()) / 1e6;
    const qint64 after = residentBytes();
    QVERIFY(g->size() > 40000);
    qInfo("gazetteer: %lld divisions, first load %.1f ms (parse and index %.1f ms), "
          "estimated %.1f MiB held, resident set grew %.1f MiB",
          qint64(g->size()), ms, g->loadMs(), double(g->memoryBytes()) / (1 << 20),
          double(after - before) / (1 << 20));
}

void TestGazetteer::codesAndParents()
{
    QSet<qint64> seen;
    for (const Division &d : g->all()) {
        const QString code = d.codeString();
        QCOMPARE(code.size(), 12);
        QVERIFY2(d.code >= 110000000000 && d.code <= 829999999999, qPrintable(code));
        QVERIFY(!seen.contains(d.code));
        seen.insert(d.code);
        QVERIFY(!d.name.isEmpty());
        if (d.level == Level::Province) {
            QVERIFY(!d.parent);
            QCOMPARE(d.code % 10000000000, 0);
            continue;
        }
        QVERIFY2(d.parent, qPrintable(code));
        QCOMPARE(d.parent->code, d.parentCode);
        QVERIFY(int(d.parent->level) < int(d.level));
        // A code starts with its parent's significant digits: 2 for a province, 4 for a city,
        // 6 for a district.
        const int digits = d.parent->level == Level::Province ? 2
                           : d.parent->level == Level::City   ? 4
                                                              : 6;
        QVERIFY2(code.left(digits) == d.parent->codeString().left(digits), qPrintable(code));
        // The trailing digits below the level are zero.
        const int own = d.level == Level::City ? 4 : d.level == Level::District ? 6 : 9;
        QVERIFY2(code.mid(own) == QString(12 - own, u'0'), qPrintable(code));
        // children() lists it under its parent.
        const auto kids = g->children(*d.parent);
        QVERIFY(std::find(kids.begin(), kids.end(), &d) != kids.end());
    }
    QCOMPARE(g->byCode(QStringView(u"33")), g->byCode(330000000000));
    QCOMPARE(g->byCode(QStringView(u"abc")), nullptr);
    QCOMPARE(g->byCode(999999999999), nullptr);
}

void TestGazetteer::countsPerLevel()
{
    const qsizetype provinces = g->count(Level::Province);
    const qsizetype cities = g->count(Level::City);
    const qsizetype districts = g->count(Level::District);
    const qsizetype towns = g->count(Level::Town);
    qInfo("per level: %lld provinces, %lld cities, %lld districts, %lld towns", qint64(provinces),
          qint64(cities), qint64(districts), qint64(towns));
    QCOMPARE(provinces, 31); // mainland: 22 provinces, 5 autonomous regions, 4 municipalities
    QCOMPARE(qsizetype(g->provinces().size()), 31);
    QVERIFY(cities >= 333 && cities <= 350);         // 333 prefecture-level + placeholders
    QVERIFY(districts >= 2840 && districts <= 3000); // 2,844 county-level + development zones
    QVERIFY(towns >= 38000 && towns <= 42000);
    QCOMPARE(provinces + cities + districts + towns, g->size());
}

void TestGazetteer::zhejiangHangzhouYuhang()
{
    const auto zj = g->findByName(u"浙江省");
    QCOMPARE(zj.size(), 1);
    QCOMPARE(zj[0]->code, 330000000000);
    QCOMPARE(zj[0]->level, Level::Province);

    const auto hz = g->findByName(u"杭州市", zj[0]);
    QCOMPARE(hz.size(), 1);
    QCOMPARE(hz[0]->code, 330100000000);
    QCOMPARE(hz[0]->parent, zj[0]);

    const auto yh = g->findByName(u"余杭区", hz[0]);
    QCOMPARE(yh.size(), 1);
    const Division *yuhang = yh[0];
    QCOMPARE(yuhang->code, 330110000000);
    QCOMPARE(yuhang->level, Level::District);
    QCOMPARE(yuhang->shortName, QStringLiteral("余杭"));
    QVERIFY(yuhang->hasCentre());
    QVERIFY(yuhang->lon > 119.8 && yuhang->lon < 120.5);
    QVERIFY(yuhang->lat > 30.2 && yuhang->lat < 30.6);

    // A town under it, by full and by short name.
    const auto wc = g->findByName(u"五常街道", yuhang);
    QCOMPARE(wc.size(), 1);
    QCOMPARE(wc[0]->code, 330110005000);
    QCOMPARE(wc[0]->level, Level::Town);
    QCOMPARE(g->findByName(u"五常", yuhang), wc);
    QVERIFY(g->children(*yuhang).size() >= 5);
    for (const Division *t : g->children(*yuhang))
        QCOMPARE(t->level, Level::Town);

    const auto path = g->path(*wc[0]);
    QCOMPARE(path.size(), 4);
    QCOMPARE(path[0]->name, QStringLiteral("浙江省"));
    QCOMPARE(path[1]->name, QStringLiteral("杭州市"));
    QCOMPARE(path[2]->name, QStringLiteral("余杭区"));
    QCOMPARE(path[3]->name, QStringLiteral("五常街道"));

    // Districts created in 2021 are there, with their 2023 codes.
    QCOMPARE(g->findByName(u"临平区", hz[0]).value(0)->code, 330113000000);
    QCOMPARE(g->findByName(u"钱塘区", hz[0]).value(0)->code, 330114000000);
}

void TestGazetteer::beijingMunicipality()
{
    const Division *bj = g->byCode(110000000000);
    QVERIFY(bj);
    QCOMPARE(bj->name, QStringLiteral("北京市"));
    QCOMPARE(bj->shortName, QStringLiteral("北京"));
    QCOMPARE(bj->level, Level::Province);
    // One placeholder city (市辖区) holds the 16 districts.
    const auto cities = g->children(*bj);
    QCOMPARE(cities.size(), std::size_t(1));
    QCOMPARE(cities[0]->code, 110100000000);
    QCOMPARE(cities[0]->name, QStringLiteral("市辖区"));
    QVERIFY(cities[0]->placeholder);
    QVERIFY(cities[0]->shortName.isEmpty());
    QCOMPARE(g->children(*cities[0]).size(), std::size_t(16));
    QVERIFY(g->findByName(u"市辖区").isEmpty()); // placeholders are not names to look up
    // 北京 finds the municipality itself; its districts are found within it.
    // (a 北京街道 in 广州 越秀区 also has the short form 北京; the level tells them apart).
    QCOMPARE(g->findByName(u"北京").size(), 2);
    QCOMPARE(g->findByName(u"北京", Level::Province), QList<const Division *>{bj});
    // 海淀 is 海淀区 and its town 海淀街道; the level picks the district.
    QCOMPARE(g->findByName(u"海淀", bj).size(), 2);
    const auto hd = g->findByName(u"海淀", Level::District, bj);
    QCOMPARE(hd.size(), 1);
    QCOMPARE(hd[0]->code, 110108000000);
    QVERIFY(hd[0]->hasCentre());
    QCOMPARE(g->path(*hd[0]).size(), 3);

    // 重庆 has two placeholders: 市辖区 (5001) and 县 (5002).
    const Division *cq = g->byCode(500000000000);
    QVERIFY(cq);
    QCOMPARE(g->children(*cq).size(), std::size_t(2));
    QVERIFY(g->byCode(500200000000)->placeholder);
}

void TestGazetteer::shortForms_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("expected");
    const std::pair<const char16_t *, const char16_t *> cases[] = {
        {u"杭州市", u"杭州"},
        {u"余杭区", u"余杭"},
        {u"浙江省", u"浙江"},
        {u"内蒙古自治区", u"内蒙古"},
        {u"广西壮族自治区", u"广西"},
        {u"新疆维吾尔自治区", u"新疆"},
        {u"宁夏回族自治区", u"宁夏"},
        {u"西藏自治区", u"西藏"},
        {u"延边朝鲜族自治州", u"延边"},
        {u"黔东南苗族侗族自治州", u"黔东南"},
        {u"伊犁哈萨克自治州", u"伊犁"},
        {u"保亭黎族苗族自治县", u"保亭"},
        {u"鄂伦春自治旗", u"鄂伦春"},
        {u"阿克苏地区", u"阿克苏"},
        {u"锡林郭勒盟", u"锡林郭勒"},
        {u"神农架林区", u"神农架"},
        {u"浦东新区", u"浦东"},
        {u"五常街道", u"五常"},
        {u"良渚镇", u"良渚"},
        {u"沙县区", u"沙县"},
        {u"城区", u""}, // one character would be left
        {u"涉县", u""},
        {u"市辖区", u"市辖"}, // shortForm() itself does not know placeholders; the index does
    };
    for (const auto &[name, expected] : cases)
        QTest::newRow(qPrintable(QString::fromUtf16(name)))
            << QString::fromUtf16(name) << QString::fromUtf16(expected);
}

void TestGazetteer::shortForms()
{
    QFETCH(QString, name);
    QFETCH(QString, expected);
    QCOMPARE(Gazetteer::shortForm(name), expected);
}

void TestGazetteer::shortFormLookups()
{
    const auto nmg = g->findByName(u"内蒙古");
    QCOMPARE(nmg.size(), 1);
    QCOMPARE(nmg[0]->code, 150000000000);
    QCOMPARE(nmg[0]->name, QStringLiteral("内蒙古自治区"));
    QCOMPARE(g->findByName(u"广西").value(0)->code, 450000000000);
    QCOMPARE(g->findByName(u"杭州").value(0)->code, 330100000000);
    QCOMPARE(g->findByName(u"余杭").value(0)->code, 330110000000);
    // 吉林 is the short form of a province (吉林省), a city (吉林市) and a town (吉林街道 in
    // 长春); restricted by level it is one of them.
    QCOMPARE(g->findByName(u"吉林").size(), 3);
    QCOMPARE(g->findByName(u"吉林", Level::Province).value(0)->code, 220000000000);
    QCOMPARE(g->findByName(u"吉林", Level::City).value(0)->code, 220200000000);
    QCOMPARE(g->findByName(u"吉林市", nullptr, Gazetteer::NameMatch::Short).size(), 0);
    QCOMPARE(g->findByName(u"吉林市", nullptr, Gazetteer::NameMatch::Full).size(), 1);
}

void TestGazetteer::ambiguousNamesResolvedByParent()
{
    // 朝阳区 (北京) and 朝阳市 (辽宁), plus 朝阳区 (长春) and 朝阳县 (辽宁 朝阳市).
    const auto all = g->findByName(u"朝阳");
    QVERIFY2(all.size() >= 4, qPrintable(names(all)));

    const Division *bj = g->byCode(110000000000);
    const auto inBeijing = g->findByName(u"朝阳", bj);
    QCOMPARE(inBeijing.size(), 1);
    QCOMPARE(inBeijing[0]->code, 110105000000);
    QCOMPARE(inBeijing[0]->name, QStringLiteral("朝阳区"));

    const Division *ln = g->findByName(u"辽宁").value(0);
    QVERIFY(ln);
    const auto inLiaoning = g->findByName(u"朝阳", Level::City, ln);
    QCOMPARE(inLiaoning.size(), 1);
    QCOMPARE(inLiaoning[0]->code, 211300000000);
    QCOMPARE(inLiaoning[0]->name, QStringLiteral("朝阳市"));
    // The full name is exact: 朝阳区 in 辽宁 does not exist.
    QVERIFY(g->findByName(u"朝阳区", ln).isEmpty());

    // 鼓楼区: in 南京, 徐州, 福州 and 开封; the parent picks one.
    QCOMPARE(g->findByName(u"鼓楼区").size(), 4);
    const Division *fz = g->findByName(u"福州", g->findByName(u"福建").value(0)).value(0);
    QVERIFY(fz);
    QCOMPARE(g->findByName(u"鼓楼区", fz).value(0)->code, 350102000000);
}

void TestGazetteer::citiesWithoutDistricts()
{
    // 东莞市: towns directly under the city (no district level in the national codes).
    const Division *dg = g->byCode(441900000000);
    QVERIFY(dg);
    QCOMPARE(dg->level, Level::City);
    QVERIFY(g->children(*dg).size() > 20);
    for (const Division *t : g->children(*dg))
        QCOMPARE(t->level, Level::Town);
    QVERIFY(dg->hasCentre());
    // 五指山市: a county-level city under 海南's placeholder, centre from its own map.
    const auto wzs = g->findByName(u"五指山市");
    QCOMPARE(wzs.size(), 1);
    QVERIFY(wzs[0]->parent->placeholder);
    QVERIFY(wzs[0]->hasCentre());
}

void TestGazetteer::everyDistrictHasCentreOrIsReported()
{
    QFile report(QFINDTESTDATA("../../resources/address/join-report.txt"));
    QVERIFY2(report.open(QIODevice::ReadOnly), qPrintable(report.fileName()));
    QSet<QString> reported;
    for (const QByteArray &line : report.readAll().split('\n')) {
        if (line.size() > 12 && line[12] == '\t')
            reported.insert(QString::fromLatin1(line.left(12)));
    }
    int withCentre = 0;
    int districts = 0;
    for (const Division &d : g->all()) {
        if (d.level != Level::District && d.level != Level::City)
            continue;
        if (d.level == Level::District)
            ++districts;
        if (d.hasCentre()) {
            withCentre += d.level == Level::District;
            // GCJ-02 points inside China's box.
            QVERIFY2(d.lon > 73 && d.lon < 136 && d.lat > 3 && d.lat < 54, qPrintable(d.name));
            // Within ~3 degrees of the parent's centre, where the parent has one.
            if (d.parent && d.parent->hasCentre())
                QVERIFY2(qAbs(d.lon - d.parent->lon) < 6 && qAbs(d.lat - d.parent->lat) < 4,
                         qPrintable(d.codeString() + d.name));
            continue;
        }
        if (d.placeholder)
            continue;
        QVERIFY2(reported.contains(d.codeString()),
                 qPrintable(d.codeString() + u' ' + d.name +
                            QStringLiteral(" has no centre and is not reported")));
    }
    qInfo("districts with a centre point: %d of %d", withCentre, districts);
    QVERIFY(withCentre > districts * 9 / 10);
}

void TestGazetteer::malformedDataIsRejected()
{
    Gazetteer local;
    QString error;
    QVERIFY(local.loadFromData("# header\n"
                               "330000000000\tprovince\t\t浙江省\t\t\t\n"
                               "330100000000\tcity\t330000000000\t杭州市\t120.1\t30.2\tcentroid\n",
                               &error));
    QCOMPARE(local.size(), 2);
    QCOMPARE(local.findByName(u"杭州").value(0)->parent, local.byCode(330000000000));

    QVERIFY(!local.loadFromData("33000000000\tprovince\t\t浙江省\t\t\t\n", &error));
    QVERIFY(error.contains(u"bad code"));
    QVERIFY(!local.loadFromData("330000000000\tstate\t\t浙江省\t\t\t\n", &error));
    QVERIFY(!local.loadFromData("330100000000\tcity\t330000000000\t杭州市\t\t\t\n", &error));
    QVERIFY(error.contains(u"parent"));
    QVERIFY(!local.loadFromData("330000000000\tprovince\t\t浙江省\tx\t1\tcp\n", &error));
    QVERIFY(!local.loadFromData("330000000000\tprovince\t\t浙江省\n", &error));
    QVERIFY(!local.load(QStringLiteral("/nonexistent/divisions.tsv"), &error));
}

void TestGazetteer::formerNamesTable()
{
    // Every row of the table as shipped, read independently of the loader: its code is a current
    // province, city or district with the stated name, in the stated province.
    QFile file(QString::fromLatin1(Gazetteer::kFormerNamesPath));
    QVERIFY(file.open(QIODevice::ReadOnly));
    int rows = 0;
    QSet<QString> kinds;
    for (const QByteArray &raw : file.readAll().split('\n')) {
        const QString line = QString::fromUtf8(raw);
        if (line.isEmpty() || line.startsWith(u'#'))
            continue;
        const QStringList f = line.split(u'\t');
        QCOMPARE(f.size(), 7);
        const Division *d = g->byCode(QStringView(f[3]));
        QVERIFY2(d && f[3].size() == 12, qPrintable(line));
        QVERIFY2(d->name == f[4], qPrintable(line));
        QVERIFY2(!d->placeholder && d->level != Level::Town, qPrintable(line));
        QVERIFY2(g->path(*d).first()->name == f[1], qPrintable(line));
        // A former name is not the current name of the division it became.
        QVERIFY2(d->name != f[0], qPrintable(line));
        kinds.insert(f[6]);
        ++rows;
    }
    QCOMPARE(qsizetype(rows), qsizetype(g->formerNames().size()));
    QVERIFY(rows >= 300);
    QCOMPARE(kinds.size(), 7);
    for (const Gazetteer::FormerName &f : g->formerNames()) {
        QVERIFY(f.division && f.province);
        QCOMPARE(g->path(*f.division).first(), f.province);
        QVERIFY2(f.year >= 1990 && f.year <= 2023, qPrintable(f.name));
        QVERIFY(!Gazetteer::formerKindName(f.kind).isEmpty());
    }
    qInfo("former names: %d rows", rows);
}

void TestGazetteer::formerNameLookups()
{
    // 江东区 (宁波) merged into 鄞州区 in 2016.
    const auto jd = g->findFormerName(u"江东区");
    QCOMPARE(jd.size(), 1);
    QCOMPARE(jd[0]->division->code, 330212000000);
    QCOMPARE(jd[0]->division->name, QStringLiteral("鄞州区"));
    QCOMPARE(jd[0]->kind, Gazetteer::FormerKind::Merged);
    QCOMPARE(jd[0]->year, 2016);
    QCOMPARE(jd[0]->formerParent, QStringLiteral("宁波市"));
    QCOMPARE(Gazetteer::formerKindName(jd[0]->kind), QStringLiteral("merged"));
    QCOMPARE(g->findFormerName(u"江东"), jd); // its short form
    // Not a current name: the division lookups do not know it.
    QVERIFY(g->findByName(u"江东区").isEmpty());

    // Former cities map to cities: 襄樊市 is 襄阳市, 莱芜市 part of 济南市.
    QCOMPARE(g->findFormerName(u"襄樊市").value(0)->division->code, 420600000000);
    QCOMPARE(g->findFormerName(u"莱芜市").value(0)->division->code, 370100000000);
    QCOMPARE(g->findFormerName(u"毕节地区").value(0)->division->level, Level::City);

    // A former name of several places: the context picks one.
    const auto chengqu = g->findFormerName(u"城区");
    QVERIFY(chengqu.size() >= 3);
    const Division *changzhi = g->byCode(140400000000);
    QCOMPARE(changzhi->name, QStringLiteral("长治市"));
    const auto inChangzhi = g->findFormerName(u"城区", changzhi);
    QCOMPARE(inChangzhi.size(), 1);
    QCOMPARE(inChangzhi[0]->division->name, QStringLiteral("潞州区"));
    const auto inDatong = g->findFormerName(u"城区", g->byCode(140200000000));
    QCOMPARE(inDatong.size(), 1);
    QCOMPARE(inDatong[0]->division->name, QStringLiteral("平城区"));
    // 东山区: former in 广州 and 乌鲁木齐, current in 鹤岗.
    QCOMPARE(g->findFormerName(u"东山区").size(), 2);
    QCOMPARE(g->findFormerName(u"东山区", g->byCode(440000000000)).value(0)->division->code,
             440104000000);
    QCOMPARE(g->findByName(u"东山区", Level::District).size(), 1);

    // Within the current division itself counts.
    QCOMPARE(g->findFormerName(u"江东区", g->byCode(330212000000)).size(), 1);
    QVERIFY(g->findFormerName(u"江东区", g->byCode(330100000000)).isEmpty());
    QVERIFY(g->findFormerName(u"鄞州区").isEmpty());
    QVERIFY(g->findFormerName(u"").isEmpty());
}

void TestGazetteer::formerShortForms()
{
    const auto shortOf = [&](QStringView name) {
        const auto hits = g->findFormerName(name);
        return hits.isEmpty() ? QStringLiteral("?") : hits[0]->shortName;
    };
    QCOMPARE(shortOf(u"闸北区"), QStringLiteral("闸北"));
    QCOMPARE(shortOf(u"宣武区"), QStringLiteral("宣武"));
    // Too short after the suffix.
    QCOMPARE(shortOf(u"城区"), QString());
    // Also a current name (东山县, 鹤岗 东山区) or the current short form of the successor (萧山).
    QCOMPARE(shortOf(u"东山区"), QString());
    QCOMPARE(shortOf(u"萧山市"), QString());
    QCOMPARE(shortOf(u"毕节地区"), QString());
    // Two former names of one division may share it (南汇区, 南汇县 -> 浦东新区).
    QCOMPARE(shortOf(u"南汇县"), QStringLiteral("南汇"));
    QCOMPARE(g->findFormerName(u"南汇").size(), 2);
    // A short form shared by former names of different divisions is dropped (南市区: 上海 and
    // 保定).
    QCOMPARE(shortOf(u"南市区"), QString());
    QVERIFY(g->findFormerName(u"南市").isEmpty());
}

void TestGazetteer::malformedFormerNamesAreRejected()
{
    Gazetteer local;
    QString error;
    // Former names need the divisions first.
    QVERIFY(!local.loadFormerNamesFromData("", &error));
    QVERIFY(local.loadFromData("330000000000\tprovince\t\t浙江省\t\t\t\n"
                               "330200000000\tcity\t330000000000\t宁波市\t\t\t\n"
                               "330212000000\tdistrict\t330200000000\t鄞州区\t\t\t\n"
                               "330212001000\ttown\t330212000000\t钟公庙街道\t\t\t\n"
                               "320000000000\tprovince\t\t江苏省\t\t\t\n",
                               &error));
    const QByteArray good = "江东区\t浙江省\t宁波市\t330212000000\t鄞州区\t2016\tmerged\n";
    QVERIFY2(local.loadFormerNamesFromData("# comment\n\n" + good, &error), qPrintable(error));
    QCOMPARE(local.formerNames().size(), std::size_t(1));
    QCOMPARE(local.findFormerName(u"江东").value(0)->division, local.byCode(330212000000));
    // CRLF line ends are accepted.
    QVERIFY(local.loadFormerNamesFromData(
        "江东区\t浙江省\t宁波市\t330212000000\t鄞州区\t2016\tmerged\r\n", &error));

    const std::pair<QByteArray, const char16_t *> bad[] = {
        {"江东区\t浙江省\t宁波市\t330212000000\t鄞州区\t2016\n", u"7 tab-separated"},
        {"江东区\t浙江省\t宁波市\t330212000000\t鄞州区\t2016\tmerged\textra\n", u"7 tab-separated"},
        {"江东区\t浙江省\t宁波市\t33021200000\t鄞州区\t2016\tmerged\n", u"bad code"},
        {"江东区\t浙江省\t宁波市\t330213000000\t鄞州区\t2016\tmerged\n", u"not a current"},
        {"江东区\t浙江省\t宁波市\t330212001000\t钟公庙街道\t2016\tmerged\n", u"not a current"},
        {"江东区\t浙江省\t宁波市\t330212000000\t江北区\t2016\tmerged\n", u"not 江北区"},
        {"江东区\t江苏省\t宁波市\t330212000000\t鄞州区\t2016\tmerged\n", u"not in 江苏省"},
        {"江东区\t浙江\t宁波市\t330212000000\t鄞州区\t2016\tmerged\n", u"unknown province"},
        {"江东区\t浙江省\t宁波市\t330212000000\t鄞州区\t16\tmerged\n", u"bad year"},
        {"江东区\t浙江省\t宁波市\t330212000000\t鄞州区\tlast\tmerged\n", u"bad year"},
        {"江东区\t浙江省\t宁波市\t330212000000\t鄞州区\t2016\tvanished\n", u"bad kind"},
        {"江\t浙江省\t宁波市\t330212000000\t鄞州区\t2016\tmerged\n", u"bad former name"},
        {"\t浙江省\t宁波市\t330212000000\t鄞州区\t2016\tmerged\n", u"bad former name"},
        {"江东区\t浙江省\t甬州市\t330212000000\t鄞州区\t2016\tmerged\n", u"former parent"},
        {good + good, u"duplicate"},
    };
    for (const auto &[data, why] : bad) {
        QVERIFY2(!local.loadFormerNamesFromData(data, &error), data.constData());
        QVERIFY2(error.contains(QStringView(why)), qPrintable(error));
        QVERIFY2(error.contains(u"line "), qPrintable(error));
        // A failed load leaves no former names behind.
        QVERIFY(local.formerNames().empty());
        QVERIFY(local.findFormerName(u"江东区").isEmpty());
    }
    // A former parent may itself be a former name of the table.
    QVERIFY2(
        local.loadFormerNamesFromData("甬州\t浙江省\t\t330200000000\t宁波市\t2001\trenamed\n"
                                      "江东区\t浙江省\t甬州\t330212000000\t鄞州区\t2016\tmerged\n",
                                      &error),
        qPrintable(error));
    QCOMPARE(local.formerNames().size(), std::size_t(2));
    // Reloading the divisions drops the former names (they point into the divisions).
    QVERIFY(local.loadFromData("330000000000\tprovince\t\t浙江省\t\t\t\n", &error));
    QVERIFY(local.formerNames().empty());
    QVERIFY(!local.loadFormerNames(QStringLiteral("/nonexistent/former-names.tsv"), &error));
    QVERIFY(error.contains(u"cannot open"));
}

void TestGazetteer::lookupSpeed()
{
    const QStringList queries = {QStringLiteral("余杭"),   QStringLiteral("朝阳区"),
                                 QStringLiteral("海淀"),   QStringLiteral("五常街道"),
                                 QStringLiteral("内蒙古"), QStringLiteral("不存在的地方")};
    QElapsedTimer timer;
    timer.start();
    qsizetype hits = 0;
    constexpr int kRounds = 20000;
    for (int i = 0; i < kRounds; ++i)
        hits += g->findByName(queries[i % queries.size()]).size();
    const double usPerCall = double(timer.nsecsElapsed()) / 1e3 / kRounds;
    qInfo("findByName: %.2f us per call (%lld hits)", usPerCall, qint64(hits));
    QVERIFY(hits > 0);
}

QTEST_GUILESS_MAIN(TestGazetteer)
#include "tst_gazetteer.moc"
