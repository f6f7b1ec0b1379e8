#include "Pipeline.h"
#include "ServerFixture.h"

#include <QTest>
#include <QThread>
#include <QTimer>

namespace {

// A public route answering after ?ms=N milliseconds with the path it saw, for ordering,
// shutdown and disconnect tests.
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
