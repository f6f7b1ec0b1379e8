// The gateway end to end inside one process: a real server (ServerFixture) routed to the fake
// upstream program, spoken to over raw sockets so streaming can be watched event by event.

#include "FakeUpstreamProcess.h"
#include "gateway/GatewayTables.h"
#include "llm/CostBound.h"
#include "llm/GatewayCall.h"
#include "llm/GatewayFamily.h"
#include "llm/ProviderRegistry.h"
#include "llm/Relay.h"
#include "Money.h"
#include "Pipeline.h"
#include "ServerFixture.h"

#include <functional>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSignalSpy>
#include <QSqlQuery>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <future>
#include <memory>

namespace {

// The fake upstream, with its counters.
class Fake : public FakeUpstreamProcess
{
public:
    using FakeUpstreamProcess::FakeUpstreamProcess;
    Fake() : FakeUpstreamProcess(QStringList{}) {}
    QJsonObject stats() const { return HttpClient(port()).get("/fake/stats").json(); }
};

// An upstream that answers every request with the same raw bytes, from a thread of its own
// (the test thread blocks on its client sockets). For answers the fake upstream cannot give.
class RawUpstream
{
public:
    explicit RawUpstream(QByteArray response) : m_response(std::move(response))
    {
        m_thread.start();
        m_server = new QTcpServer;
        m_server->moveToThread(&m_thread);
        QMetaObject::invokeMethod(
            m_server,
            [this] {
                m_server->listen(QHostAddress::LocalHost, 0);
                QObject::connect(m_server, &QTcpServer::newConnection, m_server, [this] {
                    while (QTcpSocket *c = m_server->nextPendingConnection()) {
                        QObject::connect(c, &QTcpSocket::readyRead, c, [this, c] {
                            if (c->readAll().contains("\r\n\r\n"))
                                c->write(m_response);
                        });
                    }
                });
                m_port = m_server->serverPort();
            },
            Qt::BlockingQueuedConnection);
    }
    ~RawUpstream()
    {
        QMetaObject::invokeMethod(
            m_server, [this] { delete m_server; }, Qt::BlockingQueuedConnection);
        m_thread.quit();
        m_thread.wait();
    }
    QString base() const { return QStringLiteral("http://127.0.0.1:%1/v1").arg(m_port); }

    // A chunked text/event-stream answer made of `events`, left open when `end` is false.
    static QByteArray stream(const QList<QByteArray> &events, bool end = true)
    {
        QByteArray out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n";
        for (const QByteArray &e : events)
            out += QByteArray::number(e.size(), 16) + "\r\n" + e + "\r\n";
        if (end)
            out += "0\r\n\r\n";
        return out;
    }

private:
    QByteArray m_response;
    QThread m_thread;
    QTcpServer *m_server = nullptr;
    quint16 m_port = 0;
};

quint16 closedPort()
{
    QTcpServer s;
    s.listen(QHostAddress::LocalHost, 0);
    return s.serverPort(); // closed when s goes out of scope
}

ServerSettings settingsFor(const Fake &fake, const QJsonObject &overrides = {})
{
    QJsonObject providers{
        {"openai", QJsonObject{{"base_url", fake.base()}, {"keys", QJsonArray{"up-k1", "up-k2"}}}},
        {"anthropic", QJsonObject{{"base_url", fake.base()}, {"keys", QJsonArray{"up-ka"}}}},
        {"deepseek", QJsonObject{{"base_url", fake.base()}, {"keys", QJsonArray{"up-kd"}}}},
        // Refreshed on demand only: the fake counts no catalog fetch the test did not ask for.
        {"openrouter", QJsonObject{{"base_url", fake.base("/api/v1")},
                                   {"keys", QJsonArray{"up-ko"}},
                                   {"refresh_minutes", 0}}}};
    for (auto it = overrides.begin(); it != overrides.end(); ++it) {
        QJsonObject p = providers.value(it.key()).toObject();
        const QJsonObject o = it.value().toObject();
        for (auto f = o.begin(); f != o.end(); ++f)
            p.insert(f.key(), f.value());
        providers.insert(it.key(), p);
    }
    ServerSettings s = ServerSettings::defaults();
    s.familySections.insert("gateway", QJsonObject{{"providers", providers}});
    s.tiers[QStringLiteral("default")].perMinute.insert(QStringLiteral("chat"), 0);
    return s;
}

// The gateway section of settings as the family reads it.
GatewayConfig gatewayConfig(const ServerSettings &s)
{
    return GatewayFamily::parse(s.familySections.value("gateway").toObject());
}

// Sets gateway.KEY in settings.
void setGateway(ServerSettings &s, const QString &key, const QJsonValue &value)
{
    QJsonObject g = s.familySections.value("gateway").toObject();
    g.insert(key, value);
    s.familySections.insert("gateway", g);
}

// Runs a blocking request on another thread while this one serves its events: the gateway
// family's registry lives on the test's thread (the main thread of the programs) and refreshes
// catalogs there.
HttpReply whileServing(const std::function<HttpReply()> &request)
{
    auto reply = std::async(std::launch::async, request);
    while (reply.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    return reply.get();
}

// The fake upstream, a server routed to it (SQLite), an API key and ten credits: a request
// without max_tokens holds up to its model's max_output_tokens (1.28 credits on vendorB-5.4).
struct Rig
{
    explicit Rig(const QStringList &fakeArgs = {}, const QJsonObject &overrides = {},
                 const std::function<void(ServerSettings &)> &tweak = {})
        : fake(fakeArgs), f(QStringLiteral("sqlite"), tweaked(settingsFor(fake, overrides), tweak))
    {
        if (f.ready()) {
            key = f.createKey();
            f.grant(kGranted);
        }
    }
    static constexpr qint64 kGranted = 10 * Money::kUnitsPerCredit;
    static ServerSettings tweaked(ServerSettings s, const std::function<void(ServerSettings &)> &t)
    {
        if (t)
            t(s);
        return s;
    }
    Fake fake;
    ServerFixture f;
    QByteArray key;
};

QByteArray chat(const QString &model, const QString &text, QJsonObject extra = {})
{
    extra.insert("model", model);
    extra.insert("messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", text}}});
    return QJsonDocument(extra).toJson(QJsonDocument::Compact);
}

QByteArray request(const QByteArray &path, const QByteArray &key, const QByteArray &body,
                   const QByteArray &extraHeaders = {})
{
    return "POST " + path + " HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + key +
           "\r\nContent-Type: application/json\r\n" + extraHeaders +
           "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body;
}

// Connects to the server and sends one request.
bool send(QTcpSocket &s, quint16 port, const QByteArray &bytes)
{
    s.connectToHost(QHostAddress::LocalHost, port);
    if (!s.waitForConnected())
        return false;
    s.write(bytes);
    return true;
}

// Reads from a socket until `done(buffer)` holds (or the timeout); returns everything read.
QByteArray readUntil(QTcpSocket &s, QByteArray *buffer,
                     const std::function<bool(const QByteArray &)> &done, int timeoutMs = 10'000)
{
    QElapsedTimer t;
    t.start();
    while (!done(*buffer) && t.elapsed() < timeoutMs) {
        if (s.bytesAvailable() == 0)
            s.waitForReadyRead(50);
        buffer->append(s.readAll());
    }
    return *buffer;
}

// Reads from a socket until `marker` has arrived (or the timeout); returns everything read.
QByteArray readUntil(QTcpSocket &s, QByteArray *buffer, const QByteArray &marker,
                     int timeoutMs = 10'000)
{
    return readUntil(
        s, buffer, [&marker](const QByteArray &b) { return b.contains(marker); }, timeoutMs);
}

QList<UsageRecord> usageFor(ServerFixture &f)
{
    UsageQuery q;
    q.accountId = f.store().defaultAccountId();
    q.limit = 1000;
    return f.store().usage(q).records;
}

qint64 accountBalance(ServerFixture &f)
{
    return f.store().balance(f.store().defaultAccountId());
}

// The default account's ledger, newest first.
QList<LedgerEntry> accountLedger(ServerFixture &f)
{
    return f.store().ledger(f.store().defaultAccountId(), 1000);
}

// Waits until the server has written its usage records (the writer commits asynchronously for
// unbilled ones).
QList<UsageRecord> waitUsage(ServerFixture &f, int count)
{
    QList<UsageRecord> r;
    for (int i = 0; i < 100; ++i) {
        f.service().flush();
        r = usageFor(f);
        if (r.size() >= count)
            break;
        QTest::qWait(20);
    }
    return r;
}

// A JSON object's compact bytes.
QByteArray compactJson(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

// A messages-protocol body with one user turn.
QByteArray messagesBody(const QString &model, const QString &text, QJsonObject extra = {})
{
    extra.insert("model", model);
    extra.insert("messages", QJsonArray{QJsonObject{{"role", "user"}, {"content", text}}});
    return compactJson(extra);
}

// The headers of an API-key request on `path` (the messages protocol's version included).
QList<QPair<QByteArray, QByteArray>> apiHeaders(const QByteArray &key)
{
    return {{"Authorization", "Bearer " + key},
            {"anthropic-version", "2023-06-01"},
            {"Content-Type", "application/json"}};
}

// A client that has sent a POST with the key's headers on a connection of its own, without
// waiting: its answer is read with readReply().
std::unique_ptr<HttpClient> posted(ServerFixture &f, const QByteArray &path, const QByteArray &key,
                                   const QByteArray &body)
{
    auto c = std::make_unique<HttpClient>(f.port());
    c->send("POST", path, apiHeaders(key), body);
    return c;
}

// Whether a 402 is in the route's envelope: the messages protocol's on /v1/messages, else
// OpenAI's, with the admission's message.
bool isRefusal(const HttpReply &r, bool messages)
{
    const QJsonObject body = r.json();
    const QJsonObject error = body.value("error").toObject();
    if (r.status != 402 || !error.value("message").toString().startsWith("Insufficient credits"))
        return false;
    const QString type = error.value("type").toString();
    return messages ? body.value("type").toString() == u"error" && type == u"billing_error"
                    : type == u"insufficient_credits";
}

// What the gateway holds for a request on `protocol` to `model`, as it bounds it.
qint64 holdOf(ServerFixture &f, Protocol protocol, const QString &model, const QByteArray &body)
{
    const auto snapshot = f.services().family<GatewayFamily>()->registry().snapshot();
    const ResolvedModel m = ProviderRegistry::resolve(
        *snapshot, model,
        protocol == Protocol::Messages    ? QStringLiteral("messages")
        : protocol == Protocol::Responses ? QStringLiteral("responses")
                                          : QStringLiteral("chat.completions"));
    // The responses protocol goes upstream as responses, as the route sends it.
    const Protocol upstream =
        protocol == Protocol::Responses ? protocol : LlmProtocol::upstreamOf(m.provider.type);
    const auto relay = Relay::create(protocol, upstream, m.entry.id);
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    relay->prepare(o, m.entry.upstreamModel);
    return CostBound::text(protocol, o, relay->upstreamBody().size(), m.entry,
                           relay->defaultMaxTokens())
        .units;
}

} // namespace

class TestGateway : public QObject
{
    Q_OBJECT
private slots:
    void billedChat_data() { addBackendRows(); }
    void billedChat()
    {
        Fake fake;
        SY_START_SERVER(f, settingsFor(fake));
        const QByteArray key = f.createKey();
        // Without max_tokens the request holds 128,000 output tokens at 10 credits per 1M.
        f.grant(2 * Money::kUnitsPerCredit);
        const qint64 before = accountBalance(f);

        HttpReply r = f.client().postJson(
            "/v1/chat/completions", chat("vendorB-5.4", "one two three [fake chunks=5]"), key);
        QCOMPARE(r.status, 200);
        const QJsonObject body = r.json();
        QCOMPARE(body.value("model").toString(), QStringLiteral("vendorB-5.4"));
        const QJsonObject usage = body.value("usage").toObject();
        const qint64 in = usage.value("prompt_tokens").toInteger();
        const qint64 out = usage.value("completion_tokens").toInteger();
        QCOMPARE(out, 5);

        // vendorB-5.4: 1.25 in, 10.00 out per 1M tokens.
        const qint64 expected =
            (in * 1'250'000'000LL + out * 10'000'000'000LL + 999'999) / 1'000'000;
        const qint64 after = accountBalance(f);
        QCOMPARE(before - after, expected);
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].model, QStringLiteral("vendorB-5.4"));
        QCOMPARE(records[0].endpoint, QStringLiteral("/v1/chat/completions"));
        QCOMPARE(records[0].inputTokens, in);
        QCOMPARE(records[0].outputTokens, out);
        QCOMPARE(records[0].cost, expected);
        QCOMPARE(records[0].requestId, QString::fromLatin1(r.header("x-request-id")));
        QVERIFY(!records[0].estimated);
    }

    // The stream is relayed as it arrives: the client holds the first event while the upstream
    // stream is still open, and the final event only after the charge committed.
    void streamRelaysAsItArrives()
    {
        Rig rig;
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        QTcpSocket s;
        QVERIFY(send(s, f.port(),
                     request("/v1/messages", key,
                             "{\"model\":\"vendorA-haiku-4-5\",\"max_tokens\":50,\"stream\":true,"
                             "\"messages\":[{\"role\":\"user\",\"content\":\"hi [fake chunks=4 "
                             "interval-ms=300]\"}]}",
                             "anthropic-version: 2023-06-01\r\n")));
        QByteArray got;
        readUntil(s, &got, "content_block_delta");
        QVERIFY2(got.contains("content_block_delta"), got.constData());
        QVERIFY(!got.contains("message_stop"));
        QCOMPARE(fake.stats().value("open_streams").toInt(), 1);
        readUntil(s, &got, "\r\n0\r\n\r\n");
        QVERIFY(got.contains("event: message_stop"));
        QVERIFY(got.contains("\"model\":\"vendorA-haiku-4-5\""));
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].outputTokens, 4);
        QVERIFY(records[0].cost > 0);
        QVERIFY(!records[0].estimated);
    }

    // A client that stops reading is dropped before the server buffers the whole stream.
    void slowReaderIsDropped()
    {
        Rig rig({}, {}, [](ServerSettings &s) { s.maxStreamBuffer = 256 * 1024; });
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        QTcpSocket s;
        s.setReadBufferSize(4096); // and never read: the kernel buffers fill, then the server's
        s.connectToHost(QHostAddress::LocalHost, f.port());
        QVERIFY(s.waitForConnected());
        s.setSocketOption(QAbstractSocket::ReceiveBufferSizeSocketOption, 8192);
        s.write(request("/v1/chat/completions", key,
                        chat("vendorB-5-nano", "x [fake chunks=40000]", {{"stream", true}})));
        s.flush();
        // The server drops the connection (billing what was produced) instead of holding the
        // rest of the stream in memory.
        QList<UsageRecord> records;
        QTRY_VERIFY_WITH_TIMEOUT((records = usageFor(f)).size() == 1, 30'000);
        QVERIFY(records[0].outputTokens < 40000);
        QCOMPARE(records[0].status, 499);
        QVERIFY(records[0].cost > 0);
    }

    void keepAliveWhileUpstreamIsSilent()
    {
        Rig rig({}, {}, [](ServerSettings &s) { setGateway(s, "keepalive_ms", 200); });
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        QTcpSocket s;
        QVERIFY(send(s, f.port(),
                     request("/v1/chat/completions", key,
                             chat("vendorB-5-nano", "x [fake chunks=2 interval-ms=1500]",
                                  {{"stream", true}}))));
        QByteArray got;
        readUntil(s, &got, "data: [DONE]");
        const qsizetype keepAlive = got.indexOf(": keep-alive\n\n");
        QVERIFY2(keepAlive > 0, got.constData());
        // Between the first and the last piece.
        QVERIFY(keepAlive > got.indexOf("\"content\":"));
        QVERIFY(keepAlive < got.indexOf("data: [DONE]"));
    }

    // A client that leaves cancels the upstream call and is billed on what was produced.
    void clientDisconnectCancelsUpstream()
    {
        Rig rig;
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        {
            QTcpSocket s;
            QVERIFY(send(s, f.port(),
                         request("/v1/chat/completions", key,
                                 chat("vendorB-5-nano", "x [fake chunks=50 interval-ms=200]",
                                      {{"stream", true}}))));
            // Until a piece with text: the first one may carry the role and an empty content
            // (on a busy machine it arrives alone, and leaving then produced nothing).
            QByteArray got;
            const auto hasText = [](const QByteArray &b) {
                for (qsizetype at = b.indexOf("\"content\":\""); at >= 0;
                     at = b.indexOf("\"content\":\"", at + 1))
                    if (at + 11 < b.size() && b.at(at + 11) != '"')
                        return true;
                return false;
            };
            readUntil(s, &got, hasText);
            QVERIFY2(hasText(got), got.constData());
            s.abort();
        }
        QTRY_COMPARE_WITH_TIMEOUT(fake.stats().value("cancelled").toInt(), 1, 5000);
        QCOMPARE(fake.stats().value("open_streams").toInt(), 0);
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].status, 499);
        QVERIFY(records[0].estimated);
        // 34 characters of prompt in one message: (34 + 3) / 4 + 3 tokens.
        QCOMPARE(records[0].inputTokens, 12);
        QVERIFY(records[0].outputTokens >= 1);
        QVERIFY(records[0].outputTokens < 50);
        QVERIFY(records[0].cost > 0);
    }

    void upstreamFailures_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("messageHas");
        const QByteArray msg = "{\"model\":\"vendorA-opus-4-7\",\"max_tokens\":10,\"messages\":[{"
                               "\"role\":\"user\",\"content\":\"hi [fake %1]\"}]}";
        auto m = [&](const char *directive) {
            return QString::fromLatin1(msg).arg(QLatin1String(directive)).toUtf8();
        };
        QTest::newRow("chat 429") << "/v1/chat/completions"
                                  << chat("vendorB-5.4", "x [fake fault=429]") << 429
                                  << "rate_limit_exceeded"
                                  << "rate limiting";
        QTest::newRow("chat 500") << "/v1/chat/completions"
                                  << chat("vendorB-5.4", "x [fake fault=500]") << 502
                                  << "upstream_error"
                                  << "HTTP 500";
        QTest::newRow("chat 503") << "/v1/chat/completions"
                                  << chat("vendorB-5.4", "x [fake fault=503]") << 502
                                  << "upstream_error"
                                  << "HTTP 503";
        QTest::newRow("chat malformed")
            << "/v1/chat/completions" << chat("vendorB-5.4", "x [fake fault=malformed-json]") << 502
            << "upstream_error"
            << "malformed";
        QTest::newRow("chat upstream 400")
            << "/v1/chat/completions" << chat("vendorB-5.4", "x [fake fault=400]") << 400
            << "invalid_request_error"
            << "rejected";
        QTest::newRow("messages 529") << "/v1/messages" << m("fault=529") << 502 << "api_error"
                                      << "HTTP 529";
        QTest::newRow("messages timeout")
            << "/v1/messages" << m("delay-ms=3000") << 504 << "api_error"
            << "did not answer in time";
        QTest::newRow("chat reset")
            << "/v1/chat/completions" << chat("vendorB-5.4", "x [fake fault=reset]") << 502
            << "upstream_error"
            << "failed";
    }
    void upstreamFailures()
    {
        QFETCH(QString, path);
        QFETCH(QByteArray, body);
        QFETCH(int, status);
        QFETCH(QString, type);
        QFETCH(QString, messageHas);
        Rig rig({}, {{"anthropic", QJsonObject{{"timeouts", QJsonObject{{"messages_ms", 800}}}}}});
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        const qint64 before = accountBalance(f);
        HttpReply r = f.client().request("POST", path.toLatin1(),
                                         {{"Authorization", "Bearer " + key},
                                          {"anthropic-version", "2023-06-01"},
                                          {"Content-Type", "application/json"}},
                                         body);
        QCOMPARE(r.status, status);
        const QJsonObject error = r.json().value("error").toObject();
        QCOMPARE(error.value("type").toString(), type);
        QVERIFY2(error.value("message").toString().contains(messageHas), r.body.constData());
        // No upstream key in the answer, and nothing charged.
        QVERIFY(!r.body.contains("up-k"));
        if (status == 429)
            QVERIFY(!r.header("retry-after").isEmpty());
        if (path == u"/v1/messages")
            QCOMPARE(r.json().value("type").toString(), QStringLiteral("error"));
        QCOMPARE(accountBalance(f), before);
    }

    // An upstream error chunk followed by [DONE] (as some servers send it) still ends the
    // client's stream with the error, not a clean end.
    void upstreamErrorThenDone()
    {
        RawUpstream upstream(RawUpstream::stream(
            {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
             "data: {\"error\":{\"message\":\"backend exploded\",\"type\":\"server_error\"}}\n\n",
             "data: [DONE]\n\n"}));
        Rig rig({}, {{"openai", QJsonObject{{"base_url", upstream.base()}}}});
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        QTcpSocket s;
        QVERIFY(send(
            s, f.port(),
            request("/v1/chat/completions", key, chat("vendorB-5-nano", "x", {{"stream", true}}))));
        QByteArray got;
        readUntil(s, &got, "\r\n0\r\n\r\n");
        QVERIFY2(got.contains("backend exploded"), got.constData());
        QVERIFY(!got.contains("[DONE]"));
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].status, 502);
    }

    // One upstream event without an end is cut off at 4 MiB instead of filling memory.
    void oversizedUpstreamEvent()
    {
        RawUpstream upstream(RawUpstream::stream(
            {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
             "data: " + QByteArray(5 * 1024 * 1024, 'x')},
            false));
        Rig rig({}, {{"openai", QJsonObject{{"base_url", upstream.base()}}}});
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        QTcpSocket s;
        QVERIFY(send(
            s, f.port(),
            request("/v1/chat/completions", key, chat("vendorB-5-nano", "x", {{"stream", true}}))));
        QByteArray got;
        readUntil(s, &got, "\r\n0\r\n\r\n");
        QVERIFY2(got.contains("over 4 MiB"), got.right(300).constData());
        QCOMPARE(waitUsage(f, 1).value(0).status, 502);
    }

    void upstreamUnreachable()
    {
        const QString dead = QStringLiteral("http://127.0.0.1:%1/v1").arg(closedPort());
        Rig rig({}, {{"openai", QJsonObject{{"base_url", dead}}}});
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        HttpReply r = f.client().postJson("/v1/chat/completions", chat("vendorB-5.4", "x"), key);
        QCOMPARE(r.status, 502);
        QVERIFY(r.errorMessage().contains("Could not reach"));
    }

    // The config file's server and gateway sections, and what they change.
    void configFile()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        auto write = [&](const QByteArray &json) {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(json);
        };
        write("{\"server\":{\"sqlite_synchronous\":\"full\"},\"gateway\":{\"min_reservation\":"
              "\"0.5\",\"auto_model\":\"vendorB-5.4\",\"providers\":{\"openai\":{\"keys\":"
              "[\"a\"]}}}}");
        const ServerSettings s = ServerSettings::fromConfigFile(path);
        QVERIFY(s.sqliteFullSync);
        qint64 reservation = 0;
        const GatewayConfig g =
            GatewayFamily::parse(s.familySections.value("gateway").toObject(), &reservation);
        QCOMPARE(reservation, Money::kUnitsPerCredit / 2);
        QCOMPARE(g.autoModel, QStringLiteral("vendorB-5.4"));
        QCOMPARE(g.provider(QStringLiteral("openai"))->keys, QStringList{"a"});
        QCOMPARE(s.configPath, path);
        // What the programs do with the file: every section is checked before anything opens.
        auto load = [&] {
            Services services(ServerSettings::fromConfigFile(path),
                              DatabaseConfig::sqlite(dir.filePath(QStringLiteral("unused.db"))));
        };
        QVERIFY(!ServerSettings::defaults().sqliteFullSync);
        for (const QByteArray &bad :
             {QByteArray("{\"server\":{\"sqlite_synchronous\":\"off\"}}"),
              QByteArray("{\"gateway\":{\"min_reservation\":\"-1\"}}"),
              QByteArray("{\"gateway\":{\"min_reservation\":\"0\"}}"),
              QByteArray("{\"gateway\":[]}"),
              QByteArray(
                  "{\"gateway\":{\"providers\":{\"openai\":{\"base_url\":\"ftp://x\"}}}}")}) {
            write(bad);
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, load());
        }

        // The SQLite flush setting reaches the connection.
        for (const bool full : {false, true}) {
            QTemporaryDir d;
            DatabaseConfig c = DatabaseConfig::sqlite(d.filePath(QStringLiteral("s.db")));
            c.setSqliteFullSync(full);
            QSqlDatabase db = c.open(full ? QStringLiteral("full") : QStringLiteral("normal"));
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral("PRAGMA synchronous")) && q.next());
            QCOMPARE(q.value(0).toInt(), full ? 2 : 1); // FULL = 2, NORMAL = 1
        }
    }

    // Rotation under load: many requests retried on the second key at once all complete.
    void keyRotationUnderConcurrency()
    {
        Rig rig({QStringLiteral("--key-fault"), QStringLiteral("up-k1=429")});
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        constexpr int kRequests = 150;
        for (int round = 0; round < 3; ++round) {
            std::vector<std::unique_ptr<QTcpSocket>> sockets;
            for (int i = 0; i < kRequests; ++i) {
                auto s = std::make_unique<QTcpSocket>();
                s->connectToHost(QHostAddress::LocalHost, f.port());
                QVERIFY(s->waitForConnected());
                s->write(request("/v1/chat/completions", key, chat("vendorB-5-nano", "x")));
                sockets.push_back(std::move(s));
            }
            for (int i = 0; i < kRequests; ++i) {
                QByteArray got;
                readUntil(*sockets[i], &got, "\"usage\"", 10'000);
                QVERIFY2(got.startsWith("HTTP/1.1 200"),
                         qPrintable(QStringLiteral("round %1, request %2").arg(round).arg(i)));
            }
        }
    }

    // Stopping the server with a stream still open: no crash, and the stream is billed as
    // abandoned before the database closes.
    void shutdownWithAnOpenStream()
    {
        Rig rig({}, {}, [](ServerSettings &s) { s.drainTimeoutMs = 300; });
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        QTcpSocket s;
        QVERIFY(send(s, f.port(),
                     request("/v1/chat/completions", key,
                             chat("vendorB-5-nano", "x [fake chunks=1000 interval-ms=50]",
                                  {{"stream", true}}))));
        QByteArray got;
        readUntil(s, &got, "\"content\":\"x");
        QVERIFY(got.contains("\"content\":\"x"));
        f.host().stop();
        const QList<UsageRecord> records = usageFor(f);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].status, 499);
        QVERIFY(records[0].estimated);
        QVERIFY(records[0].cost > 0);
        QCOMPARE(accountBalance(f), Rig::kGranted - records[0].cost);
    }

    // A key answering 429 (or 5xx) rests; the next key serves the request.
    void keyRotation()
    {
        Rig rig({QStringLiteral("--key-fault"), QStringLiteral("up-k1=429"),
                 QStringLiteral("--key-fault"), QStringLiteral("up-k2=none")});
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        for (int i = 0; i < 3; ++i) {
            HttpReply r =
                f.client().postJson("/v1/chat/completions", chat("vendorB-5.4", "x"), key);
            QCOMPARE(r.status, 200);
        }
        // k1 was tried once, then rested: 3 successes cost 4 upstream requests, not 6.
        QCOMPARE(fake.stats().value("requests").toInt(), 4);
    }

    // Streams that break mid-way end with the protocol's error event and are billed on an
    // estimate, marked so.
    void midStreamFailure()
    {
        Rig rig;
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        QTcpSocket s;
        QVERIFY(send(s, f.port(),
                     request("/v1/chat/completions", key,
                             chat("vendorB-5-nano", "x [fake chunks=6 fault=reset-mid-stream:3]",
                                  {{"stream", true}}))));
        QByteArray got;
        readUntil(s, &got, "\r\n0\r\n\r\n");
        QVERIFY2(got.contains("data: {\"error\":"), got.constData());
        QVERIFY(!got.contains("[DONE]"));
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].status, 502);
        QVERIFY(records[0].estimated);
        QCOMPARE(records[0].outputTokens, 3);
    }

    // An upstream's own error event is relayed like a final event: after the charge commits.
    void upstreamErrorEventComesAfterTheCharge()
    {
        Rig rig;
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        const qint64 before = accountBalance(f);
        QTcpSocket s;
        QVERIFY(send(s, f.port(),
                     request("/v1/chat/completions", key,
                             chat("vendorB-5.4", "x [fake chunks=8 fault=error-mid-stream:2]",
                                  {{"stream", true}}))));
        QByteArray got;
        readUntil(s, &got, "data: {\"error\":");
        QVERIFY2(got.contains("data: {\"error\":"), got.constData());
        QVERIFY(accountBalance(f) < before);
        readUntil(s, &got, "\r\n0\r\n\r\n");
        QVERIFY(!got.contains("[DONE]"));
        QCOMPARE(got.count("data: {\"error\":"), 1);
    }

    void validation_data()
    {
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("param");
        QTest::newRow("temperature")
            << QByteArray("/v1/chat/completions")
            << chat("vendorB-5.4", "x", {{"temperature", 2.5}}) << "temperature";
        QTest::newRow("stop x5") << QByteArray("/v1/chat/completions")
                                 << chat("vendorB-5.4", "x",
                                         {{"stop", QJsonArray{"a", "b", "c", "d", "e"}}})
                                 << "stop";
        QTest::newRow("role")
            << QByteArray("/v1/chat/completions")
            << QByteArray(
                   "{\"model\":\"auto\",\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}")
            << "messages[0].role";
        QTest::newRow("no messages") << QByteArray("/v1/chat/completions")
                                     << QByteArray("{\"model\":\"auto\"}") << "messages";
        QTest::newRow("messages temp")
            << QByteArray("/v1/messages")
            << QByteArray("{\"model\":\"vendorA-opus-4-8\",\"max_tokens\":5,\"temperature\":1.5,"
                          "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
            << "temperature";
        QTest::newRow("no max_tokens") << QByteArray("/v1/messages")
                                       << QByteArray("{\"model\":\"vendorA-opus-4-8\",\"messages\":"
                                                     "[{\"role\":\"user\",\"content\":\"x\"}]}")
                                       << "max_tokens";
        QTest::newRow("unknown model")
            << QByteArray("/v1/chat/completions") << chat("vendorB-9000", "x") << "model";
        QTest::newRow("chat model on responses")
            << QByteArray("/v1/responses")
            << QByteArray("{\"model\":\"vendorA-opus-4-8\",\"input\":\"x\"}") << "model";
        QTest::newRow("auto on messages")
            << QByteArray("/v1/messages")
            << QByteArray("{\"model\":\"auto\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\","
                          "\"content\":\"x\"}]}")
            << "model";
        QTest::newRow("responses input")
            << QByteArray("/v1/responses") << QByteArray("{\"model\":\"vendorB-5.4\",\"input\":42}")
            << "input";
        // Output bounds above what the model generates (its catalog max_output_tokens).
        QTest::newRow("chat max_tokens over the model's limit")
            << QByteArray("/v1/chat/completions")
            << QByteArray("{\"model\":\"vendorB-5.4\",\"max_tokens\":128001,\"messages\":"
                          "[{\"role\":\"user\",\"content\":\"x\"}]}")
            << "max_tokens";
        QTest::newRow("chat max_completion_tokens over the limit, translated")
            << QByteArray("/v1/chat/completions")
            << QByteArray("{\"model\":\"vendorA-haiku-4-5\",\"max_completion_tokens\":64001,"
                          "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}")
            << "max_completion_tokens";
        QTest::newRow("responses max_output_tokens over the limit")
            << QByteArray("/v1/responses")
            << QByteArray("{\"model\":\"vendorB-5.4\",\"input\":\"x\",\"max_output_tokens\":"
                          "200000}")
            << "max_output_tokens";
        QTest::newRow("messages max_tokens over the limit")
            << QByteArray("/v1/messages")
            << QByteArray("{\"model\":\"vendorA-haiku-4-5\",\"max_tokens\":64001,\"messages\":"
                          "[{\"role\":\"user\",\"content\":\"x\"}]}")
            << "max_tokens";
        QTest::newRow("chat n") << QByteArray("/v1/chat/completions")
                                << QByteArray("{\"model\":\"vendorB-5.4\",\"n\":129,\"messages\":"
                                              "[{\"role\":\"user\",\"content\":\"x\"}]}")
                                << "n";
    }
    void validation()
    {
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, body);
        QFETCH(QString, param);
        Rig rig;
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        HttpReply r = f.client().request("POST", path,
                                         {{"Authorization", "Bearer " + key},
                                          {"anthropic-version", "2023-06-01"},
                                          {"Content-Type", "application/json"}},
                                         body);
        QCOMPARE(r.status, 400);
        const QString message = r.json().value("error").toObject().value("message").toString();
        QVERIFY2(message.contains(param == u"model" ? QStringLiteral("model") : param),
                 qPrintable(message));
        if (path != "/v1/messages")
            QCOMPARE(r.json().value("error").toObject().value("param").toString(), param);
        QCOMPARE(fake.stats().value("requests").toInt(), 0); // refused before the upstream
    }

    void noCreditsIsRefusedBeforeTheUpstream()
    {
        Fake fake;
        ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake));
        QVERIFY(f.ready());
        const QByteArray key = f.createKey();
        HttpReply r = f.client().postJson("/v1/chat/completions", chat("vendorB-5.4", "x"), key);
        QCOMPARE(r.status, 402);
        QCOMPARE(fake.stats().value("requests").toInt(), 0);
    }

    // The client: 0.05 credits and an 800 KB prompt to an expensive model. The request
    // holds its worst case first, so it is refused (402 in the route's envelope), with nothing
    // charged and no upstream call; the same on chat completions (translated, streaming) and
    // responses.
    void largePromptIsRefusedBeforeTheUpstream_data() { addBackendRows(); }
    void largePromptIsRefusedBeforeTheUpstream()
    {
        Fake fake;
        SY_START_SERVER(f, settingsFor(fake));
        const qint64 granted = 50'000'000; // 0.05 credits
        const QByteArray key = f.fundedKey(granted);
        QString prompt;
        while (prompt.size() < 800 * 1024)
            prompt += QStringLiteral("Summarise the following report carefully. ");
        const struct
        {
            QByteArray path;
            QByteArray body;
        } requests[] = {
            {"/v1/messages", messagesBody("vendorA-opus-4-8", prompt, {{"max_tokens", 1024}})},
            {"/v1/chat/completions",
             chat("vendorA-opus-4-8", prompt, {{"max_tokens", 1024}, {"stream", true}})},
            {"/v1/responses",
             compactJson(
                 {{"model", "vendorB-6-astra"}, {"input", prompt}, {"max_output_tokens", 16}})},
        };
        for (const auto &req : requests) {
            QVERIFY(req.body.size() > 800 * 1024);
            const HttpReply r = f.client().request("POST", req.path, apiHeaders(key), req.body);
            QVERIFY2(isRefusal(r, req.path == "/v1/messages"), r.body.constData());
            // It asked for at least the prompt's bytes at the model's input price.
            QVERIFY2(r.body.contains(" needs at least "), r.body.constData());
        }
        QCOMPARE(fake.stats().value("requests").toInt(), 0);
        QCOMPARE(accountBalance(f), granted);
        const QList<LedgerEntry> ledger = accountLedger(f);
        QCOMPARE(ledger.size(), 1); // the grant alone
        const QList<UsageRecord> records = waitUsage(f, 3);
        QCOMPARE(records.size(), 3);
        for (const UsageRecord &u : records) {
            QCOMPARE(u.status, 402);
            QCOMPARE(u.cost, 0LL);
        }
        // The hold is the worst case: 800 KB at opus's cache-write price alone is 15 credits.
        QVERIFY(holdOf(f, Protocol::Messages, "vendorA-opus-4-8", requests[0].body) >
                15 * Money::kUnitsPerCredit);
    }

    // Many requests at once (chat completions, responses and messages, streaming and not,
    // passed through and translated) whose worst cases together exceed the balance. Each holds
    // its worst case before its upstream call, so the calls in flight never hold more than the
    // balance: those admitted are served and charged, the rest refused with 402 in their
    // envelope and nothing charged, and no ledger entry leaves the balance below zero.
    void concurrentHoldsNeverOverdraw_data() { addBackendRows(); }
    void concurrentHoldsNeverOverdraw()
    {
        Fake fake;
        SY_START_SERVER(f, settingsFor(fake));
        const qint64 granted = 500'000'000; // 0.5 credits
        const QByteArray key = f.fundedKey(granted);
        const QString slow = QStringLiteral(" [fake delay-ms=600 chunks=4]");
        struct Request
        {
            QByteArray path;
            QByteArray body;
            Protocol protocol;
            QString model;
            bool stream;
        };
        QList<Request> requests;
        for (int round = 0; round < 2; ++round) {
            const QString t = QStringLiteral("r%1").arg(round) + slow;
            requests += {
                {"/v1/chat/completions", chat("vendorB-5.4", t, {{"max_tokens", 20000}}),
                 Protocol::Chat, "vendorB-5.4", false},
                {"/v1/chat/completions",
                 chat("vendorB-5.4", t, {{"max_completion_tokens", 20000}, {"stream", true}}),
                 Protocol::Chat, "vendorB-5.4", true},
                {"/v1/responses",
                 compactJson(
                     {{"model", "vendorB-5.4"}, {"input", t}, {"max_output_tokens", 20000}}),
                 Protocol::Responses, "vendorB-5.4", false},
                {"/v1/responses",
                 compactJson({{"model", "vendorB-5.4"},
                              {"input", t},
                              {"max_output_tokens", 20000},
                              {"stream", true}}),
                 Protocol::Responses, "vendorB-5.4", true},
                {"/v1/messages", messagesBody("vendorA-haiku-4-5", t, {{"max_tokens", 40000}}),
                 Protocol::Messages, "vendorA-haiku-4-5", false},
                {"/v1/messages",
                 messagesBody("vendorA-haiku-4-5", t, {{"max_tokens", 40000}, {"stream", true}}),
                 Protocol::Messages, "vendorA-haiku-4-5", true},
                {"/v1/chat/completions", chat("vendorA-haiku-4-5", t, {{"max_tokens", 40000}}),
                 Protocol::Chat, "vendorA-haiku-4-5", false},
                {"/v1/chat/completions",
                 chat("vendorA-haiku-4-5", t, {{"max_tokens", 40000}, {"stream", true}}),
                 Protocol::Chat, "vendorA-haiku-4-5", true},
            };
        }
        // Each holds at least 0.2 credits (20,000 tokens at 10 per 1M, 40,000 at 5 per 1M), and
        // together far more than the balance: at most two fit at once.
        qint64 smallest = std::numeric_limits<qint64>::max(), total = 0;
        for (const Request &r : requests) {
            const qint64 hold = holdOf(f, r.protocol, r.model, r.body);
            QVERIFY(hold >= 200'000'000);
            smallest = qMin(smallest, hold);
            total += hold;
        }
        QVERIFY(total > granted);
        const int fit = int(granted / smallest);
        QCOMPARE(fit, 2);

        std::vector<std::unique_ptr<HttpClient>> clients;
        for (const Request &r : requests)
            clients.push_back(posted(f, r.path, key, r.body));
        QSet<QString> served, refused;
        for (qsizetype i = 0; i < requests.size(); ++i) {
            const HttpReply r = clients[i]->readReply(30'000);
            const Request &req = requests[i];
            const QString id = QString::fromLatin1(r.header("x-request-id"));
            if (r.status == 402) {
                QVERIFY2(isRefusal(r, req.protocol == Protocol::Messages), r.body.constData());
                refused.insert(id);
                continue;
            }
            QVERIFY2(r.status == 200, r.body.constData());
            if (req.stream)
                QVERIFY2(r.body.contains("[DONE]") || r.body.contains("message_stop") ||
                             r.body.contains("response.completed"),
                         r.body.constData());
            served.insert(id);
        }
        QVERIFY(!served.isEmpty());
        QVERIFY(!refused.isEmpty());
        QCOMPARE(served.size() + refused.size(), requests.size());
        // Upstream calls in flight never held more than the balance; refused ones made none.
        const QJsonObject stats = fake.stats();
        QVERIFY2(stats.value("max_open_requests").toInt() <= fit,
                 qPrintable(QString::number(stats.value("max_open_requests").toInt())));
        QCOMPARE(stats.value("requests").toInt(), served.size());

        // Charged exactly what was served, nothing for what was refused.
        qint64 charged = 0;
        const QList<UsageRecord> records = waitUsage(f, int(requests.size()));
        QCOMPARE(records.size(), requests.size());
        QHash<QString, qint64> costs;
        for (const UsageRecord &u : records) {
            costs.insert(u.requestId, u.cost);
            if (refused.contains(u.requestId)) {
                QCOMPARE(u.status, 402);
                QCOMPARE(u.cost, 0LL);
            } else {
                QVERIFY(served.contains(u.requestId));
                QVERIFY(u.cost > 0);
                charged += u.cost;
            }
        }
        const QList<LedgerEntry> ledger = accountLedger(f);
        int charges = 0;
        for (const LedgerEntry &e : ledger) {
            QVERIFY2(e.balanceAfter >= 0, qPrintable(e.requestId));
            if (e.kind != u"charge")
                continue;
            ++charges;
            QVERIFY(served.contains(e.requestId));
            QCOMPARE(-e.amount, costs.value(e.requestId));
        }
        QCOMPARE(charges, served.size());
        const qint64 balance = accountBalance(f);
        QCOMPARE(balance, granted - charged);
        QVERIFY(balance >= 0);
    }

    // An upstream that ignores max_tokens and reports more output than the hold covers is
    // charged what it reports (no clamping, no write-off): the balance goes below zero by at
    // most the excess over the holds of the requests admitted together, and from then on the
    // balance gates new requests before any upstream call.
    void overReportingUpstreamIsChargedTheTruth_data() { addBackendRows(); }
    void overReportingUpstreamIsChargedTheTruth()
    {
        Fake fake;
        SY_START_SERVER(f, settingsFor(fake));
        const qint64 granted = 500'000'000; // 0.5 credits
        const QByteArray key = f.fundedKey(granted);
        // max_tokens 1, but 30,000 output tokens generated and reported: 0.3 credits each.
        const QString text =
            QStringLiteral("x [fake chunks=30000 ignore-max-tokens=1 delay-ms=300]");
        const QByteArray bodies[] = {
            chat("vendorB-5.4", text, {{"max_tokens", 1}}),
            chat("vendorB-5.4", text, {{"max_tokens", 1}, {"stream", true}}),
        };
        qint64 holds = 0;
        for (const QByteArray &b : bodies)
            holds += holdOf(f, Protocol::Chat, "vendorB-5.4", b);
        QVERIFY(holds < granted / 100);
        std::vector<std::unique_ptr<HttpClient>> clients;
        for (const QByteArray &b : bodies)
            clients.push_back(posted(f, "/v1/chat/completions", key, b));
        for (auto &c : clients) {
            const HttpReply r = c->readReply(30'000);
            QVERIFY2(r.status == 200, r.body.left(300).constData());
        }
        const QList<UsageRecord> records = waitUsage(f, 2);
        QCOMPARE(records.size(), 2);
        const ModelPrice price = f.services()
                                     .family<GatewayFamily>()
                                     ->registry()
                                     .snapshot()
                                     ->catalog.find("vendorB-5.4")
                                     ->price;
        qint64 charged = 0;
        for (const UsageRecord &u : records) {
            QCOMPARE(u.outputTokens, 30'000LL);
            QVERIFY(!u.estimated);
            const TokenUsage truth{u.inputTokens,      u.outputTokens, u.cacheReadTokens,
                                   u.cacheWriteTokens, true,           true};
            QCOMPARE(u.cost, truth.cost(price));
            charged += u.cost;
        }
        qint64 ledgerCharges = 0;
        for (const LedgerEntry &e : accountLedger(f))
            if (e.kind == u"charge")
                ledgerCharges -= e.amount;
        QCOMPARE(ledgerCharges, charged);
        const qint64 balance = accountBalance(f);
        QCOMPARE(balance, granted - charged);
        QVERIFY(balance < 0);
        QVERIFY(-balance <= charged - holds); // at most the excess over the holds
        // The next request, however small, is refused before its upstream call.
        const HttpReply next =
            f.client().request("POST", "/v1/chat/completions", apiHeaders(key),
                               chat("vendorB-5-nano", "hi", {{"max_tokens", 1}}));
        QVERIFY2(isRefusal(next, false), next.body.constData());
        QCOMPARE(fake.stats().value("requests").toInt(), 2);
        QCOMPARE(accountBalance(f), balance);
    }

    // A live catalog: gateway/{provider}/{model} priced from the upstream's list, cached in the
    // database so a restart without the upstream still serves the list and the prices.
    void liveCatalog()
    {
        Fake fake;
        ServerSettings settings =
            settingsFor(fake, {{"openrouter", QJsonObject{{"refresh_minutes", 60}}}});
        TestDatabase db(QStringLiteral("sqlite"));
        QVERIFY(db.ready());
        QString modelId;
        ModelPrice price;
        {
            ProviderRegistry registry(gatewayConfig(settings), {});
            DatabaseService service(db.config());
            service.start({GatewayTables::migrations()});
            QSignalSpy refreshed(&registry, &ProviderRegistry::catalogRefreshed);
            registry.startCatalogSync(&service);
            QVERIFY(refreshed.wait(5000));
            QCOMPARE(refreshed.at(0).at(2).toString(), QString());
            const auto live = registry.snapshot()->live.value(QStringLiteral("openrouter"));
            QVERIFY(!live.isEmpty());
            for (const CatalogModel &m : live)
                if (m.price.input > 0) {
                    modelId = m.id;
                    price = m.price;
                }
            QVERIFY(!modelId.isEmpty()); // a priced model
            service.flush();
            service.stop();
        }
        // Restart with the upstream unreachable: the cached list still resolves.
        GatewayConfig offline = gatewayConfig(settings);
        offline.providers[3].baseUrl =
            QStringLiteral("http://127.0.0.1:%1/api/v1").arg(closedPort());
        ProviderRegistry registry(offline, {});
        DatabaseService service(db.config());
        service.start({GatewayTables::migrations()});
        QSignalSpy refreshed(&registry, &ProviderRegistry::catalogRefreshed);
        registry.startCatalogSync(&service);
        QVERIFY(refreshed.wait(5000));
        QVERIFY(!refreshed.at(0).at(2).toString().isEmpty()); // the refresh failed...
        const ResolvedModel r = ProviderRegistry::resolve(
            *registry.snapshot(), QStringLiteral("gateway/openrouter/") + modelId,
            QStringLiteral("chat.completions"));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error)); // ...but the cache serves
        QCOMPARE(r.entry.price.input, price.input);
        QCOMPARE(r.entry.upstreamModel, modelId);
        service.stop();
    }

    // A live catalog one instance fetched is installed at once by another instance on the same
    // database (the change feed's "catalogs" topic), which neither fetches it nor waits for a
    // timer: here the other's upstream is unreachable and refreshed on demand only.
    void liveCatalogSeenByOtherInstances_data() { addBackendRows(); }
    void liveCatalogSeenByOtherInstances()
    {
        SY_OPEN_DB(db);
        Fake fake;
        const ServerSettings settings = settingsFor(fake);
        GatewayConfig offline = gatewayConfig(settings);
        offline.providers[3].baseUrl =
            QStringLiteral("http://127.0.0.1:%1/api/v1").arg(closedPort());
        ProviderRegistry other(offline, {});
        DatabaseService otherService(db.config());
        otherService.start({GatewayTables::migrations()});
        other.startCatalogSync(&otherService);
        QVERIFY(other.snapshot()->live.value(QStringLiteral("openrouter")).isEmpty());

        ProviderRegistry fetcher(gatewayConfig(settings), {});
        DatabaseService service(db.config());
        service.start({GatewayTables::migrations()});
        fetcher.startCatalogSync(&service);
        QSignalSpy refreshed(&fetcher, &ProviderRegistry::catalogRefreshed);
        fetcher.refreshCatalog(QStringLiteral("openrouter"));
        QVERIFY(refreshed.wait(5000));
        QCOMPARE(refreshed.at(0).at(2).toString(), QString());
        QElapsedTimer seen;
        seen.start();
        QTRY_VERIFY_WITH_TIMEOUT(
            !other.snapshot()->live.value(QStringLiteral("openrouter")).isEmpty(), 5000);
        qInfo("the other instance installed the catalog %lld ms after it was stored",
              seen.elapsed());
        QVERIFY(seen.elapsed() < 250);
        QCOMPARE(other.snapshot()->live.value(QStringLiteral("openrouter")).size(),
                 fetcher.snapshot()->live.value(QStringLiteral("openrouter")).size());
        service.stop();
        otherService.stop();
    }

    // Without a key a catalog provider is not fetched on its own (no outbound call on a fresh
    // install), but an explicit refresh still works.
    void catalogWithoutKeyIsFetchedOnlyOnDemand()
    {
        Fake fake;
        GatewayConfig config = gatewayConfig(
            settingsFor(fake, {{"openrouter", QJsonObject{{"refresh_minutes", 60}}}}));
        config.providers[3].keys.clear();
        TestDatabase db(QStringLiteral("sqlite"));
        QVERIFY(db.ready());
        DatabaseService service(db.config());
        service.start({GatewayTables::migrations()});
        ProviderRegistry registry(config, {});
        registry.startCatalogSync(&service);
        QTest::qWait(300);
        QCOMPARE(fake.stats().value("requests").toInt(), 0);
        QSignalSpy refreshed(&registry, &ProviderRegistry::catalogRefreshed);
        registry.refreshCatalog(QStringLiteral("openrouter"));
        QVERIFY(refreshed.wait(5000));
        QCOMPARE(fake.stats().value("requests").toInt(), 1);
        QVERIFY(!registry.snapshot()->live.value(QStringLiteral("openrouter")).isEmpty());
        service.stop();
    }

    void gatewayModelThroughTheServer()
    {
        Fake fake;
        ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake));
        QVERIFY(f.ready());
        // The server's own registry (the gateway family's), refreshed now.
        ProviderRegistry &registry = f.services().family<GatewayFamily>()->registry();
        QSignalSpy refreshed(&registry, &ProviderRegistry::catalogRefreshed);
        registry.refreshCatalog(QStringLiteral("openrouter"));
        QVERIFY(refreshed.wait(5000));
        const auto live = registry.snapshot()->live.value(QStringLiteral("openrouter"));
        QVERIFY(!live.isEmpty());
        // A priced model, the same in every run: a hash's order changes from process to
        // process, and a free model holds nothing.
        QStringList priced;
        for (const auto &m : live)
            if (m.price.output > 0)
                priced.append(m.id);
        QVERIFY(!priced.isEmpty());
        priced.sort();
        const CatalogModel model = live.value(priced.first());
        const QString id = QStringLiteral("gateway/openrouter/") + model.id;
        const QByteArray key = f.createKey();
        HttpReply models = f.client().get("/v1/models");
        QVERIFY(models.body.contains(id.toUtf8()));
        // Listed with the limits of the upstream's list (the fake's top_provider says 8,192).
        for (const QJsonValue &m : models.json().value("data").toArray())
            if (m.toObject().value("id").toString() == id) {
                QCOMPARE(m.toObject().value("max_output_tokens").toInteger(), 8'192);
                QCOMPARE(m.toObject().value("context_length").toInteger(), 0); // not its name
                QVERIFY(m.toObject().value("context_window").toInteger() > 0);
            }
        // Without max_tokens it holds those 8,192 output tokens: a unit less is a 402.
        const qint64 hold = holdOf(f, Protocol::Chat, id, chat(id, "x"));
        QVERIFY(hold >= 8'192 * model.price.output / 1'000'000);
        f.grant(hold - 1);
        HttpReply r = f.client().postJson("/v1/chat/completions", chat(id, "x"), key);
        QCOMPARE(r.status, 402);
        f.grant(1);
        r = f.client().postJson("/v1/chat/completions", chat(id, "x"), key);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("model").toString(), id);
        QList<UsageRecord> records = waitUsage(f, 2);
        QCOMPARE(records.size(), 2);
        if (records[0].status != 200)
            records.swapItemsAt(0, 1);
        QCOMPARE(records[1].cost, 0LL); // the refused one
        QCOMPARE(records[0].model, id);
        const TokenUsage u{records[0].inputTokens, records[0].outputTokens, 0, 0, true, true};
        QCOMPARE(records[0].cost, u.cost(model.price));
    }

    void providersControlEndpoints()
    {
        Fake fake;
        ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake));
        QVERIFY(f.ready());
        const QByteArray reader = f.createToken({QStringLiteral("providers:read")});
        const QByteArray writer = f.createToken({QStringLiteral("providers:write")});
        HttpReply list = f.client().get("/api/v1/providers", reader);
        QCOMPARE(list.status, 200);
        QCOMPARE(list.json().value("data").toArray().size(), 4);
        QVERIFY(!list.body.contains("up-k1")); // keys are masked
        QCOMPARE(f.client().get("/api/v1/providers", writer).status, 403);
        HttpReply refresh = whileServing([&] {
            return f.client().postJson("/api/v1/providers/openrouter/refresh", "{}", writer);
        });
        QCOMPARE(refresh.status, 200);
        QVERIFY(refresh.json().value("models").toInt() > 0);
        QCOMPARE(f.client().postJson("/api/v1/providers/openai/refresh", "{}", writer).status, 404);
        QCOMPARE(f.client().postJson("/api/v1/providers/openrouter/refresh", "{}", reader).status,
                 403);
        list = f.client().get("/api/v1/providers", reader);
        for (const QJsonValue &p : list.json().value("data").toArray())
            if (p.toObject().value("name").toString() == u"openrouter")
                QVERIFY(p.toObject().value("catalog_models").toInt() > 0);
    }

    // Hundreds of streams to one upstream host at once: none waits for another (Qt 6.4's
    // QNetworkAccessManager would hold all but 6).
    void manyConcurrentStreams()
    {
        constexpr int kStreams = 256;
        Rig rig;
        auto &[fake, f, key] = rig;
        QVERIFY(f.ready());
        f.grant(99 * Money::kUnitsPerCredit);
        std::vector<std::unique_ptr<QTcpSocket>> sockets;
        const QByteArray req = request(
            "/v1/chat/completions", key,
            chat("vendorB-5-nano", "x [fake chunks=30 interval-ms=300]", {{"stream", true}}));
        for (int i = 0; i < kStreams; ++i) {
            auto s = std::make_unique<QTcpSocket>();
            s->connectToHost(QHostAddress::LocalHost, f.port());
            QVERIFY(s->waitForConnected());
            s->write(req);
            s->flush();
            sockets.push_back(std::move(s));
        }
        // Every client gets its first content piece while every upstream stream is still open.
        std::vector<QByteArray> got(kStreams);
        for (int i = 0; i < kStreams; ++i) {
            readUntil(*sockets[i], &got[i], "\"content\":\"x", 20'000);
            QVERIFY2(got[i].contains("\"content\":\"x"), qPrintable(QString::number(i)));
        }
        const QJsonObject stats = fake.stats();
        QCOMPARE(stats.value("max_open_streams").toInt(), kStreams);
        QCOMPARE(stats.value("completed").toInt(), 0);
        for (int i = 0; i < kStreams; ++i) {
            readUntil(*sockets[i], &got[i], "data: [DONE]", 30'000);
            QVERIFY(got[i].contains("data: [DONE]"));
        }
        QCOMPARE(waitUsage(f, kStreams).size(), kStreams);
    }
};

QTEST_GUILESS_MAIN(TestGateway)
#include "tst_gateway.moc"
