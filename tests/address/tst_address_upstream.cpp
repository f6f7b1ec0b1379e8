// The optional upstream address provider (address.upstream): asked only when the local engine
// has no answer, its answer returned and billed; any failure of it leaves the local answer with
// a message. The upstream is a second server on loopback speaking the same address API.

#include "address/AddressFamily.h"
#include "Money.h"
#include "Pipeline.h"
#include "ServerFixture.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QMutex>
#include <QTest>

namespace {

// What the fake provider saw, and how it answers.
struct Provider
{
    QMutex mutex;
    QList<QByteArray> bodies;
    QList<QByteArray> authorizations;
    int status = 200;
    QByteArray answer =
        R"({"division_info":{"divcode":"990000000000","division_province":"X"},"status":"OK"})";
    bool silent = false; // never answers

    int calls()
    {
        QMutexLocker lock(&mutex);
        return int(bodies.size());
    }
};

std::function<void(Pipeline &)> providerRoutes(Provider *p)
{
    return [p](Pipeline &pipeline) {
        for (const char *endpoint : {"division-code", "geocode", "zipcode"}) {
            RouteSpec spec;
            spec.method = "POST";
            spec.pattern = QStringLiteral("/upstream/v1/address/") + QLatin1String(endpoint);
            spec.family = QStringLiteral("test");
            spec.auth = AuthMode::Public;
            spec.handler = [p](const ContextPtr &ctx) {
                QMutexLocker lock(&p->mutex);
                p->bodies.append(ctx->request().body);
                p->authorizations.append(ctx->request().header("authorization"));
                if (p->silent)
                    return;
                ctx->respondRaw(p->status, "application/json", p->answer);
            };
            pipeline.addRoute(spec);
        }
    };
}

ServerSettings withUpstream(const QByteArray &baseUrl, const QJsonObject &extra = {})
{
    ServerSettings s = ServerSettings::defaults();
    QJsonObject json{{"base_url", QString::fromUtf8(baseUrl)}, {"key", "upstream-secret"}};
    for (auto it = extra.begin(); it != extra.end(); ++it)
        json.insert(it.key(), it.value());
    s.familySections["address"] = QJsonObject{{"upstream", json}};
    return s;
}

// What the address family bills per answer (the default price: the settings name none).
qint64 addressPrice(ServerFixture &f)
{
    return f.services().family<AddressFamily>()->pricePerRequest();
}

QByteArray baseOf(ServerFixture &f)
{
    return "http://127.0.0.1:" + QByteArray::number(f.port()) + "/upstream";
}

const QByteArray kNowhere = R"({"text":"火星第一基地三号舱"})";

} // namespace

class TestAddressUpstream : public QObject
{
    Q_OBJECT
private slots:
    void localAnswerNeedsNoUpstream()
    {
        Provider p;
        ServerFixture provider(QStringLiteral("sqlite"), ServerSettings::defaults(),
                               providerRoutes(&p));
        ServerFixture f(QStringLiteral("sqlite"), withUpstream(baseOf(provider)));
        QVERIFY(provider.ready() && f.ready());
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const HttpReply r = f.client().postJson("/v1/address/division-code",
                                                "{\"text\":\"浙江省杭州市余杭区文一西路\"}", key);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("status").toString(), QStringLiteral("OK"));
        QCOMPARE(r.header("x-address-source"), QByteArray());
        QCOMPARE(p.calls(), 0);
    }

    void notFoundLocallyAsksUpstream()
    {
        Provider p;
        ServerFixture provider(QStringLiteral("sqlite"), ServerSettings::defaults(),
                               providerRoutes(&p));
        ServerFixture f(QStringLiteral("sqlite"), withUpstream(baseOf(provider)));
        QVERIFY(provider.ready() && f.ready());
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const HttpReply r = f.client().postJson("/v1/address/division-code", kNowhere, key);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-address-source"), QByteArray("upstream"));
        QCOMPARE(r.json().value("division_info").toObject().value("divcode").toString(),
                 QStringLiteral("990000000000"));
        QCOMPARE(p.calls(), 1);
        QCOMPARE(p.bodies.first(), kNowhere); // the client's body, unchanged
        QCOMPARE(p.authorizations.first(), QByteArray("Bearer upstream-secret"));
        QCOMPARE(f.store().balance(f.store().defaultAccountId()),
                 Money::kUnitsPerCredit - addressPrice(f));
    }

    void upstreamFailureKeepsLocalAnswer_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("answer");
        QTest::addColumn<bool>("silent");
        QTest::addColumn<QString>("why");
        QTest::newRow("500") << 500 << QByteArray("{\"error\":\"boom\"}") << false << "HTTP 500";
        QTest::newRow("401") << 401 << QByteArray("{\"error\":\"bad key\"}") << false << "HTTP 401";
        QTest::newRow("not json") << 200 << QByteArray("<html>") << false << "not a JSON object";
        QTest::newRow("array") << 200 << QByteArray("[1,2]") << false << "not a JSON object";
        QTest::newRow("timeout") << 200 << QByteArray() << true << "no response within";
        QTest::newRow("error object")
            << 200 << QByteArray("{\"error\":{\"message\":\"quota exceeded\"}}") << false
            << "answered an error";
        QTest::newRow("no status")
            << 200 << QByteArray("{\"division_info\":{}}") << false << "has no status";
        QTest::newRow("no data either")
            << 200 << QByteArray("{\"status\":\"NO_DATA\"}") << false << "no answer either";
        QTest::newRow("over 4 MiB")
            << 200 << QByteArray(5 * 1024 * 1024, 'x') << false << "over 4 MiB";
    }
    void upstreamFailureKeepsLocalAnswer()
    {
        QFETCH(int, status);
        QFETCH(QByteArray, answer);
        QFETCH(bool, silent);
        QFETCH(QString, why);
        Provider p;
        p.status = status;
        p.answer = answer;
        p.silent = silent;
        ServerFixture provider(QStringLiteral("sqlite"), ServerSettings::defaults(),
                               providerRoutes(&p));
        ServerFixture f(QStringLiteral("sqlite"),
                        withUpstream(baseOf(provider), {{"timeout_ms", 400}}));
        QVERIFY(provider.ready() && f.ready());
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const HttpReply r = f.client().postJson("/v1/address/division-code", kNowhere, key);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("x-address-source"), QByteArray("local"));
        const QJsonObject body = r.json();
        QCOMPARE(body.value("status").toString(), QStringLiteral("NOT_FOUND"));
        QCOMPARE(body.value("division_info").toObject().value("divcode").toString(), QString());
        const QString message = body.value("message").toString();
        QVERIFY2(message.contains(QStringLiteral("upstream address provider")),
                 qPrintable(message));
        QVERIFY2(message.contains(why), qPrintable(message));
        QVERIFY(!message.contains(QStringLiteral("upstream-secret")));
        QCOMPARE(p.calls(), 1);
        // Billed as the local answer is: division-code's NOT_FOUND is a billed answer.
        QCOMPARE(f.store().balance(f.store().defaultAccountId()),
                 Money::kUnitsPerCredit - addressPrice(f));
    }

    // zipcode's NOT_FOUND and NO_DATA are free locally; an upstream that knows no more does not
    // make them billed.
    void unbillableStaysUnbilled()
    {
        Provider p;
        p.answer = "{\"zipcode\":\"\",\"status\":\"NO_DATA\"}";
        ServerFixture provider(QStringLiteral("sqlite"), ServerSettings::defaults(),
                               providerRoutes(&p));
        ServerFixture f(QStringLiteral("sqlite"), withUpstream(baseOf(provider)));
        QVERIFY(provider.ready() && f.ready());
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const HttpReply r = f.client().postJson("/v1/address/zipcode", kNowhere, key);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("status").toString(), QStringLiteral("NOT_FOUND"));
        QVERIFY(r.json().value("message").toString().contains(QStringLiteral("no answer either")));
        QCOMPARE(p.calls(), 1);
        QCOMPARE(f.store().balance(f.store().defaultAccountId()), Money::kUnitsPerCredit);
    }

    // A client that leaves while the upstream is asked: the call stops, the request is
    // recorded as 499 and not billed, and its hold goes back (an account holding exactly one
    // reservation is served again).
    void clientLeavingHandsTheHoldBack()
    {
        Provider p;
        p.silent = true;
        ServerFixture provider(QStringLiteral("sqlite"), ServerSettings::defaults(),
                               providerRoutes(&p));
        ServerFixture f(QStringLiteral("sqlite"),
                        withUpstream(baseOf(provider), {{"timeout_ms", 60'000}}));
        QVERIFY(provider.ready() && f.ready());
        const QByteArray key = f.createKey();
        const qint64 account = f.store().defaultAccountId();
        f.grant(addressPrice(f));
        {
            HttpClient leaving = f.client();
            leaving.send("POST", "/v1/address/division-code",
                         {{"Authorization", "Bearer " + key}, {"Content-Type", "application/json"}},
                         kNowhere);
            QTRY_COMPARE_WITH_TIMEOUT(p.calls(), 1, 10'000);
            leaving.socket().abort();
        }
        UsageQuery q;
        q.accountId = account;
        QTRY_COMPARE_WITH_TIMEOUT(f.store().usage(q).records.size(), 1, 10'000);
        const UsageRecord gone = f.store().usage(q).records.first();
        QCOMPARE(gone.status, 499);
        QCOMPARE(gone.cost, qint64(0));
        QCOMPARE(f.store().balance(account), addressPrice(f));
        const HttpReply r = f.client().postJson("/v1/address/division-code",
                                                "{\"text\":\"浙江省杭州市余杭区文一西路\"}", key);
        QCOMPARE(r.status, 200);
        QCOMPARE(f.store().balance(account), qint64(0));
    }

    void unreachableUpstream()
    {
        // A port nothing listens on: bind one, note it, close it.
        quint16 closed = 0;
        {
            ServerFixture gone(QStringLiteral("sqlite"));
            QVERIFY(gone.ready());
            closed = gone.port();
        }
        ServerFixture f(QStringLiteral("sqlite"),
                        withUpstream("http://127.0.0.1:" + QByteArray::number(closed)));
        QVERIFY(f.ready());
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const HttpReply r = f.client().postJson("/v1/address/division-code", kNowhere, key);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("status").toString(), QStringLiteral("NOT_FOUND"));
        QVERIFY(r.json().value("message").toString().contains(QStringLiteral("upstream")));
    }

    void onlyListedEndpoints()
    {
        Provider p;
        ServerFixture provider(QStringLiteral("sqlite"), ServerSettings::defaults(),
                               providerRoutes(&p));
        ServerFixture f(QStringLiteral("sqlite"),
                        withUpstream(baseOf(provider), {{"endpoints", QJsonArray{"geocode"}}}));
        QVERIFY(provider.ready() && f.ready());
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        HttpReply r = f.client().postJson("/v1/address/division-code", kNowhere, key);
        QCOMPARE(r.json().value("status").toString(), QStringLiteral("NOT_FOUND"));
        QCOMPARE(p.calls(), 0);
        r = f.client().postJson("/v1/address/geocode", kNowhere, key);
        QCOMPARE(r.header("x-address-source"), QByteArray("upstream"));
        QCOMPARE(p.calls(), 1);
    }

    void configErrors_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("field");
        QTest::newRow("no url") << QByteArray("{\"key\":\"k\"}") << "base_url";
        QTest::newRow("ftp") << QByteArray("{\"base_url\":\"ftp://example.com\"}") << "base_url";
        QTest::newRow("no host") << QByteArray("{\"base_url\":\"http://\"}") << "base_url";
        QTest::newRow("unknown endpoint")
            << QByteArray("{\"base_url\":\"https://a.example\",\"endpoints\":[\"teleport\"]}")
            << "teleport";
        QTest::newRow("endpoints not array")
            << QByteArray("{\"base_url\":\"https://a.example\",\"endpoints\":\"geocode\"}")
            << "endpoints";
        QTest::newRow("timeout") << QByteArray(
                                        "{\"base_url\":\"https://a.example\",\"timeout_ms\":5}")
                                 << "timeout_ms";
        QTest::newRow("empty key_env")
            << QByteArray("{\"base_url\":\"https://a.example\",\"key_env\":\"SY_TEST_UNSET_VAR\"}")
            << "key_env";
    }
    void configErrors()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, field);
        try {
            AddressUpstreamConfig::fromJson(QJsonDocument::fromJson(json).object());
            QFAIL("accepted");
        } catch (const std::runtime_error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(field), e.what());
        }
    }

    void configDefaults()
    {
        const AddressUpstreamConfig c = AddressUpstreamConfig::fromJson(
            QJsonObject{{"base_url", "https://addr.example/api/"}, {"key", "k"}});
        QVERIFY(c.enabled());
        QCOMPARE(c.baseUrl, QByteArray("https://addr.example/api"));
        QVERIFY(c.endpoints.contains(QStringLiteral("geocode")));
        QVERIFY(!c.endpoints.contains(QStringLiteral("transfer-coord")));
        QVERIFY(!AddressUpstreamConfig::fromJson({}).enabled());
    }
};

QTEST_GUILESS_MAIN(TestAddressUpstream)
#include "tst_address_upstream.moc"
