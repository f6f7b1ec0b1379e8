#include "MetricsPage.h"
#include "Pipeline.h"
#include "RawClient.h"
#include "ServerFixture.h"

#include <atomic>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTimer>

namespace {

// Streams of /stream whose client left, as their route learns it (the exchange's onClosed).
std::atomic<int> g_clientsLeft{0};

// Public test routes: /echo/{name} answers after ?ms=N milliseconds with the path it saw, for
// ordering, shutdown and disconnect tests; /stream streams ?chunks=N chunks of ?size=S bytes at
// once and ends a second later (unless its client left); /big answers ?size=N bytes at once.
void installSlowRoute(Pipeline &p)
{
    RouteSpec r;
    r.method = "POST";
    r.pattern = QStringLiteral("/echo/{name}");
    r.family = QStringLiteral("test");
    r.auth = AuthMode::Public;
    r.handler = [](const ContextPtr &ctx) {
        const int ms = ctx->request().query.queryItemValue("ms").toInt();
        const QByteArray answer = ctx->param("name").toUtf8() + ":" + ctx->request().body;
        QTimer::singleShot(ms, [ctx, answer] { ctx->respondRaw(200, "text/plain", answer); });
    };
    p.addRoute(r);

    RouteSpec stream = r;
    stream.method = "GET";
    stream.pattern = QStringLiteral("/stream");
    stream.handler = [](const ContextPtr &ctx) {
        const int chunks = ctx->request().query.queryItemValue("chunks").toInt();
        const QByteArray chunk(ctx->request().query.queryItemValue("size").toInt(), 's');
        ctx->exchange()->onClosed([] { ++g_clientsLeft; });
        ctx->startStream(200, {{"Content-Type", "application/octet-stream"}});
        for (int i = 0; i < chunks && !ctx->clientGone(); ++i)
            ctx->writeStream(chunk);
        QTimer::singleShot(1000, [ctx] { ctx->finishStream({}); });
    };
    p.addRoute(stream);

    RouteSpec big = stream;
    big.pattern = QStringLiteral("/big");
    big.handler = [](const ContextPtr &ctx) {
        const QByteArray body(ctx->request().query.queryItemValue("size").toInt(), 'b');
        ctx->respondRaw(200, "application/octet-stream", body);
    };
    p.addRoute(big);
}

// The answers at the start of `bytes` (Content-Length framed), consumed: their bodies.
QList<QByteArray> takeAnswers(QByteArray &bytes)
{
    QList<QByteArray> bodies;
    for (;;) {
        const qsizetype headEnd = bytes.indexOf("\r\n\r\n");
        if (headEnd < 0)
            return bodies;
        const QByteArray head = bytes.left(headEnd).toLower();
        const qsizetype at = head.indexOf("content-length: ");
        const qint64 length = head.mid(at + 16, head.indexOf("\r\n", at) - at - 16).toLongLong();
        if (bytes.size() < headEnd + 4 + length)
            return bodies;
        bodies.append(bytes.mid(headEnd + 4, length));
        bytes.remove(0, headEnd + 4 + length);
    }
}

ServerSettings tightSettings()
{
    ServerSettings s = ServerSettings::defaults();
    s.idleTimeoutMs = 400;
    s.maxConnections = 3;
    s.drainTimeoutMs = 3000;
    return s;
}

QByteArray statusLine(const QByteArray &raw)
{
    return raw.left(raw.indexOf("\r\n"));
}

} // namespace

// The HTTP/1.1 layer: limits, framing, ordering, timeouts, shutdown. SQLite only: the
// database plays no part here.
class TestHttp : public QObject
{
    Q_OBJECT

    std::unique_ptr<ServerFixture> start(ServerSettings s = ServerSettings::defaults())
    {
        return std::make_unique<ServerFixture>(QStringLiteral("sqlite"), s, installSlowRoute);
    }

private slots:
    void malformedRequests_data()
    {
        QTest::addColumn<QByteArray>("raw");
        QTest::addColumn<QByteArray>("status");
        QTest::newRow("garbage") << QByteArray("HELLO\r\n\r\n") << QByteArray("400");
        QTest::newRow("bad version")
            << QByteArray("GET /healthz HTTP/2.0\r\n\r\n") << QByteArray("505");
        QTest::newRow("relative target")
            << QByteArray("GET healthz HTTP/1.1\r\n\r\n") << QByteArray("400");
        QTest::newRow("bad header")
            << QByteArray("GET /healthz HTTP/1.1\r\nNoColon\r\n\r\n") << QByteArray("400");
        QTest::newRow("folded header")
            << QByteArray("GET /healthz HTTP/1.1\r\nA: b\r\n  c\r\n\r\n") << QByteArray("400");
        QTest::newRow("bad length")
            << QByteArray("POST /echo/a HTTP/1.1\r\nContent-Length: 12x\r\n\r\n")
            << QByteArray("400");
        QTest::newRow("negative length")
            << QByteArray("POST /echo/a HTTP/1.1\r\nContent-Length: -1\r\n\r\n")
            << QByteArray("400");
        QTest::newRow("conflicting lengths")
            << QByteArray(
                   "POST /echo/a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")
            << QByteArray("400");
        QTest::newRow("length and chunked")
            << QByteArray("POST /echo/a HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: "
                          "chunked\r\n\r\n")
            << QByteArray("400");
        QTest::newRow("unknown coding")
            << QByteArray("POST /echo/a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n")
            << QByteArray("400");
        QTest::newRow("bad chunk size")
            << QByteArray("POST /echo/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
            << QByteArray("400");
    }
    void malformedRequests()
    {
        QFETCH(QByteArray, raw);
        QFETCH(QByteArray, status);
        auto f = start();
        HttpClient c = f->client();
        c.sendRaw(raw);
        const QByteArray reply = c.readUntilClosed();
        QVERIFY2(statusLine(reply).contains(status), reply.constData());
        QVERIFY(reply.contains("Connection: close"));
        QVERIFY(reply.contains("\"error\"")); // in the envelope, not a bare status
        QCOMPARE(f->client().get("/healthz").status, 200);
    }

    void headerLimits()
    {
        auto f = start();
        QByteArray many = "GET /healthz HTTP/1.1\r\n";
        for (int i = 0; i < 150; ++i)
            many += "X-H" + QByteArray::number(i) + ": v\r\n";
        HttpClient c = f->client();
        c.sendRaw(many + "\r\n");
        QVERIFY(statusLine(c.readUntilClosed()).contains("431"));

        // One huge header, sent without ever finishing the head: refused once past the cap.
        HttpClient d = f->client();
        d.sendRaw("GET /healthz HTTP/1.1\r\nX-Big: " + QByteArray(70 * 1024, 'a'));
        QVERIFY(statusLine(d.readUntilClosed()).contains("431"));

        // A request with a forged Authorization among too many headers is refused, never run
        // as if it had no headers.
        HttpClient e = f->client();
        e.sendRaw(many + "Authorization: Bearer lpc_x\r\n\r\n");
        QVERIFY(statusLine(e.readUntilClosed()).contains("431"));
    }

    void bodyLimits()
    {
        ServerSettings s = ServerSettings::defaults();
        s.maxJsonBody = 1000;
        auto f = start(s);
        HttpClient c = f->client();
        c.sendRaw("POST /echo/a HTTP/1.1\r\nContent-Length: 1001\r\n\r\n");
        QByteArray reply = c.readUntilClosed();
        QVERIFY2(statusLine(reply).contains("413"), reply.constData());
        QVERIFY(reply.contains("larger than the limit of 1000 bytes"));

        // Chunked bodies are counted as they arrive.
        HttpClient d = f->client();
        d.sendRaw("POST /echo/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (int i = 0; i < 3; ++i)
            d.sendRaw("190\r\n" + QByteArray(400, 'x') + "\r\n");
        reply = d.readUntilClosed();
        QVERIFY2(statusLine(reply).contains("413"), reply.constData());

        // A chunked body within the limit arrives whole.
        HttpClient e = f->client();
        e.sendRaw("POST /echo/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n");
        const HttpReply r = e.readReply();
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("b:hello world"));
    }

    void expectContinue()
    {
        auto f = start();
        HttpClient c = f->client();
        c.sendRaw("POST /echo/c HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
        QVERIFY(c.socket().waitForReadyRead(2000)); // answered without waiting for the body
        const QByteArray interim = c.socket().readAll();
        QVERIFY2(interim.startsWith("HTTP/1.1 100 Continue\r\n\r\n"), interim.constData());
        c.sendRaw("data");
        const HttpReply r = c.readReply();
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("c:data"));

        // Too large: refused at once, the body is never sent.
        ServerSettings s = ServerSettings::defaults();
        s.maxJsonBody = 10;
        auto g = start(s);
        HttpClient d = g->client();
        d.sendRaw("POST /echo/c HTTP/1.1\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n");
        QVERIFY(statusLine(d.readUntilClosed()).contains("413"));
    }

    void pipelinedRequestsAnswerInOrder()
    {
        auto f = start();
        HttpClient c = f->client();
        // The first is slow, the others fast: answers must still come back in order.
        c.sendRaw("POST /echo/first?ms=300 HTTP/1.1\r\nContent-Length: 1\r\n\r\n1"
                  "POST /echo/second HTTP/1.1\r\nContent-Length: 1\r\n\r\n2"
                  "GET /healthz HTTP/1.1\r\n\r\n"
                  "POST /echo/fourth?ms=50 HTTP/1.1\r\nContent-Length: 1\r\n\r\n4");
        QCOMPARE(c.readReply().body, QByteArray("first:1"));
        QCOMPARE(c.readReply().body, QByteArray("second:2"));
        QCOMPARE(c.readReply().body, QByteArray("{\"status\":\"ok\"}"));
        QCOMPARE(c.readReply().body, QByteArray("fourth:4"));
    }

    void keepAliveAndClose()
    {
        auto f = start();
        HttpClient c = f->client();
        for (int i = 0; i < 20; ++i)
            QCOMPARE(c.get("/healthz").status, 200);
        QCOMPARE(c.socket().state(), QAbstractSocket::ConnectedState); // one connection reused

        HttpClient d = f->client();
        d.sendRaw("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
        QVERIFY(d.readUntilClosed().contains("Connection: close"));

        HttpClient e = f->client();
        e.sendRaw("GET /healthz HTTP/1.0\r\n\r\n"); // HTTP/1.0 closes by default
        const QByteArray reply = e.readUntilClosed();
        QVERIFY(reply.startsWith("HTTP/1.1 200"));
        QCOMPARE(e.socket().state(), QAbstractSocket::UnconnectedState);
    }

    void idleConnectionsAreClosed()
    {
        auto f = start(tightSettings());
        HttpClient c = f->client();
        QCOMPARE(c.get("/healthz").status, 200);
        QElapsedTimer t;
        t.start();
        c.readUntilClosed(5000);
        QCOMPARE(c.socket().state(), QAbstractSocket::UnconnectedState);
        QVERIFY(t.elapsed() < 3000);
    }

    void connectionCap()
    {
        auto f = start(tightSettings()); // 3 connections at most
        std::vector<std::unique_ptr<HttpClient>> held;
        for (int i = 0; i < 3; ++i) {
            held.push_back(std::make_unique<HttpClient>(f->port()));
            QCOMPARE(held.back()->get("/healthz").status, 200);
        }
        HttpClient extra = f->client();
        extra.sendRaw("GET /healthz HTTP/1.1\r\n\r\n");
        QVERIFY(!extra.socket().waitForReadyRead(200)); // waits in the backlog
        held.front()->socket().disconnectFromHost();
        const HttpReply r = extra.readReply(3000); // served once a slot frees up
        QCOMPARE(r.status, 200);
    }

    void clientLeavingMidRequest()
    {
        auto f = start();
        {
            HttpClient c = f->client();
            c.sendRaw("POST /echo/gone?ms=200 HTTP/1.1\r\nContent-Length: 1\r\n\r\nx");
            QThread::msleep(50);
            c.socket().abort(); // the handler answers later into a closed connection
        }
        {
            HttpClient c = f->client();
            c.sendRaw("POST /echo/half HTTP/1.1\r\nContent-Length: 100\r\n\r\nonly-some");
            c.socket().abort();
        }
        QThread::msleep(300);
        QCOMPARE(f->client().get("/healthz").status, 200);
    }

    // Chunk sizes are read with checked arithmetic against the room left under the limit: a
    // size of any number of digits, near or past the largest integer, or summing past the limit
    // is 413; a line that is not a size is 400. Nothing is held afterwards.
    void chunkSizesAreChecked_data()
    {
        QTest::addColumn<QByteArray>("chunks");
        QTest::addColumn<int>("status");
        const QByteArray full = "3e8\r\n" + QByteArray(1000, 'x') + "\r\n";
        QTest::newRow("leading zeros") << QByteArray(40, '0') + "5\r\nhello\r\n0\r\n\r\n" << 200;
        QTest::newRow("extension") << QByteArray("5 ;a=b\r\nhello\r\n0\r\n\r\n") << 200;
        QTest::newRow("up to the limit") << full + "0\r\n\r\n" << 200;
        QTest::newRow("many digits") << "1" + QByteArray(40, '0') + "\r\n" << 413;
        QTest::newRow("int64 max") << QByteArray("7fffffffffffffff\r\n") << 413;
        QTest::newRow("int64 max + 1") << QByteArray("8000000000000000\r\n") << 413;
        QTest::newRow("uint64 max") << QByteArray("ffffffffffffffff\r\n") << 413;
        QTest::newRow("2^64 + 5") << QByteArray("10000000000000005\r\n") << 413;
        QTest::newRow("sum past the limit") << full + "1\r\n" << 413;
        QTest::newRow("sum to int64 max") << full + "7ffffffffffffc17\r\n" << 413;
        QTest::newRow("negative") << QByteArray("-1\r\n") << 400;
        QTest::newRow("plus") << QByteArray("+5\r\nhello\r\n") << 400;
        QTest::newRow("hex prefix") << QByteArray("0x5\r\nhello\r\n") << 400;
        QTest::newRow("no digits") << QByteArray(";x\r\n") << 400;
        QTest::newRow("space first") << QByteArray(" 5\r\nhello\r\n") << 400;
        QTest::newRow("junk after") << QByteArray("5 x\r\nhello\r\n") << 400;
        QTest::newRow("line too long") << "5;" + QByteArray(2000, 'e') + "\r\n" << 400;
    }
    void chunkSizesAreChecked()
    {
        QFETCH(QByteArray, chunks);
        QFETCH(int, status);
        ServerSettings s = ServerSettings::defaults();
        s.maxJsonBody = 1000;
        auto f = start(s);
        HttpClient c = f->client();
        c.sendRaw("POST /echo/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks);
        if (status == 200) {
            const HttpReply r = c.readReply();
            QCOMPARE(r.status, 200);
            QVERIFY(r.body.startsWith("c:"));
        } else {
            const QByteArray reply = c.readUntilClosed();
            QVERIFY2(statusLine(reply).contains(QByteArray::number(status)), reply.constData());
            QVERIFY(reply.contains("Connection: close"));
            QVERIFY(reply.contains("\"error\""));
        }
        QTRY_COMPARE(metric(f->port(), "switchyard_http_buffered_bytes"), 0.0);
    }

    // A client that pipelines far ahead of a slow request: while it is handled the server reads
    // only its allowance (TCP holds the rest back in the client), then answers every request,
    // in order, as the rest arrives.
    void pipelinedFloodIsHeldBack()
    {
        auto f = start();
        RawClient c(f->port(), 0, 64 * 1024);
        QVERIFY(c.isConnected());
        const int n = 1000;
        QByteArray flood = "POST /echo/slow?ms=1500 HTTP/1.1\r\nContent-Length: 1\r\n\r\ns";
        const QByteArray body(4000, 'p');
        for (int i = 0; i < n; ++i)
            flood += "POST /echo/" + QByteArray::number(i) +
                     " HTTP/1.1\r\nContent-Length: 4000\r\n\r\n" + body;
        qint64 sent = 0;
        QElapsedTimer filling;
        filling.start();
        while (filling.elapsed() < 300) {
            const qint64 k = c.sendSome(flood.constData() + sent, flood.size() - sent);
            QVERIFY(k >= 0);
            sent += k;
            QThread::msleep(10);
        }
        QVERIFY2(sent < flood.size() / 2, qPrintable(QString::number(sent)));
        // What the server holds of it: its read buffer and one read step, not the flood.
        const double held = metric(f->port(), "switchyard_http_buffered_bytes");
        QVERIFY2(held > 0 && held <= 80 * 1024, qPrintable(QString::number(held)));

        QByteArray in;
        QList<QByteArray> answers;
        QElapsedTimer t;
        t.start();
        while (answers.size() < n + 1 && !c.closed() && t.elapsed() < 30'000) {
            if (sent < flood.size()) {
                const qint64 k = c.sendSome(flood.constData() + sent, flood.size() - sent);
                QVERIFY(k >= 0);
                sent += k;
            }
            in += c.readSome(10);
            answers += takeAnswers(in);
        }
        QCOMPARE(answers.size(), n + 1);
        QCOMPARE(answers.first(), QByteArray("slow:s"));
        for (int i = 0; i < n; ++i)
            QVERIFY(answers.at(i + 1) == QByteArray::number(i) + ':' + body);
    }

    // A client that takes no bytes for the idle timeout while an answer waits unsent is
    // dropped: a stream (whose route sees its client leave, as for a disconnect) and a plain
    // answer with Connection: close alike. The open connections come back to idle.
    void stalledReadersAreDropped()
    {
        auto f = start(tightSettings());
        g_clientsLeft = 0;
        {
            RawClient c(f->port(), 4096);
            QVERIFY(c.sendAll("GET /stream?chunks=64&size=65536 HTTP/1.1\r\nHost: x\r\n\r\n"));
            QVERIFY(c.hungUp(10'000));
            QTRY_COMPARE_WITH_TIMEOUT(g_clientsLeft.load(), 1, 5'000);
        }
        {
            RawClient c(f->port(), 4096);
            QVERIFY(c.sendAll("GET /big?size=8388608 HTTP/1.1\r\nConnection: close\r\n\r\n"));
            QVERIFY(c.hungUp(10'000));
            QVERIFY(c.readUntilClosed(1000).startsWith("HTTP/1.1 200"));
        }
        QTRY_COMPARE_WITH_TIMEOUT(metric(f->port(), "switchyard_open_connections"), 1.0, 5'000);
        QCOMPARE(metric(f->port(), "switchyard_http_buffered_bytes"), 0.0);
    }

    // server.max_buffered_bytes: a request whose body would take the server past it is refused
    // at its head (503 in the envelope, closed, counted); one that fits is served; a stream the
    // server cannot buffer for a stalled reader is dropped as a slow reader is.
    void bufferCap()
    {
        ServerSettings s = ServerSettings::defaults();
        s.maxBufferedBytes = 512 * 1024;
        s.maxJsonBody = 2 * 1024 * 1024;
        auto f = start(s);
        HttpClient c = f->client();
        c.sendRaw("POST /echo/big HTTP/1.1\r\nContent-Length: 600000\r\n\r\n");
        const QByteArray reply = c.readUntilClosed();
        QVERIFY2(statusLine(reply).contains("503"), reply.constData());
        QVERIFY(reply.contains("Connection: close"));
        QVERIFY(reply.contains("try again shortly"));
        QCOMPARE(metric(f->port(), "switchyard_http_buffer_refusals_total"), 1.0);
        const HttpReply fits = f->client().request("POST", "/echo/ok", {}, QByteArray(100000, 'o'));
        QCOMPARE(fits.status, 200);

        g_clientsLeft = 0;
        RawClient r(f->port(), 4096);
        // 4 MiB: more than the kernel takes for a client that reads nothing (on loopback it
        // takes up to about 2 MiB), and far more than the cap.
        QVERIFY(r.sendAll("GET /stream?chunks=64&size=65536 HTTP/1.1\r\nHost: x\r\n\r\n"));
        QVERIFY(r.hungUp(5'000));
        QTRY_COMPARE_WITH_TIMEOUT(g_clientsLeft.load(), 1, 5'000);
        QCOMPARE(metric(f->port(), "switchyard_http_streams_dropped_total"), 1.0);
        QTRY_COMPARE(metric(f->port(), "switchyard_http_buffered_bytes"), 0.0);
    }

    // server.max_connections_per_client: one connection over it is closed at once, unread and
    // unanswered, and counted; the others are served, and a slot frees when one closes.
    void connectionsPerClient()
    {
        ServerSettings s = ServerSettings::defaults();
        s.maxConnectionsPerClient = 2;
        auto f = start(s);
        auto a = std::make_unique<HttpClient>(f->port());
        HttpClient b = f->client();
        QCOMPARE(a->get("/healthz").status, 200);
        QCOMPARE(b.get("/healthz").status, 200);
        RawClient third(f->port());
        QVERIFY(third.sendAll("GET /healthz HTTP/1.1\r\n\r\n"));
        QVERIFY(third.hungUp(5'000));
        QVERIFY(third.readUntilClosed(1'000).isEmpty());
        QCOMPARE(b.get("/healthz").status, 200);
        a.reset(); // a slot frees: /metrics gets it
        QTRY_COMPARE(metric(f->port(), "switchyard_http_connections_refused_total"), 1.0);
    }

    // Slow loris: a head trickled in is dropped at the head's deadline; a body that stalls is
    // dropped after the body timeout; one trickled in under min_body_rate is dropped too. None
    // is answered.
    void slowHeadsAndBodiesAreDropped()
    {
        ServerSettings s = ServerSettings::defaults();
        s.headerTimeoutMs = 300;
        s.bodyTimeoutMs = 300;
        s.minBodyRate = 1000;
        auto f = start(s);
        const auto trickle = [](RawClient &c, const QByteArray &bytes) {
            for (const char byte : bytes) {
                if (c.sendSome(&byte, 1) < 0 || c.hungUp(20))
                    return true;
            }
            return false;
        };
        RawClient head(f->port());
        QVERIFY(trickle(head, "GET /healthz HTTP/1.1\r\nX-Slow: " + QByteArray(2000, 'a')));
        QVERIFY(head.readUntilClosed(1'000).isEmpty());

        RawClient stall(f->port());
        QVERIFY(stall.sendAll("POST /echo/s HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc"));
        QVERIFY(stall.hungUp(5'000));
        QVERIFY(stall.readUntilClosed(1'000).isEmpty());

        RawClient slow(f->port());
        QVERIFY(slow.sendAll("POST /echo/t HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"));
        QVERIFY(trickle(slow, QByteArray(2000, 'x'))); // about 50 bytes a second
        QVERIFY(slow.readUntilClosed(1'000).isEmpty());
        QTRY_COMPARE(metric(f->port(), "switchyard_open_connections"), 1.0);
    }

    // The edge's settings in the config file's server section, and values it refuses.
    void edgeSettings()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        const auto load = [&](const QByteArray &server) {
            QFile f(path);
            if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
                f.write("{\"server\": {" + server + "}}");
            f.close();
            return ServerSettings::fromConfigFile(path);
        };
        const ServerSettings defaults = load("");
        QCOMPARE(defaults.maxConnectionsPerClient, 0);
        QCOMPARE(defaults.maxBufferedBytes, qint64(256) << 20);
        QCOMPARE(defaults.headerTimeoutMs, 15'000);
        QCOMPARE(defaults.bodyTimeoutMs, 60'000);
        QCOMPARE(defaults.minBodyRate, qint64(1024));
        const ServerSettings s =
            load("\"max_connections_per_client\": 8, \"max_buffered_bytes\": 1048576, "
                 "\"header_timeout_ms\": 500, \"body_timeout_ms\": 700, \"min_body_rate\": 0");
        QCOMPARE(s.maxConnectionsPerClient, 8);
        QCOMPARE(s.maxBufferedBytes, qint64(1048576));
        QCOMPARE(s.headerTimeoutMs, 500);
        QCOMPARE(s.bodyTimeoutMs, 700);
        QCOMPARE(s.minBodyRate, qint64(0));
        for (const QByteArray &bad :
             {QByteArray("\"max_connections_per_client\": -1"),
              QByteArray("\"max_connections_per_client\": 1.5"),
              QByteArray("\"min_body_rate\": \"fast\""), QByteArray("\"max_buffered_bytes\": 0"),
              QByteArray("\"header_timeout_ms\": 0"), QByteArray("\"body_timeout_ms\": -5")})
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, load(bad));
    }

    void gracefulShutdownFinishesInFlight()
    {
        auto f = start(tightSettings());
        HttpClient c = f->client();
        c.sendRaw("POST /echo/late?ms=500 HTTP/1.1\r\nContent-Length: 1\r\n\r\nz");
        QThread::msleep(100);
        QThread *stopper = QThread::create([&] { f->host().stop(); });
        stopper->start();
        const HttpReply r = c.readReply(5000);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body, QByteArray("late:z"));
        QVERIFY(stopper->wait(5000));
        delete stopper;
        // No longer accepting.
        QTcpSocket s;
        s.connectToHost(QHostAddress::LocalHost, f->port());
        QVERIFY(!s.waitForConnected(500) || !s.waitForReadyRead(300));
    }
};

QTEST_GUILESS_MAIN(TestHttp)
#include "tst_http.moc"
