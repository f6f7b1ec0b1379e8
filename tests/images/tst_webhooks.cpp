// Webhook delivery end to end: image tasks with a callbackUrl on an HTTPS receiver
// on loopback (a certificate made by the test, trusted through the fetch policy's ca_file;
// loopback allowed by the explicit allow_cidrs test setting). Success at once, 500 three times
// then 200 (exactly four attempts on the schedule), a receiver that never answers (six
// attempts, then failed), a 3xx (a failure, not followed), a slow answer past the timeout,
// Standard Webhooks signatures, a manual resend, the control API and its scopes, and two
// instances on one PostgreSQL database making each attempt once.

#include "ImagesTestSupport.h"
#include "Money.h"
#include "Services.h"
#include "WebhookReceiver.h"

#include <QElapsedTimer>
#include <QMessageAuthenticationCode>
#include <QUrlQuery>

using namespace ImagesTest;

namespace {

// The schedule scaled by 0.05: retries after 100, 200, 400, 800 and 1500 ms.
constexpr double kScale = 0.05;
const QList<int> kGaps = {100, 200, 400, 800, 1500};
constexpr int kTimeoutMs = 600;

QJsonObject webhookSection(const FakeUpstreamProcess &fake, const WebhookReceiver &receiver,
                           const QJsonObject &extra = {})
{
    QJsonObject hooks{{"schedule_scale", kScale},
                      {"timeout_ms", kTimeoutMs},
                      {"lease_ms", 3000},
                      {"poll_ms", 50},
                      {"fetch", QJsonObject{{"allow_cidrs", QJsonArray{"127.0.0.0/8"}},
                                            {"ca_file", receiver.caFile()}}}};
    for (auto it = extra.begin(); it != extra.end(); ++it)
        hooks.insert(it.key(), it.value());
    return section(fake, {{"webhooks", hooks}});
}

// Submits a task with a callback; returns its id.
QString submit(ServerFixture &f, const QByteArray &key, const WebhookReceiver &receiver,
               const QString &prompt = QStringLiteral("a harbour"))
{
    const HttpReply r = post(f, {{"prompt", prompt}, {"callbackUrl", receiver.url()}}, key);
    if (r.status != 202) {
        qWarning("submit: %d %s", r.status, r.body.constData());
        return {};
    }
    return r.json().value("id").toString();
}

QJsonObject control(ServerFixture &f, const QByteArray &token, const QByteArray &target,
                    int *status = nullptr, const QByteArray &method = "GET")
{
    const HttpReply r = f.client().request(method, target, {{"Authorization", "Bearer " + token}});
    if (status)
        *status = r.status;
    return r.json();
}

std::optional<ImageStore::Delivery> deliveryOf(ServerFixture &f, const QString &taskId)
{
    return ImageStore::deliveryForTask(f.store(), taskId);
}

// The delivery's status, or "" while the task has none yet (for polling).
QString statusOf(ServerFixture &f, const QString &taskId)
{
    const auto d = deliveryOf(f, taskId);
    return d ? d->status : QString();
}

// A receiver, the fake upstream as the image provider, and a server on them with an API key
// and credits.
struct Rig
{
    WebhookReceiver receiver;
    FakeUpstreamProcess fake;
    std::optional<ServerFixture> fixture;
    QByteArray key;
    QString error;
    bool skipped = false; // no PostgreSQL server for a postgres row
    AlertSettings alerts; // the server's alerts (none by default)

    bool start(const QString &backend = QStringLiteral("sqlite"), const QJsonObject &extra = {})
    {
        if (!receiver.start()) {
            error = receiver.errorString();
            return false;
        }
        if (!fake.start()) {
            error = QStringLiteral("the fake upstream did not start");
            return false;
        }
        ServerSettings settings = settingsWith(webhookSection(fake, receiver, extra));
        settings.alerts = alerts;
        if (settings.alerts.webhookUrl == u"receiver")
            settings.alerts.webhookUrl = receiver.url(QStringLiteral("/alerts"));
        fixture.emplace(backend, settings);
        if (!fixture->ready()) {
            error = fixture->skipReason();
            skipped = qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") != QLatin1String("1");
            return false;
        }
        key = fixture->createKey();
        fixture->grant(kCredit);
        return true;
    }
};

#define START_RIG(rig, ...) START_RIG_WITH(rig, {}, __VA_ARGS__)
#define START_RIG_WITH(rig, alertSettings, ...)                                                    \
    Rig rig;                                                                                       \
    rig.alerts = alertSettings;                                                                    \
    if (!rig.start(__VA_ARGS__)) {                                                                 \
        if (rig.skipped)                                                                           \
            QSKIP(qPrintable(rig.error));                                                          \
        QFAIL(qPrintable(rig.error));                                                              \
    }                                                                                              \
    ServerFixture &f = *rig.fixture;                                                               \
    WebhookReceiver &receiver = rig.receiver;                                                      \
    const QByteArray key = rig.key

} // namespace

class TestWebhooks : public QObject
{
    Q_OBJECT

private slots:
    void deliveredAtOnce_data() { backends(); }
    void deliveredAtOnce();
    void retriesOnSchedule();
    void neverAnswering();
    void redirectIsAFailure();
    void slowAnswerPastTimeout();
    void signatures();
    void manualResend();
    void controlApi();
    void twoInstancesOnePostgres();
    void alertsThroughTheOutbox_data() { backends(); }
    void alertsThroughTheOutbox();
    void alertOnceAcrossInstances();
};

void TestWebhooks::deliveredAtOnce()
{
    QFETCH(QString, backend);
    START_RIG(rig, backend);
    const QString id = submit(f, key, receiver);
    QVERIFY(!id.isEmpty());
    QVERIFY(receiver.waitForRequests(1, 15000));
    const WebhookReceiver::Request req = receiver.requests().at(0);
    QCOMPARE(req.method, QByteArray("POST"));
    QCOMPARE(req.path(), QByteArray("/hook"));
    QCOMPARE(req.header("content-type"), QByteArray("application/json"));
    QCOMPARE(req.header("x-switchyard-attempt"), QByteArray("1"));
    QVERIFY(!req.header("x-switchyard-delivery").isEmpty());
    QVERIFY(!req.hasHeader("webhook-signature")); // none by default (rule 6)
    const QJsonObject body = QJsonDocument::fromJson(req.body).object();
    QCOMPARE(body.value("id").toString(), id);
    QCOMPARE(body.value("status").toString(), QStringLiteral("completed"));
    const QJsonArray images = body.value("images").toArray();
    QCOMPARE(images.size(), 1);
    QCOMPARE(f.client().get(target(images.at(0).toObject().value("url").toString())).status, 200);
    QTRY_COMPARE_WITH_TIMEOUT(statusOf(f, id), QStringLiteral("delivered"), 5000);
    QTest::qWait(300);
    QCOMPARE(receiver.requests().size(), 1);
    const QJsonObject task = f.client().get("/v1/images/generations/" + id.toLatin1(), key).json();
    QCOMPARE(task.value("callback").toObject().value("status").toString(),
             QStringLiteral("delivered"));
    QCOMPARE(task.value("callback").toObject().value("attempts").toInt(), 1);
}

void TestWebhooks::retriesOnSchedule()
{
    START_RIG(rig, QStringLiteral("sqlite"));
    receiver.script({{500, 0, false, "busy"}, {500}, {503}});
    const QString id = submit(f, key, receiver);
    QVERIFY(receiver.waitForRequests(4, 15000));
    QTRY_COMPARE_WITH_TIMEOUT(statusOf(f, id), QStringLiteral("delivered"), 5000);
    QTest::qWait(500);
    const auto reqs = receiver.requests();
    QCOMPARE(reqs.size(), 4); // exactly four attempts
    for (int i = 0; i < 4; ++i)
        QCOMPARE(reqs[i].header("x-switchyard-attempt"), QByteArray::number(i + 1));
    // The gaps follow the schedule: each at least its backoff, and not far beyond it.
    for (int i = 1; i < 4; ++i) {
        const qint64 gap = reqs[i].elapsedMs - reqs[i - 1].elapsedMs;
        QVERIFY2(gap >= kGaps[i - 1] - 5 && gap <= kGaps[i - 1] + 750,
                 qPrintable(QStringLiteral("gap %1: %2 ms, scheduled %3 ms")
                                .arg(i)
                                .arg(gap)
                                .arg(kGaps[i - 1])));
    }
    // Every attempt is in the log, with what the receiver said.
    const auto d = deliveryOf(f, id);
    QCOMPARE(d->attempts, 4);
    const auto attempts = ImageStore::attempts(f.store(), d->id);
    QCOMPARE(attempts.size(), 4);
    QCOMPARE(attempts[0].status, 500);
    QCOMPARE(attempts[0].excerpt, QStringLiteral("busy"));
    QCOMPARE(attempts[0].address, QStringLiteral("127.0.0.1"));
    QCOMPARE(attempts[2].status, 503);
    QCOMPARE(attempts[3].status, 200);
    QVERIFY(attempts[3].error.isEmpty());
    QVERIFY(!attempts[0].manual);
}

void TestWebhooks::neverAnswering()
{
    START_RIG(rig, QStringLiteral("sqlite"));
    receiver.setDefault(WebhookReceiver::Answer::silence());
    const QString id = submit(f, key, receiver);
    QTRY_COMPARE_WITH_TIMEOUT(statusOf(f, id), QStringLiteral("failed"), 30000);
    QCOMPARE(receiver.requests().size(), 6); // the first attempt and five retries
    const auto attempts = ImageStore::attempts(f.store(), deliveryOf(f, id)->id);
    QCOMPARE(attempts.size(), 6);
    for (const auto &a : attempts) {
        QCOMPARE(a.status, 0);
        QVERIFY2(a.error.startsWith("timeout"), qPrintable(a.error));
        QVERIFY(a.durationMs >= kTimeoutMs - 50);
    }
    // The result stays available through GET.
    const QJsonObject task = f.client().get("/v1/images/generations/" + id.toLatin1(), key).json();
    QCOMPARE(task.value("status").toString(), QStringLiteral("completed"));
    QCOMPARE(task.value("callback").toObject().value("status").toString(),
             QStringLiteral("failed"));
}

void TestWebhooks::redirectIsAFailure()
{
    START_RIG(rig, QStringLiteral("sqlite"));
    // A redirect to a private address: a failed attempt, never followed.
    receiver.script({WebhookReceiver::Answer::redirect("https://10.0.0.1/steal", 307)});
    const QString id = submit(f, key, receiver);
    QTRY_COMPARE_WITH_TIMEOUT(statusOf(f, id), QStringLiteral("delivered"), 15000);
    const auto attempts = ImageStore::attempts(f.store(), deliveryOf(f, id)->id);
    QCOMPARE(attempts.size(), 2);
    QCOMPARE(attempts[0].status, 307);
    QVERIFY2(attempts[0].error.contains("not followed"), qPrintable(attempts[0].error));
    for (const auto &r : receiver.requests())
        QCOMPARE(r.path(), QByteArray("/hook"));
}

void TestWebhooks::slowAnswerPastTimeout()
{
    START_RIG(rig, QStringLiteral("sqlite"));
    receiver.script({WebhookReceiver::Answer::after(kTimeoutMs + 900)});
    const QString id = submit(f, key, receiver);
    QTRY_COMPARE_WITH_TIMEOUT(statusOf(f, id), QStringLiteral("delivered"), 15000);
    const auto attempts = ImageStore::attempts(f.store(), deliveryOf(f, id)->id);
    QCOMPARE(attempts.size(), 2);
    QCOMPARE(attempts[0].status, 0);
    QVERIFY2(attempts[0].error.startsWith("timeout"), qPrintable(attempts[0].error));
    QVERIFY(attempts[0].durationMs < kTimeoutMs + 500);
    QCOMPARE(attempts[1].status, 200);
}

void TestWebhooks::signatures()
{
    START_RIG(rig, QStringLiteral("sqlite"));
    const QByteArray reader = f.createToken({"webhooks:read"});
    const QByteArray writer = f.createToken({"webhooks:read", "webhooks:write"});
    int status = 0;
    control(f, reader, "/api/v1/webhooks/signing-secret", &status, "POST");
    QCOMPARE(status, 403);
    const QJsonObject created =
        control(f, writer, "/api/v1/webhooks/signing-secret", &status, "POST");
    QCOMPARE(status, 201);
    const QString secret = created.value("secret").toString();
    QVERIFY(secret.startsWith("whsec_"));
    QCOMPARE(control(f, reader, "/api/v1/webhooks/signing-secret").value("enabled").toBool(), true);
    QVERIFY(!control(f, reader, "/api/v1/webhooks/signing-secret").contains("secret"));

    submit(f, key, receiver);
    QVERIFY(receiver.waitForRequests(1, 15000));
    const auto req = receiver.requests().at(0);
    const QByteArray msgId = req.header("webhook-id");
    const QByteArray ts = req.header("webhook-timestamp");
    QCOMPARE(msgId, "whd_" + req.header("x-switchyard-delivery"));
    QVERIFY(qAbs(ts.toLongLong() - QDateTime::currentSecsSinceEpoch()) < 60);
    const QByteArray expected =
        "v1," + QMessageAuthenticationCode::hash(msgId + '.' + ts + '.' + req.body,
                                                 QByteArray::fromBase64(secret.mid(6).toLatin1()),
                                                 QCryptographicHash::Sha256)
                    .toBase64();
    QCOMPARE(req.header("webhook-signature"), expected);

    control(f, writer, "/api/v1/webhooks/signing-secret", &status, "DELETE");
    QCOMPARE(status, 200);
    submit(f, key, receiver);
    QVERIFY(receiver.waitForRequests(2, 15000));
    QVERIFY(!receiver.requests().at(1).hasHeader("webhook-signature"));
}

void TestWebhooks::manualResend()
{
    START_RIG(rig, QStringLiteral("sqlite"), {{"retries", 1}});
    receiver.setDefault({500});
    const QByteArray writer = f.createToken({"webhooks:read", "webhooks:write"});
    const QString id = submit(f, key, receiver);
    QTRY_COMPARE_WITH_TIMEOUT(statusOf(f, id), QStringLiteral("failed"), 15000);
    QCOMPARE(receiver.requests().size(), 2);
    receiver.setDefault({200});
    const qint64 deliveryId = deliveryOf(f, id)->id;
    int status = 0;
    const QJsonObject resent = control(
        f, writer, "/api/v1/webhooks/deliveries/" + QByteArray::number(deliveryId) + "/resend",
        &status, "POST");
    QCOMPARE(status, 202);
    QCOMPARE(resent.value("manual_pending").toBool(), true);
    QTRY_COMPARE_WITH_TIMEOUT(statusOf(f, id), QStringLiteral("delivered"), 10000);
    QCOMPARE(receiver.requests().size(), 3);
    QCOMPARE(receiver.requests().at(2).header("x-switchyard-attempt"), QByteArray("3"));
    const QJsonObject one = control(
        f, writer, "/api/v1/webhooks/deliveries/" + QByteArray::number(deliveryId), &status);
    QCOMPARE(status, 200);
    const QJsonArray log = one.value("attempts_log").toArray();
    QCOMPARE(log.size(), 3);
    QCOMPARE(log.at(2).toObject().value("trigger").toString(), QStringLiteral("manual"));
    QCOMPARE(log.at(0).toObject().value("trigger").toString(), QStringLiteral("scheduled"));
    QCOMPARE(log.at(0).toObject().value("address").toString(), QStringLiteral("127.0.0.1"));
    // Unknown delivery: 404.
    control(f, writer, "/api/v1/webhooks/deliveries/999999/resend", &status, "POST");
    QCOMPARE(status, 404);
}

void TestWebhooks::controlApi()
{
    START_RIG(rig, QStringLiteral("sqlite"));
    const QByteArray reader = f.createToken({"webhooks:read"});
    const QByteArray other = f.createToken({"credits:read"});
    QStringList ids;
    for (int i = 0; i < 5; ++i)
        ids.append(submit(f, key, receiver, QStringLiteral("picture %1").arg(i)));
    QVERIFY(receiver.waitForRequests(5, 20000));
    QTRY_COMPARE_WITH_TIMEOUT(
        count(f, "SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'delivered'"), 5, 5000);
    int status = 0;
    control(f, other, "/api/v1/webhooks/deliveries", &status);
    QCOMPARE(status, 403);
    control(f, key, "/api/v1/webhooks/deliveries", &status); // an API key is no control token
    QCOMPARE(status, 401);
    QJsonObject page = control(f, reader, "/api/v1/webhooks/deliveries?limit=2", &status);
    QCOMPARE(status, 200);
    QCOMPARE(page.value("data").toArray().size(), 2);
    QVERIFY(page.value("has_more").toBool());
    QSet<QString> seen;
    QByteArray cursor = page.value("next_cursor").toString().toLatin1();
    for (const auto &d : page.value("data").toArray())
        seen.insert(d.toObject().value("task_id").toString());
    while (!cursor.isEmpty()) {
        page = control(f, reader, "/api/v1/webhooks/deliveries?limit=2&cursor=" + cursor);
        for (const auto &d : page.value("data").toArray())
            seen.insert(d.toObject().value("task_id").toString());
        cursor = page.value("next_cursor").toString().toLatin1();
    }
    QCOMPARE(seen, QSet<QString>(ids.begin(), ids.end()));
    page = control(f, reader,
                   "/api/v1/webhooks/deliveries?q=" + ids[3].mid(10, 8).toUpper().toLatin1());
    QCOMPARE(page.value("data").toArray().size(), 1);
    QCOMPARE(page.value("data").toArray().at(0).toObject().value("task_id").toString(), ids[3]);
    QCOMPARE(control(f, reader, "/api/v1/webhooks/deliveries?q=127.0.0.1%3A")
                 .value("data")
                 .toArray()
                 .size(),
             5);
    QCOMPARE(control(f, reader, "/api/v1/webhooks/deliveries?q=%25").value("data").toArray().size(),
             0);
    page = control(f, reader, "/api/v1/webhooks/deliveries?task=" + ids[2].toLatin1());
    QCOMPARE(page.value("data").toArray().size(), 1);
    QCOMPARE(page.value("data").toArray().at(0).toObject().value("status").toString(),
             QStringLiteral("delivered"));
    QCOMPARE(control(f, reader, "/api/v1/webhooks/deliveries?status=failed")
                 .value("data")
                 .toArray()
                 .size(),
             0);
    control(f, reader, "/api/v1/webhooks/deliveries?status=bogus", &status);
    QCOMPARE(status, 400);
    control(f, reader, "/api/v1/webhooks/deliveries?limit=0", &status);
    QCOMPARE(status, 400);
    control(f, reader, "/api/v1/webhooks/deliveries?from=yesterday", &status);
    QCOMPARE(status, 400);
    control(f, reader, "/api/v1/webhooks/deliveries/abc", &status);
    QCOMPARE(status, 404);
}

void TestWebhooks::twoInstancesOnePostgres()
{
    IMAGES_REQUIRE_POSTGRES();
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    // The first attempt of each delivery fails, so retries are claimed by either instance.
    QList<WebhookReceiver::Answer> script;
    for (int i = 0; i < 12; ++i)
        script.append(WebhookReceiver::Answer{500});
    receiver.script(script);
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    // Two attempts in flight per instance at most, so both take part.
    const ServerSettings settings =
        settingsWith(webhookSection(fake, receiver, {{"concurrency", 2}}));
    ServerFixture a(QStringLiteral("postgres"), settings);
    QVERIFY(a.ready());
    QString error;
    const auto b = secondInstance(a, settings, &error);
    QVERIFY2(b, qPrintable(error));
    const QByteArray key = a.fundedKey(kCredit);
    QStringList ids;
    for (int i = 0; i < 12; ++i)
        ids.append(submit(a, key, receiver, QStringLiteral("pair %1").arg(i)));
    QTRY_COMPARE_WITH_TIMEOUT(
        count(a, "SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'delivered'"), 12, 30000);
    QTest::qWait(500);
    // Each (delivery, attempt) reached the receiver exactly once.
    QSet<QByteArray> pairs;
    for (const auto &r : receiver.requests()) {
        const QByteArray pair =
            r.header("x-switchyard-delivery") + '/' + r.header("x-switchyard-attempt");
        QVERIFY2(!pairs.contains(pair), pair.constData());
        pairs.insert(pair);
    }
    QCOMPARE(pairs.size(), 24);
    QCOMPARE(count(a, "SELECT COUNT(*) FROM webhook_attempts"), 24);
    QCOMPARE(count(a, "SELECT COUNT(DISTINCT instance) FROM webhook_attempts"), 2);
    b->stop();
}

// The core's alerts go out through this outbox (server/WebhookOutbox.h): an alert that fires
// is POSTed once, with its own event header, signed when a secret is set, logged like a
// task's delivery and listed by the control API with its event id.
void TestWebhooks::alertsThroughTheOutbox()
{
    QFETCH(QString, backend);
    AlertSettings alerts;
    alerts.balanceBelow = {kCredit - kCredit / 200}; // 0.995: the first image's hold crosses it
    alerts.webhookUrl = QStringLiteral("receiver");  // the rig's receiver, at /alerts
    START_RIG_WITH(rig, alerts, backend);
    const QByteArray writer = f.createToken({"webhooks:read", "webhooks:write"});
    int status = 0;
    const QString secret = control(f, writer, "/api/v1/webhooks/signing-secret", &status, "POST")
                               .value("secret")
                               .toString();
    QCOMPARE(status, 201);

    for (int i = 0; i < 3; ++i) // each charge stays below the threshold: one alert in all
        QCOMPARE(post(f, {{"prompt", QStringLiteral("a lighthouse %1").arg(i)}}, key).status, 200);
    QVERIFY(receiver.waitForRequests(1, 15000));
    QTest::qWait(500);
    QCOMPARE(receiver.requests().size(), 1);
    const WebhookReceiver::Request req = receiver.requests().at(0);
    QCOMPARE(req.path(), QByteArray("/alerts"));
    QVERIFY(req.header("x-switchyard-event").startsWith("alr_"));
    QVERIFY(!req.hasHeader("x-switchyard-task"));
    const QByteArray signed_ =
        req.header("webhook-id") + '.' + req.header("webhook-timestamp") + '.' + req.body;
    QCOMPARE(req.header("webhook-signature"),
             "v1," + QMessageAuthenticationCode::hash(
                         signed_, QByteArray::fromBase64(secret.mid(6).toLatin1()),
                         QCryptographicHash::Sha256)
                         .toBase64());
    const QJsonObject body = QJsonDocument::fromJson(req.body).object();
    QCOMPARE(body.value("type").toString(), QStringLiteral("balance_below"));
    QCOMPARE(body.value("threshold").toString(), QStringLiteral("0.995000000"));
    QCOMPARE(body.value("id").toString().toLatin1(), req.header("x-switchyard-event"));
    QVERIFY(Money::parseCredits(body.value("balance").toString()).value() < kCredit);
    QVERIFY(body.value("message").toString().contains(QStringLiteral("below the alert")));

    // In the delivery log, listed by event id.
    QTRY_COMPARE_WITH_TIMEOUT(
        count(f, "SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'delivered' AND body "
                 "<> ''"),
        1, 5000);
    const QJsonObject page = control(f, writer, "/api/v1/webhooks/deliveries");
    bool listed = false;
    for (const auto &d : page.value("data").toArray())
        listed = listed || d.toObject().value("event_id").toString() == body.value("id").toString();
    QVERIFY(listed);
}

// Two instances on one PostgreSQL database each see the balance below the threshold (each
// from its own charge): the alert is POSTed once, by the one whose write recorded it fired.
void TestWebhooks::alertOnceAcrossInstances()
{
    IMAGES_REQUIRE_POSTGRES();
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    ServerSettings settings = settingsWith(webhookSection(fake, receiver));
    settings.alerts.balanceBelow = {kCredit - kCredit / 200};
    settings.alerts.webhookUrl = receiver.url(QStringLiteral("/alerts"));
    ServerFixture a(QStringLiteral("postgres"), settings);
    QVERIFY(a.ready());
    QString error;
    const auto b = secondInstance(a, settings, &error);
    QVERIFY2(b, qPrintable(error));
    const QByteArray key = a.fundedKey(kCredit);
    HttpClient toB(quint16(b->host()->url().port()));
    const QJsonObject ask{{"prompt", "a bridge"}};
    const QByteArray body = QJsonDocument(ask).toJson(QJsonDocument::Compact);
    const QList<QPair<QByteArray, QByteArray>> headers{{"Authorization", "Bearer " + key},
                                                       {"Content-Type", "application/json"}};
    QCOMPARE(post(a, ask, key).status, 200); // a sees the crossing
    QVERIFY(receiver.waitForRequests(1, 15000));
    QCOMPARE(toB.request("POST", "/v1/images/generations", headers, body).status,
             200); // b sees the balance below too
    QCOMPARE(post(a, ask, key).status, 200);
    QTest::qWait(1000);
    QCOMPARE(receiver.requests().size(), 1);
    QCOMPARE(count(a, "SELECT COUNT(*) FROM webhook_deliveries WHERE body <> ''"), 1);
    b->stop();
}

QTEST_GUILESS_MAIN(TestWebhooks)
#include "tst_webhooks.moc"
