#include "AddressApi.h"
#include "AddressEngine.h"
#include "DivisionMatcher.h"

#include <QElapsedTimer>
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

// "code name [start,end)" per resolved level, placeholders as "code name inferred".
QString describe(const DivisionMatcher::Result &r)
{
    QStringList out;
    for (const DivisionMatcher::Mention *m : {&r.province, &r.city, &r.district, &r.town}) {
        if (!m->division)
            continue;
        QString s = m->division->codeString() + u' ' + m->division->name;
        s += m->inferred() ? QStringLiteral(" inferred")
                           : QStringLiteral(" [%1,%2)%3")
                                 .arg(m->start)
                                 .arg(m->end)
                                 .arg(m->shortForm ? QStringLiteral(" short") : QString());
        out << s;
    }
    return out.join(u"; ");
}

} // namespace

class TestDivision : public QObject
{
    Q_OBJECT

private slots:
    void resolve_data();
    void resolve();
    void emptyResults_data();
    void emptyResults();
    void spansAndFlags();
    void ambiguousWithoutContext();
    void mentionsListsEveryCandidate();
    void formerNames_data();
    void formerNames();
    void currentNamesWinTies_data();
    void currentNamesWinTies();
    void formerMentionsAreMarked();
    void hugeRepetitiveText();
    void endpointReportsFormerNames();
    void speed();

private:
    const DivisionMatcher *matcher() const
    {
        static const DivisionMatcher m;
        return &m;
    }
};

void TestDivision::resolve_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("divcode");
    QTest::addColumn<QString>("province");
    QTest::addColumn<QString>("city"); // as shown: the province's name for a placeholder city
    QTest::addColumn<QString>("district");
    QTest::addColumn<QString>("town");

    // Full chains.
    QTest::newRow("full chain to town")
        << u"浙江省杭州市余杭区仓前街道文一西路969号"_s << u"330110012000"_s << u"浙江省"_s
        << u"杭州市"_s << u"余杭区"_s << u"仓前街道"_s;
    QTest::newRow("municipality") << u"重庆市渝中区解放碑"_s << u"500103003000"_s << u"重庆市"_s
                                  << u"重庆市"_s << u"渝中区"_s << u"解放碑街道"_s;
    // Short forms.
    QTest::newRow("short forms") << u"浙江杭州余杭"_s << u"330110000000"_s << u"浙江省"_s
                                 << u"杭州市"_s << u"余杭区"_s << QString();
    QTest::newRow("autonomous region short")
        << u"内蒙古呼和浩特"_s << u"150100000000"_s << u"内蒙古自治区"_s << u"呼和浩特市"_s
        << QString() << QString();
    QTest::newRow("town short after its district")
        << u"北京市海淀区中关村大街27号"_s << u"110108011000"_s << u"北京市"_s << u"北京市"_s
        << u"海淀区"_s << u"中关村街道"_s;
    // Missing upper levels inferred.
    QTest::newRow("district only") << u"余杭区文一西路"_s << u"330110000000"_s << u"浙江省"_s
                                   << u"杭州市"_s << u"余杭区"_s << QString();
    QTest::newRow("city without districts") << u"东莞市虎门镇"_s << u"441900121000"_s << u"广东省"_s
                                            << u"东莞市"_s << QString() << u"虎门镇"_s;
    QTest::newRow("county-level city under a province")
        << u"湖北省仙桃市"_s << u"429004000000"_s << u"湖北省"_s << u"湖北省"_s << u"仙桃市"_s
        << QString();
    // Ambiguous names resolved by context.
    QTest::newRow("朝阳区 in 北京") << u"北京朝阳区建国路88号"_s << u"110105000000"_s << u"北京市"_s
                                    << u"北京市"_s << u"朝阳区"_s << QString();
    QTest::newRow("朝阳区 in 长春") << u"吉林长春朝阳区"_s << u"220104000000"_s << u"吉林省"_s
                                    << u"长春市"_s << u"朝阳区"_s << QString();
    QTest::newRow("朝阳市 in 辽宁") << u"辽宁朝阳市双塔区"_s << u"211302000000"_s << u"辽宁省"_s
                                    << u"朝阳市"_s << u"双塔区"_s << QString();
    // Short-form clashes: 北京 is the province, not 北京街道; 海淀 the district, not 海淀街道.
    QTest::newRow("北京 alone") << u"北京"_s << u"110000000000"_s << u"北京市"_s << QString()
                                << QString() << QString();
    QTest::newRow("海淀 alone") << u"海淀"_s << u"110108000000"_s << u"北京市"_s << u"北京市"_s
                                << u"海淀区"_s << QString();
    // A road named after a place is not that place.
    QTest::newRow("北京路 in 广州") << u"广州市越秀区北京路123号"_s << u"440104000000"_s
                                    << u"广东省"_s << u"广州市"_s << u"越秀区"_s << QString();
    // Noise around the address.
    QTest::newRow("noise")
        << u"收件人张三 电话13800000000 地址：广东省深圳市南山区粤海街道科技园 谢谢"_s
        << u"440305007000"_s << u"广东省"_s << u"深圳市"_s << u"南山区"_s << u"粤海街道"_s;
    QTest::newRow("later names in shop names")
        << u"拱墅区莫干山路100号山东饺子馆"_s << u"330105000000"_s << u"浙江省"_s << u"杭州市"_s
        << u"拱墅区"_s << QString();
}

void TestDivision::resolve()
{
    QFETCH(QString, text);
    QFETCH(QString, divcode);
    QFETCH(QString, province);
    QFETCH(QString, city);
    QFETCH(QString, district);
    QFETCH(QString, town);
    const DivisionMatcher::Result r = matcher()->resolve(text);
    const QByteArray got = describe(r).toUtf8();
    QVERIFY2(!r.isEmpty(), got.constData());
    QVERIFY2(r.divcode() == divcode, got.constData());
    QCOMPARE(r.leaf->codeString(), divcode);
    QCOMPARE(r.province.division ? r.province.division->name : QString(), province);
    QCOMPARE(r.cityName(), city);
    QCOMPARE(r.district.division ? r.district.division->name : QString(), district);
    QCOMPARE(r.town.division ? r.town.division->name : QString(), town);
    // The chain is consistent: each level lies within the one above.
    const Gazetteer::Division *above = nullptr;
    for (const DivisionMatcher::Mention *m : {&r.province, &r.city, &r.district, &r.town}) {
        if (!m->division)
            continue;
        QVERIFY2(Gazetteer::isWithin(*m->division, above), got.constData());
        above = m->division;
    }
    QCOMPARE(above, r.leaf);
}

void TestDivision::emptyResults_data()
{
    QTest::addColumn<QString>("text");
    QTest::newRow("empty") << QString();
    QTest::newRow("one character") << u"市"_s;
    QTest::newRow("latin") << u"hello world, 123 Main Street"_s;
    QTest::newRow("chinese chat") << u"今天天气很好我们去吃饭吧"_s;
    QTest::newRow("digits and punctuation") << u"13800000000，（）——"_s;
}

void TestDivision::emptyResults()
{
    QFETCH(QString, text);
    const DivisionMatcher::Result r = matcher()->resolve(text);
    QVERIFY2(r.isEmpty(), qPrintable(describe(r)));
    QCOMPARE(r.divcode(), QString());
    QVERIFY(!r.province.isValid());
    QCOMPARE(r.cityName(), QString());
}

void TestDivision::spansAndFlags()
{
    // Offsets are UTF-16 units into the text, end exclusive.
    const QString text = u"地址：浙江杭州市余杭区"_s;
    const DivisionMatcher::Result r = matcher()->resolve(text);
    QCOMPARE(r.divcode(), u"330110000000"_s);
    QCOMPARE(r.province.start, 3);
    QCOMPARE(r.province.end, 5);
    QVERIFY(r.province.shortForm);
    QCOMPARE(text.sliced(r.city.start, r.city.end - r.city.start), u"杭州市"_s);
    QVERIFY(!r.city.shortForm);
    QCOMPARE(text.sliced(r.district.start, r.district.end - r.district.start), u"余杭区"_s);
    QVERIFY(!r.district.inferred());
    QVERIFY(!r.town.isValid());
    QVERIFY(!r.ambiguous);

    // Upper levels inferred from a unique district carry no span.
    const DivisionMatcher::Result inferred = matcher()->resolve(u"余杭区"_s);
    QVERIFY(inferred.province.inferred());
    QVERIFY(inferred.city.inferred());
    QCOMPARE(inferred.province.start, -1);
    QCOMPARE(inferred.district.start, 0);
    QCOMPARE(inferred.district.end, 3);

    // A municipality's placeholder city is always inferred.
    const DivisionMatcher::Result bj = matcher()->resolve(u"北京市朝阳区"_s);
    QVERIFY(bj.city.division && bj.city.division->placeholder);
    QVERIFY(bj.city.inferred());
    QCOMPARE(bj.cityName(), u"北京市"_s);
}

void TestDivision::ambiguousWithoutContext()
{
    // 朝阳区 exists in 北京 and in 长春: without context the lowest code wins, flagged.
    const DivisionMatcher::Result r = matcher()->resolve(u"朝阳区"_s);
    QCOMPARE(r.divcode(), u"110105000000"_s);
    QVERIFY(r.ambiguous);
    // With context it is not ambiguous.
    QVERIFY(!matcher()->resolve(u"长春市朝阳区"_s).ambiguous);
    QCOMPARE(matcher()->resolve(u"长春市朝阳区"_s).divcode(), u"220104000000"_s);
}

void TestDivision::mentionsListsEveryCandidate()
{
    const QList<DivisionMatcher::Mention> all = matcher()->mentions(u"朝阳区"_s);
    QSet<QString> codes;
    for (const DivisionMatcher::Mention &m : all)
        codes.insert(m.division->codeString());
    QVERIFY(codes.contains(u"110105000000"_s)); // 朝阳区, 北京
    QVERIFY(codes.contains(u"220104000000"_s)); // 朝阳区, 长春
    QVERIFY(codes.contains(u"211300000000"_s)); // 朝阳市 by its short form
    // A short form followed by 路 is a road, not a division.
    for (const DivisionMatcher::Mention &m : matcher()->mentions(u"北京路"_s))
        QVERIFY(!(m.division->level == Gazetteer::Level::Province));
}

void TestDivision::formerNames_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("divcode"); // the division the former name stands for now
    QTest::addColumn<QString>("former");

    // Without context.
    QTest::newRow("江东区 alone") << u"江东区中山东路88号"_s << u"330212000000"_s << u"江东区"_s;
    QTest::newRow("闸北区 alone") << u"闸北区天目西路1号"_s << u"310106000000"_s << u"闸北区"_s;
    QTest::newRow("闸北 short") << u"闸北天目西路1号"_s << u"310106000000"_s << u"闸北区"_s;
    QTest::newRow("宣武区") << u"宣武区广安门内大街6号"_s << u"110102000000"_s << u"宣武区"_s;
    QTest::newRow("塘沽区") << u"塘沽区解放路12号"_s << u"120116000000"_s << u"塘沽区"_s;
    QTest::newRow("萝岗区") << u"萝岗区科学大道101号"_s << u"440112000000"_s << u"萝岗区"_s;
    // With province and city context.
    QTest::newRow("宁波市江东区") << u"浙江省宁波市江东区百丈东路1号"_s << u"330212000000"_s
                                  << u"江东区"_s;
    QTest::newRow("上海市卢湾区") << u"上海市卢湾区淮海中路200号"_s << u"310101000000"_s
                                  << u"卢湾区"_s;
    QTest::newRow("杭州江干区") << u"浙江杭州江干区新塘路3号"_s << u"330102000000"_s << u"江干区"_s;
    QTest::newRow("苏州平江区") << u"江苏省苏州市平江区干将东路9号"_s << u"320508000000"_s
                                << u"平江区"_s;
    QTest::newRow("county-level city upgraded")
        << u"浙江省萧山市城厢街道"_s << u"330109001000"_s << u"萧山市"_s;
    // A former city: the districts under it resolve through it.
    QTest::newRow("襄樊市樊城区") << u"湖北省襄樊市樊城区人民路5号"_s << u"420606000000"_s
                                  << u"襄樊市"_s;
    QTest::newRow("莱芜市钢城区") << u"山东省莱芜市钢城区府前大街2号"_s << u"370117000000"_s
                                  << u"莱芜市"_s;
    QTest::newRow("prefecture 地区") << u"贵州省毕节地区"_s << u"520500000000"_s << u"毕节地区"_s;
    // A former name of several places, told apart by the city.
    QTest::newRow("长治市城区") << u"山西省长治市城区英雄中路1号"_s << u"140403000000"_s
                                << u"城区"_s;
    QTest::newRow("大同市城区") << u"大同市城区大西街3号"_s << u"140213000000"_s << u"城区"_s;
    QTest::newRow("广州东山区") << u"广东省广州市东山区农林下路7号"_s << u"440104000000"_s
                                << u"东山区"_s;
    QTest::newRow("乌鲁木齐东山区")
        << u"新疆乌鲁木齐市东山区"_s << u"650109000000"_s << u"东山区"_s;
    QTest::newRow("保定南市区") << u"河北保定南市区裕华东路"_s << u"130606000000"_s << u"南市区"_s;
    QTest::newRow("上海南市区") << u"上海市南市区中华路"_s << u"310101000000"_s << u"南市区"_s;
}

void TestDivision::formerNames()
{
    QFETCH(QString, text);
    QFETCH(QString, divcode);
    QFETCH(QString, former);
    const DivisionMatcher::Result r = matcher()->resolve(text);
    const QByteArray got = describe(r).toUtf8();
    // The expected division at its level (a road named like a town may add the town below).
    const Gazetteer::Division *want = matcher()->gazetteer().byCode(QStringView(divcode));
    QVERIFY(want);
    QVERIFY2(r.at(want->level).division == want, got.constData());
    QVERIFY(r.leaf == want || Gazetteer::isWithin(*r.leaf, want));
    const QList<const DivisionMatcher::Mention *> used = r.formerMentions();
    QVERIFY2(used.size() == 1, got.constData());
    const DivisionMatcher::Mention &m = *used[0];
    QCOMPARE(m.former->name, former);
    QCOMPARE(m.former->division, m.division);
    QCOMPARE(r.at(m.division->level).division, m.division);
    // The span is the former name (or its short form) as written.
    const QString span = text.sliced(m.start, m.end - m.start);
    QVERIFY2(span == former || span == m.former->shortName, qPrintable(span));
    QCOMPARE(m.shortForm, span != former);
    QVERIFY(!r.ambiguous);
}

void TestDivision::currentNamesWinTies_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("divcode");

    // 东山区 is a current district of 鹤岗 and a former one of 广州 and 乌鲁木齐.
    QTest::newRow("东山区 alone") << u"东山区"_s << u"230406000000"_s;
    QTest::newRow("鹤岗东山区") << u"黑龙江省鹤岗市东山区"_s << u"230406000000"_s;
    // 城区 is current in 阳泉, 晋城 and 汕尾, former in 大同, 长治 and elsewhere.
    QTest::newRow("阳泉城区") << u"阳泉市城区南大街"_s << u"140302000000"_s;
    // Alone, the current ones win although a former one (大同's, now 平城区 140213) has a lower
    // code, which would win a plain tie.
    QTest::newRow("城区 alone") << u"城区"_s << u"140302000000"_s;
    // 新市区: current in 乌鲁木齐, former in 保定 (now 竞秀区 130602).
    QTest::newRow("新市区 alone") << u"新市区"_s << u"650104000000"_s;
    QTest::newRow("晋城城区") << u"山西省晋城市城区"_s << u"140502000000"_s;
    // 市中区 of 济南 is current; 济宁's is former.
    QTest::newRow("济南市中区") << u"济南市市中区经十路"_s << u"370103000000"_s;
    QTest::newRow("济宁市中区") << u"济宁市市中区"_s << u"370811000000"_s;
    // Current names read as before.
    QTest::newRow("萧山区") << u"杭州市萧山区"_s << u"330109000000"_s;
    QTest::newRow("黄浦区") << u"上海市黄浦区"_s << u"310101000000"_s;
    // A former short form followed by a road suffix is a road (江东路, 宣武路), not a division.
    QTest::newRow("江东路 in 杭州") << u"杭州市江东路5号"_s << u"330100000000"_s;
}

void TestDivision::currentNamesWinTies()
{
    QFETCH(QString, text);
    QFETCH(QString, divcode);
    const DivisionMatcher::Result r = matcher()->resolve(text);
    QVERIFY2(r.divcode() == divcode, describe(r).toUtf8().constData());
    // Only the last case names a former division at all, and only through its own city.
    if (divcode == u"370811000000"_s)
        QCOMPARE(r.formerMentions().size(), 1);
    else
        QVERIFY2(r.formerMentions().isEmpty(), describe(r).toUtf8().constData());
}

void TestDivision::formerMentionsAreMarked()
{
    // mentions() lists former names with the current division and the row they came from.
    bool sawFormer = false;
    bool sawCurrent = false;
    for (const DivisionMatcher::Mention &m : matcher()->mentions(u"东山区"_s)) {
        if (m.former) {
            sawFormer = true;
            QCOMPARE(m.former->name, u"东山区"_s);
            QVERIFY(m.division->name != u"东山区"_s);
        } else if (m.division->name == u"东山区"_s) {
            sawCurrent = true;
        }
    }
    QVERIFY(sawFormer && sawCurrent);
    for (const DivisionMatcher::Mention &m : matcher()->mentions(u"江东路"_s))
        QVERIFY(!m.former);

    const DivisionMatcher::Result r = matcher()->resolve(u"宁波江东区"_s);
    QCOMPARE(r.district.division->name, u"鄞州区"_s);
    QVERIFY(r.district.former);
    QCOMPARE(r.district.former->year, 2016);
    QCOMPARE(r.district.former->kind, Gazetteer::FormerKind::Merged);
    QVERIFY(!r.city.former);
    QCOMPARE(r.formerMentions().size(), 1);
    // A current name is never marked.
    QVERIFY(matcher()->resolve(u"宁波鄞州区"_s).formerMentions().isEmpty());
}

void TestDivision::hugeRepetitiveText()
{
    // An address repeated a thousand times: every level has a thousand mentions, which an
    // unbounded search over the combinations would never finish.
    QString text;
    for (int i = 0; i < 1000; ++i)
        text += u"浙江省杭州市西湖区文三路"_s + QString::number(i) + u"号"_s;
    const DivisionMatcher::Result r = matcher()->resolve(text);
    QCOMPARE(r.district.division->codeString(), u"330106000000"_s);
    QCOMPARE(r.province.start, 0);
    QCOMPARE(r.district.start, 6);
    QVERIFY(!r.ambiguous);
    // The same with former names: 江干区 (now 上城区) repeated.
    const DivisionMatcher::Result f = matcher()->resolve(QString(u"杭州市江干区"_s).repeated(1000));
    QCOMPARE(f.divcode(), u"330102000000"_s);
    QVERIFY(f.district.former);
}

void TestDivision::speed()
{
    const QStringList texts = {
        u"浙江省杭州市余杭区仓前街道文一西路969号"_s,
        u"收件人张三 电话13800000000 地址：广东省深圳市南山区粤海街道科技园"_s,
        u"北京朝阳区建国路88号"_s, u"今天天气很好我们去吃饭吧"_s};
    QElapsedTimer timer;
    timer.start();
    int calls = 0;
    int resolved = 0;
    while (timer.elapsed() < 300) {
        for (const QString &t : texts) {
            resolved += matcher()->resolve(t).isEmpty() ? 0 : 1;
            ++calls;
        }
    }
    const double perSecond = calls * 1000.0 / double(std::max<qint64>(1, timer.elapsed()));
    qInfo("%.0f calls/s (%d calls, %d resolved)", perSecond, calls, resolved);
}

// division-code answers with the current division and lists the former names the text used.
void TestDivision::endpointReportsFormerNames()
{
    const QString text = QStringLiteral("𠮷宁波市江东区百丈路1号");
    const AddressApi::Reply r =
        AddressApi::call(engine(), QStringLiteral("division-code"), {{"text", text}});
    QVERIFY(r.ok());
    const QJsonObject info = r.body.value("division_info").toObject();
    QCOMPARE(info.value("division_district").toString(), QStringLiteral("鄞州区"));
    QCOMPARE(info.value("divcode").toString(), QStringLiteral("330212000000"));
    const QJsonArray former = r.body.value("former_names").toArray();
    QCOMPARE(former.size(), 1);
    const QJsonObject f = former.first().toObject();
    QCOMPARE(f.value("name").toString(), QStringLiteral("江东区"));
    QCOMPARE(f.value("current").toString(), QStringLiteral("鄞州区"));
    QCOMPARE(f.value("level").toString(), Gazetteer::levelName(Gazetteer::Level::District));
    QCOMPARE(f.value("start").toInt(), 4); // 𠮷 is one character
    QCOMPARE(f.value("end").toInt(), 7);
    QCOMPARE(f.value("year").toInt(), 2016);

    const AddressApi::Reply current = AddressApi::call(engine(), QStringLiteral("division-code"),
                                                       {{"text", "宁波市鄞州区百丈路1号"}});
    QVERIFY(current.ok());
    QCOMPARE(current.body.value("former_names").toArray().size(), 0);
}

QTEST_GUILESS_MAIN(TestDivision)
#include "tst_division.moc"
