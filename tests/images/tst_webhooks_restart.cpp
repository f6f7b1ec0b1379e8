// Webhook deliveries survive the process: switchyard-server is SIGKILLed and started again on
// the same database. Killed between attempts, the delivery resumes on its schedule with the
// next attempt number (nothing lost, nothing repeated); killed during an attempt, the attempt
// is made again only once its lease has run out (at-least-once, never two at the same time).

#include "FakeUpstreamProcess.h"
#include "HttpClient.h"
#include "images/ImageStore.h"
#include "TestSupport.h"
#include "WebhookReceiver.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSqlQuery>
#include <QTemporaryFile>
#include <QTest>

namespace {

constexpr int kLeaseMs = 2500;

QString runCli(const QStringList &args, QByteArray *out = nullptr)
{
    return runProgram(QStringLiteral(SERVER_BINARY), args, out);
}

// Spins the event loop (the receiver lives on it) until pred() or the timeout.
template <class Pred> bool spinUntil(Pred pred, int timeoutMs)
{
    QElapsedTimer t;
    t.start();
    while (!pred() && t.elapsed() < timeoutMs)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    return pred();
}

// One switchyard-server process; its port once it listens.
struct Server
{
    QProcess process;
    QByteArray err;
    quint16 port = 0;

    bool start(const QString &config, const QStringList &where)
    {
        process.start(QStringLiteral(SERVER_BINARY),
                      QStringList{"serve", "--listen", "127.0.0.1:0", "--config", config} + where);
        const bool ok = spinUntil(
            [this] {
                err += process.readAllStandardError();
                return err.contains("listening on");
            },
            15000);
        const qsizetype at = err.indexOf("http://127.0.0.1:");
        if (!ok || at < 0)
            return false;
        port = quint16(err.mid(at + 17, err.indexOf(' ', at) - at - 17).toUInt());
        return true;
    }
    void kill()
    {
        process.kill(); // SIGKILL: no shutdown, nothing flushed
        process.waitForFinished(5000);
    }
};

} // namespace

class TestWebhooksRestart : public QObject
{
    Q_OBJECT
private slots:
    void killedBetweenAttempts_data() { addBackendRows(); }
    void killedBetweenAttempts();
    void killedDuringAnAttempt();

private:
    void run(const QString &backend, bool duringAttempt);
};

void TestWebhooksRestart::run(const QString &backend, bool duringAttempt)
{
    TestDatabase t(backend);
    if (!t.ready()) {
        if (qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") == QLatin1String("1"))
            QFAIL(qPrintable(t.skipReason()));
        QSKIP(qPrintable(t.skipReason()));
    }
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    receiver.script(
        {duringAttempt ? WebhookReceiver::Answer::silence() : WebhookReceiver::Answer{500}});
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    QTemporaryFile config;
    QVERIFY(config.open());
    // Retries after 1 s (the schedule scaled by 0.5); an attempt may take 2 s.
    config.write(
        QJsonDocument(
            QJsonObject{
                {"images",
                 QJsonObject{
                     {"providers",
                      QJsonObject{{"fake", QJsonObject{{"type", "openai"},
                                                       {"base_url", fake.base("/v1")},
                                                       {"keys", QJsonArray{"sk-up"}}}}}},
                     {"models",
                      QJsonArray{QJsonObject{{"id", "restart-image"}, {"provider", "fake"}}}},
                     {"default_model", "restart-image"},
                     {"webhooks",
                      QJsonObject{{"schedule_scale", 0.5},
                                  {"timeout_ms", 2000},
                                  {"lease_ms", kLeaseMs},
                                  {"poll_ms", 100},
                                  {"fetch", QJsonObject{{"allow_cidrs", QJsonArray{"127.0.0.0/8"}},
                                                        {"ca_file", receiver.caFile()}}}}}}}})
            .toJson());
    config.flush();
    const QStringList where = t.cliArgs();
    QByteArray key;
    QCOMPARE(runCli(QStringList{"keys", "create", "--name", "restart"} + where, &key), QString());
    QCOMPARE(runCli(QStringList{"credits", "grant", "--amount", "10"} + where), QString());

    Server first;
    QVERIFY2(first.start(config.fileName(), where), first.err.constData());
    HttpClient client(first.port);
    const HttpReply r = client.postJson(
        "/v1/images/generations",
        QJsonDocument(QJsonObject{{"prompt", "survives"}, {"callbackUrl", receiver.url()}})
            .toJson(QJsonDocument::Compact),
        key);
    QCOMPARE(r.status, 202);
    const QString taskId = r.json().value("id").toString();
    QVERIFY(spinUntil([&] { return receiver.requests().size() == 1; }, 15000));
    if (!duringAttempt)
        QTest::qWait(300); // the 500 is answered and its attempt recorded
    first.kill();

    Server second;
    QVERIFY2(second.start(config.fileName(), where), second.err.constData());
    QVERIFY(spinUntil([&] { return receiver.requests().size() >= 2; }, 20000));
    QTest::qWait(500);
    second.kill();

    const auto reqs = receiver.requests();
    QCOMPARE(reqs.size(), 2);
    const qint64 gap = reqs[1].elapsedMs - reqs[0].elapsedMs;
    QSqlDatabase db = t.config().open(QStringLiteral("check"));
    Store store(db, t.config().kind());
    const auto d = ImageStore::deliveryForTask(store, taskId);
    QVERIFY(d);
    QCOMPARE(d->status, QStringLiteral("delivered"));
    const auto attempts = ImageStore::attempts(store, d->id);
    if (duringAttempt) {
        // The attempt in flight was never recorded: it is made again, as attempt 1, once the
        // dead instance's lease ran out - never while it might still be going on.
        QCOMPARE(reqs[1].header("x-switchyard-attempt"), QByteArray("1"));
        QVERIFY2(gap >= kLeaseMs - 100, qPrintable(QString::number(gap)));
        QCOMPARE(attempts.size(), 1);
        QCOMPARE(attempts[0].status, 200);
    } else {
        // The schedule survived: attempt 2, about a second after attempt 1.
        QCOMPARE(reqs[1].header("x-switchyard-attempt"), QByteArray("2"));
        QVERIFY2(gap >= 950, qPrintable(QString::number(gap)));
        QCOMPARE(attempts.size(), 2);
        QCOMPARE(attempts[0].status, 500);
        QCOMPARE(attempts[1].status, 200);
    }
    QCOMPARE(reqs[0].body.isEmpty(), false);
    QCOMPARE(QJsonDocument::fromJson(reqs[1].body).object().value("id").toString(), taskId);
}

void TestWebhooksRestart::killedBetweenAttempts()
{
    QFETCH(QString, backend);
    run(backend, false);
}

void TestWebhooksRestart::killedDuringAnAttempt()
{
    run(QStringLiteral("sqlite"), true);
}

QTEST_GUILESS_MAIN(TestWebhooksRestart)
#include "tst_webhooks_restart.moc"
