// KeyRules (models/KeyRules.h): model globs, address rules, budget periods in a time zone,
// the storage round trip, and the API's and command line's parsers with the field they name.
#include "KeyRules.h"
#include "Money.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

namespace {

QDateTime utc(const char *iso)
{
    return QDateTime::fromString(QString::fromLatin1(iso), Qt::ISODate).toUTC();
}

// The rules of a JSON body over base; on a refusal *field names the field and *error (which
// quotes it) says why.
std::optional<KeyRules> fromApi(const char *json, QString *field, const KeyRules &base = {},
                                QString *error = nullptr)
{
    QString why;
    return KeyRules::fromApi(QJsonDocument::fromJson(json).object(), base, field,
                             error ? error : &why);
}

} // namespace

class TestKeyRules : public QObject
{
    Q_OBJECT

private slots:
    void modelGlobs()
    {
        KeyRules r;
        QVERIFY(r.allowsModel(QStringLiteral("anything"))); // no rule: any model
        r.models = {QStringLiteral("vendorB-*"), QStringLiteral("gateway/openrouter/*"),
                    QStringLiteral("gpt-image-1")};
        QVERIFY(r.allowsModel(QStringLiteral("vendorB-chat-1")));
        QVERIFY(r.allowsModel(QStringLiteral("vendorB-")));
        QVERIFY(r.allowsModel(QStringLiteral("gateway/openrouter/meta/llama-3")));
        QVERIFY(r.allowsModel(QStringLiteral("gpt-image-1")));
        QVERIFY(!r.allowsModel(QStringLiteral("gpt-image-10")));   // the whole ID
        QVERIFY(!r.allowsModel(QStringLiteral("xvendorB-chat")));  // anchored at the start
        QVERIFY(!r.allowsModel(QStringLiteral("vendorb-chat-1"))); // case-sensitive
        QVERIFY(!r.allowsModel(QStringLiteral("gateway/other/x")));
        QVERIFY(!r.allowsModel(QString()));
        r.models = {QStringLiteral("*-mini*")};
        QVERIFY(r.allowsModel(QStringLiteral("gpt-4o-mini-2024")));
        QVERIFY(!r.allowsModel(QStringLiteral("gpt-4o")));
        // Many stars against a long ID that does not match: still answers (no blow-up).
        r.models = {QStringLiteral("*a*a*a*a*a*a*a*a*a*a*b")};
        QVERIFY(!r.allowsModel(QString(5000, u'a')));
    }

    void addresses()
    {
        KeyRules r;
        QVERIFY(r.allowsAddress(QHostAddress(QStringLiteral("203.0.113.9"))));
        r.allowedIps = {QStringLiteral("10.0.0.0/8"), QStringLiteral("192.168.1.7"),
                        QStringLiteral("2001:db8::/32")};
        QVERIFY(r.allowsAddress(QHostAddress(QStringLiteral("10.200.3.4"))));
        QVERIFY(r.allowsAddress(QHostAddress(QStringLiteral("192.168.1.7"))));
        QVERIFY(!r.allowsAddress(QHostAddress(QStringLiteral("192.168.1.8"))));
        QVERIFY(r.allowsAddress(QHostAddress(QStringLiteral("2001:db8:1::5"))));
        QVERIFY(!r.allowsAddress(QHostAddress(QStringLiteral("2001:db9::5"))));
        // An IPv4 client on a dual-stack socket.
        QVERIFY(r.allowsAddress(QHostAddress(QStringLiteral("::ffff:10.1.1.1"))));
        QVERIFY(!r.allowsAddress(QHostAddress(QStringLiteral("::ffff:11.1.1.1"))));
        QVERIFY(!r.allowsAddress(QHostAddress()));
        QVERIFY(!KeyRules::inAny({}, QHostAddress(QStringLiteral("10.0.0.1"))));

        for (const char *good : {"10.0.0.0/8", "0.0.0.0/0", "::1", "::/0", "127.0.0.1/32"})
            QVERIFY2(KeyRules::validCidr(QString::fromLatin1(good)), good);
        for (const char *bad : {"", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8",
                                "::1/129", "example.com", "10.0.0", "fe80::1%eth0", "1.2.3.4/8x"})
            QVERIFY2(!KeyRules::validCidr(QString::fromLatin1(bad)), bad);
    }

    void periods()
    {
        using P = KeyRules::Period;
        const QTimeZone utcZone = QTimeZone::utc();
        auto [s, e] = KeyRules::periodAt(P::Day, utc("2026-12-02T23:59:59Z"), utcZone);
        QCOMPARE(s, utc("2026-12-02T00:00:00Z"));
        QCOMPARE(e, utc("2026-12-03T00:00:00Z"));
        std::tie(s, e) = KeyRules::periodAt(P::Day, utc("2026-12-03T00:00:00Z"), utcZone);
        QCOMPARE(s, utc("2026-12-03T00:00:00Z")); // the boundary belongs to the new day
        // Weeks start on Monday: Wednesday 2 December 2026 is in the week of Monday the 30th.
        std::tie(s, e) = KeyRules::periodAt(P::Week, utc("2026-12-02T12:00:00Z"), utcZone);
        QCOMPARE(s, utc("2026-11-30T00:00:00Z"));
        QCOMPARE(e, utc("2026-12-07T00:00:00Z"));
        std::tie(s, e) = KeyRules::periodAt(P::Month, utc("2026-12-31T23:00:00Z"), utcZone);
        QCOMPARE(s, utc("2026-12-01T00:00:00Z"));
        QCOMPARE(e, utc("2027-01-01T00:00:00Z"));
        std::tie(s, e) = KeyRules::periodAt(P::Total, utc("2026-12-31T23:00:00Z"), utcZone);
        QCOMPARE(s.toMSecsSinceEpoch(), qint64(0));
        QVERIFY(!e.isValid());

        // Another zone: Shanghai's day starts at 16:00 UTC the day before.
        const QTimeZone shanghai("Asia/Shanghai");
        QVERIFY(shanghai.isValid());
        std::tie(s, e) = KeyRules::periodAt(P::Day, utc("2026-12-02T15:59:00Z"), shanghai);
        QCOMPARE(s, utc("2026-12-01T16:00:00Z"));
        QCOMPARE(e, utc("2026-12-02T16:00:00Z"));
        std::tie(s, e) = KeyRules::periodAt(P::Day, utc("2026-12-02T16:00:00Z"), shanghai);
        QCOMPARE(s, utc("2026-12-02T16:00:00Z"));
        // A daylight-saving day is 23 hours long where the clocks go forward.
        const QTimeZone berlin("Europe/Berlin");
        std::tie(s, e) = KeyRules::periodAt(P::Day, utc("2026-03-29T12:00:00Z"), berlin);
        QCOMPARE(s.secsTo(e), qint64(23 * 3600));
    }

    void storedRoundTrip()
    {
        KeyRules r;
        QVERIFY(r.toStored().isEmpty());
        QCOMPARE(KeyRules::fromStored({}), r);
        r.budget = KeyRules::Budget{5 * Money::kUnitsPerCredit + 1, KeyRules::Period::Week};
        r.models = {QStringLiteral("vendorB-*")};
        r.allowedIps = {QStringLiteral("10.0.0.0/8"), QStringLiteral("::1")};
        r.expires = utc("2027-01-31T00:00:00Z");
        const KeyRules back = KeyRules::fromStored(r.toStored());
        QCOMPARE(back, r);
        QCOMPARE(back.budget->amount, 5 * Money::kUnitsPerCredit + 1); // exact, past 2^53 too
        QCOMPARE(KeyRules::fromStored("not json"), KeyRules());
    }

    void apiForms()
    {
        QString field;
        auto r = fromApi(R"({"budget": {"amount": "5", "period": "day"},
                             "models": ["vendorB-*", "gpt-image-1", "vendorB-*"],
                             "allowed_ips": ["10.0.0.0/8"],
                             "expires_at": "2027-01-31T00:00:00Z"})",
                         &field);
        QVERIFY(r);
        QCOMPARE(r->budget->amount, 5 * Money::kUnitsPerCredit);
        QCOMPARE(r->budget->period, KeyRules::Period::Day);
        QCOMPARE(r->models, (QStringList{QStringLiteral("vendorB-*"),
                                         QStringLiteral("gpt-image-1")})); // once each
        QCOMPARE(r->expires, utc("2027-01-31T00:00:00Z"));
        const QJsonObject api = r->toApi();
        QCOMPARE(api.value("budget").toObject().value("amount").toString(),
                 QStringLiteral("5.000000000"));
        QCOMPARE(api.value("expires_at").toString(), QStringLiteral("2027-01-31T00:00:00.000Z"));

        // Unix seconds; absent keeps, null removes.
        auto patched = fromApi(R"({"expires_at": 1800000000, "models": null})", &field, *r);
        QVERIFY(patched);
        QCOMPARE(patched->expires, QDateTime::fromSecsSinceEpoch(1800000000, Qt::UTC));
        QVERIFY(patched->models.isEmpty());
        QCOMPARE(patched->budget, r->budget);
        QCOMPARE(patched->allowedIps, r->allowedIps);
        const QJsonObject none = KeyRules().toApi();
        QVERIFY(none.value("budget").isNull());
        QVERIFY(none.value("expires_at").isNull());
        QCOMPARE(none.value("models").toArray().size(), 0);

        // Each bad value names its field.
        const QList<QPair<const char *, const char *>> bad{
            {R"({"budget": {"amount": "0", "period": "day"}})", "budget"},
            {R"({"budget": {"amount": "-1", "period": "day"}})", "budget"},
            {R"({"budget": {"amount": 5, "period": "day"}})", "budget"},
            {R"({"budget": {"amount": "5", "period": "year"}})", "budget"},
            {R"({"budget": {"amount": "0.0000000001", "period": "day"}})", "budget"},
            {R"({"budget": "5/day"})", "budget"},
            {R"({"models": "vendorB-*"})", "models"},
            {R"({"models": [""]})", "models"},
            {R"({"models": ["a b"]})", "models"},
            {R"({"models": [1]})", "models"},
            {R"({"allowed_ips": ["10.0.0.0/40"]})", "allowed_ips"},
            {R"({"allowed_ips": "10.0.0.0/8"})", "allowed_ips"},
            {R"({"expires_at": "tomorrow"})", "expires_at"},
            {R"({"expires_at": "2027-01-31"})", "expires_at"},
            {R"({"expires_at": -5})", "expires_at"},
            {R"({"expires_at": 1.5})", "expires_at"},
            {R"({"expires_at": true})", "expires_at"},
        };
        for (const auto &[json, expected] : bad) {
            field.clear();
            QString error;
            QVERIFY2(!fromApi(json, &field, {}, &error), json);
            QCOMPARE(field, QString::fromLatin1(expected));
            QVERIFY2(error.startsWith(u'\'' + field + u'\''), qPrintable(error));
        }
        QString many = QStringLiteral(R"({"models": [)");
        for (int i = 0; i < 101; ++i)
            many += QStringLiteral("\"m%1\",").arg(i);
        many.chop(1);
        many += QStringLiteral("]}");
        QVERIFY(!fromApi(many.toUtf8().constData(), &field));
        QCOMPARE(field, QStringLiteral("models"));
    }

    void commandLineForms()
    {
        QString error;
        auto b = KeyRules::budgetFromText(QStringLiteral("5/day"), &error);
        QVERIFY(b);
        QCOMPARE(b->amount, 5 * Money::kUnitsPerCredit);
        QCOMPARE(b->period, KeyRules::Period::Day);
        b = KeyRules::budgetFromText(QStringLiteral("0.25/Month"), &error);
        QVERIFY(b);
        QCOMPARE(b->amount, Money::kUnitsPerCredit / 4);
        QCOMPARE(b->period, KeyRules::Period::Month);
        b = KeyRules::budgetFromText(QStringLiteral("50"), &error);
        QVERIFY(b);
        QCOMPARE(b->period, KeyRules::Period::Total);
        for (const char *bad : {"", "5/year", "-5/day", "0/day", "x/day", "5/"})
            QVERIFY2(!KeyRules::budgetFromText(QString::fromLatin1(bad), &error), bad);
        QVERIFY(error.contains(QStringLiteral("5/day")));

        const QDateTime now = utc("2026-12-02T10:00:00Z");
        QCOMPARE(*KeyRules::expiryFromText(QStringLiteral("30d"), now, &error), now.addDays(30));
        QCOMPARE(*KeyRules::expiryFromText(QStringLiteral("12h"), now, &error),
                 now.addSecs(12 * 3600));
        QCOMPARE(*KeyRules::expiryFromText(QStringLiteral("2027-01-31"), now, &error),
                 utc("2027-01-31T00:00:00Z"));
        QCOMPARE(
            *KeyRules::expiryFromText(QStringLiteral("2027-01-31T08:00:00+08:00"), now, &error),
            utc("2027-01-31T00:00:00Z"));
        for (const char *bad : {"", "0d", "30x", "soon", "2027-13-01"})
            QVERIFY2(!KeyRules::expiryFromText(QString::fromLatin1(bad), now, &error), bad);
    }
};

QTEST_GUILESS_MAIN(TestKeyRules)
#include "tst_key_rules.moc"
