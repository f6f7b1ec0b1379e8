#include "DbWorker.h"
#include "MessagesEnvelope.h"
#include "Pipeline.h"
#include "ServerFixture.h"
#include "SocialFamily.h"

#include <atomic>
#include <QDeadlineTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSqlError>
#include <QSqlQuery>
#include <QTest>
#include <QThread>
#include <QTimer>

namespace {

std::atomic<int> g_handlerRuns{0};

// A billed route family for the tests: reserves 1000 units, charges the "cost" it is sent,
// answers after "delay_ms", or streams when "stream" is true. It exercises pipeline steps 3 to 7
// the way real families will. "meters" (an object of names and integers) sets its meters.
void installBilledRoute(Pipeline &p)
{
    RouteSpec r;
    r.method = "POST";
    r.pattern = QStringLiteral("/v1/test/bill");
    r.family = QStringLiteral("test");
    r.auth = AuthMode::ApiKey;
    r.bucket = QStringLiteral("chat");
    r.reservation = 1000;
    r.handler = [](const ContextPtr &ctx) {
        ++g_handlerRuns;
        const auto body = ctx->jsonBody();
        if (!body)
            return;
        ctx->usage().model = QStringLiteral("test-model");
        ctx->usage().inputTokens = body->value("tokens").toInt();
        ctx->usage().cost = body->value("cost").toInteger();
        const QJsonObject meters = body->value("meters").toObject();
        for (auto m = meters.begin(); m != meters.end(); ++m)
            ctx->usage().setMeter(m.key(), m.value().toInteger());
        if (body->value("stream").toBool()) { // one event, then the end once settled
            ctx->startStream(200);
            ctx->writeStream("data: {\"n\":1}\n\n");
            ctx->finishStream("data: [DONE]\n\n");
            return;
        }
        // Never answered: the handler lets go of the request, here or on another thread, as a
        // family does when its client leaves.
        if (const QString drop = body->value("drop").toString(); drop == u"here") {
            return;
        } else if (drop == u"thread") {
            QThread *t = QThread::create([held = ctx]() mutable {
                QThread::msleep(100); // the server thread lets go of its references first
                held.reset();
            });
            QObject::connect(t, &QThread::finished, t, &QObject::deleteLater);
            t->start();
            return;
        }
        const int delay = body->value("delay_ms").toInt();
        if (body->value("watch_late").toBool()) {
            // Watches for the client leaving only after the delay, as a family does that
            // starts its upstream call late; its client may have left before.
            // (The watch holds the request, as a family's call object would.)
            QTimer::singleShot(delay, [ctx] {
                ctx->exchange()->onClosed([ctx] {
                    ctx->respondError(499, QStringLiteral("The client closed the request."));
                });
            });
            return;
        }
        auto answer = [ctx] { ctx->respondJson(200, QJsonObject{{"ok", true}}); };
        if (delay > 0)
            QTimer::singleShot(delay, answer);
        else
            answer();
    };
    p.addRoute(r);

    // A public stream, for HEAD: an event, then the end.
    RouteSpec stream;
    stream.method = "GET";
    stream.pattern = QStringLiteral("/v1/test/stream");
    stream.family = QStringLiteral("test");
    stream.auth = AuthMode::Public;
    stream.handler = [](const ContextPtr &ctx) {
        ctx->startStream(200);
        ctx->writeStream("data: {\"n\":1}\n\n");
        ctx->finishStream("data: [DONE]\n\n");
    };
    p.addRoute(stream);
}

// Sends a request's head alone (its body never follows) and reads until the server closes.
QByteArray headAlone(const ServerFixture &f, const QByteArray &head)
{
    HttpClient c = f.client();
    c.sendRaw(head + "\r\n");
    return c.readUntilClosed();
}

ServerSettings limitedSettings()
{
    ServerSettings s = ServerSettings::defaults();
    s.tiers[QStringLiteral("default")].perMinute.insert(QStringLiteral("control"), 5);
    s.tiers[QStringLiteral("default")].perMinute.insert(QStringLiteral("chat"), 1000);
    return s;
}

// Ends every PostgreSQL connection to the test's database but the store's own (the server's
// writer and readers, as a restart or a failover would); how many it ended, or -1.
int dropServerConnections(Store &store)
{
    QSqlQuery q(store.database());
    if (!q.exec("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
                "current_database() AND pid <> pg_backend_pid()") ||
        !q.next()) {
        qWarning("%s", qPrintable(q.lastError().text()));
        return -1;
    }
    return q.value(0).toInt();
}

// A family of the tests' own: an error envelope, a prefix and a rate-limit bucket with its
// default limit, registered as any family's are, and one route in them.
class ProbeEnvelope final : public ErrorEnvelopeWriter
{
public:
    ProbeEnvelope()
        : ErrorEnvelopeWriter({{404, "probe_404"}, {405, "probe_405"}, {429, "probe_429"}},
                              "probe_4xx", "probe_5xx")
    {
    }
    QByteArray body(const ErrorFields &e) const override
    {
        return QJsonDocument(QJsonObject{{"probe_error", QJsonObject{{"status", e.status},
                                                                     {"kind", e.type},
                                                                     {"text", e.message}}}})
            .toJson(QJsonDocument::Compact);
    }
    void addHeaders(const QByteArray &requestId, HttpHeaders *headers) const override
    {
        headers->append({"Probe-Request-Id", requestId});
    }
};

class ProbeFamily final : public ServiceFamily
{
public:
    static ErrorStyle style()
    {
        static const ProbeEnvelope envelope;
        return ErrorStyle(envelope);
    }
    QString name() const override { return QStringLiteral("probe"); }
    QList<ErrorPrefix> errorPrefixes() const override
    {
        return {{QStringLiteral("/v1/probe"), style()}};
    }
    QList<RateBucket> rateBuckets() const override { return {{QStringLiteral("probe"), 2}}; }
    QList<RouteSpec> routes(const ServerScope &) override
    {
        RouteSpec r;
        r.method = "POST";
        r.pattern = QStringLiteral("/v1/probe/echo");
        r.bucket = QStringLiteral("probe");
        r.errorStyle = style();
        r.handler = [](const ContextPtr &ctx) {
            if (ctx->jsonBody())
                ctx->respondJson(200, QJsonObject{{"family", ctx->route()->family}});
        };
        return {r};
    }
};

// A test's own family, after the build's (ServerFixture's extra families).
template <class Family> FamilyList extraFamily()
{
    FamilyList list;
    list.push_back(std::make_unique<Family>());
    return list;
}

// A family that registers a meter the billed route sets ("meters" in its body), shown by the
// usage API in thousands; it has no routes of its own.
class PagesFamily final : public ServiceFamily
{
public:
    QString name() const override { return QStringLiteral("test_pages"); }
    QList<MeterSpec> meters() const override
    {
        return {{QStringLiteral("test_pages"), QStringLiteral("Pages"),
                 QStringLiteral("test_kilopages"), 1000}};
    }
    QList<RouteSpec> routes(const ServerScope &) override { return {}; }
};

} // namespace

class TestPipeline : public QObject
{
    Q_OBJECT
private slots:
    void publicEndpoints_data() { addBackendRows(); }
    void publicEndpoints()
    {
        SY_START_SERVER(f);
        HttpClient c = f.client();
        HttpReply r = c.get("/healthz");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("status").toString(), QStringLiteral("ok"));
        QVERIFY(r.header("x-request-id").startsWith("req_"));

        r = c.get("/v1/models");
        QCOMPARE(r.status, 200);
        QSet<QString> ids;
        QString autoTarget;
        for (const QJsonValue &v : r.json().value("data").toArray()) {
            const QJsonObject m = v.toObject();
            ids.insert(m.value("id").toString());
            QVERIFY(!m.value("endpoints").toArray().isEmpty());
            // Text models are priced per token; audio ones per minute or per 1,000 characters;
            // image ones per image.
            const QJsonObject pricing = m.value("pricing").toObject();
            const QString endpoint = m.value("endpoints").toArray().at(0).toString();
            if (endpoint.startsWith(QLatin1String("audio.")))
                QVERIFY(pricing.contains("per_minute") || pricing.contains("per_1k_chars"));
            else if (endpoint.startsWith(QLatin1String("images.")))
                QVERIFY(pricing.contains("per_image"));
            else
                QVERIFY(pricing.contains("input"));
            if (m.value("id") == "auto")
                autoTarget = m.value("resolves_to").toString();
        }
        for (const char *id :
             {"auto", "vendorB-5-nano", "vendorB-5.4", "vendorB-5.4-mini", "vendorB-5.5",
              "vendorB-6-luna", "vendorB-6-sol", "vendorB-6-astra", "vendorA-fable-5",
              "vendorA-opus-4-8", "vendorA-opus-4-7", "vendorA-opus-4-6", "vendorA-sonnet-5",
              "vendorA-sonnet-4-6", "vendorA-haiku-4-5", "vendorC-v4-flash", "vendorC-v4-pro"})
            QVERIFY2(ids.contains(QLatin1String(id)), id);
        QCOMPARE(autoTarget, QStringLiteral("vendorB-6-luna"));

        r = c.get("/metrics");
        QCOMPARE(r.status, 200);
        QVERIFY(r.header("content-type").startsWith("text/plain"));
        QVERIFY(r.body.contains("switchyard_requests_total{family=\"models\",status=\"200\"} 1"));
        QVERIFY(r.body.contains("switchyard_request_duration_seconds_bucket{family=\"public\""));

        r = c.get("/v1/nothing-here");
        QCOMPARE(r.status, 404);
        QCOMPARE(r.json().value("error").toObject().value("type").toString(),
                 QStringLiteral("invalid_request_error"));
        QVERIFY(r.header("x-request-id").startsWith("req_"));
        r = c.request("DELETE", "/healthz");
        QCOMPARE(r.status, 405);
        QCOMPARE(r.header("allow"), QByteArray("GET"));
        // Errors on the messages path use that protocol's envelope.
        r = c.postJson("/v1/messages/unknown", "{}");
        QCOMPARE(r.status, 404);
        QCOMPARE(r.json().value("type").toString(), QStringLiteral("error"));
        QCOMPARE(r.json().value("error").toObject().value("type").toString(),
                 QStringLiteral("not_found_error"));
    }

    void apiKeyAuthentication_data() { addBackendRows(); }
    void apiKeyAuthentication()
    {
        SY_START_SERVER(f, ServerSettings::defaults(), installBilledRoute);
        f.grant(1'000'000'000);
        qint64 keyId = 0;
        const QByteArray key = f.createKey("auth", &keyId);
        const QByteArray token = f.createToken({"api_keys:write"});
        HttpClient c = f.client();
        const QByteArray body = R"({"cost": 1})";
        using H = QList<QPair<QByteArray, QByteArray>>;
        QCOMPARE(
            c.request("POST", "/v1/test/bill", {{"Authorization", "Bearer " + key}}, body).status,
            200);
        QCOMPARE(c.request("POST", "/v1/test/bill", {{"X-API-Key", key}}, body).status, 200);
        QCOMPARE(c.request("POST", "/v1/test/bill", {{"x-api-key", key}}, body).status, 200);
        QCOMPARE(
            c.request("POST", "/v1/test/bill", {{"authorization", "bearer " + key}}, body).status,
            200);

        struct Case
        {
            const char *name;
            H headers;
            const char *message;
        };
        const QList<Case> refused = {
            {"missing", {}, "Missing API key"},
            {"empty bearer", {{"Authorization", "Bearer "}}, "Missing API key"},
            {"other scheme", {{"Authorization", "Basic " + key}}, "Malformed API key"},
            {"malformed", {{"Authorization", "Bearer sk-short"}}, "Malformed API key"},
            {"unknown", {{"X-API-Key", "sk-" + QByteArray(43, 'A')}}, "Invalid API key"},
            {"token on /v1", {{"Authorization", "Bearer " + token}}, "Control tokens (lpc_)"},
            {"key with junk", {{"X-API-Key", key + "x"}}, "Invalid API key"},
        };
        for (const Case &k : refused) {
            const HttpReply r = c.request("POST", "/v1/test/bill", k.headers, body);
            QVERIFY2(r.status == 401, k.name);
            QVERIFY2(r.errorMessage().contains(QLatin1String(k.message)),
                     qPrintable(QString(k.name) + ": " + r.errorMessage()));
            QCOMPARE(r.json().value("error").toObject().value("type").toString(),
                     QStringLiteral("authentication_error"));
        }
        // Revoking through the control API takes effect at once.
        HttpReply r = c.request("DELETE", "/api/v1/api-keys/" + QByteArray::number(keyId),
                                {{"Authorization", "Bearer " + token}});
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("status").toString(), QStringLiteral("revoked"));
        r = c.request("POST", "/v1/test/bill", {{"Authorization", "Bearer " + key}}, body);
        QCOMPARE(r.status, 401);
        QVERIFY(r.errorMessage().contains("revoked"));
        // Last use is recorded.
        QTRY_VERIFY(f.store().apiKey(f.store().defaultAccountId(), keyId)->lastUsed.isValid());
    }

    void controlTokenAuthentication_data() { addBackendRows(); }
    void controlTokenAuthentication()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.createKey();
        const QByteArray reader = f.createToken({"credits:read"});
        qint64 revokedId = 0;
        const QByteArray revoked = f.createToken({"credits:read"}, {}, &revokedId);
        f.store().revokeControlToken(f.store().defaultAccountId(), revokedId);
        const QByteArray expired =
            f.createToken({"credits:read"}, QDateTime::currentDateTimeUtc().addSecs(-5));
        HttpClient c = f.client();
        QCOMPARE(c.get("/api/v1/credits/balance", reader).status, 200);

        HttpReply r = c.get("/api/v1/credits/balance", key);
        QCOMPARE(r.status, 401);
        QVERIFY(r.errorMessage().contains("API keys (sk-) are not accepted"));
        r = c.request("GET", "/api/v1/credits/balance", {{"X-API-Key", key}});
        QCOMPARE(r.status, 401); // an API key in any header is not a control token
        r = c.get("/api/v1/usage", reader);
        QCOMPARE(r.status, 403);
        QVERIFY(r.errorMessage().contains("usage:read"));
        QCOMPARE(r.json().value("error").toObject().value("type").toString(),
                 QStringLiteral("permission_error"));
        r = c.get("/api/v1/credits/balance", revoked);
        QCOMPARE(r.status, 401);
        QVERIFY(r.errorMessage().contains("revoked"));
        r = c.get("/api/v1/credits/balance", expired);
        QCOMPARE(r.status, 401);
        QVERIFY(r.errorMessage().contains("expired"));
        r = c.get("/api/v1/credits/balance");
        QCOMPARE(r.status, 401);
        r = c.get("/api/v1/credits/balance", "lpc_" + QByteArray(43, 'z'));
        QCOMPARE(r.status, 401);
        QVERIFY(r.errorMessage().contains("Invalid control token"));
    }

    void rateLimits_data() { addBackendRows(); }
    void rateLimits()
    {
        SY_START_SERVER(f, limitedSettings());
        const QByteArray a = f.createToken({"credits:read"});
        const QByteArray b = f.createToken({"credits:read"});
        HttpClient c = f.client();
        for (int i = 0; i < 5; ++i) {
            const HttpReply r = c.get("/api/v1/credits/balance", a);
            QCOMPARE(r.status, 200);
            QCOMPARE(r.header("x-ratelimit-limit"), QByteArray("5"));
            QCOMPARE(r.header("x-ratelimit-remaining").toInt(), 4 - i);
            QVERIFY(r.header("x-ratelimit-reset").toLongLong() >=
                    QDateTime::currentSecsSinceEpoch());
        }
        const HttpReply r = c.get("/api/v1/credits/balance", a);
        QCOMPARE(r.status, 429);
        QCOMPARE(r.json().value("error").toObject().value("type").toString(),
                 QStringLiteral("rate_limit_exceeded"));
        const int retry = r.header("retry-after").toInt();
        QVERIFY(retry >= 1 && retry <= 13); // one request refills in 12 s at 5 per minute
        QCOMPARE(r.header("x-ratelimit-remaining"), QByteArray("0"));
        // Another credential has its own bucket.
        QCOMPARE(c.get("/api/v1/credits/balance", b).status, 200);
    }

    // The limiter's time is the Pipeline's monotonic clock: a bucket refills with it alone, and
    // says how long until it is full (the Reset header adds that to the wall clock).
    void rateLimiterRefillsByItsOwnClock()
    {
        RateLimiter limiter;
        const RateLimiter::Decision first = limiter.take("k", 60, 0);
        QCOMPARE(first.remaining, 59);
        QCOMPARE(first.resetInMs, qint64(1'000));
        for (int i = 0; i < 59; ++i)
            QVERIFY(limiter.take("k", 60, 500).allowed);
        const RateLimiter::Decision refused = limiter.take("k", 60, 500);
        QVERIFY(!refused.allowed);
        QCOMPARE(refused.retryAfterSeconds, 1);
        QCOMPARE(refused.resetInMs, qint64(59'500));
        // One token a second, never more than the limit.
        QVERIFY(limiter.take("k", 60, 1'500).allowed);
        QVERIFY(!limiter.take("k", 60, 1'500).allowed);
        QCOMPARE(limiter.take("k", 60, 3'600'000).remaining, 59);
        // Another key, and the same key with another limit, start full.
        QCOMPARE(limiter.take("other", 60, 3'600'000).remaining, 59);
        QCOMPARE(limiter.take("k", 10, 3'600'000).remaining, 9);
    }

    void creditsGateAndSettlement_data() { addBackendRows(); }
    void creditsGateAndSettlement()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        qint64 keyId = 0;
        const QByteArray key = f.createKey("billing", &keyId);
        HttpClient c = f.client();
        using H = QList<QPair<QByteArray, QByteArray>>;
        const H auth{{"Authorization", "Bearer " + key}};
        const int runsBefore = g_handlerRuns;
        HttpReply r = c.request("POST", "/v1/test/bill", auth, R"({"cost": 10})");
        QCOMPARE(r.status, 402);
        QCOMPARE(r.json().value("error").toObject().value("type").toString(),
                 QStringLiteral("insufficient_credits"));
        QCOMPARE(g_handlerRuns.load(), runsBefore); // refused before any work

        f.grant(1500);
        r = c.request("POST", "/v1/test/bill", auth, R"({"cost": 123, "tokens": 7})");
        QCOMPARE(r.status, 200);
        const QString requestId = QString::fromLatin1(r.header("x-request-id"));
        // Settled before the answer: the ledger already has it.
        QCOMPARE(f.store().balance(f.store().defaultAccountId()), qint64(1500 - 123));
        const LedgerEntry e = f.store().ledger(f.store().defaultAccountId(), 1).first();
        QCOMPARE(e.kind, QStringLiteral("charge"));
        QCOMPARE(e.amount, qint64(-123));
        QCOMPARE(e.requestId, requestId);
        UsageQuery q;
        q.accountId = f.store().defaultAccountId();
        UsagePage page = f.store().usage(q);
        // Every authenticated request has its record; the refused one cost nothing.
        QCOMPARE(page.records.size(), 2);
        QCOMPARE(page.records.last().status, 402);
        QCOMPARE(page.records.last().cost, qint64(0));
        QCOMPARE(page.records.first().requestId, requestId);
        QCOMPARE(page.records.first().cost, qint64(123));
        QCOMPARE(page.records.first().inputTokens, qint64(7));
        QCOMPARE(page.records.first().keyId, keyId);
        QCOMPARE(page.records.first().model, QStringLiteral("test-model"));

        // Balance 1377 covers one 1000-unit reservation, not two at once.
        HttpClient slow = f.client();
        const QByteArray slowBody = R"({"cost": 1, "delay_ms": 400})";
        slow.send("POST", "/v1/test/bill", auth, slowBody);
        QThread::msleep(150);
        r = c.request("POST", "/v1/test/bill", auth, R"({"cost": 1})");
        QCOMPARE(r.status, 402);
        QVERIFY(r.errorMessage().contains("held by requests in progress"));
        QCOMPARE(slow.readReply().status, 200);
        QCOMPARE(c.request("POST", "/v1/test/bill", auth, R"({"cost": 1})").status, 200);

        // A failed request is not billed.
        r = c.request("POST", "/v1/test/bill", auth, "{not json");
        QCOMPARE(r.status, 400);
        QVERIFY(r.errorMessage().contains("Malformed JSON"));
        QCOMPARE(f.store().ledgerSum(f.store().defaultAccountId()),
                 f.store().balance(f.store().defaultAccountId()));
        QCOMPARE(f.store().balance(f.store().defaultAccountId()), qint64(1500 - 125));
    }

    // Every request with an accepted API key takes a settlement ticket (the writer waits for
    // those still expected, DatabaseService::expectSettlement) and gives it back however it ends:
    // billed, refused for credits, failed, or left by its client midway. One kept would make
    // every later batch wait out the gather time. (An unbilled request's record, and its
    // ticket, go to the writer just after its answer: hence QTRY.)
    void settlementTicketsComeBack_data() { addBackendRows(); }
    void settlementTicketsComeBack()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        const QByteArray key = f.createKey("tickets");
        HttpClient c = f.client();
        using H = QList<QPair<QByteArray, QByteArray>>;
        const H auth{{"Authorization", "Bearer " + key}};
        DatabaseService &db = f.service();
        QCOMPARE(c.request("POST", "/v1/test/bill", auth, R"({"cost": 10})").status, 402);
        QTRY_COMPARE_WITH_TIMEOUT(db.expectedSettlements(), 0, 5'000);
        f.grant(100'000);
        QCOMPARE(c.request("POST", "/v1/test/bill", auth, R"({"cost": 10})").status, 200);
        QCOMPARE(c.request("POST", "/v1/test/bill", auth, "{not json").status, 400);
        QCOMPARE(c.request("POST", "/v1/test/bill", {{"Authorization", "Bearer sk-wrong"}},
                           R"({"cost": 10})")
                     .status,
                 401);
        QTRY_COMPARE_WITH_TIMEOUT(db.expectedSettlements(), 0, 5'000);

        // Held while the request is in progress, back once its client has gone and it ended.
        {
            HttpClient leaving = f.client();
            const QByteArray body = R"({"cost": 1, "delay_ms": 300})";
            leaving.send("POST", "/v1/test/bill", auth, body);
            QTRY_COMPARE_WITH_TIMEOUT(db.expectedSettlements(), 1, 5'000);
            leaving.socket().abort();
        }
        QTRY_COMPARE_WITH_TIMEOUT(db.expectedSettlements(), 0, 10'000);
        QCOMPARE(c.request("POST", "/v1/test/bill", auth, R"({"cost": 1})").status, 200);
        QTRY_COMPARE_WITH_TIMEOUT(db.expectedSettlements(), 0, 5'000);
    }

    // A request its family lets go of without an answer hands its hold back, whichever thread
    // lets go last: held for good, it would refuse the account's next request.
    void unansweredRequestReleasesItsHold_data() { addBackendRows(); }
    void unansweredRequestReleasesItsHold()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        const QByteArray key = f.createKey("dropped");
        const qint64 account = f.store().defaultAccountId();
        const QList<QPair<QByteArray, QByteArray>> auth{{"Authorization", "Bearer " + key}};
        for (const char *where : {"here", "thread"}) {
            f.grant(1000); // one request's reservation, and less than two
            HttpClient dropped = f.client();
            dropped.send("POST", "/v1/test/bill", auth,
                         QByteArray(R"({"cost": 1, "drop": ")") + where + "\"}");
            QTRY_COMPARE_WITH_TIMEOUT(g_handlerRuns.load() > 0, true, 5'000);
            const auto send = [&] {
                return f.client().request("POST", "/v1/test/bill", auth, R"({"cost": 1})").status;
            };
            // Admitted on the whole balance, so a second request is refused only while the
            // first still holds it (a loop of its own: QTRY_* would send it again to report).
            int status = send();
            for (QDeadlineTimer deadline(5'000); status == 402 && !deadline.hasExpired();
                 status = send())
                QTest::qWait(20);
            QCOMPARE(status, 200);
            g_handlerRuns = 0;
        }
        QCOMPARE(f.store().balance(account), qint64(2000 - 2));
        QCOMPARE(f.store().ledgerSum(account), f.store().balance(account));
    }

    // PostgreSQL drops the server's connections (a restart, a failover) right after a request:
    // the next request's settlement fails on the dead connection and is settled again on a new
    // one, so every request is answered and charged once, without a restart.
    void databaseConnectionsLost_data() { addBackendRows(); }
    void databaseConnectionsLost()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        if (!f.store().isPostgres())
            QSKIP("SQLite has no connection to lose");
        const QByteArray key = f.createKey("reconnect");
        const qint64 account = f.store().defaultAccountId();
        f.grant(1'000'000);
        const QList<QPair<QByteArray, QByteArray>> auth{{"Authorization", "Bearer " + key}};
        QCOMPARE(f.client().request("POST", "/v1/test/bill", auth, R"({"cost": 1})").status, 200);
        QVERIFY2(dropServerConnections(f.store()) >= 2, "the server's connections not found");
        // The first settlement fails on the dead connection and is settled again on a new one.
        for (int i = 0; i < 6; ++i)
            QCOMPARE(f.client().request("POST", "/v1/test/bill", auth, R"({"cost": 1})").status,
                     200);
        QTRY_COMPARE_WITH_TIMEOUT(f.service().expectedSettlements(), 0, 5'000);
        QCOMPARE(f.store().balance(account), qint64(1'000'000 - 7));
        QCOMPARE(f.store().ledgerSum(account), f.store().balance(account));
        // A usage record alone (nothing to charge) the same way, stored once.
        // The writer's (the readers' are opened again when next used).
        QVERIFY2(dropServerConnections(f.store()) >= 1, "the server's connection not found");
        QCOMPARE(f.client().request("POST", "/v1/test/bill", auth, R"({"cost": 0})").status, 200);
        // Its answer does not wait for it: read until it is there, then a moment longer.
        QSqlQuery q(f.store().database());
        const auto records = [&q] {
            return q.exec("SELECT count(*), count(DISTINCT request_id), sum(cost) FROM "
                          "usage_records") &&
                           q.next()
                       ? QStringLiteral("%1 %2 %3")
                             .arg(q.value(0).toInt())
                             .arg(q.value(1).toInt())
                             .arg(q.value(2).toInt())
                       : q.lastError().text();
        };
        QTRY_COMPARE_WITH_TIMEOUT(records(), QStringLiteral("8 8 7"), 5'000);
        QTest::qWait(200);
        QCOMPARE(records(), QStringLiteral("8 8 7"));
    }

    // Connections dropped while the server was quiet are found by the probe before the next
    // batch: no request is refused for them.
    void databaseConnectionsLostWhileIdle_data() { addBackendRows(); }
    void databaseConnectionsLostWhileIdle()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        if (!f.store().isPostgres())
            QSKIP("SQLite has no connection to lose");
        const QByteArray key = f.createKey("idle");
        const qint64 account = f.store().defaultAccountId();
        f.grant(1'000'000);
        const QList<QPair<QByteArray, QByteArray>> auth{{"Authorization", "Bearer " + key}};
        for (int round = 0; round < 2; ++round) {
            QCOMPARE(f.client().request("POST", "/v1/test/bill", auth, R"({"cost": 1})").status,
                     200);
            QVERIFY2(dropServerConnections(f.store()) >= 2, "the server's connections not found");
            QTest::qWait(DbWorker::kIdleProbeMs + 300);
            for (int i = 0; i < 3; ++i)
                QCOMPARE(f.client().request("POST", "/v1/test/bill", auth, R"({"cost": 1})").status,
                         200);
        }
        QTRY_COMPARE_WITH_TIMEOUT(f.service().expectedSettlements(), 0, 5'000);
        QCOMPARE(f.store().balance(account), qint64(1'000'000 - 8));
        QCOMPARE(f.store().ledgerSum(account), f.store().balance(account));
    }

    // A client that left before its request watched for it: the watch still runs (from the
    // event loop), and the request is recorded as 499.
    void closedBeforeWatched_data() { addBackendRows(); }
    void closedBeforeWatched()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        const QByteArray key = f.createKey("late");
        f.grant(100'000);
        {
            HttpClient leaving = f.client();
            leaving.send("POST", "/v1/test/bill", {{"Authorization", "Bearer " + key}},
                         R"({"cost": 1, "delay_ms": 300, "watch_late": true})");
            QTRY_VERIFY_WITH_TIMEOUT(g_handlerRuns.load() > 0, 5'000);
            leaving.socket().abort();
        }
        g_handlerRuns = 0;
        UsageQuery q;
        q.accountId = f.store().defaultAccountId();
        QTRY_COMPARE_WITH_TIMEOUT(f.store().usage(q).records.size(), 1, 5'000);
        QCOMPARE(f.store().usage(q).records.first().status, 499);
        QCOMPARE(f.store().balance(q.accountId), qint64(100'000));
    }

    // A billed stream holds its reservation until its charge has committed and the balance it
    // left is known, as an answer does (tst_address_http holdLastsUntilTheChargeCommits): its
    // last event waits for the commit, and a request admitted meanwhile could overdraw.
    void holdLastsUntilTheStreamSettles_data() { addBackendRows(); }
    void holdLastsUntilTheStreamSettles()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        const QByteArray key = f.createKey("stream");
        const qint64 account = f.store().defaultAccountId();
        f.grant(1000); // one request's reservation
        WriterHold writer(f.service());
        HttpClient streaming = f.client();
        const QByteArray body = R"({"cost": 10, "stream": true})";
        streaming.send("POST", "/v1/test/bill", {{"Authorization", "Bearer " + key}}, body);
        // The head and the first event come; the end waits for the writer.
        QByteArray seen;
        QTRY_VERIFY_WITH_TIMEOUT((seen += streaming.socket().readAll()).contains("\"n\":1"), 5'000);
        QVERIFY(!seen.contains("[DONE]"));
        QTRY_COMPARE_WITH_TIMEOUT(f.service().expectedSettlements(), 0, 5'000);

        HttpReply r = f.client().request("POST", "/v1/test/bill",
                                         {{"Authorization", "Bearer " + key}}, R"({"cost": 1})");
        QCOMPARE(r.status, 402);
        QVERIFY2(r.errorMessage().contains("held by requests in progress"),
                 qPrintable(r.errorMessage()));

        writer.release();
        QTRY_VERIFY_WITH_TIMEOUT((seen += streaming.socket().readAll()).contains("[DONE]"), 5'000);
        QCOMPARE(f.store().balance(account), qint64(1000 - 10));
        QCOMPARE(f.store().ledgerSum(account), f.store().balance(account));
    }

    // A settlement that fails (the database refuses the charge): the client gets 503 in its
    // envelope and no billed answer, nothing is charged, and the hold comes back, so the next
    // request is admitted on the same balance.
    void failedSettlement_data() { addBackendRows(); }
    void failedSettlement()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        const QByteArray key = f.createKey("refused");
        const qint64 account = f.store().defaultAccountId();
        f.grant(1000); // one request's reservation
        QSqlQuery q(f.store().database());
        const bool pg = backend == QLatin1String("postgres");
        const QStringList refuse =
            pg ? QStringList{QStringLiteral(
                                 "CREATE FUNCTION refuse_charge() RETURNS trigger AS $$ BEGIN "
                                 "RAISE EXCEPTION 'refused by the test'; END $$ LANGUAGE plpgsql"),
                             QStringLiteral("CREATE TRIGGER refuse_charges BEFORE INSERT ON ledger "
                                            "FOR EACH ROW WHEN (NEW.kind = 'charge') EXECUTE "
                                            "FUNCTION refuse_charge()")}
               : QStringList{QStringLiteral(
                     "CREATE TRIGGER refuse_charges BEFORE INSERT ON ledger WHEN NEW.kind = "
                     "'charge' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")};
        for (const QString &sql : refuse)
            QVERIFY2(q.exec(sql), qPrintable(q.lastError().text()));
        HttpClient c = f.client();
        using H = QList<QPair<QByteArray, QByteArray>>;
        const H auth{{"Authorization", "Bearer " + key}};

        HttpReply r = c.request("POST", "/v1/test/bill", auth, R"({"cost": 10})");
        QCOMPARE(r.status, 503);
        QVERIFY2(r.errorMessage().contains("Billing could not be recorded"),
                 qPrintable(r.errorMessage()));
        QVERIFY(!r.header("x-request-id").isEmpty());
        QCOMPARE(f.store().balance(account), qint64(1000));
        QCOMPARE(f.store().ledgerSum(account), qint64(1000));

        QVERIFY2(q.exec(QStringLiteral("DROP TRIGGER refuse_charges") +
                        (pg ? QStringLiteral(" ON ledger") : QString())),
                 qPrintable(q.lastError().text()));
        r = c.request("POST", "/v1/test/bill", auth, R"({"cost": 10})");
        QCOMPARE(r.status, 200);
        QCOMPARE(f.store().balance(account), qint64(1000 - 10));
        QTRY_COMPARE_WITH_TIMEOUT(f.service().expectedSettlements(), 0, 5'000);
    }

    void usageEndpoint_data() { addBackendRows(); }
    void usageEndpoint()
    {
        SY_START_SERVER(f, ServerSettings::defaults(), installBilledRoute,
                        extraFamily<PagesFamily>());
        f.grant(1'000'000);
        qint64 k1 = 0, k2 = 0;
        const QByteArray key1 = f.createKey("one", &k1);
        const QByteArray key2 = f.createKey("two", &k2);
        HttpClient c = f.client();
        for (int i = 0; i < 6; ++i)
            QCOMPARE(c.request("POST", "/v1/test/bill", {{"X-API-Key", i % 2 ? key2 : key1}},
                               R"({"cost": 2})")
                         .status,
                     200);
        UsageQuery all;
        all.accountId = f.store().defaultAccountId();
        QTRY_COMPARE(f.store().usage(all).records.size(), 6);
        const QByteArray token = f.createToken({"usage:read"});
        HttpReply r = c.get("/api/v1/usage?limit=4", token);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("data").toArray().size(), 4);
        QVERIFY(r.json().value("has_more").toBool());
        const QByteArray cursor = r.json().value("next_cursor").toString().toLatin1();
        r = c.get("/api/v1/usage?limit=4&cursor=" + cursor, token);
        QCOMPARE(r.json().value("data").toArray().size(), 2);
        QVERIFY(!r.json().value("has_more").toBool());

        r = c.get("/api/v1/usage?key=" + QByteArray::number(k2), token);
        QCOMPARE(r.json().value("data").toArray().size(), 3);
        const QJsonObject rec = r.json().value("data").toArray().first().toObject();
        QCOMPARE(rec.value("api_key_id").toString(), QString::number(k2));
        QCOMPARE(rec.value("cost").toString(), QStringLiteral("0.000000002"));
        QCOMPARE(rec.value("model").toString(), QStringLiteral("test-model"));
        QCOMPARE(
            c.get("/api/v1/usage?model=test-model", token).json().value("data").toArray().size(),
            6);
        QCOMPARE(c.get("/api/v1/usage?model=other", token).json().value("data").toArray().size(),
                 0);
        QCOMPARE(c.get("/api/v1/usage?from=2000-01-01T00:00:00Z&to=2001-01-01T00:00:00Z", token)
                     .json()
                     .value("data")
                     .toArray()
                     .size(),
                 0);
        const QByteArray now = QByteArray::number(QDateTime::currentSecsSinceEpoch() - 60);
        QCOMPARE(c.get("/api/v1/usage?from=" + now, token).json().value("data").toArray().size(),
                 6);

        // Tokens and requests, then the meters: every one a family registers (0 when the record
        // lacks it, scaled as described) and any other the record has, as its exact integer.
        QJsonObject units = rec.value("units").toObject();
        QCOMPARE(units.value("requests").toInteger(), 1);
        QCOMPARE(units.value("input_tokens").toInteger(), 0);
        QVERIFY(units.contains("test_kilopages"));
        QCOMPARE(units.value("test_kilopages").toDouble(), 0.0);
        QVERIFY(!units.contains("test_free"));
        QVERIFY(!units.contains("test_pages"));
        // Every meter the build's families register is there too, by its field.
        QVERIFY(f.services().meters().size() > 1);
        for (const MeterSpec &spec : f.services().meters())
            QVERIFY2(units.contains(spec.field.isEmpty() ? spec.name : spec.field),
                     qPrintable(spec.name));
        QCOMPARE(c.request("POST", "/v1/test/bill", {{"X-API-Key", key1}},
                           R"({"cost": 2, "tokens": 5, "meters": {"test_pages": 2500,
                              "test_free": 9007199254740993}})")
                     .status,
                 200);
        QTRY_COMPARE(f.store().usage(all).records.size(), 7);
        r = c.get("/api/v1/usage?limit=1", token);
        QCOMPARE(r.status, 200);
        units = r.json().value("data").toArray().first().toObject().value("units").toObject();
        QCOMPARE(units.value("input_tokens").toInteger(), 5);
        QCOMPARE(units.value("test_kilopages").toDouble(), 2.5);
        QVERIFY(units.contains("test_free"));
        // Exact beyond a double's 2^53: the body carries the integer as it is.
        QVERIFY2(r.body.contains("\"test_free\":9007199254740993"), r.body.constData());

        for (const char *bad :
             {"limit=0", "limit=abc", "limit=5000", "from=yesterday", "key=-1", "cursor=x"}) {
            r = c.get(QByteArray("/api/v1/usage?") + bad, token);
            QVERIFY2(r.status == 400, bad);
            const QString param = QString::fromLatin1(bad).section(u'=', 0, 0);
            QCOMPARE(r.json().value("error").toObject().value("param").toString(), param);
        }
    }

    void apiKeysEndpoint_data() { addBackendRows(); }
    void apiKeysEndpoint()
    {
        SY_START_SERVER(f);
        const QByteArray writer = f.createToken({"api_keys:read", "api_keys:write"});
        const QByteArray readerOnly = f.createToken({"api_keys:read"});
        HttpClient c = f.client();
        HttpReply r = c.postJson("/api/v1/api-keys", R"({"name": "ci"})", writer);
        QCOMPARE(r.status, 201);
        const QString secret = r.json().value("key").toString();
        QVERIFY(secret.startsWith(u"sk-"));
        const QString id = r.json().value("id").toString();
        r = c.get("/api/v1/api-keys", readerOnly);
        QCOMPARE(r.status, 200);
        QVERIFY(!r.body.contains(secret.toLatin1())); // never shown again
        QCOMPARE(r.json().value("data").toArray().size(), 1);
        QCOMPARE(r.json().value("data").toArray().first().toObject().value("prefix").toString(),
                 secret.left(9) + QStringLiteral("..."));
        QCOMPARE(c.postJson("/api/v1/api-keys", R"({"name": "x"})", readerOnly).status, 403);
        // The new key works on /v1 at once.
        QCOMPARE(c.request("GET", "/v1/models", {{"Authorization", "Bearer " + secret.toLatin1()}})
                     .status,
                 200);

        struct Bad
        {
            const char *body;
            const char *needle;
            int status;
        };
        for (const Bad &b : {Bad{"", "empty", 400}, Bad{"{", "Malformed JSON", 400},
                             Bad{"[1]", "must be a JSON object", 400},
                             Bad{R"({"name": 5})", "'name' is required", 400},
                             Bad{R"({"name": "  "})", "'name' is required", 400},
                             Bad{R"({"name": "a", "tier": "gold"})", "'tier'", 400}}) {
            r = c.postJson("/api/v1/api-keys", b.body, writer);
            QVERIFY2(r.status == b.status, b.body);
            QVERIFY2(r.errorMessage().contains(QLatin1String(b.needle)),
                     qPrintable(r.errorMessage()));
        }
        r = c.request("DELETE", "/api/v1/api-keys/" + id.toLatin1(),
                      {{"Authorization", "Bearer " + writer}});
        QCOMPARE(r.status, 200);
        r = c.request("DELETE", "/api/v1/api-keys/999999", {{"Authorization", "Bearer " + writer}});
        QCOMPARE(r.status, 404);
        r = c.request("DELETE", "/api/v1/api-keys/abc", {{"Authorization", "Bearer " + writer}});
        QCOMPARE(r.status, 404);
    }

    void balanceAndLedger_data() { addBackendRows(); }
    void balanceAndLedger()
    {
        SY_START_SERVER(f);
        f.grant(2'500'000'000);
        const QByteArray token = f.createToken({"credits:read"});
        HttpClient c = f.client();
        HttpReply r = c.get("/api/v1/credits/balance", token);
        QCOMPARE(r.json().value("balance").toString(), QStringLiteral("2.500000000"));
        QCOMPARE(r.json().value("balance_units").toString(), QStringLiteral("2500000000"));
        r = c.get("/api/v1/credits/ledger", token);
        QCOMPARE(r.status, 200);
        const QJsonObject e = r.json().value("data").toArray().first().toObject();
        QCOMPARE(e.value("kind").toString(), QStringLiteral("grant"));
        QCOMPARE(e.value("amount").toString(), QStringLiteral("2.500000000"));
    }

    // HEAD on a streamed GET: the head alone, so that the next answer on the connection is
    // read as itself, not after stray chunks.
    void headOfAStream()
    {
        ServerFixture f(QStringLiteral("sqlite"), limitedSettings(), installBilledRoute);
        QVERIFY(f.ready());
        HttpClient c = f.client();
        QVERIFY(c.connectIfNeeded());
        c.sendRaw("HEAD /v1/test/stream HTTP/1.1\r\nHost: x\r\n\r\n"
                  "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        QByteArray seen;
        QTRY_VERIFY_WITH_TIMEOUT((seen += c.socket().readAll()).contains("{\"status\":\"ok\"}"),
                                 5'000);
        const qsizetype headEnd = seen.indexOf("\r\n\r\n");
        QVERIFY2(seen.startsWith("HTTP/1.1 200"), seen.constData());
        QVERIFY2(seen.mid(headEnd + 4).startsWith("HTTP/1.1 200"), seen.constData());
        // The same stream to GET: its events and its end.
        const HttpReply get = f.client().request("GET", "/v1/test/stream");
        QCOMPARE(get.status, 200);
        QVERIFY2(get.body.contains("\"n\":1") && get.body.contains("[DONE]"), get.body.constData());
    }

    void bodyLimit_data() { addBackendRows(); }
    void bodyLimit()
    {
        SY_START_SERVER(f);
        const QByteArray writer = f.createToken({"api_keys:write"});
        HttpClient c = f.client();
        const QByteArray big(1024 * 1024 + 1, 'x');
        const HttpReply r = c.postJson("/api/v1/api-keys", big, writer);
        QCOMPARE(r.status, 413);
        QVERIFY(r.errorMessage().contains("larger than the limit of 1048576 bytes"));
        QVERIFY(r.header("x-request-id").startsWith("req_"));
        // The server is still fine for the next client.
        QCOMPARE(f.client().get("/healthz").status, 200);
    }

    // Refusals the head decides (404, 405, 413, 401, 403, 429, 402) are answered before any of
    // the body is read (here it is never sent), and close the connection; the handler never
    // runs. Expect: 100-continue gets the final status instead of 100 when refused, and 100
    // when admitted. A refusal of a request without a body keeps the connection.
    void refusedAtTheHead_data() { addBackendRows(); }
    void refusedAtTheHead()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        const QByteArray key = f.createKey("head");
        const QByteArray reader = f.createToken({"api_keys:read"});
        const QByteArray writer = f.createToken({"api_keys:read", "api_keys:write"});
        const int runsBefore = g_handlerRuns;
        const QByteArray bill = "POST /v1/test/bill HTTP/1.1\r\nContent-Length: 900000\r\n";
        const QByteArray bearer = "Authorization: Bearer ";
        struct Case
        {
            const char *name;
            QByteArray head;
            int status;
            const char *message;
        };
        const QList<Case> cases = {
            {"no key", bill, 401, "Missing API key"},
            {"wrong key, 100-continue",
             bill + bearer + "sk-" + QByteArray(43, 'A') + "\r\nExpect: 100-continue\r\n", 401,
             "Invalid API key"},
            {"declared length over the limit",
             "POST /v1/test/bill HTTP/1.1\r\nContent-Length: 20000000\r\n" + bearer + key + "\r\n",
             413, "larger than the limit"},
            {"no credits", bill + bearer + key + "\r\n", 402, "Insufficient credits"},
            {"API key on /api/v1",
             "POST /api/v1/api-keys HTTP/1.1\r\nContent-Length: 50\r\n" + bearer + key + "\r\n",
             401, "API keys (sk-) are not accepted"},
            {"scope",
             "POST /api/v1/api-keys HTTP/1.1\r\nContent-Length: 50\r\n" + bearer + reader + "\r\n",
             403, "api_keys:write"},
            {"unknown route", "POST /v1/nothing HTTP/1.1\r\nContent-Length: 50\r\n", 404,
             "Unknown route"},
            {"method", "POST /healthz HTTP/1.1\r\nContent-Length: 50\r\n", 405, "not allowed"},
        };
        for (const Case &k : cases) {
            const QByteArray reply = headAlone(f, k.head);
            QVERIFY2(reply.startsWith("HTTP/1.1 " + QByteArray::number(k.status)),
                     qPrintable(k.name + QStringLiteral(": ") + reply));
            QVERIFY2(reply.contains("Connection: close"), k.name);
            QVERIFY2(reply.contains(k.message), qPrintable(k.name + QStringLiteral(": ") + reply));
        }
        // The rate limit (5 a minute on the control bucket), spent by requests without a body.
        HttpClient c = f.client();
        for (int i = 0; i < 5; ++i)
            QCOMPARE(c.get("/api/v1/api-keys", writer).status, 200);
        const QByteArray limited =
            headAlone(f, "POST /api/v1/api-keys HTTP/1.1\r\nContent-Length: 50\r\n" + bearer +
                             writer + "\r\n");
        QVERIFY2(limited.startsWith("HTTP/1.1 429"), limited.constData());
        QVERIFY(limited.contains("Connection: close"));
        QCOMPARE(g_handlerRuns.load(), runsBefore);

        // Without a body, a refusal leaves the connection open for the next request.
        const HttpReply missing = c.get("/api/v1/credits/balance");
        QCOMPARE(missing.status, 401);
        QVERIFY(missing.header("connection").isEmpty());
        QCOMPARE(c.get("/healthz").status, 200);
        QCOMPARE(c.socket().state(), QAbstractSocket::ConnectedState);

        // Admitted: 100 Continue, then the body, then the answer.
        f.grant(1'000'000);
        HttpClient admitted = f.client();
        const QByteArray body = R"({"cost": 3})";
        admitted.sendRaw(
            "POST /v1/test/bill HTTP/1.1\r\nContent-Length: " + QByteArray::number(body.size()) +
            "\r\n" + bearer + key + "\r\nExpect: 100-continue\r\n\r\n");
        QVERIFY(admitted.socket().waitForReadyRead(5'000));
        const QByteArray interim = admitted.socket().readAll();
        QVERIFY2(interim.startsWith("HTTP/1.1 100 Continue\r\n\r\n"), interim.constData());
        admitted.sendRaw(body);
        QCOMPARE(admitted.readReply().status, 200);
        QCOMPARE(f.store().balance(f.store().defaultAccountId()), qint64(1'000'000 - 3));
    }

    // The credit hold is taken at the head and stays with the request while its body arrives:
    // meanwhile another request cannot use it; the first, once whole, is served and settled;
    // one whose client leaves before its body is whole hands it back, unbilled.
    void holdTakenAtTheHead_data() { addBackendRows(); }
    void holdTakenAtTheHead()
    {
        SY_START_SERVER(f, limitedSettings(), installBilledRoute);
        const QByteArray key = f.createKey("hold");
        const qint64 account = f.store().defaultAccountId();
        f.grant(1000); // one request's reservation
        const QByteArray body = R"({"cost": 7})";
        const QByteArray head = "POST /v1/test/bill HTTP/1.1\r\nAuthorization: Bearer " + key +
                                "\r\nContent-Length: " + QByteArray::number(body.size()) +
                                "\r\nExpect: 100-continue\r\n\r\n";
        const QList<QPair<QByteArray, QByteArray>> auth{{"Authorization", "Bearer " + key}};
        const auto admittedHead = [&](HttpClient &c) {
            c.sendRaw(head); // 100 Continue comes once the head is admitted: the hold is taken
            return c.socket().waitForReadyRead(5'000) &&
                   c.socket().readAll().startsWith("HTTP/1.1 100 Continue");
        };
        HttpClient first = f.client();
        QVERIFY(admittedHead(first));
        HttpReply r = f.client().request("POST", "/v1/test/bill", auth, body);
        QCOMPARE(r.status, 402);
        QVERIFY2(r.errorMessage().contains("held by requests in progress"),
                 qPrintable(r.errorMessage()));
        first.sendRaw(body);
        QCOMPARE(first.readReply().status, 200);
        QCOMPARE(f.store().balance(account), qint64(1000 - 7));

        f.grant(7); // one reservation again
        {
            HttpClient leaving = f.client();
            QVERIFY(admittedHead(leaving));
            leaving.sendRaw("{\"co"); // part of the body, then gone
            leaving.socket().abort();
        }
        int status = 0;
        for (QDeadlineTimer deadline(5'000); status != 200 && !deadline.hasExpired();) {
            status = f.client().request("POST", "/v1/test/bill", auth, body).status;
            if (status != 200)
                QTest::qWait(20);
        }
        QCOMPARE(status, 200);
        QCOMPARE(f.store().balance(account), qint64(1000 - 7 + 7 - 7));
        QCOMPARE(f.store().ledgerSum(account), f.store().balance(account));
        QTRY_COMPARE_WITH_TIMEOUT(f.service().expectedSettlements(), 0, 5'000);
    }

    // The envelope is the route's: a route declared with the messages envelope answers its
    // errors (401, 400, 413, 405) in it; a path no route claims takes the longest prefix a
    // family declared (the gateway's /v1/messages), and only below it, not beside it.
    void errorEnvelopeIsTheRoutes()
    {
        auto install = [](Pipeline &p) {
            RouteSpec r;
            r.method = "POST";
            r.pattern = QStringLiteral("/v1/test/envelope");
            r.family = QStringLiteral("test");
            r.auth = AuthMode::ApiKey;
            r.errorStyle = messagesErrorStyle();
            r.handler = [](const ContextPtr &ctx) {
                if (ctx->jsonBody())
                    ctx->respondError(400, QStringLiteral("bad value"), {}, QStringLiteral("x"));
            };
            p.addRoute(r);
            p.addErrorPrefix(QStringLiteral("/v1/test/social"), SocialFamily::errorStyle());
            p.addErrorPrefix(QStringLiteral("/v1/test/social/deeper"), messagesErrorStyle());
        };
        ServerFixture f(QStringLiteral("sqlite"), ServerSettings::defaults(), install);
        QVERIFY(f.ready());
        const QByteArray key = f.createKey();
        auto isMessages = [](const HttpReply &r) {
            const QJsonObject o = r.json();
            return o.value("type").toString() == u"error" &&
                   o.value("error").toObject().contains("message");
        };
        auto isOpenAI = [](const HttpReply &r) {
            const QJsonObject e = r.json().value("error").toObject();
            return !r.json().contains("type") && e.contains("param") && e.contains("code");
        };
        auto isSocial = [](const HttpReply &r) {
            const QJsonObject e = r.json().value("error").toObject();
            return !r.json().contains("type") && e.contains("message") && !e.contains("param");
        };
        HttpReply r = f.client().postJson("/v1/test/envelope", "{}");
        QCOMPARE(r.status, 401);
        QVERIFY2(isMessages(r), r.body.constData());
        r = f.client().postJson("/v1/test/envelope", "{}", key);
        QCOMPARE(r.status, 400);
        QVERIFY2(isMessages(r), r.body.constData());
        r = f.client().postJson("/v1/test/envelope", QByteArray(1024 * 1024 + 1, 'x'), key);
        QCOMPARE(r.status, 413); // refused before routing, still in the route's envelope
        QVERIFY2(isMessages(r), r.body.constData());
        r = f.client().get("/v1/test/envelope", key);
        QCOMPARE(r.status, 405);
        QVERIFY2(isMessages(r), r.body.constData());
        // Unclaimed paths: the declared prefixes, the longest first, and the gateway's.
        r = f.client().get("/v1/test/social/x");
        QCOMPARE(r.status, 404);
        QVERIFY2(isSocial(r), r.body.constData());
        r = f.client().get("/v1/test/social/deeper/x");
        QVERIFY2(isMessages(r), r.body.constData());
        r = f.client().get("/v1/test/socialite");
        QVERIFY2(isOpenAI(r), r.body.constData());
        r = f.client().get("/v1/messages/batches");
        QCOMPARE(r.status, 404);
        QVERIFY2(isMessages(r), r.body.constData());
        r = f.client().get("/v1/messagesx");
        QVERIFY2(isOpenAI(r), r.body.constData());
        r = f.client().get("/v1/unknown");
        QVERIFY2(isOpenAI(r), r.body.constData());
    }
    // A family registers its envelope, its prefix and its bucket with a default limit, and
    // nothing else in the core names it: unclaimed paths under its prefix answer in its
    // envelope (with the header it adds), its route is labelled with its name, and its bucket
    // limits its route at the registered default unless the configuration sets the bucket; a
    // tier configured without it gets the default too. On both databases: on PostgreSQL the
    // limit is the shared one.
    void familyRegistersEnvelopeAndBucket_data() { addBackendRows(); }
    void familyRegistersEnvelopeAndBucket()
    {
        // The type is the envelope's default for the status: its own for 404, 405 and 429,
        // its 4xx fallback for the rest.
        auto isProbe = [](const HttpReply &r, int status) {
            const QJsonObject e = r.json().value("probe_error").toObject();
            const QString type = status == 404 || status == 405 || status == 429
                                     ? QStringLiteral("probe_%1").arg(status)
                                     : QStringLiteral("probe_4xx");
            return r.json().size() == 1 && e.value("status").toInt() == status &&
                   e.value("kind").toString() == type && !r.header("Probe-Request-Id").isEmpty() &&
                   r.header("Probe-Request-Id") == r.header("X-Request-Id");
        };
        {
            SY_START_SERVER(f, ServerSettings::defaults(), {}, extraFamily<ProbeFamily>());
            const QByteArray key = f.fundedKey(1000);
            HttpReply r = f.client().get("/v1/probe/nothing/here", key);
            QCOMPARE(r.status, 404);
            QVERIFY2(isProbe(r, 404), r.body.constData());
            r = f.client().get("/v1/probe");
            QVERIFY2(isProbe(r, 404), r.body.constData());
            r = f.client().get("/v1/probes"); // beside the prefix: the core's envelope
            QVERIFY2(r.json().value("error").toObject().contains("param"), r.body.constData());
            QVERIFY(r.header("Probe-Request-Id").isEmpty());
            r = f.client().get("/v1/probe/echo", key);
            QCOMPARE(r.status, 405);
            QVERIFY2(isProbe(r, 405), r.body.constData());
            r = f.client().postJson("/v1/probe/echo", "{}");
            QCOMPARE(r.status, 401);
            QVERIFY2(isProbe(r, 401), r.body.constData());
            for (int i = 0; i < 2; ++i) {
                r = f.client().postJson("/v1/probe/echo", "{}", key);
                QCOMPARE(r.status, 200);
                QCOMPARE(r.json().value("family").toString(), QStringLiteral("probe"));
                QCOMPARE(r.header("X-RateLimit-Limit"), QByteArray("2"));
                QCOMPARE(r.header("Probe-Request-Id"), r.header("X-Request-Id"));
            }
            r = f.client().postJson("/v1/probe/echo", "{}", key);
            QCOMPARE(r.status, 429);
            QVERIFY2(isProbe(r, 429), r.body.constData());
            QVERIFY(!r.header("Retry-After").isEmpty());
        }
        {
            ServerSettings s = ServerSettings::defaults();
            s.tiers[QStringLiteral("default")].perMinute.insert(QStringLiteral("probe"), 3);
            s.tiers.insert(QStringLiteral("gold"),
                           RateTier{{{QStringLiteral("default"), 100}}}); // no probe bucket
            SY_START_SERVER(f, s, {}, extraFamily<ProbeFamily>());
            const QByteArray key = f.fundedKey(1000);
            for (int i = 0; i < 3; ++i)
                QCOMPARE(f.client().postJson("/v1/probe/echo", "{}", key).status, 200);
            HttpReply r = f.client().postJson("/v1/probe/echo", "{}", key);
            QCOMPARE(r.status, 429);
            QCOMPARE(r.header("X-RateLimit-Limit"), QByteArray("3"));
            const QByteArray gold =
                f.store()
                    .createApiKey(f.store().defaultAccountId(), QStringLiteral("gold"),
                                  QStringLiteral("gold"))
                    .secret.toLatin1();
            r = f.client().postJson("/v1/probe/echo", "{}", gold);
            QCOMPARE(r.status, 200);
            QCOMPARE(r.header("X-RateLimit-Limit"), QByteArray("2"));
        }
    }
};

QTEST_GUILESS_MAIN(TestPipeline)
#include "tst_pipeline.moc"
