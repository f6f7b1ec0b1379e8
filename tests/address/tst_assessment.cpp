#include "AddressApi.h"
#include "AddressAssessor.h"
#include "AddressEngine.h"

#include <QFile>
#include <QJsonArray>
#include <QSet>
#include <QTest>

using namespace Qt::Literals::StringLiterals;

namespace {

// The suite's engine, as one server has: no imported data, engines built on first use.
const AddressEngine &engine()
{
    static const AddressEngine e;
    return e;
}

QJsonObject assess(const QString &text)
{
    const AddressApi::Reply r =
        AddressApi::call(engine(), u"assessment"_s, QJsonObject{{"text", text}});
    if (r.status != 200)
        qWarning() << "assessment answered" << r.status << r.error;
    return r.body;
}

QStringList codes(const QJsonObject &body)
{
    QStringList out;
    for (const QJsonValue &f :
         body.value("address_assessment").toObject().value("findings").toArray())
        out.append(f.toObject().value("code").toString());
    return out;
}

QJsonObject finding(const QJsonObject &body, const QString &code)
{
    for (const QJsonValue &f :
         body.value("address_assessment").toObject().value("findings").toArray()) {
        if (f.toObject().value("code").toString() == code)
            return f.toObject();
    }
    return {};
}

const QString kClean = u"浙江省杭州市余杭区文一西路969号"_s;

} // namespace

class TestAssessment : public QObject
{
    Q_OBJECT

private slots:
    void areaCodeTableMatchesGazetteer();
    void areaCodeTableRejectsMalformed_data();
    void areaCodeTableRejectsMalformed();
    void areaCodeOf_data();
    void areaCodeOf();
    void shapeOfCleanAddress();
    void findings_data();
    void findings();
    void noFalseFindings_data();
    void noFalseFindings();
    void spansAndMessages();
    void summaryPrecedence();
    void nonBmpOffsets();
    void badRequests();
};

void TestAssessment::areaCodeTableMatchesGazetteer()
{
    const Gazetteer &g = Gazetteer::builtin();
    const QList<AddressAssessor::AreaCode> &rows = engine().assessor().areaCodes();
    QVERIFY(rows.size() >= 330);
    QSet<qint64> covered;
    for (const AddressAssessor::AreaCode &row : rows) {
        const Gazetteer::Division *d = g.byCode(row.division);
        QVERIFY2(d, qPrintable(row.name));
        QCOMPARE(d->name, row.name);
        QVERIFY2(!d->placeholder && d->level <= Gazetteer::Level::District, qPrintable(row.name));
        QVERIFY2(row.areaCode.size() >= 3 && row.areaCode.size() <= 4 && row.areaCode[0] == u'0',
                 qPrintable(row.areaCode));
        // 010 and 02x are three digits; every other code four.
        QCOMPARE(row.areaCode.size() == 3,
                 row.areaCode == u"010" || row.areaCode.startsWith(u"02"));
        covered.insert(row.division);
    }
    // Every prefecture-level city has a code, its own or its province's.
    for (const Gazetteer::Division &d : g.all()) {
        if (d.level != Gazetteer::Level::City || d.placeholder)
            continue;
        QVERIFY2(covered.contains(d.code) || covered.contains(d.parentCode), qPrintable(d.name));
    }
    const AddressAssessor::AreaCode hangzhou =
        *std::find_if(rows.begin(), rows.end(), [](const auto &r) { return r.name == u"杭州市"; });
    QCOMPARE(hangzhou.areaCode, u"0571"_s);
    QCOMPARE(hangzhou.division, 330100000000);
}

void TestAssessment::areaCodeTableRejectsMalformed_data()
{
    QTest::addColumn<QByteArray>("tsv");
    QTest::newRow("two columns") << QByteArray("330100000000\t杭州市\n");
    QTest::newRow("short division code") << QByteArray("3301\t杭州市\t0571\n");
    QTest::newRow("no leading zero") << QByteArray("330100000000\t杭州市\t571\n");
    QTest::newRow("letters") << QByteArray("330100000000\t杭州市\t05a1\n");
    QTest::newRow("too long") << QByteArray("330100000000\t杭州市\t05711\n");
    QTest::newRow("empty name") << QByteArray("330100000000\t\t0571\n");
}

void TestAssessment::areaCodeTableRejectsMalformed()
{
    QFETCH(QByteArray, tsv);
    AddressAssessor a(engine().corrector(), engine().completer());
    QString error;
    QVERIFY(!a.loadAreaCodes("# comment\n330200000000\t宁波市\t0574\n" + tsv, &error));
    QVERIFY(error.contains(u"line 3"));
    // A good table loads, comments and blank lines skipped.
    QVERIFY(a.loadAreaCodes("# c\n\n330200000000\t宁波市\t0574\n", &error));
    QCOMPARE(a.areaCodes().size(), 1);
}

void TestAssessment::areaCodeOf_data()
{
    QTest::addColumn<QString>("phone");
    QTest::addColumn<QString>("code");
    QTest::newRow("dash") << u"0571-88886666"_s << u"0571"_s;
    QTest::newRow("contiguous") << u"057188886666"_s << u"0571"_s;
    QTest::newRow("three-digit") << u"010-66668888"_s << u"010"_s;
    QTest::newRow("02x") << u"(021)66668888"_s << u"021"_s;
    QTest::newRow("+86 without 0") << u"+86 571 8888 6666"_s << u"0571"_s;
    QTest::newRow("+86 Beijing") << u"+86-10-66668888"_s << u"010"_s;
    QTest::newRow("0086") << u"0086 571 88886666"_s << u"0571"_s;
    QTest::newRow("full-width") << u"０５７１－８８８８６６６６"_s << u"0571"_s;
    QTest::newRow("extension") << u"0571-88886666转123"_s << u"0571"_s;
    QTest::newRow("mobile") << u"13912345678"_s << QString();
    QTest::newRow("+86 mobile") << u"+86 139 1234 5678"_s << QString();
    QTest::newRow("service") << u"400-820-8820"_s << QString();
    QTest::newRow("local only") << u"88886666"_s << QString();
    QTest::newRow("empty") << QString() << QString();
}

void TestAssessment::areaCodeOf()
{
    QFETCH(QString, phone);
    QFETCH(QString, code);
    QCOMPARE(AddressAssessor::areaCodeOf(phone), code);
}

void TestAssessment::shapeOfCleanAddress()
{
    const QJsonObject body = assess(kClean + u" 电话0571-88886666 邮编311121 手机13912345678"_s);
    QCOMPARE(body.value("status").toString(), u"OK"_s);
    const QJsonObject a = body.value("address_assessment").toObject();
    QCOMPARE(a.value("code").toString(), u"OK"_s);
    QVERIFY(a.value("findings").isArray());
    QVERIFY(a.value("findings").toArray().isEmpty());
}

void TestAssessment::findings_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("code");
    QTest::addColumn<QStringList>("findings");

    QTest::newRow("not an address")
        << u"明天记得带伞"_s << u"NOT_ADDRESS"_s << QStringList{u"NOT_ADDRESS"_s};
    QTest::newRow("latin noise") << u"hello world 123"_s << u"NOT_ADDRESS"_s
                                 << QStringList{u"NOT_ADDRESS"_s};
    QTest::newRow("city and district disagree")
        << u"杭州市海淀区中关村大街27号"_s << u"INCONSISTENT"_s
        << QStringList{u"REGION_INCONSISTENT"_s};
    QTest::newRow("area code of another city")
        << kClean + u" 电话010-66668888"_s << u"INCONSISTENT"_s
        << QStringList{u"AREA_CODE_MISMATCH"_s};
    QTest::newRow("area code +86 form")
        << u"北京市朝阳区建国路88号 +86 571 8888 6666"_s << u"INCONSISTENT"_s
        << QStringList{u"AREA_CODE_MISMATCH"_s};
    QTest::newRow("mobile 10 digits")
        << kClean + u" 手机1391234567"_s << u"INVALID_NUMBER"_s << QStringList{u"PHONE_DIGITS"_s};
    QTest::newRow("mobile 12 digits")
        << kClean + u" 手机139123456789"_s << u"INVALID_NUMBER"_s << QStringList{u"PHONE_DIGITS"_s};
    QTest::newRow("full-width mobile 10 digits")
        << kClean + u" １３９１２３４５６７"_s << u"INVALID_NUMBER"_s
        << QStringList{u"PHONE_DIGITS"_s};
    QTest::newRow("zip 5 digits") << kClean + u" 邮编31112"_s << u"INVALID_NUMBER"_s
                                  << QStringList{u"ZIP_DIGITS"_s};
    QTest::newRow("zip 7 digits, colon")
        << kClean + u" 邮政编码：3111210"_s << u"INVALID_NUMBER"_s << QStringList{u"ZIP_DIGITS"_s};
    QTest::newRow("misspelled city") << u"浙江省杭洲市余杭区文一西路969号"_s << u"MISSPELLED"_s
                                     << QStringList{u"REGION_MISSPELLED"_s};
    QTest::newRow("no district") << u"杭州市文一西路969号"_s << u"INCOMPLETE"_s
                                 << QStringList{u"MISSING_DISTRICT"_s};
    QTest::newRow("province only")
        << u"浙江省"_s << u"INCOMPLETE"_s << QStringList{u"MISSING_DISTRICT"_s, u"MISSING_ROAD"_s};
    QTest::newRow("no road") << u"浙江省杭州市余杭区"_s << u"INCOMPLETE"_s
                             << QStringList{u"MISSING_ROAD"_s};
    QTest::newRow("road without number") << u"浙江省杭州市余杭区文一西路"_s << u"INCOMPLETE"_s
                                         << QStringList{u"MISSING_ROAD_NUMBER"_s};
    QTest::newRow("no division") << u"文一西路969号"_s << u"INCOMPLETE"_s
                                 << QStringList{u"MISSING_REGION"_s};
}

void TestAssessment::findings()
{
    QFETCH(QString, text);
    QFETCH(QString, code);
    QFETCH(QStringList, findings);
    const QJsonObject body = assess(text);
    QCOMPARE(body.value("address_assessment").toObject().value("code").toString(), code);
    QCOMPARE(codes(body), findings);
    for (const QJsonValue &f :
         body.value("address_assessment").toObject().value("findings").toArray())
        QVERIFY(!f.toObject().value("message").toString().isEmpty());
}

void TestAssessment::noFalseFindings_data()
{
    QTest::addColumn<QString>("text");
    // Each is a clean address with something that must not be taken for a fault.
    QTest::newRow("area code agrees") << kClean + u" (0571)8888-6666"_s;
    QTest::newRow("municipality area code") << u"北京市朝阳区建国路88号 010-66668888"_s;
    QTest::newRow("province-wide area code") << u"海南省三亚市吉阳区迎宾路1号 0898-88886666"_s;
    QTest::newRow("city that changed its code, new code")
        << u"四川省眉山市东坡区湖滨路5号 028-66668888"_s;
    QTest::newRow("unknown area code not judged") << kClean + u" 0690-1234567"_s; // no such code
    QTest::newRow("mobile 11 digits") << kClean + u" 13912345678"_s;
    QTest::newRow("zip 6 digits") << kClean + u" 邮编311121"_s;
    QTest::newRow("10 digits not a mobile prefix") << kClean + u" 订单1234567890"_s;
    QTest::newRow("digits glued to letters") << kClean + u" 单号SF1391234567"_s;
    QTest::newRow("digits in a date") << kClean + u" 2023-05-12"_s;
    QTest::newRow("road named after a city") << u"上海市黄浦区南京东路100号"_s;
    QTest::newRow("district name inside a word") << u"浙江省宁波市鄞州区城区中河路9号"_s;
    QTest::newRow("address pasted twice") << u"浙江省杭州市余杭区浙江省杭州市余杭区文一西路969号"_s;
}

void TestAssessment::noFalseFindings()
{
    QFETCH(QString, text);
    const QJsonObject body = assess(text);
    QCOMPARE(codes(body), QStringList{});
    QCOMPARE(body.value("address_assessment").toObject().value("code").toString(), u"OK"_s);
}

void TestAssessment::spansAndMessages()
{
    const QJsonObject body = assess(kClean + u" 电话010-66668888 邮编31112 手机1391234567"_s);
    const QJsonObject area = finding(body, u"AREA_CODE_MISMATCH"_s);
    QCOMPARE(area.value("start").toInt(), 20);
    QCOMPARE(area.value("end").toInt(), 32);
    QVERIFY(area.value("message").toString().contains(u"010"));
    QVERIFY(area.value("message").toString().contains(u"北京市"));
    QVERIFY(area.value("message").toString().contains(u"杭州市"));
    const QJsonObject zip = finding(body, u"ZIP_DIGITS"_s);
    QCOMPARE(zip.value("start").toInt(), 35);
    QCOMPARE(zip.value("end").toInt(), 40);
    QVERIFY(zip.value("message").toString().contains(u"31112"));
    const QJsonObject phone = finding(body, u"PHONE_DIGITS"_s);
    QCOMPARE(phone.value("start").toInt(), 43);
    QCOMPARE(phone.value("end").toInt(), 53);
    // Findings without a span (the address as a whole) carry no offsets.
    const QJsonObject missing = finding(assess(u"杭州市文一西路969号"_s), u"MISSING_DISTRICT"_s);
    QVERIFY(!missing.contains("start"));
    QVERIFY(missing.value("message").toString().contains(u"杭州市"));
    const QJsonObject spelled =
        finding(assess(u"浙江省杭洲市余杭区文一西路969号"_s), u"REGION_MISSPELLED"_s);
    QCOMPARE(spelled.value("start").toInt(), 3);
    QCOMPARE(spelled.value("end").toInt(), 6);
    QVERIFY(spelled.value("message").toString().contains(u"杭州市"));
}

void TestAssessment::summaryPrecedence()
{
    // Every kind at once: the most serious sums up.
    const QJsonObject body = assess(u"杭州市海淀区 电话0571-88886666 手机1391234567"_s);
    const QStringList found = codes(body);
    QVERIFY(found.contains(u"REGION_INCONSISTENT"_s));
    QVERIFY(found.contains(u"PHONE_DIGITS"_s));
    QCOMPARE(body.value("address_assessment").toObject().value("code").toString(),
             u"INCONSISTENT"_s);
    QCOMPARE(AddressAssessor::category(u"ZIP_DIGITS"), u"INVALID_NUMBER"_s);
    QCOMPARE(AddressAssessor::category(u"MISSING_ROAD"), u"INCOMPLETE"_s);
    QCOMPARE(AddressAssessor::category(u"REGION_MISSPELLED"), u"MISSPELLED"_s);
    QCOMPARE(AddressAssessor::category(u"AREA_CODE_MISMATCH"), u"INCONSISTENT"_s);
}

void TestAssessment::nonBmpOffsets()
{
    // 𠮷 is one character, two UTF-16 units.
    const QJsonObject body = assess(u"𠮷𠮷杭州市海淀区中关村大街27号 手机1391234567"_s);
    // Which of the two names is off the chain is the matcher's choice; either is 3 characters
    // counted after the two 𠮷.
    const QJsonObject region = finding(body, u"REGION_INCONSISTENT"_s);
    QVERIFY(region.value("start").toInt() == 2 || region.value("start").toInt() == 5);
    QCOMPARE(region.value("end").toInt() - region.value("start").toInt(), 3);
    const QJsonObject phone = finding(body, u"PHONE_DIGITS"_s);
    QCOMPARE(phone.value("start").toInt(), 19);
    QCOMPARE(phone.value("end").toInt(), 29);
    const QJsonObject area =
        finding(assess(u"𠮷"_s + kClean + u" 010-66668888"_s), u"AREA_CODE_MISMATCH"_s);
    QCOMPARE(area.value("start").toInt(), 19);
}

void TestAssessment::badRequests()
{
    for (const QJsonObject &body :
         {QJsonObject{}, QJsonObject{{"text", ""}}, QJsonObject{{"text", "   "}},
          QJsonObject{{"text", 5}}, QJsonObject{{"text", QJsonObject{}}},
          QJsonObject{{"text", QString(AddressApi::kMaxText + 1, u'x')}}}) {
        const AddressApi::Reply r = AddressApi::call(engine(), u"assessment"_s, body);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.param, u"text"_s);
    }
    // At the bound it is answered.
    QCOMPARE(AddressApi::call(engine(), u"assessment"_s,
                              QJsonObject{{"text", QString(AddressApi::kMaxText, u'x')}})
                 .status,
             200);
}

QTEST_GUILESS_MAIN(TestAssessment)
#include "tst_assessment.moc"
