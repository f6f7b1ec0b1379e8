// ProviderCall, the one upstream call of every family, against the fake upstream
// (tests/fake_upstream) as a separate process: the error mapping table, keys in rotation and
// resting, the retry before anything was handed on and none after, key scrubbing, the three
// delivery modes and abort.
#include "FakeUpstreamProcess.h"
#include "upstream/ProviderCall.h"

#include <memory>
#include <optional>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>

namespace {

const QString kKeyOne = QStringLiteral("sk-provider-call-key-0001");
const QString kKeyTwo = QStringLiteral("sk-provider-call-key-0002");
const QString kKeyThree = QStringLiteral("sk-provider-call-key-0003");

const QByteArray kChat = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
const QByteArray kStreamedChat =
    R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";

// Everything a receiver heard, in order.
struct Recorder : ProviderCall::Receiver
{
    std::optional<UpstreamAnswer> answer;
    int startedStatus = 0;
    QByteArray data;
    std::optional<UpstreamError> end;
    QString endMessage;
    int events = 0;

    void answered(const UpstreamAnswer &a) override
    {
        ++events;
        answer = a;
    }
    void started(int status, const HttpHeaders &) override
    {
        ++events;
        startedStatus = status;
    }
    void received(const QByteArray &d) override { data += d; }
    void ended(UpstreamError error, const QString &message) override
    {
        ++events;
        end = error;
        endMessage = message;
    }
    bool finished() const { return answer || end; }
};

UpstreamProvider provider(const FakeUpstreamProcess &fake, const QStringList &keys)
{
    UpstreamProvider p;
    p.name = QStringLiteral("fake");
    p.baseUrl = fake.base();
    p.keys = keys;
    p.firstByteTimeoutMs = 3000;
    p.totalTimeoutMs = 10'000;
    return p;
}

ProviderCall::Request chat(const QList<QByteArray> &extra = {},
                           ProviderCall::Mode mode = ProviderCall::Mode::Whole)
{
    ProviderCall::Request r;
    r.url = "/chat/completions";
    r.headers = {"Content-Type: application/json"};
    r.headers.append(extra);
    r.body = mode == ProviderCall::Mode::Whole ? kChat : kStreamedChat;
    r.configPath = QStringLiteral("test.providers");
    r.mode = mode;
    return r;
}

// The keys the fake saw, in order (masked by the fake to their last 4 characters).
QStringList keysSeen(const QString &log)
{
    QStringList keys;
    QFile f(log);
    if (!f.open(QIODevice::ReadOnly))
        return keys;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (!line.trimmed().isEmpty())
            keys.append(QJsonDocument::fromJson(line)
                            .object()
                            .value("headers")
                            .toObject()
                            .value("authorization")
                            .toString()
                            .right(4));
    return keys;
}

} // namespace

class TestProviderCall : public QObject
{
    Q_OBJECT

    // Runs one call to its end and returns what the receiver heard.
    std::shared_ptr<Recorder> run(UpstreamClient &client, KeyRotation &keys,
                                  const UpstreamProvider &p, ProviderCall::Request request)
    {
        request.url = p.baseUrl.toUtf8() + request.url;
        auto recorder = std::make_shared<Recorder>();
        ProviderCall::start(client, keys, p, std::move(request), recorder);
        [&] { QTRY_VERIFY_WITH_TIMEOUT(recorder->finished(), 15'000); }();
        return recorder;
    }

private slots:
    // The mapping table, each row from a real answer of the fake (an injected fault).
    void mapping_data()
    {
        QTest::addColumn<QByteArray>("fault");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("says");
        QTest::addColumn<QByteArray>("retryAfter");
        QTest::newRow("429") << QByteArray("429:7") << 429 << "upstream_rate_limited"
                             << ""
                             << "is rate limiting requests" << QByteArray("7");
        QTest::newRow("429 default") << QByteArray("429") << 429 << "upstream_rate_limited"
                                     << ""
                                     << "rate limiting" << QByteArray("2");
        QTest::newRow("401") << QByteArray("401") << 502 << "upstream_auth_failed"
                             << "upstream_error"
                             << "the operator should check test.providers.fake.keys"
                             << QByteArray();
        QTest::newRow("403") << QByteArray("403") << 502 << "upstream_auth_failed"
                             << "upstream_error"
                             << "refused Switchyard's credentials (HTTP 403)" << QByteArray();
        QTest::newRow("408") << QByteArray("408") << 504 << "upstream_timeout"
                             << "upstream_error"
                             << "timed out (HTTP 408)" << QByteArray();
        QTest::newRow("504") << QByteArray("504") << 504 << "upstream_timeout"
                             << "upstream_error"
                             << "timed out (HTTP 504)" << QByteArray();
        QTest::newRow("500") << QByteArray("500") << 502 << "upstream_failed"
                             << "upstream_error"
                             << "failed (HTTP 500)" << QByteArray();
        QTest::newRow("529") << QByteArray("529") << 502 << "upstream_failed"
                             << "upstream_error"
                             << "failed (HTTP 529)" << QByteArray();
        QTest::newRow("413") << QByteArray("413") << 413 << "upstream_rejected"
                             << ""
                             << "refused the request as too large" << QByteArray();
        QTest::newRow("400") << QByteArray("400") << 400 << "upstream_rejected"
                             << "invalid_request_error"
                             << "rejected the request (HTTP 400)" << QByteArray();
        QTest::newRow("404") << QByteArray("404") << 400 << "upstream_rejected"
                             << "invalid_request_error"
                             << "rejected the request (HTTP 404)" << QByteArray();
        QTest::newRow("reset") << QByteArray("reset") << 502 << "upstream_failed"
                               << "upstream_error"
                               << "The upstream provider 'fake' failed" << QByteArray();
        QTest::newRow("cut body") << QByteArray("reset-mid-body") << 502 << "upstream_failed"
                                  << "upstream_error"
                                  << "The upstream provider 'fake' failed" << QByteArray();
        QTest::newRow("first byte late")
            << QByteArray("slow-first-byte:5000") << 504 << "upstream_timeout"
            << "upstream_error"
            << "did not answer in time" << QByteArray();
    }
    void mapping()
    {
        QFETCH(QByteArray, fault);
        QFETCH(int, status);
        QFETCH(QString, code);
        QFETCH(QString, type);
        QFETCH(QString, says);
        QFETCH(QByteArray, retryAfter);
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        UpstreamClient client;
        KeyRotation keys;
        UpstreamProvider p = provider(fake, {kKeyOne});
        p.firstByteTimeoutMs = 1000;
        const auto r = run(client, keys, p, chat({"x-fake-fault: " + fault}));
        QVERIFY(r->answer);
        const UpstreamAnswer &a = *r->answer;
        QCOMPARE(a.status, status);
        QCOMPARE(a.code, code);
        QCOMPARE(a.type, type);
        QVERIFY2(a.message.contains(says), qPrintable(a.message));
        QVERIFY(a.message.contains(QLatin1String("'fake'")));
        QCOMPARE(a.retryAfter, retryAfter);
        QVERIFY(a.body.isEmpty());
        QCOMPARE(r->events, 1);
    }

    void unreachable()
    {
        QTcpServer listener;
        QVERIFY(listener.listen(QHostAddress::LocalHost, 0));
        const quint16 port = listener.serverPort();
        listener.close(); // nothing listens there now
        UpstreamClient client;
        KeyRotation keys;
        UpstreamProvider p;
        p.name = QStringLiteral("gone");
        p.baseUrl = QStringLiteral("http://127.0.0.1:%1/v1").arg(port);
        p.keys = {kKeyOne, kKeyTwo};
        const auto r = run(client, keys, p, chat());
        QVERIFY(r->answer);
        QCOMPARE(r->answer->status, 502);
        QCOMPARE(r->answer->code, QStringLiteral("upstream_unreachable"));
        QVERIFY(r->answer->message.startsWith("Could not reach the upstream provider 'gone'"));
        // A failed connection is not retried on the other key, and rests neither: the rotation
        // goes on from the key used (a rested key would be skipped).
        QCOMPARE(keys.pick(p), kKeyTwo);
        QCOMPARE(keys.pick(p), kKeyOne);
    }

    // The Retry-After kept is whole seconds; anything else becomes 1. And a status that is no
    // answer at all (a redirect: calls follow none) is a failure.
    void mapperEdges()
    {
        UpstreamProvider p;
        p.name = QStringLiteral("x");
        const auto retry = [&](const QByteArray &value) {
            return ProviderCall::failure(429, {{"retry-after", value}}, {}, p, {}).retryAfter;
        };
        QCOMPARE(retry(" 12 "), QByteArray("12"));
        QCOMPARE(retry("0"), QByteArray("0"));
        QCOMPARE(retry("-3"), QByteArray("1"));
        QCOMPARE(retry("Wed, 21 Oct 2026 07:28:00 GMT"), QByteArray("1"));
        QCOMPARE(ProviderCall::failure(429, {}, {}, p, {}).retryAfter, QByteArray("1"));
        const UpstreamAnswer redirect = ProviderCall::failure(302, {}, {}, p, {});
        QCOMPARE(redirect.status, 502);
        QCOMPARE(redirect.code, QStringLiteral("upstream_failed"));
        QVERIFY(redirect.message.contains("answered HTTP 302"));
        // The upstream's message, from each shape providers use.
        QCOMPARE(ProviderCall::errorMessage(R"({"error":{"message":"m1","type":"t"}})"),
                 QStringLiteral("m1"));
        QCOMPARE(ProviderCall::errorMessage(R"({"type":"error","error":{"message":"m2"}})"),
                 QStringLiteral("m2"));
        QCOMPARE(ProviderCall::errorMessage(R"({"statusCode":400,"message":"m3"})"),
                 QStringLiteral("m3"));
        QCOMPARE(ProviderCall::errorMessage(R"({"detail":"m4"})"), QStringLiteral("m4"));
        QCOMPARE(ProviderCall::errorMessage("<html><b>Bad</b> gateway</html>"),
                 QStringLiteral("Bad gateway"));
        QCOMPARE(ProviderCall::errorMessage(""), QStringLiteral("(no message)"));
    }

    // A key the upstream quotes, and anything shaped like a key, never reaches the message.
    void scrubbed()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        UpstreamClient client;
        KeyRotation keys;
        const UpstreamProvider p = provider(fake, {kKeyOne});
        for (const QByteArray fault : {"400", "429", "500"}) {
            const auto r =
                run(client, keys, p, chat({"x-fake-fault: " + fault, "x-fake-echo-key: 1"}));
            QVERIFY(r->answer);
            QVERIFY2(r->answer->message.contains("[redacted]"), qPrintable(r->answer->message));
            QVERIFY(!r->answer->message.contains(kKeyOne));
            QVERIFY(!r->answer->message.contains(kKeyOne.right(12)));
        }
    }

    // A 429 or 5xx at the head rests the key and the next key gets the same request; the
    // rested key is skipped by the calls that follow.
    void rotation()
    {
        QTemporaryDir dir;
        const QString log = dir.filePath("fake.log");
        FakeUpstreamProcess fake;
        QVERIFY(fake.start({"--log", log, "--key-fault", kKeyOne + "=429"}));
        UpstreamClient client;
        KeyRotation keys;
        const UpstreamProvider p = provider(fake, {kKeyOne, kKeyTwo});
        auto r = run(client, keys, p, chat());
        QVERIFY(r->answer);
        QCOMPARE(r->answer->status, 200);
        QVERIFY(QJsonDocument::fromJson(r->answer->body).object().contains("choices"));
        QCOMPARE(r->answer->contentType.left(16), QByteArray("application/json"));
        r = run(client, keys, p, chat());
        QVERIFY(r->answer);
        QCOMPARE(r->answer->status, 200);
        QCOMPARE(keysSeen(log), (QStringList{"0001", "0002", "0002"}));
    }

    // Every key failing: each is tried once (or maxKeys of them), the last answer is mapped.
    void everyKeyFails_data()
    {
        QTest::addColumn<int>("maxKeys");
        QTest::addColumn<int>("tried");
        QTest::newRow("every key") << 0 << 3;
        QTest::newRow("two keys") << 2 << 2;
        QTest::newRow("one key") << 1 << 1;
    }
    void everyKeyFails()
    {
        QFETCH(int, maxKeys);
        QFETCH(int, tried);
        QTemporaryDir dir;
        const QString log = dir.filePath("fake.log");
        FakeUpstreamProcess fake;
        QVERIFY(fake.start({"--log", log, "--fault", "503"}));
        UpstreamClient client;
        KeyRotation keys;
        const UpstreamProvider p = provider(fake, {kKeyOne, kKeyTwo, kKeyThree});
        ProviderCall::Request request = chat();
        request.maxKeys = maxKeys;
        const auto r = run(client, keys, p, request);
        QVERIFY(r->answer);
        QCOMPARE(r->answer->status, 502);
        QCOMPARE(r->answer->code, QStringLiteral("upstream_failed"));
        const QStringList seen = keysSeen(log);
        QCOMPARE(seen.size(), tried);
        QCOMPARE(QSet<QString>(seen.begin(), seen.end()).size(), tried);
    }

    // A keyless provider (a local upstream): no key header, nothing to rest or rotate, so a
    // 5xx is not retried.
    void keyless()
    {
        QTemporaryDir dir;
        const QString log = dir.filePath("fake.log");
        FakeUpstreamProcess fake;
        QVERIFY(fake.start({"--log", log, "--fault", "503"}));
        UpstreamClient client;
        KeyRotation keys;
        const auto r = run(client, keys, provider(fake, {}), chat());
        QVERIFY(r->answer);
        QCOMPARE(r->answer->status, 502);
        QCOMPARE(keysSeen(log), QStringList{QString()});
    }

    // Streams: a 5xx head is retried on the next key before anything is handed on; once the
    // answer started, a failure ends it (no retry), the message scrubbed.
    void streamRetriedOnlyBeforeStart()
    {
        QTemporaryDir dir;
        const QString log = dir.filePath("fake.log");
        FakeUpstreamProcess fake;
        QVERIFY(fake.start({"--log", log, "--key-fault", kKeyOne + "=503", "--key-fault",
                            kKeyTwo + "=reset-mid-stream:2"}));
        UpstreamClient client;
        KeyRotation keys;
        const UpstreamProvider p = provider(fake, {kKeyOne, kKeyTwo, kKeyThree});
        const auto r = run(client, keys, p, chat({}, ProviderCall::Mode::Stream));
        QVERIFY(!r->answer);
        QCOMPARE(r->startedStatus, 200);
        QVERIFY2(r->data.contains("data: {"), r->data.constData());
        QVERIFY(!r->data.contains("[DONE]"));
        QVERIFY(r->end);
        QVERIFY(*r->end != UpstreamError::None);
        // Key one refused at the head, key two started and broke: key three never asked.
        QCOMPARE(keysSeen(log), (QStringList{"0001", "0002"}));
    }

    void streamWhole()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        UpstreamClient client;
        KeyRotation keys;
        const auto r =
            run(client, keys, provider(fake, {kKeyOne}), chat({}, ProviderCall::Mode::Stream));
        QCOMPARE(r->startedStatus, 200);
        QVERIFY(r->data.endsWith("data: [DONE]\n\n"));
        QVERIFY(r->end && *r->end == UpstreamError::None);
        QVERIFY(r->endMessage.isEmpty());
        QCOMPARE(r->events, 2); // started, ended
    }

    // A stream's error answer is mapped, not handed on.
    void streamFailureMapped()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        UpstreamClient client;
        KeyRotation keys;
        const auto r = run(client, keys, provider(fake, {kKeyOne}),
                           chat({"x-fake-fault: 400"}, ProviderCall::Mode::Stream));
        QVERIFY(r->answer);
        QCOMPARE(r->answer->status, 400);
        QCOMPARE(r->startedStatus, 0);
        QVERIFY(r->data.isEmpty());
    }

    // A relay hands on every status as it is (after the retries), except 401.
    void relay()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        UpstreamClient client;
        KeyRotation keys;
        const UpstreamProvider p = provider(fake, {kKeyOne});
        for (const QByteArray fault : {"404", "403", "429", "500"}) {
            const auto r =
                run(client, keys, p, chat({"x-fake-fault: " + fault}, ProviderCall::Mode::Relay));
            QVERIFY(!r->answer);
            QCOMPARE(r->startedStatus, fault.toInt());
            QVERIFY2(r->data.contains("error"), r->data.constData());
            QVERIFY(r->end && *r->end == UpstreamError::None);
        }
        const auto refused =
            run(client, keys, p, chat({"x-fake-fault: 401"}, ProviderCall::Mode::Relay));
        QVERIFY(refused->answer);
        QCOMPARE(refused->answer->code, QStringLiteral("upstream_auth_failed"));
        QCOMPARE(refused->startedStatus, 0);
        QVERIFY(refused->data.isEmpty());
    }

    // The caller's bounds: a whole answer over maxAnswerBytes is refused, not collected; the
    // request's total timeout replaces the provider's.
    void bounds_data()
    {
        QTest::addColumn<QByteArray>("directive");
        QTest::addColumn<qsizetype>("maxBytes");
        QTest::addColumn<int>("totalMs");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("code");
        QTest::newRow("too large") << QByteArray("x-fake-chunks: 2000") << qsizetype(1024) << 0
                                   << 502 << "upstream_too_large";
        QTest::newRow("total timeout") << QByteArray("x-fake-delay-ms: 3000") << qsizetype(1 << 20)
                                       << 300 << 504 << "upstream_timeout";
    }
    void bounds()
    {
        QFETCH(QByteArray, directive);
        QFETCH(qsizetype, maxBytes);
        QFETCH(int, totalMs);
        QFETCH(int, status);
        QFETCH(QString, code);
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        UpstreamClient client;
        KeyRotation keys;
        ProviderCall::Request request = chat({directive});
        request.maxAnswerBytes = maxBytes;
        request.totalTimeoutMs = totalMs;
        const auto r = run(client, keys, provider(fake, {kKeyOne}), request);
        QVERIFY(r->answer);
        QCOMPARE(r->answer->status, status);
        QCOMPARE(r->answer->code, code);
        QVERIFY(r->answer->body.isEmpty());
    }

    // abort(): the upstream sees its client leave; the receiver hears nothing, and the call
    // holds it no more.
    void abortStops()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        UpstreamClient client;
        KeyRotation keys;
        const UpstreamProvider p = provider(fake, {kKeyOne});
        ProviderCall::Request request = chat({"x-fake-delay-ms: 2000"});
        request.url = p.baseUrl.toUtf8() + request.url;
        auto recorder = std::make_shared<Recorder>();
        auto call = ProviderCall::start(client, keys, p, std::move(request), recorder);
        QTest::qWait(300);
        call->abort();
        QCOMPARE(recorder.use_count(), 1L);
        // The fake counts a request whose client left as cancelled.
        bool cancelled = false;
        for (int i = 0; i < 50 && !cancelled; ++i) {
            ProviderCall::Request stats;
            stats.method = "GET";
            stats.url = fake.url().toUtf8() + "/fake/stats";
            auto got = std::make_shared<std::optional<UpstreamAnswer>>();
            ProviderCall::start(client, keys, p, stats,
                                [got](const UpstreamAnswer &a) { *got = a; });
            QTRY_VERIFY(got->has_value());
            cancelled =
                QJsonDocument::fromJson((*got)->body).object().value("cancelled").toInt() == 1;
            if (!cancelled)
                QTest::qWait(50);
        }
        QVERIFY(cancelled);
        QTest::qWait(2200); // past the answer the fake would have sent
        QCOMPARE(recorder->events, 0);
    }
};

QTEST_GUILESS_MAIN(TestProviderCall)
#include "tst_provider_call.moc"
