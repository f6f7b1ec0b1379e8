// The test webhook receiver (tests/common/WebhookReceiver.h), driven the way the image
// family's callbacks will drive it: guarded POSTs with UrlPolicy::callback(), loopback allowed
// through allow_cidrs and the receiver's own certificate trusted through ca_file.

#include "upstream/GuardedFetch.h"
#include "WebhookReceiver.h"

#include <optional>
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonObject>
#include <QSslConfiguration>
#include <QSslSocket>
#include <QTemporaryDir>
#include <QTest>

using Answer = WebhookReceiver::Answer;

namespace {

// What the image family will use: callback(), plus loopback and the test's certificate.
UrlPolicy policyFor(const WebhookReceiver &receiver, int totalTimeoutMs = 10000)
{
    UrlPolicy p = UrlPolicy::callback(
        QJsonObject{{"allow_cidrs", QJsonArray{"127.0.0.0/8"}}, {"ca_file", receiver.caFile()}});
    p.totalTimeoutMs = totalTimeoutMs;
    return p;
}

struct Delivery
{
    FetchOutcome outcome;
    qint64 ms = 0;
};

// One delivery to its end: a POST without onData, so it ends at the answer's head.
Delivery post(GuardedFetch &fetch, const QString &url, const UrlPolicy &policy,
              const QByteArray &body = "{}", const QList<QByteArray> &headers = {})
{
    FetchRequest request;
    request.method = "POST";
    request.url = url;
    request.headers = headers;
    if (!request.headers.contains("Content-Type: application/json"))
        request.headers.prepend("Content-Type: application/json");
    request.body = body;
    std::optional<FetchOutcome> outcome;
    QElapsedTimer clock;
    clock.start();
    GuardedFetchCallPtr call = fetch.start(request, policy);
    call->onDone = [&outcome](const FetchOutcome &o) { outcome = o; };
    const QDeadlineTimer deadline(30000);
    while (!outcome && !deadline.hasExpired())
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 20);
    Delivery d;
    d.ms = clock.elapsed();
    if (outcome) {
        d.outcome = *outcome;
    } else {
        call->abort();
        d.outcome.error = FetchError::Failed;
        d.outcome.message = QStringLiteral("the test gave up after 30 s");
    }
    return d;
}

} // namespace

class TestWebhookReceiver : public QObject
{
    Q_OBJECT

private slots:
    void scriptedStatusesInOrder();
    void delayedAnswers();
    void neverAnswers();
    void redirectIsTheAnswer();
    void headersAndBodyRecorded();
    void largeBody();
    void expectContinue();
    void plainHttpMode();
    void sequentialDeliveries();
    void opensslMissing();
};

void TestWebhookReceiver::scriptedStatusesInOrder()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    QVERIFY(receiver.url().startsWith(QStringLiteral("https://127.0.0.1:")));
    QVERIFY(receiver.url().endsWith(QStringLiteral("/hook")));
    QVERIFY(QFile::exists(receiver.caFile()));
    receiver.script({{500}, {500}, {503}, {200}});
    receiver.setDefault({202});
    QList<int> signalled;
    connect(&receiver, &WebhookReceiver::received, this,
            [&signalled](int index) { signalled.append(index); });

    GuardedFetch fetch;
    const UrlPolicy policy = policyFor(receiver);
    const QList<int> expected = {500, 500, 503, 200, 202, 202};
    for (qsizetype i = 0; i < expected.size(); ++i) {
        const Delivery d = post(fetch, receiver.url(), policy);
        QCOMPARE(d.outcome.status, expected[i]);
        QCOMPARE(d.outcome.address, QStringLiteral("127.0.0.1"));
        if (expected[i] >= 500) {
            QCOMPARE(d.outcome.error, FetchError::Http);
            QCOMPARE(d.outcome.message, QStringLiteral("HTTP %1").arg(expected[i]));
        } else {
            QVERIFY2(d.outcome.ok(), qPrintable(d.outcome.message));
        }
    }
    QCOMPARE(receiver.scriptLeft(), 0);
    const QList<WebhookReceiver::Request> requests = receiver.requests();
    QCOMPARE(requests.size(), expected.size());
    for (qsizetype i = 0; i < expected.size(); ++i)
        QCOMPARE(requests[i].answer.status, expected[i]);
    QCOMPARE(signalled, (QList<int>{0, 1, 2, 3, 4, 5}));
    QCOMPARE(receiver.handshakeFailures(), 0);

    // A new script replaces what was left of the old one.
    receiver.script({{500}, {500}});
    receiver.script({{201}});
    QCOMPARE(post(fetch, receiver.url(), policy).outcome.status, 201);
    QCOMPARE(post(fetch, receiver.url(), policy).outcome.status, 202);
}

// A delay longer than the fetch's time is a timeout; a shorter one is waited for.
void TestWebhookReceiver::delayedAnswers()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    receiver.script({Answer::after(3000), Answer::after(300, 201)});
    GuardedFetch fetch;

    Delivery d = post(fetch, receiver.url(), policyFor(receiver, 1000));
    QCOMPARE(d.outcome.error, FetchError::Timeout);
    QCOMPARE(d.outcome.message, QStringLiteral("did not finish within 1000 ms"));
    // GuardedFetch's deadline is a coarse QTimer, which may fire up to 5 % early.
    QVERIFY2(d.ms >= 900 && d.ms < 2500, qPrintable(QString::number(d.ms)));
    QCOMPARE(d.outcome.address, QStringLiteral("127.0.0.1")); // connected, then waited
    QCOMPARE(receiver.requests().size(), 1); // recorded on arrival, before its answer
    QCOMPARE(receiver.requests()[0].answer.delayMs, 3000);

    d = post(fetch, receiver.url(), policyFor(receiver, 1000));
    QVERIFY2(d.outcome.ok(), qPrintable(d.outcome.message));
    QCOMPARE(d.outcome.status, 201);
    QVERIFY2(d.ms >= 290, qPrintable(QString::number(d.ms)));

    // The first answer's timer fires at 3 s on a connection the client has left: no harm.
    QTest::qWait(2000);
    d = post(fetch, receiver.url(), policyFor(receiver));
    QCOMPARE(d.outcome.status, 200);
    QCOMPARE(receiver.requests().size(), 3);
}

void TestWebhookReceiver::neverAnswers()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    receiver.script({Answer::silence(), Answer::silence()});
    GuardedFetch fetch;
    const Delivery d = post(fetch, receiver.url(), policyFor(receiver, 800));
    QCOMPARE(d.outcome.error, FetchError::Timeout);
    QCOMPARE(d.outcome.status, 0);
    QCOMPARE(receiver.requests().size(), 1);
    QVERIFY(receiver.requests()[0].answer.never);

    // A held connection is closed with the receiver; the client sees the connection drop.
    auto held = std::make_unique<WebhookReceiver>();
    QVERIFY2(held->start(), qPrintable(held->errorString()));
    held->script({Answer::silence()});
    FetchRequest request;
    request.method = "POST";
    request.url = held->url();
    request.body = "{}";
    std::optional<FetchOutcome> outcome;
    GuardedFetchCallPtr call = fetch.start(request, policyFor(*held));
    call->onDone = [&outcome](const FetchOutcome &o) { outcome = o; };
    QVERIFY(held->waitForRequests(1, 5000));
    held.reset();
    QTRY_VERIFY_WITH_TIMEOUT(outcome.has_value(), 5000);
    QVERIFY(outcome->error == FetchError::Broken || outcome->error == FetchError::Failed);
}

// Callbacks follow no redirect: a 302 is the answer, and nothing goes to its Location.
void TestWebhookReceiver::redirectIsTheAnswer()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    const QByteArray elsewhere = receiver.url(QStringLiteral("/elsewhere")).toLatin1();
    receiver.script({Answer::redirect(elsewhere)});
    GuardedFetch fetch;
    const Delivery d = post(fetch, receiver.url(), policyFor(receiver));
    QCOMPARE(d.outcome.error, FetchError::Http);
    QCOMPARE(d.outcome.status, 302);
    QCOMPARE(d.outcome.message, QStringLiteral("HTTP 302 (redirects are not followed)"));
    QCOMPARE(headerValue(d.outcome.headers, "location"), elsewhere);
    QCOMPARE(d.outcome.redirects, 0);
    QTest::qWait(200);
    QCOMPARE(receiver.requests().size(), 1);
    QCOMPARE(receiver.requests()[0].path(), QByteArray("/hook"));
}

void TestWebhookReceiver::headersAndBodyRecorded()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    receiver.setDefault({200, 0, false, "thanks", {"X-Receiver: test"}});
    GuardedFetch fetch;
    const QByteArray body = "{\"id\":\"img_1\",\"status\":\"completed\"}";
    const QDateTime before = QDateTime::currentDateTimeUtc();
    const Delivery d =
        post(fetch, receiver.url(QStringLiteral("/hooks/image?attempt=2")), policyFor(receiver),
             body, {"X-Switchyard-Event: image.completed", "X-Switchyard-Attempt: 2"});
    QVERIFY2(d.outcome.ok(), qPrintable(d.outcome.message));
    QCOMPARE(headerValue(d.outcome.headers, "x-receiver"), QByteArray("test"));
    QCOMPARE(headerValue(d.outcome.headers, "connection"), QByteArray("close"));
    QCOMPARE(receiver.requests().size(), 1);
    const WebhookReceiver::Request r = receiver.requests()[0];
    QCOMPARE(r.method, QByteArray("POST"));
    QCOMPARE(r.target, QByteArray("/hooks/image?attempt=2"));
    QCOMPARE(r.path(), QByteArray("/hooks/image"));
    QCOMPARE(r.body, body);
    QCOMPARE(r.header("CONTENT-TYPE"), QByteArray("application/json"));
    QCOMPARE(r.header("x-switchyard-event"), QByteArray("image.completed"));
    QCOMPARE(r.header("X-Switchyard-Attempt"), QByteArray("2"));
    QCOMPARE(r.header("content-length"), QByteArray::number(body.size()));
    QCOMPARE(r.header("host"), "127.0.0.1:" + QByteArray::number(receiver.port()));
    QCOMPARE(r.header("user-agent"), QByteArray("Switchyard"));
    QVERIFY(!r.hasHeader("cookie"));
    QVERIFY(!r.hasHeader("no-such-header"));
    QVERIFY(r.header("no-such-header").isEmpty());
    QVERIFY(
        r.headers.contains(std::pair<QByteArray, QByteArray>("Content-Type", "application/json")));
    QCOMPARE(r.answer.body, QByteArray("thanks"));
    QVERIFY(r.arrived.isValid());
    QVERIFY(r.arrived >= before.addMSecs(-1));
    QVERIFY(r.arrived <= QDateTime::currentDateTimeUtc());
    QVERIFY(r.elapsedMs >= 0);
}

// A body over 1 KiB (5 KB here, libcurl's threshold for Expect: 100-continue) arrives whole,
// with and without the Expect round trip.
void TestWebhookReceiver::largeBody()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    GuardedFetch fetch;
    QByteArray body = "{\"data\":\"";
    while (body.size() < 5000)
        body += "0123456789abcdef";
    body += "\"}";

    Delivery d = post(fetch, receiver.url(), policyFor(receiver), body);
    QVERIFY2(d.outcome.ok(), qPrintable(d.outcome.message));
    // With an explicit Expect header libcurl waits for "100 Continue" (1 s at the most).
    d = post(fetch, receiver.url(), policyFor(receiver), body, {"Expect: 100-continue"});
    QVERIFY2(d.outcome.ok(), qPrintable(d.outcome.message));
    qInfo("a 5 KB delivery with Expect: 100-continue took %lld ms", d.ms);
    QCOMPARE(receiver.requests().size(), 2);
    QVERIFY(!receiver.requests()[0].hasHeader("expect"));
    QCOMPARE(receiver.requests()[1].header("expect"), QByteArray("100-continue"));
    for (const WebhookReceiver::Request &r : receiver.requests()) {
        QCOMPARE(r.body.size(), body.size());
        QCOMPARE(r.body, body);
    }
}

// The 100 Continue round trip, step by step on a TLS socket of the test's own.
void TestWebhookReceiver::expectContinue()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    QSslSocket socket;
    QSslConfiguration config = socket.sslConfiguration();
    config.setCaCertificates(QSslCertificate::fromPath(receiver.caFile()));
    socket.setSslConfiguration(config);
    QByteArray got;
    connect(&socket, &QSslSocket::readyRead, this, [&] { got += socket.readAll(); });
    socket.connectToHostEncrypted(QStringLiteral("127.0.0.1"), receiver.port(),
                                  QStringLiteral("localhost"));
    QTRY_VERIFY_WITH_TIMEOUT(socket.isEncrypted(), 5000);

    const QByteArray body(5000, 'b');
    socket.write("POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                 QByteArray::number(body.size()) + "\r\nExpect: 100-continue\r\n\r\n");
    QTRY_COMPARE_WITH_TIMEOUT(got, QByteArray("HTTP/1.1 100 Continue\r\n\r\n"), 5000);
    QTest::qWait(100);
    QCOMPARE(receiver.requests().size(), 0); // nothing is answered before the body
    socket.write(body.left(2000));
    QTest::qWait(100);
    QCOMPARE(receiver.requests().size(), 0);
    socket.write(body.mid(2000));
    QVERIFY(receiver.waitForRequests(1, 5000));
    QTRY_VERIFY_WITH_TIMEOUT(socket.state() == QAbstractSocket::UnconnectedState, 5000);
    QVERIFY2(got.startsWith("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"), got.constData());
    QVERIFY(got.contains("\r\nConnection: close\r\n"));
    QCOMPARE(receiver.requests()[0].body, body);
}

// Mode::Http: no TLS, for the tests of "https is required".
void TestWebhookReceiver::plainHttpMode()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(WebhookReceiver::Mode::Http), qPrintable(receiver.errorString()));
    QVERIFY(receiver.url().startsWith(QStringLiteral("http://127.0.0.1:")));
    QVERIFY(receiver.caFile().isEmpty());
    GuardedFetch fetch;
    const UrlPolicy callback =
        UrlPolicy::callback(QJsonObject{{"allow_cidrs", QJsonArray{"127.0.0.0/8"}}});
    Delivery d = post(fetch, receiver.url(), callback);
    QCOMPARE(d.outcome.error, FetchError::Refused);
    QCOMPARE(d.outcome.message, QStringLiteral("https is required"));
    QCOMPARE(d.outcome.address, QString()); // nothing was dialled
    QTest::qWait(100);
    QCOMPARE(receiver.requests().size(), 0);

    // The receiver itself answers plain HTTP where a policy allows it.
    UrlPolicy lax = callback;
    lax.schemes = {QStringLiteral("http")};
    d = post(fetch, receiver.url(), lax);
    QVERIFY2(d.outcome.ok(), qPrintable(d.outcome.message));
    QCOMPARE(receiver.requests().size(), 1);
}

// Many deliveries one after another, each on a fresh TLS connection: the rate a benchmark of
// deliveries per second would see (printed).
void TestWebhookReceiver::sequentialDeliveries()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    GuardedFetch fetch;
    const UrlPolicy policy = policyFor(receiver);
    const int count = 200;
    QElapsedTimer clock;
    clock.start();
    for (int i = 0; i < count; ++i) {
        const Delivery d =
            post(fetch, receiver.url(), policy, "{\"n\":" + QByteArray::number(i) + "}");
        QVERIFY2(d.outcome.ok(),
                 qPrintable(QStringLiteral("delivery %1: %2").arg(i).arg(d.outcome.message)));
    }
    const qint64 ms = std::max<qint64>(1, clock.elapsed());
    qInfo("%d sequential HTTPS deliveries in %lld ms: %.0f per second", count, ms,
          count * 1000.0 / double(ms));
    const QList<WebhookReceiver::Request> requests = receiver.requests();
    QCOMPARE(requests.size(), count);
    for (int i = 0; i < count; ++i)
        QCOMPARE(requests[i].body, "{\"n\":" + QByteArray::number(i) + "}");
    for (int i = 1; i < count; ++i)
        QVERIFY(requests[i].elapsedMs >= requests[i - 1].elapsedMs);
    QCOMPARE(receiver.handshakeFailures(), 0);
}

// Without the openssl program, start() fails and says why.
void TestWebhookReceiver::opensslMissing()
{
    QTemporaryDir empty;
    QVERIFY(empty.isValid());
    const QByteArray path = qgetenv("PATH");
    qputenv("PATH", QFile::encodeName(empty.path()));
    WebhookReceiver receiver;
    const bool started = receiver.start();
    qputenv("PATH", path);
    QVERIFY(!started);
    QVERIFY2(receiver.errorString().contains(QStringLiteral("openssl program is not installed")),
             qPrintable(receiver.errorString()));
    // Plain HTTP needs no certificate.
    QVERIFY2(receiver.start(WebhookReceiver::Mode::Http), qPrintable(receiver.errorString()));
}

QTEST_GUILESS_MAIN(TestWebhookReceiver)
#include "tst_webhook_receiver.moc"
