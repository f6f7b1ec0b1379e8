// The social-data pass-through over HTTP against the fake upstream's TikHub-style API
// (tests/fake_upstream, --social-openapi): the catalog fetched, stored and served after a
// restart with the upstream down; every error of server/social/README.md with its exact body,
// before any upstream call and unbilled; the query forwarded byte for byte with the upstream's key,
// never the client's; the answer relayed byte for byte in its status; billing only for 2xx
// with envelope code 200 or 0, the price held before any upstream call (relay, cache hits,
// video extraction), a client that leaves billed once some of a success reached it and never
// when none did; a 20 MB answer; /openapi.json; the control API.

#include "FakeUpstreamProcess.h"
#include "ServerFixture.h"

#include <functional>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSqlQuery>
#include <QTcpServer>
#include <QTest>
#include <QUrl>

namespace {

const QByteArray kUpstreamKey = "th-social-upstream-SECRET-0123456789";
constexpr qint64 kPrice = 10000000; // USD 0.01 in units

QJsonObject socialSection(const QString &base, int firstByteMs = 20000)
{
    return QJsonObject{
        {"providers",
         QJsonObject{{"tikhub", QJsonObject{{"base_url", base},
                                            {"keys", QJsonArray{QString::fromLatin1(kUpstreamKey)}},
                                            {"timeouts", QJsonObject{{"first_byte_ms", firstByteMs},
                                                                     {"total_ms", 60000}}}}}}},
        {"platforms", QJsonObject{{"bilibili", QJsonObject{{"enabled", false}}},
                                  {"twitter", QJsonObject{{"name", "x"}}}}},
        {"catalog", QJsonObject{{"refresh_hours", 0}}}};
}

ServerSettings settingsFor(const QString &base, int firstByteMs = 20000)
{
    ServerSettings s = ServerSettings::defaults();
    s.familySections.insert("social", socialSection(base, firstByteMs));
    return s;
}

bool startFake(FakeUpstreamProcess &fake)
{
    return fake.start({"--social-openapi", QStringLiteral(SOCIAL_OPENAPI)});
}

// A port nothing listens on.
quint16 closedPort()
{
    QTcpServer s;
    s.listen(QHostAddress::LocalHost, 0);
    return s.serverPort();
}

QJsonObject catalogStatus(ServerFixture &f, const QByteArray &token)
{
    return f.client().get("/api/v1/social/catalog", token).json();
}

// Waits until the catalog's source is `source`.
bool waitForCatalog(ServerFixture &f, const QByteArray &token, const QString &source)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 15000) {
        if (catalogStatus(f, token).value("source").toString() == source)
            return true;
        QTest::qWait(50);
    }
    return false;
}

qint64 balance(ServerFixture &f)
{
    return f.store().balance(f.store().defaultAccountId());
}

QByteArray errorBody(const char *message, const char *type)
{
    return QJsonDocument(QJsonObject{{"error", QJsonObject{{"message", message}, {"type", type}}}})
        .toJson(QJsonDocument::Compact);
}

qint64 upstreamRequests(FakeUpstreamProcess &fake)
{
    HttpClient c(fake.port());
    return c.get("/fake/stats").json().value("requests").toInteger();
}

// The (cost, status) of each usage row of an endpoint, once there are `count`.
using UsageRows = QList<QPair<qint64, int>>;
UsageRows usageOf(ServerFixture &f, const QString &endpoint, int count)
{
    UsageRows rows;
    QDeadlineTimer deadline(15'000);
    do {
        rows.clear();
        QSqlQuery q(f.store().database());
        q.prepare("SELECT cost, status FROM usage_records WHERE endpoint = ? ORDER BY id");
        q.addBindValue(endpoint);
        if (q.exec())
            while (q.next())
                rows.append({q.value(0).toLongLong(), q.value(1).toInt()});
        if (rows.size() >= count)
            break;
        QTest::qWait(20);
    } while (!deadline.hasExpired());
    return rows;
}

// The action the tests of a client that leaves call.
const QString kVideoAction = QStringLiteral("/v1/social-media/data/douyin/app/v3/fetch_one_video");

// The video extraction of `url`.
QByteArray extractTarget(const QString &url)
{
    return "/v1/social-media/video/extract?url=" + QUrl::toPercentEncoding(url);
}

const QString kDouyinVideo = QStringLiteral("https://www.douyin.com/video/7448118827402972455");

// Sends a request head (`method` on `target`, with the key when there is one) on the client's
// connection without waiting for the answer.
bool sendHead(HttpClient &c, const QByteArray &method, const QByteArray &target,
              const QByteArray &key)
{
    if (!c.connectIfNeeded())
        return false;
    c.sendRaw(method + " " + target + " HTTP/1.1\r\nHost: x\r\n" +
              (key.isEmpty() ? QByteArray() : "Authorization: Bearer " + key + "\r\n") + "\r\n");
    return true;
}

bool sendGet(HttpClient &c, const QByteArray &target, const QByteArray &key)
{
    return sendHead(c, "GET", target, key);
}

// Reads what comes on the client's connection until it holds `marker` or timeoutMs pass.
QByteArray readUntil(HttpClient &c, const QByteArray &marker, int timeoutMs)
{
    QByteArray seen;
    QDeadlineTimer deadline(timeoutMs);
    while (!seen.contains(marker) && !deadline.hasExpired()) {
        c.socket().waitForReadyRead(50);
        seen += c.socket().readAll();
    }
    return seen;
}

// A client that sends a GET, reads until `marker` has come (or 10 s pass) and leaves at once
// (a reset): what it saw.
QByteArray leaveAfter(ServerFixture &f, const QByteArray &target, const QByteArray &key,
                      const QByteArray &marker)
{
    HttpClient c = f.client();
    const QByteArray seen = sendGet(c, target, key) ? readUntil(c, marker, 10'000) : QByteArray();
    c.socket().abort();
    return seen;
}

} // namespace

// Sets `s` up on the test's backend row: skipped when that database is not there (failed
// with SWITCHYARD_REQUIRE_PG=1, as SY_START_SERVER does), failed when the fake upstream or
// the catalog from it did not come.
#define SOCIAL_SET_UP(s, ...)                                                                      \
    QFETCH(QString, backend);                                                                      \
    Setup s;                                                                                       \
    if (!setUp(s, backend __VA_OPT__(, ) __VA_ARGS__)) {                                           \
        const bool noDatabase = s.f && !s.f->ready();                                              \
        if (noDatabase && qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") != QLatin1String("1"))     \
            QSKIP(qPrintable(s.f->skipReason()));                                                  \
        QFAIL(noDatabase ? qPrintable(s.f->skipReason()) : "no fake upstream or no catalog");      \
    }

class TestSocialHttp : public QObject
{
    Q_OBJECT

private:
    // A server whose catalog came from the fake (its settings adjusted first, when asked).
    struct Setup
    {
        FakeUpstreamProcess fake;
        std::unique_ptr<ServerFixture> f;
        QByteArray key;
        QByteArray token;
    };
    using Adjust = std::function<void(ServerSettings &, const FakeUpstreamProcess &)>;
    bool setUp(Setup &s, const QString &backend, const Adjust &adjust = {},
               qint64 grant = 1000000000)
    {
        if (!startFake(s.fake))
            return false;
        ServerSettings settings = settingsFor(s.fake.url());
        if (adjust)
            adjust(settings, s.fake);
        s.f = std::make_unique<ServerFixture>(backend, settings);
        if (!s.f->ready())
            return false;
        s.key = s.f->createKey();
        s.token = s.f->createToken({"social:read", "social:write"});
        s.f->grant(grant);
        return waitForCatalog(*s.f, s.token, QStringLiteral("upstream"));
    }
    // Adds members to the social section.
    static Adjust withSocial(const QJsonObject &members)
    {
        return [members](ServerSettings &settings, const FakeUpstreamProcess &) {
            QJsonObject section = settings.familySections.value("social").toObject();
            for (auto it = members.begin(); it != members.end(); ++it)
                section.insert(it.key(), it.value());
            settings.familySections.insert("social", section);
        };
    }

private slots:
    void relayed_data() { addBackendRows(); }
    void relayed()
    {
        SOCIAL_SET_UP(s);
        const qint64 before = balance(*s.f);
        // Repeats, order, percent-encoding, '+', UTF-8 and an empty value, as sent.
        const QByteArray query = "aweme_id=7%2B1&z=1&a=2&z=3&kw=%E4%B8%AD%E6%96%87+x&empty=";
        const HttpReply r = s.f->client().get(
            "/v1/social-media/data/douyin/app/v3/fetch_one_video?" + query, s.key);
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY(r.body.startsWith("{\"code\":200"));
        const QJsonObject echo = r.json().value("data").toObject().value("echo").toObject();
        QCOMPARE(echo.value("query").toString().toUtf8(), query);
        QCOMPARE(echo.value("path").toString(),
                 QStringLiteral("/api/v1/douyin/app/v3/fetch_one_video"));
        QCOMPARE(echo.value("authorization").toString().toLatin1(), "Bearer " + kUpstreamKey);
        QVERIFY2(!r.body.contains(s.key), "the client's key reached the upstream");
        QVERIFY(!r.body.contains("x-api-key"));
        QCOMPARE(before - balance(*s.f), kPrice);
        QSqlQuery q(s.f->store().database());
        QVERIFY(q.exec("SELECT endpoint, model, cost, status FROM usage_records WHERE cost > 0"));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toString(),
                 QStringLiteral("/v1/social-media/data/douyin/app/v3/fetch_one_video"));
        QCOMPARE(q.value(1).toString(), QStringLiteral("douyin"));
        QCOMPARE(q.value(2).toLongLong(), kPrice);
        QCOMPARE(q.value(3).toInt(), 200);

        // X-API-Key works as well, and is not forwarded either.
        const HttpReply x = s.f->client().request(
            "GET", "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1",
            {qMakePair(QByteArray("X-API-Key"), s.key)});
        QCOMPARE(x.status, 200);
        QVERIFY(!x.body.contains(s.key));
        // A renamed platform answers under its public name, as the upstream's.
        const HttpReply renamed =
            s.f->client().get("/v1/social-media/data/x/web/fetch_tweet_detail?tweet_id=42", s.key);
        QVERIFY2(renamed.status == 200, renamed.body.constData());
        QCOMPARE(renamed.json()
                     .value("data")
                     .toObject()
                     .value("echo")
                     .toObject()
                     .value("path")
                     .toString(),
                 QStringLiteral("/api/v1/twitter/web/fetch_tweet_detail"));
    }

    void refusedBeforeUpstream_data() { addBackendRows(); }
    void refusedBeforeUpstream()
    {
        SOCIAL_SET_UP(s);
        const qint64 before = balance(*s.f);
        const qint64 upstreamBefore = upstreamRequests(s.fake);
        const QByteArray invalid = errorBody("Invalid path", "invalid_request_error");
        struct Case
        {
            QByteArray target;
            int status;
            QByteArray body;
        };
        const QList<Case> cases = {
            {"/v1/social-media/data/douyin/app/v3/no_such_action", 400, invalid},
            {"/v1/social-media/data/Douyin/app/v3/fetch_one_video?aweme_id=1", 400, invalid},
            {"/v1/social-media/data/douyin", 400, invalid},
            {"/v1/social-media/data/douyin//app/v3/fetch_one_video?aweme_id=1", 400, invalid},
            {"/v1/social-media/data/nowhere/web/x", 400, invalid},
            {"/v1/social-media/data/douyin/app/v3/fetch_one_video/?aweme_id=1", 400, invalid},
            {"/v1/social-media/data/bilibili/web/fetch_one_video?bv_id=BV1", 403,
             errorBody("Platform \"bilibili\" is not available", "invalid_request_error")},
            {"/v1/social-media/data/twitter/web/fetch_tweet_detail?tweet_id=1", 403,
             errorBody("Platform \"twitter\" is not available", "invalid_request_error")},
            {"/v1/social-media/data/tikhub/user/get_user_info", 403,
             errorBody("Platform \"tikhub\" is not available", "invalid_request_error")},
            {"/v1/social-media/data/douyin/app/v3/fetch_one_video", 400,
             errorBody("Missing required query parameter: aweme_id", "invalid_request_error")},
            {"/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_idx=1", 400,
             errorBody("Missing required query parameter: aweme_id", "invalid_request_error")},
        };
        for (const Case &c : cases) {
            const HttpReply r = s.f->client().get(c.target, s.key);
            QVERIFY2(r.status == c.status, c.target.constData());
            QVERIFY2(r.body == c.body, (c.target + " " + r.body).constData());
        }
        // No key, a bad key: 401 in the same envelope.
        const HttpReply anon =
            s.f->client().get("/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1");
        QCOMPARE(anon.status, 401);
        QVERIFY(anon.json().value("error").toObject().contains("type"));
        QVERIFY(!anon.json().value("error").toObject().contains("code"));
        QCOMPARE(
            s.f->client()
                .get("/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1", "sk-wrong")
                .status,
            401);
        // A control token is not an API key.
        QCOMPARE(s.f->client()
                     .get("/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1", s.token)
                     .status,
                 401);
        QCOMPARE(balance(*s.f), before);
        QCOMPARE(upstreamRequests(s.fake), upstreamBefore);
    }

    void upstreamFailures_data() { addBackendRows(); }
    void upstreamFailures()
    {
        SOCIAL_SET_UP(s);
        const qint64 before = balance(*s.f);
        const QByteArray action = "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1";
        // The upstream's own errors and failed envelopes come back as they are, unbilled.
        for (const char *fault : {"400", "404", "429", "500", "503"}) {
            const HttpReply r = s.f->client().get(action + "&x-fake-fault=" + fault, s.key);
            QCOMPARE(r.status, QByteArray(fault).toInt());
            QVERIFY2(r.body.contains("detail"), r.body.constData());
        }
        const HttpReply code = s.f->client().get(action + "&x-fake-code=500", s.key);
        QCOMPARE(code.status, 200);
        QVERIFY(code.body.startsWith("{\"code\":500"));
        const HttpReply reset = s.f->client().get(action + "&x-fake-fault=reset", s.key);
        QCOMPARE(reset.status, 503);
        QCOMPARE(reset.body, errorBody("Failed to reach upstream service", "server_error"));
        // Broken after the answer started: the client's answer is cut, never ended cleanly.
        const HttpReply cut = s.f->client().get(action + "&x-fake-fault=reset-mid-body", s.key);
        QCOMPARE(cut.status, 200);
        QVERIFY(!cut.ok);
        QVERIFY(QJsonDocument::fromJson(cut.body).isNull());
        QCOMPARE(balance(*s.f), before);

        // A slow answer still relays and bills.
        const HttpReply slow =
            s.f->client().get(action + "&x-fake-pieces=5&x-fake-interval-ms=100", s.key);
        QVERIFY2(slow.status == 200, slow.body.constData());
        QVERIFY(QJsonDocument::fromJson(slow.body).isObject());
        QCOMPARE(before - balance(*s.f), kPrice);
    }

    void timeoutAndUnreachable_data() { addBackendRows(); }
    void timeoutAndUnreachable()
    {
        FakeUpstreamProcess fake;
        QVERIFY(startFake(fake));
        SY_START_SERVER(f, settingsFor(fake.url(), 1500));
        const QByteArray key = f.createKey();
        const QByteArray token = f.createToken({"social:read"});
        f.grant(1000000000);
        QVERIFY(waitForCatalog(f, token, QStringLiteral("upstream")));
        const qint64 before = balance(f);
        const HttpReply hang = f.client().get(
            "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1&x-fake-fault=hang",
            key);
        QCOMPARE(hang.status, 504);
        QCOMPARE(hang.body, errorBody("Upstream request timed out", "server_error"));
        // The same database, the upstream gone: the catalog is served from the database.
        f.restart(settingsFor(QStringLiteral("http://127.0.0.1:%1").arg(closedPort())));
        QVERIFY(waitForCatalog(f, token, QStringLiteral("database")));
        // The catalog is loaded before the keeper's thread starts its refresh: wait for that.
        QJsonObject status;
        QTRY_VERIFY_WITH_TIMEOUT(
            (status = catalogStatus(f, token), !status.value("last_error").toString().isEmpty() ||
                                                   status.value("refreshing").toBool()),
            10'000);
        QCOMPARE(status.value("actions").toInt(), 1010);
        const HttpReply down =
            f.client().get("/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1", key);
        QCOMPARE(down.status, 503);
        QCOMPARE(down.body, errorBody("Failed to reach upstream service", "server_error"));
        // The catalog still judges paths.
        QCOMPARE(f.client().get("/v1/social-media/data/douyin/app/v3/nope", key).status, 400);
        QCOMPARE(balance(f), before);
    }

    void priceHeldBeforeUpstream_data() { addBackendRows(); }
    void priceHeldBeforeUpstream()
    {
        // The price is held before the relay, a cache hit and a video extraction: one unit
        // short, each is a 402 in the social envelope, the upstream never asked, nothing
        // charged.
        SOCIAL_SET_UP(s,
                      withSocial({{"cache", QJsonObject{{"enabled", true}, {"bill_hits", true}}}}),
                      kPrice);
        const QByteArray action = "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=9";
        const QByteArray extract = extractTarget(kDouyinVideo);
        // Exactly the price: the first answer is relayed (and kept), the balance is then zero.
        QCOMPARE(s.f->client().get(action, s.key).status, 200);
        QCOMPARE(balance(*s.f), qint64(0));
        s.f->grant(kPrice - 1);
        const qint64 upstream = upstreamRequests(s.fake);
        for (const QByteArray &target :
             {action, QByteArray(action + "&other=1"), extract,
              QByteArray("/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=10")}) {
            const HttpReply r = s.f->client().get(target, s.key);
            QVERIFY2(r.status == 402, (target + " " + r.body).constData());
            QVERIFY(r.json().value("error").toObject().contains("message"));
            QVERIFY(r.header("x-switchyard-cache").isEmpty());
        }
        QCOMPARE(upstreamRequests(s.fake), upstream);
        QCOMPARE(balance(*s.f), kPrice - 1);
        // One unit more: the cache hit is served and billed.
        s.f->grant(1);
        const HttpReply hit = s.f->client().get(action, s.key);
        QCOMPARE(hit.header("x-switchyard-cache"), QByteArray("hit"));
        QCOMPARE(balance(*s.f), qint64(0));
        QCOMPARE(upstreamRequests(s.fake), upstream);
    }

    // A key's rules refuse before the relay and the extractor (server/README.md, "Adding a
    // service family"): a used-up budget 402, expiry 401, the upstream
    // never asked and nothing charged; within the budget the price counts in it.
    void keyRulesBeforeUpstream_data() { addBackendRows(); }
    void keyRulesBeforeUpstream()
    {
        SOCIAL_SET_UP(s);
        Store &store = s.f->store();
        const qint64 account = store.defaultAccountId();
        KeyRules tight;
        tight.budget = KeyRules::Budget{kPrice, KeyRules::Period::Day};
        const QByteArray budgeted =
            store
                .createApiKey(account, QStringLiteral("budgeted"), QStringLiteral("default"), tight)
                .secret.toLatin1();
        KeyRules old;
        old.expires = QDateTime::currentDateTimeUtc().addSecs(-60);
        const QByteArray expired =
            store.createApiKey(account, QStringLiteral("expired"), QStringLiteral("default"), old)
                .secret.toLatin1();
        const QByteArray action = "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=5";
        const qint64 before = balance(*s.f);
        QCOMPARE(s.f->client().get(action, budgeted).status, 200); // exactly the budget
        QCOMPARE(before - balance(*s.f), kPrice);
        const qint64 upstream = upstreamRequests(s.fake);
        for (const QByteArray &target :
             {QByteArray(action + "&again=1"), extractTarget(kDouyinVideo)}) {
            HttpReply r = s.f->client().get(target, budgeted);
            QVERIFY2(r.status == 402, (target + " " + r.body).constData());
            // The social envelope has no code field: the message says which rule refused.
            QVERIFY2(r.errorMessage().contains(QLatin1String("budget of")), r.body.constData());
            r = s.f->client().get(target, expired);
            QVERIFY2(r.status == 401, (target + " " + r.body).constData());
            QVERIFY2(r.errorMessage().contains(QLatin1String("expired")), r.body.constData());
        }
        QCOMPARE(upstreamRequests(s.fake), upstream);
        QCOMPARE(before - balance(*s.f), kPrice);
    }

    void clientLeavesMidAnswer_data() { addBackendRows(); }
    void clientLeavesMidAnswer()
    {
        // The answer comes in five pieces 400 ms apart; the client reads the first and leaves.
        // A success envelope (its code seen in that piece) is billed once, recorded as 499; a
        // failed one (code 500) is not.
        SOCIAL_SET_UP(s);
        const QByteArray slow =
            kVideoAction.toUtf8() + "?aweme_id=1&x-fake-pieces=5&x-fake-interval-ms=400";
        qint64 before = balance(*s.f);
        QByteArray seen = leaveAfter(*s.f, slow, s.key, "{\"code\":200,");
        QVERIFY2(seen.startsWith("HTTP/1.1 200"), seen.constData());
        QCOMPARE(usageOf(*s.f, kVideoAction, 1), (UsageRows{{kPrice, 499}}));
        QCOMPARE(before - balance(*s.f), kPrice);

        before = balance(*s.f);
        seen = leaveAfter(*s.f, slow + "&x-fake-code=500", s.key, "{\"code\":500,");
        QVERIFY2(seen.startsWith("HTTP/1.1 200"), seen.constData());
        QCOMPARE(usageOf(*s.f, kVideoAction, 2), (UsageRows{{kPrice, 499}, {0, 499}}));
        QCOMPARE(balance(*s.f), before);
    }

    void clientLeavesBeforeAnswer_data() { addBackendRows(); }
    void clientLeavesBeforeAnswer()
    {
        // The upstream takes two seconds to answer; the client leaves first: nothing of the
        // answer reached it, so nothing is billed, and the upstream call is dropped.
        SOCIAL_SET_UP(s);
        const qint64 before = balance(*s.f);
        {
            HttpClient c = s.f->client();
            QVERIFY(sendGet(
                c, kVideoAction.toUtf8() + "?aweme_id=1&x-fake-fault=slow-first-byte:2000", s.key));
            QTest::qWait(300);
            QCOMPARE(c.socket().bytesAvailable(), qint64(0));
            c.socket().abort();
        }
        QCOMPARE(usageOf(*s.f, kVideoAction, 1), (UsageRows{{0, 499}}));
        QTest::qWait(2500); // past the upstream's answer: still nothing billed
        QCOMPARE(balance(*s.f), before);
        QCOMPARE(usageOf(*s.f, kVideoAction, 1).size(), 1);
    }

    void clientLeavesAfterHandedOn_data() { addBackendRows(); }
    void clientLeavesAfterHandedOn()
    {
        // The whole answer (200 KB) has been written to the connection: billed then, before
        // its last chunk leaves, though the client has read none of it; its leaving afterwards
        // changes nothing. One charge, one usage row, status 200.
        SOCIAL_SET_UP(s);
        const qint64 before = balance(*s.f);
        {
            HttpClient c = s.f->client();
            c.socket().setReadBufferSize(1); // reads (almost) nothing
            QVERIFY(sendGet(c, kVideoAction.toUtf8() + "?aweme_id=1&x-fake-bytes=200000", s.key));
            QTRY_COMPARE_WITH_TIMEOUT(before - balance(*s.f), kPrice, 10'000);
            QVERIFY(c.socket().bytesAvailable() <= 1);
            c.socket().abort();
        }
        QCOMPARE(usageOf(*s.f, kVideoAction, 1), (UsageRows{{kPrice, 200}}));
        QTest::qWait(300);
        QCOMPARE(before - balance(*s.f), kPrice);
        QCOMPARE(usageOf(*s.f, kVideoAction, 1).size(), 1);
    }

    void bigAnswer()
    {
        Setup s;
        QVERIFY(setUp(s, QStringLiteral("sqlite")));
        ServerFixture &f = *s.f;
        const QByteArray key = s.key;
        const qint64 before = balance(f);
        const HttpReply r = f.client().get(
            "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1&x-fake-bytes=20000000",
            key);
        QVERIFY(r.ok);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.size(), 20000000);
        QVERIFY(QJsonDocument::fromJson(r.body).isObject());
        QCOMPARE(before - balance(f), kPrice);
    }

    void postAction()
    {
        Setup s;
        QVERIFY(setUp(s, QStringLiteral("sqlite")));
        ServerFixture &f = *s.f;
        const QByteArray key = s.key;
        // The first POST action of the catalog with a JSON body.
        const QByteArray doc = QJsonDocument(f.client().get("/openapi.json").json()).toJson();
        const QJsonObject paths = QJsonDocument::fromJson(doc).object().value("paths").toObject();
        QString post;
        for (auto it = paths.begin(); it != paths.end() && post.isEmpty(); ++it) {
            const QJsonObject op = it.value().toObject().value("post").toObject();
            if (!op.isEmpty() &&
                op.value("requestBody")
                    .toObject()
                    .value("content")
                    .toObject()
                    .contains("application/json") &&
                !op.value("parameters").toArray().size())
                post = it.key();
        }
        QVERIFY2(!post.isEmpty(), "no POST action with a JSON body and no parameters");
        const QByteArray body = "{\"a\": [1, 2, \"\xe4\xb8\xad\"]}";
        const HttpReply r = f.client().postJson(post.toUtf8(), body, key);
        QVERIFY2(r.status == 200, r.body.constData());
        const QJsonObject echo = r.json().value("data").toObject().value("echo").toObject();
        QCOMPARE(echo.value("method").toString(), QStringLiteral("POST"));
        QCOMPARE(echo.value("body").toString().toUtf8(), body);
        QCOMPARE(echo.value("content_type").toString(), QStringLiteral("application/json"));
        // GET on a POST action, and a body that is not JSON.
        const HttpReply wrongMethod = f.client().get(post.toUtf8(), key);
        QCOMPARE(wrongMethod.status, 405);
        QCOMPARE(wrongMethod.header("allow"), QByteArray("POST"));
        QCOMPARE(f.client().postJson(post.toUtf8(), "{not json", key).status, 400);
        // A body type the action does not declare: 415, naming what it takes.
        const HttpReply text =
            f.client().request("POST", post.toUtf8(),
                               {qMakePair(QByteArray("Authorization"), "Bearer " + key),
                                qMakePair(QByteArray("Content-Type"), QByteArray("text/plain"))},
                               "hello");
        QVERIFY2(text.status == 415, text.body.constData());
        QVERIFY(text.json().value("error").toObject().value("message").toString().contains(
            QLatin1String("application/json")));
        // The catalog's one multipart action: the upload goes upstream with its boundary.
        const QByteArray multipart = "--b0undary\r\nContent-Disposition: form-data; name=\"file\"; "
                                     "filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n"
                                     "PNG-bytes\r\n--b0undary--\r\n";
        const HttpReply upload =
            f.client().request("POST", "/v1/social-media/data/sora2/upload_image",
                               {qMakePair(QByteArray("Authorization"), "Bearer " + key),
                                qMakePair(QByteArray("Content-Type"),
                                          QByteArray("multipart/form-data; boundary=b0undary"))},
                               multipart);
        QVERIFY2(upload.status == 200, upload.body.constData());
        const QJsonObject sent = upload.json().value("data").toObject().value("echo").toObject();
        QCOMPARE(sent.value("content_type").toString(),
                 QStringLiteral("multipart/form-data; boundary=b0undary"));
        QCOMPARE(sent.value("body").toString(), QString::fromUtf8(multipart));
    }

    void openApiDocument()
    {
        Setup s;
        QVERIFY(setUp(s, QStringLiteral("sqlite")));
        ServerFixture &f = *s.f;
        // Public, the enabled platforms only, under their public names, this server's URL.
        const HttpReply r = f.client().get("/openapi.json");
        QCOMPARE(r.status, 200);
        const QJsonObject doc = r.json();
        QVERIFY(doc.value("openapi").toString().startsWith("3.1"));
        const QJsonObject paths = doc.value("paths").toObject();
        QVERIFY(paths.contains("/v1/social-media/data/douyin/app/v3/fetch_one_video"));
        QVERIFY(paths.contains("/v1/social-media/data/x/web/fetch_tweet_detail"));
        for (auto it = paths.begin(); it != paths.end(); ++it) {
            QVERIFY2(!it.key().startsWith("/v1/social-media/data/bilibili/"), qPrintable(it.key()));
            QVERIFY2(!it.key().startsWith("/v1/social-media/data/twitter/"), qPrintable(it.key()));
            QVERIFY2(!it.key().startsWith("/v1/social-media/data/tikhub/"), qPrintable(it.key()));
        }
        QCOMPARE(doc.value("servers").toArray().at(0).toObject().value("url").toString(),
                 QStringLiteral("http://127.0.0.1:%1").arg(f.port()));
        const QJsonArray params = paths.value("/v1/social-media/data/douyin/app/v3/fetch_one_video")
                                      .toObject()
                                      .value("get")
                                      .toObject()
                                      .value("parameters")
                                      .toArray();
        bool required = false;
        for (const QJsonValue &p : params)
            required = required || (p.toObject().value("name") == QLatin1String("aweme_id") &&
                                    p.toObject().value("required").toBool());
        QVERIFY(required);
    }

    void controlApi()
    {
        Setup s;
        QVERIFY(setUp(s, QStringLiteral("sqlite")));
        ServerFixture &f = *s.f;
        FakeUpstreamProcess &fake = s.fake;
        const QByteArray reader = f.createToken({"social:read"});
        const QByteArray writer = f.createToken({"social:write"});
        const QByteArray key = s.key;
        const QJsonObject status = catalogStatus(f, reader);
        QCOMPARE(status.value("actions").toInt(), 1010);
        bool sawRenamed = false;
        for (const QJsonValue &v : status.value("platforms").toArray()) {
            const QJsonObject p = v.toObject();
            if (p.value("name") == QLatin1String("twitter")) {
                QCOMPARE(p.value("public_name").toString(), QStringLiteral("x"));
                sawRenamed = true;
            }
            if (p.value("name") == QLatin1String("bilibili"))
                QCOMPARE(p.value("enabled").toBool(), false);
        }
        QVERIFY(sawRenamed);
        // Scopes: read cannot refresh, write can; an API key is no control token.
        QCOMPARE(f.client()
                     .request("POST", "/api/v1/social/catalog/refresh",
                              {qMakePair(QByteArray("Authorization"), "Bearer " + reader)})
                     .status,
                 403);
        QCOMPARE(f.client().get("/api/v1/social/catalog", key).status, 401);
        const qint64 requestsBefore = upstreamRequests(fake);
        const HttpReply refreshed =
            f.client().request("POST", "/api/v1/social/catalog/refresh",
                               {qMakePair(QByteArray("Authorization"), "Bearer " + writer)});
        QVERIFY2(refreshed.status == 200, refreshed.body.constData());
        QCOMPARE(refreshed.json().value("actions").toInt(), 1010);
        QCOMPARE(upstreamRequests(fake), requestsBefore + 1);
    }

    // The optional response cache: identical GETs within the TTL answered from memory with
    // X-Switchyard-Cache: hit, billed per bill_hits; failures and uncached platforms not kept.
    void responseCache_data()
    {
        QTest::addColumn<bool>("billHits");
        QTest::newRow("hits billed") << true;
        QTest::newRow("hits free") << false;
    }
    void responseCache()
    {
        QFETCH(bool, billHits);
        Setup s;
        QVERIFY(
            setUp(s, QStringLiteral("sqlite"),
                  withSocial({{"cache", QJsonObject{{"enabled", true},
                                                    {"ttl_s", 60},
                                                    {"bill_hits", billHits},
                                                    {"platforms", QJsonObject{{"tiktok", 0}}}}}})));
        ServerFixture &f = *s.f;
        FakeUpstreamProcess &fake = s.fake;
        const QByteArray key = s.key;
        const QByteArray action = "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=5";

        qint64 before = balance(f);
        const HttpReply first = f.client().get(action, key);
        QCOMPARE(first.status, 200);
        QCOMPARE(first.header("x-switchyard-cache"), QByteArray("miss"));
        QCOMPARE(before - balance(f), kPrice);
        const qint64 upstream = upstreamRequests(fake);
        before = balance(f);
        const HttpReply second = f.client().get(action, key);
        QCOMPARE(second.status, 200);
        QCOMPARE(second.header("x-switchyard-cache"), QByteArray("hit"));
        QCOMPARE(second.body, first.body);
        QCOMPARE(second.header("content-type"), first.header("content-type"));
        QCOMPARE(upstreamRequests(fake), upstream);
        QCOMPARE(before - balance(f), billHits ? kPrice : 0);

        // Another query (even the same parameters in another order) is another request.
        QCOMPARE(f.client().get(action + "&a=1", key).header("x-switchyard-cache"), "miss");
        QCOMPARE(f.client().get(action + "&a=1", key).header("x-switchyard-cache"), "hit");
        QCOMPARE(f.client()
                     .get("/v1/social-media/data/douyin/app/v3/fetch_one_video?a=1&aweme_id=5", key)
                     .header("x-switchyard-cache"),
                 "miss");
        // A failed envelope is relayed each time, never kept, never billed.
        before = balance(f);
        for (int i = 0; i < 2; ++i) {
            const HttpReply failed = f.client().get(action + "&x-fake-code=500", key);
            QCOMPARE(failed.status, 200);
            QCOMPARE(failed.header("x-switchyard-cache"), QByteArray("miss"));
        }
        QCOMPARE(balance(f), before);
        // A platform with a TTL of 0 is not cached at all.
        const QByteArray tiktok = "/v1/social-media/data/tiktok/app/v3/fetch_one_video?aweme_id=5";
        QCOMPARE(f.client().get(tiktok, key).status, 200);
        const HttpReply again = f.client().get(tiktok, key);
        QCOMPARE(again.status, 200);
        QVERIFY(again.header("x-switchyard-cache").isEmpty());
        // Envelope code 0 is success too: billed (and cached).
        before = balance(f);
        QCOMPARE(f.client().get(action + "&x-fake-code=0", key).status, 200);
        QCOMPARE(before - balance(f), kPrice);
    }

    // On PostgreSQL the instances share the response cache: an answer one kept is a hit on
    // another, whose own cache is empty (here the same database after a restart, which is a new
    // instance); on SQLite the restarted server starts empty and relays again.
    void responseCacheShared_data() { addBackendRows(); }
    void responseCacheShared()
    {
        const Adjust cached =
            withSocial({{"cache", QJsonObject{{"enabled", true}, {"ttl_s", 60}}}});
        SOCIAL_SET_UP(s, cached);
        ServerFixture &f = *s.f;
        const QByteArray action = "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=7";
        const HttpReply first = f.client().get(action, s.key);
        QCOMPARE(first.status, 200);
        QCOMPARE(first.header("x-switchyard-cache"), QByteArray("miss"));
        // The shared copy is written on a reader's connection after the answer: wait for it.
        const bool pg = backend == QLatin1String("postgres");
        if (pg)
            QTRY_VERIFY_WITH_TIMEOUT(
                [&] {
                    QSqlQuery q(f.store().database());
                    return q.exec(QStringLiteral("SELECT COUNT(*) FROM social_responses")) &&
                           q.next() && q.value(0).toInt() == 1;
                }(),
                5000);
        ServerSettings settings = settingsFor(s.fake.url());
        cached(settings, s.fake);
        f.restart(settings);
        QVERIFY(waitForCatalog(f, s.token, QStringLiteral("upstream")));
        const qint64 upstream = upstreamRequests(s.fake);
        const qint64 before = balance(f);
        const HttpReply again = f.client().get(action, s.key);
        QCOMPARE(again.status, 200);
        QCOMPARE(again.header("x-switchyard-cache"), pg ? QByteArray("hit") : QByteArray("miss"));
        if (pg) // the stored bytes; a relay has the upstream's new request id
            QCOMPARE(again.body, first.body);
        QCOMPARE(upstreamRequests(s.fake), pg ? upstream : upstream + 1);
        QCOMPARE(before - balance(f), kPrice); // a hit is billed (bill_hits defaults to true)
        // And now this instance's own cache has it too.
        QCOMPARE(f.client().get(action, s.key).header("x-switchyard-cache"), QByteArray("hit"));
    }

    // The social rate-limit bucket: its own limit, in the social envelope, unbilled.
    void socialBucket()
    {
        Setup s;
        QVERIFY(setUp(s, QStringLiteral("sqlite"), [](ServerSettings &settings, auto &) {
            settings.tiers[QStringLiteral("default")].perMinute.insert(QStringLiteral("social"), 2);
        }));
        ServerFixture &f = *s.f;
        const QByteArray key = s.key;
        const QByteArray token = s.token;
        const QByteArray action = "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1";
        QCOMPARE(f.client().get(action, key).status, 200);
        QCOMPARE(f.client()
                     .get("/v1/social-media/video/"
                          "extract?url=https%3A%2F%2Fwww.douyin.com%2Fvideo%2F7448118827402972455",
                          key)
                     .status,
                 200);
        const qint64 before = balance(f);
        const HttpReply limited = f.client().get(action, key);
        QCOMPARE(limited.status, 429);
        const QJsonObject error = limited.json().value("error").toObject();
        QVERIFY(!error.value("message").toString().isEmpty());
        QVERIFY(!error.value("type").toString().isEmpty());
        QVERIFY(!limited.header("retry-after").isEmpty());
        QCOMPARE(balance(f), before);
        // Other buckets are not touched: the catalog's control route still answers.
        QCOMPARE(f.client().get("/api/v1/social/catalog", token).status, 200);
    }

    // GET /v1/social-media/video/extract: the standardized answer, billed once; the errors.
    void extract_data() { addBackendRows(); }
    void extract()
    {
        SOCIAL_SET_UP(s);
        auto extract = [&](const QString &url) {
            return s.f->client().get(extractTarget(url), s.key);
        };
        qint64 before = balance(*s.f);
        const HttpReply r = extract(kDouyinVideo);
        QVERIFY2(r.status == 200, r.body.constData());
        const QJsonObject v = r.json();
        QCOMPARE(v.value("platform").toString(), QStringLiteral("douyin"));
        QCOMPARE(v.value("videoId").toString(), QStringLiteral("7448118827402972455"));
        for (const char *field :
             {"title", "author", "authorId", "coverUrl", "duration", "videos", "audios"})
            QVERIFY2(v.contains(field), field);
        QVERIFY(!v.value("videos").toArray().isEmpty());
        const QJsonObject best = v.value("videos").toArray().first().toObject();
        for (const char *field : {"url", "quality", "format", "width", "height", "size"})
            QVERIFY2(best.contains(field), field);
        QCOMPARE(before - balance(*s.f), kPrice);
        QSqlQuery q(s.f->store().database());
        QVERIFY(q.exec("SELECT model, cost FROM usage_records WHERE endpoint = "
                       "'/v1/social-media/video/extract'"));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toString(), QStringLiteral("extract"));
        QCOMPARE(q.value(1).toLongLong(), kPrice);

        // Refusals before any upstream call, unbilled.
        before = balance(*s.f);
        const qint64 upstream = upstreamRequests(s.fake);
        const HttpReply none = s.f->client().get("/v1/social-media/video/extract", s.key);
        QCOMPARE(none.status, 400);
        QCOMPARE(none.body,
                 errorBody("Missing required query parameter: url", "invalid_request_error"));
        const HttpReply unsupported = extract(QStringLiteral("https://example.com/watch?v=1"));
        QCOMPARE(unsupported.status, 400);
        const QString message =
            unsupported.json().value("error").toObject().value("message").toString();
        for (const char *host :
             {"youtube.com", "tiktok.com", "douyin.com", "x.com", "bilibili.com", "instagram.com",
              "kuaishou.com", "xiaohongshu.com", "weibo.com", "youtu.be", "b23.tv"})
            QVERIFY2(message.contains(QLatin1String(host)), qPrintable(message));
        const HttpReply disabled =
            extract(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT"));
        QCOMPARE(disabled.status, 403);
        QCOMPARE(disabled.body,
                 errorBody("Platform \"bilibili\" is not available", "invalid_request_error"));
        // HEAD on the billed GETs (the answer is its head alone, so read raw), refused by the
        // routes before the credential is even looked at.
        const auto headOf = [&](const QByteArray &target, const QByteArray &key) {
            HttpClient c = s.f->client();
            return sendHead(c, "HEAD", target, key) ? readUntil(c, "\r\n\r\n", 5'000)
                                                    : QByteArray();
        };
        const QByteArray dataTarget =
            "/v1/social-media/data/douyin/app/v3/fetch_one_video?aweme_id=1";
        for (const QByteArray &key : {s.key, QByteArray()})
            for (const auto &[target, allow] :
                 {std::pair{extractTarget(kDouyinVideo), QByteArray("GET")},
                  std::pair{dataTarget, QByteArray("GET, POST")}}) {
                const QByteArray head = headOf(target, key);
                QVERIFY2(head.startsWith("HTTP/1.1 405"), head.constData());
                QVERIFY2(head.contains("\r\nAllow: " + allow + "\r\n"), head.constData());
            }
        QCOMPARE(upstreamRequests(s.fake), upstream);
        // An answer without a video (the fake's ids starting with 404): 502, unbilled.
        const HttpReply empty =
            extract(QStringLiteral("https://www.douyin.com/video/4040000000001"));
        QCOMPARE(empty.status, 502);
        QVERIFY(empty.json().value("error").toObject().contains("message"));
        QCOMPARE(balance(*s.f), before);
    }

    // Short links only Switchyard can resolve go through the outbound URL guard, one hop at a
    // time: refused where the guard refuses, followed where the operator allows it.
    void extractShortLink()
    {
        // A link of the fake's shortener, whose host and port the operator declared a short-link
        // host, redirecting to `to`.
        const auto linkTo = [](const FakeUpstreamProcess &fake, const QString &to) {
            const QString link = fake.url() + QStringLiteral("/fake/redirect?to=") +
                                 QString::fromLatin1(QUrl::toPercentEncoding(to));
            return extractTarget(link);
        };
        const auto shortLinks = [](const QJsonObject &fetch) -> Adjust {
            return [fetch](ServerSettings &settings, const FakeUpstreamProcess &fake) {
                withSocial(
                    {{"extract",
                      QJsonObject{{"short_link_hosts",
                                   QJsonArray{QStringLiteral("127.0.0.1:%1").arg(fake.port())}},
                                  {"fetch", fetch}}}})(settings, fake);
            };
        };
        {
            // By default the guard refuses http and loopback: nothing is fetched.
            Setup s;
            QVERIFY(setUp(s, QStringLiteral("sqlite"), shortLinks({})));
            const qint64 before = balance(*s.f);
            const HttpReply refused = s.f->client().get(linkTo(s.fake, kDouyinVideo), s.key);
            QCOMPARE(refused.status, 400);
            const QString message =
                refused.json().value("error").toObject().value("message").toString();
            QVERIFY2(message.contains(QLatin1String("could not be resolved")), qPrintable(message));
            QCOMPARE(balance(*s.f), before);
        }
        Setup s;
        QVERIFY(
            setUp(s, QStringLiteral("sqlite"),
                  shortLinks({{"allow_http", true}, {"allow_cidrs", QJsonArray{"127.0.0.0/8"}}})));
        qint64 before = balance(*s.f);
        const HttpReply resolved = s.f->client().get(linkTo(s.fake, kDouyinVideo), s.key);
        QVERIFY2(resolved.status == 200, resolved.body.constData());
        QCOMPARE(resolved.json().value("platform").toString(), QStringLiteral("douyin"));
        QCOMPARE(before - balance(*s.f), kPrice);
        // A link that leads somewhere unsupported, or to a disabled platform.
        before = balance(*s.f);
        const auto via = [&](const QString &to) {
            return s.f->client().get(linkTo(s.fake, to), s.key);
        };
        QCOMPARE(via(QStringLiteral("http://169.254.169.254/latest/meta-data/")).status, 400);
        QCOMPARE(via(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT")).status, 403);
        QCOMPARE(balance(*s.f), before);
    }
};

QTEST_GUILESS_MAIN(TestSocialHttp)
#include "tst_social_http.moc"
