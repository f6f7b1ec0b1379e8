// UpstreamClient against a scripted HTTP/1.1 server on loopback. Every case runs twice: through
// Http1Client (plain http to an IP literal, the default) and through libcurl (setOwnHttp1(false)),
// and both must behave the same way for what a family sees: status, headers, body, errors,
// deadlines, pausing, aborting and connection reuse.
#include "upstream/UpstreamClient.h"

#include <algorithm>
#include <arpa/inet.h>
#include <functional>
#include <memory>
#include <QElapsedTimer>
#include <QPointer>
#include <QScopeGuard>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <QTimer>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace {

struct Request
{
    QByteArray line; // "POST /x HTTP/1.1"
    HttpHeaders headers;
    QByteArray body;
    QByteArray header(const QByteArray &name) const { return headerValue(headers, name); }
};

// Accepts connections and hands each complete request (head and Content-Length body) to the
// handler with its socket; the handler writes the answer however the case needs.
class ScriptedServer : public QObject
{
public:
    using Handler = std::function<void(QTcpSocket *socket, const Request &request)>;

    explicit ScriptedServer(Handler handler) : m_handler(std::move(handler))
    {
        QVERIFY(m_server.listen(QHostAddress::LocalHost, 0));
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = m_server.nextPendingConnection()) {
                ++accepted;
                auto buffer = std::make_shared<QByteArray>();
                connect(s, &QTcpSocket::readyRead, this, [this, s, buffer] {
                    buffer->append(s->readAll());
                    while (true) {
                        const qsizetype end = buffer->indexOf("\r\n\r\n");
                        if (end < 0)
                            return;
                        Request r;
                        const QList<QByteArray> lines = buffer->left(end).split('\n');
                        r.line = lines.value(0).trimmed();
                        for (qsizetype i = 1; i < lines.size(); ++i) {
                            const qsizetype colon = lines[i].indexOf(':');
                            r.headers.append({lines[i].left(colon).trimmed(),
                                              lines[i].mid(colon + 1).trimmed()});
                        }
                        const qsizetype length = r.header("Content-Length").toLongLong();
                        if (buffer->size() < end + 4 + length)
                            return;
                        r.body = buffer->mid(end + 4, length);
                        buffer->remove(0, end + 4 + length);
                        requests.append(r);
                        m_handler(s, r);
                    }
                });
                connect(s, &QTcpSocket::disconnected, this, [this, s] {
                    ++disconnected;
                    s->deleteLater();
                });
            }
        });
    }
    QByteArray url(const QByteArray &path = "/v1/x") const
    {
        return "http://127.0.0.1:" + QByteArray::number(m_server.serverPort()) + path;
    }
    int accepted = 0;
    int disconnected = 0;
    QList<Request> requests;

private:
    QTcpServer m_server;
    Handler m_handler;
};

QByteArray answer(const QByteArray &body, const QByteArray &extra = {})
{
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + extra +
           "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body;
}

struct Result
{
    int status = 0;
    HttpHeaders headers;
    QByteArray body;
    QList<QByteArray> pieces;
    bool done = false;
    UpstreamError error = UpstreamError::None;
    QString message;
    int heads = 0;
};

std::shared_ptr<Result> watch(const UpstreamCallPtr &call)
{
    auto r = std::make_shared<Result>();
    call->onHead = [r](int status, const HttpHeaders &headers) {
        ++r->heads;
        r->status = status;
        r->headers = headers;
    };
    call->onData = [r](const QByteArray &data) {
        r->body += data;
        r->pieces.append(data);
    };
    call->onDone = [r](UpstreamError error, const QString &message) {
        r->done = true;
        r->error = error;
        r->message = message;
    };
    return r;
}

UpstreamRequest post(const QByteArray &url, const QByteArray &body = "{\"q\":1}")
{
    UpstreamRequest r;
    r.url = url;
    r.body = body;
    r.headers = {"Content-Type: application/json"};
    return r;
}

} // namespace

class TestUpstreamClient : public QObject
{
    Q_OBJECT
private slots:
    void init();
    void routes();
    void requestAsSent_data() { paths(); }
    void requestAsSent();
    void keepAliveReuse_data() { paths(); }
    void keepAliveReuse();
    void chunkedInPieces_data() { paths(); }
    void chunkedInPieces();
    void untilClose_data() { paths(); }
    void untilClose();
    void interimHead_data() { paths(); }
    void interimHead();
    void refused_data() { paths(); }
    void refused();
    void connectDeadline_data() { paths(); }
    void connectDeadline();
    void sendFailsMidway_data() { paths(); }
    void sendFailsMidway();
    void peerClosesKeptConnection_data() { paths(); }
    void peerClosesKeptConnection();
    void cutBody_data() { paths(); }
    void cutBody();
    void notHttp_data() { paths(); }
    void notHttp();
    void firstByteDeadline_data() { paths(); }
    void firstByteDeadline();
    void idleDeadline_data() { paths(); }
    void idleDeadline();
    void totalDeadline_data() { paths(); }
    void totalDeadline();
    void pauseHoldsData_data() { paths(); }
    void pauseHoldsData();
    void pauseWithTheRestKept_data() { paths(); }
    void pauseWithTheRestKept();
    void pauseAtTheHead_data() { paths(); }
    void pauseAtTheHead();
    void unaskedBytesWhileIdle_data() { paths(); }
    void unaskedBytesWhileIdle();
    void abortClosesConnection_data() { paths(); }
    void abortClosesConnection();
    void largeUpload_data() { paths(); }
    void largeUpload();
    void idleDropClosesConnections();

private:
    void paths()
    {
        QTest::addColumn<bool>("own");
        QTest::newRow("Http1Client") << true;
        QTest::newRow("libcurl") << false;
    }
    UpstreamClient &client()
    {
        QFETCH(bool, own);
        m_client = std::make_unique<UpstreamClient>();
        m_client->setOwnHttp1(own);
        return *m_client;
    }
    std::unique_ptr<UpstreamClient> m_client;
};

void TestUpstreamClient::init()
{
    m_client.reset();
}

void TestUpstreamClient::routes()
{
    // Http1Client takes plain http to an IP literal and nothing else.
    const auto planned = [](const QByteArray &url, auto change) {
        UpstreamRequest r = post(url);
        change(r);
        return Http1Client::plan(r) != nullptr;
    };
    const auto same = [](UpstreamRequest &) {};
    QVERIFY(planned("http://127.0.0.1:8080/v1/chat/completions", same));
    QVERIFY(planned("HTTP://10.0.0.2/v1", same));
    QVERIFY(planned("http://[::1]:9/x?y=1", same));
    QVERIFY(!planned("https://127.0.0.1/v1", same));
    QVERIFY(!planned("http://localhost:8080/v1", same));
    QVERIFY(!planned("http://api.example.com/v1", same));
    QVERIFY(!planned("http://127.1/v1", same)); // another spelling: libcurl's to resolve
    QVERIFY(!planned("http://user@127.0.0.1/v1", same));
    QVERIFY(!planned("http://[fe80::1%25eth0]/v1", same));
    QVERIFY(!planned("http://127.0.0.1:0/v1", same));
    QVERIFY(!planned("http://127.0.0.1:70000/v1", same));
    QVERIFY(!planned("http://127.0.0.1/a b", same));
    QVERIFY(!planned("http://127.0.0.1/v1", [](UpstreamRequest &r) { r.freshConnection = true; }));
    QVERIFY(!planned("http://127.0.0.1/v1", [](UpstreamRequest &r) { r.protocols = "http"; }));
    QVERIFY(!planned("http://127.0.0.1/v1",
                     [](UpstreamRequest &r) { r.pinnedResolve = {"a:80:127.0.0.1"}; }));
    QVERIFY(!planned("http://127.0.0.1/v1",
                     [](UpstreamRequest &r) { r.headers.append("X-Evil: a\r\nHost: b"); }));
    QVERIFY(!planned("http://127.0.0.1/v1",
                     [](UpstreamRequest &r) { r.headers.append("Transfer-Encoding: chunked"); }));

    // The head as libcurl writes it for the same request.
    UpstreamRequest r = post("http://[::1]:9/x?y=1#frag", "{}");
    r.headers.append("Accept: text/event-stream");
    r.headers.append("User-Agent:"); // removed
    const auto x = Http1Client::plan(r);
    QVERIFY(x);
    QCOMPARE(x->request, QByteArray("POST /x?y=1 HTTP/1.1\r\nHost: [::1]:9\r\n"
                                    "Content-Type: application/json\r\n"
                                    "Accept: text/event-stream\r\nContent-Length: 2\r\n\r\n{}"));
    QCOMPARE(x->ip, QStringLiteral("::1"));
    UpstreamRequest get;
    get.method = "GET";
    get.url = "http://127.0.0.1:80?q";
    QCOMPARE(Http1Client::plan(get)->request,
             QByteArray("GET /?q HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Switchyard\r\n"
                        "Accept: */*\r\n\r\n"));
}

void TestUpstreamClient::requestAsSent()
{
    ScriptedServer server([](QTcpSocket *s, const Request &) { s->write(answer("{}")); });
    UpstreamRequest r = post(server.url("/v1/chat/completions?a=1"), "{\"model\":\"m\"}");
    r.headers.append("Accept: text/event-stream");
    r.headers.append("Authorization: Bearer k1");
    auto result = watch(client().start(r));
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::None);
    QCOMPARE(server.requests.size(), 1);
    const Request &got = server.requests.first();
    QCOMPARE(got.line, QByteArray("POST /v1/chat/completions?a=1 HTTP/1.1"));
    QCOMPARE(got.header("Host"), server.url("").mid(7));
    QCOMPARE(got.header("Content-Type"), QByteArray("application/json"));
    QCOMPARE(got.header("Accept"), QByteArray("text/event-stream"));
    QCOMPARE(got.header("Authorization"), QByteArray("Bearer k1"));
    QCOMPARE(got.header("User-Agent"), QByteArray("Switchyard"));
    QCOMPARE(got.body, QByteArray("{\"model\":\"m\"}"));
    QVERIFY(got.header("Expect").isEmpty());
}

void TestUpstreamClient::keepAliveReuse()
{
    ScriptedServer server([](QTcpSocket *s, const Request &r) {
        s->write(answer("{\"echo\":" + r.body + "}", "X-Mixed-Case:  v1 \r\n"));
    });
    UpstreamClient &c = client();
    for (int i = 0; i < 3; ++i) {
        const UpstreamCallPtr call = c.start(post(server.url(), QByteArray::number(i)));
        auto result = watch(call);
        QTRY_VERIFY(result->done);
        QCOMPARE(result->error, UpstreamError::None);
        QCOMPARE(result->status, 200);
        QCOMPARE(result->heads, 1);
        QCOMPARE(headerValue(result->headers, "x-mixed-case"), QByteArray("v1"));
        QVERIFY(result->headers.contains({"content-type", "application/json"}));
        QCOMPARE(result->body, "{\"echo\":" + QByteArray::number(i) + "}");
        QCOMPARE(call->primaryIp(), QStringLiteral("127.0.0.1"));
    }
    QCOMPARE(server.accepted, 1); // one connection served all three
}

void TestUpstreamClient::chunkedInPieces()
{
    const QByteArray wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "6;note=x\r\ndata: \r\n9\r\n{\"n\":1}\n\n\r\n0\r\nX-T: 1\r\n\r\n";
    ScriptedServer server([wire](QTcpSocket *s, const Request &) {
        // Byte by byte, a millisecond apart: every split the parser can see.
        auto at = std::make_shared<int>(0);
        auto *timer = new QTimer(s);
        QObject::connect(timer, &QTimer::timeout, s, [s, wire, at, timer] {
            s->write(wire.mid((*at)++, 1));
            if (*at >= wire.size())
                timer->stop();
        });
        timer->start(1);
    });
    UpstreamClient &c = client();
    auto result = watch(c.start(post(server.url())));
    QTRY_VERIFY_WITH_TIMEOUT(result->done, 10'000);
    QCOMPARE(result->error, UpstreamError::None);
    QCOMPARE(result->body, QByteArray("data: {\"n\":1}\n\n"));
    auto again = watch(c.start(post(server.url())));
    QTRY_VERIFY_WITH_TIMEOUT(again->done, 10'000);
    QCOMPARE(again->body, result->body);
    QCOMPARE(server.accepted, 1);
}

void TestUpstreamClient::untilClose()
{
    ScriptedServer server([](QTcpSocket *s, const Request &) {
        s->write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nthe whole");
        s->write(" of it");
        s->disconnectFromHost();
    });
    UpstreamClient &c = client();
    auto result = watch(c.start(post(server.url())));
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::None);
    QCOMPARE(result->body, QByteArray("the whole of it"));
    auto again = watch(c.start(post(server.url())));
    QTRY_VERIFY(again->done);
    QCOMPARE(again->error, UpstreamError::None);
    QCOMPARE(server.accepted, 2);
}

void TestUpstreamClient::interimHead()
{
    ScriptedServer server([](QTcpSocket *s, const Request &) {
        s->write("HTTP/1.1 100 Continue\r\n\r\n");
        s->flush();
        s->write("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}");
    });
    auto result = watch(client().start(post(server.url())));
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::None);
    QCOMPARE(result->heads, 1);
    QCOMPARE(result->status, 429);
    QCOMPARE(headerValue(result->headers, "retry-after"), QByteArray("1"));
    QCOMPARE(result->body, QByteArray("{}"));
}

void TestUpstreamClient::refused()
{
    QTcpServer closed;
    QVERIFY(closed.listen(QHostAddress::LocalHost, 0));
    const QByteArray url = "http://127.0.0.1:" + QByteArray::number(closed.serverPort()) + "/v1";
    closed.close();
    const UpstreamCallPtr call = client().start(post(url));
    auto result = watch(call);
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::ConnectFailed);
    QVERIFY(!result->message.isEmpty());
    QCOMPARE(result->heads, 0);
    QCOMPARE(call->primaryIp(), QString());
}

void TestUpstreamClient::connectDeadline()
{
    // A listener whose accept queue is full drops new SYNs (Linux does, whatever the SYN
    // cookies setting), so a connect on loopback stays pending: the connect deadline ends it.
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    QVERIFY(listener >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    QVERIFY(::bind(listener, reinterpret_cast<sockaddr *>(&address), length) == 0);
    QVERIFY(::listen(listener, 0) == 0); // a queue of one
    QVERIFY(::getsockname(listener, reinterpret_cast<sockaddr *>(&address), &length) == 0);
    std::vector<int> fillers;
    for (int i = 0; i < 3; ++i) { // the first is queued; the others wait on their SYN
        const int f = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        QVERIFY(f >= 0);
        ::connect(f, reinterpret_cast<sockaddr *>(&address), sizeof address);
        fillers.push_back(f);
    }
    const auto closeAll = qScopeGuard([&] {
        for (int f : fillers)
            ::close(f);
        ::close(listener);
    });
    QTest::qWait(50);

    UpstreamRequest r =
        post("http://127.0.0.1:" + QByteArray::number(ntohs(address.sin_port)) + "/v1");
    r.connectTimeoutMs = 300;
    QElapsedTimer t;
    t.start();
    UpstreamClient &c = client();
    auto result = watch(c.start(r));
    QTRY_VERIFY_WITH_TIMEOUT(result->done, 5'000);
    QCOMPARE(result->error, UpstreamError::Timeout);
    QVERIFY2(result->message.startsWith(QStringLiteral("no response within ")),
             qPrintable(result->message));
    QVERIFY2(t.elapsed() >= 300 && t.elapsed() < 2'000, qPrintable(QString::number(t.elapsed())));
    QCOMPARE(result->heads, 0);
    QCOMPARE(c.idleHttp1Connections(), 0);
}

void TestUpstreamClient::sendFailsMidway()
{
    // The upstream reads a little of an 8 MiB upload and resets the connection (closing a
    // socket with unread data sends a reset): the upload fails partway, noticed by the send or
    // by the read, whichever the loop serves first, and a call on a new connection is not sent
    // again.
    QTcpServer server;
    QVERIFY(server.listen(QHostAddress::LocalHost, 0));
    int accepted = 0;
    connect(&server, &QTcpServer::newConnection, this, [&] {
        while (QTcpSocket *s = server.nextPendingConnection()) {
            ++accepted;
            s->setReadBufferSize(4096); // leave the rest unread in the kernel
            connect(s, &QTcpSocket::readyRead, s, [s] {
                s->abort();
                s->deleteLater();
            });
        }
    });
    const QByteArray url = "http://127.0.0.1:" + QByteArray::number(server.serverPort()) + "/v1";
    auto result = watch(client().start(post(url, QByteArray(8 * 1024 * 1024, 'b'))));
    QTRY_VERIFY_WITH_TIMEOUT(result->done, 10'000);
    QCOMPARE(result->error, UpstreamError::Broken);
    QVERIFY(!result->message.isEmpty());
    QCOMPARE(result->heads, 0);
    QTest::qWait(100);
    QCOMPARE(accepted, 1);
}

void TestUpstreamClient::peerClosesKeptConnection()
{
    // The server closes each connection right after its answer, without saying so: the next
    // call finds its kept connection closed (noticed while idle, or as the request goes out)
    // and must still succeed on a new one.
    ScriptedServer server([](QTcpSocket *s, const Request &r) {
        s->write(answer(r.body));
        s->flush();
        s->disconnectFromHost();
    });
    UpstreamClient &c = client();
    for (int i = 0; i < 5; ++i) {
        auto result = watch(c.start(post(server.url(), QByteArray::number(i))));
        QTRY_VERIFY(result->done);
        QCOMPARE(result->error, UpstreamError::None);
        QCOMPARE(result->body, QByteArray::number(i));
        if (i % 2)
            QTest::qWait(50); // sometimes the close arrives while idle
    }
    QCOMPARE(server.requests.size(), 5);
}

void TestUpstreamClient::cutBody()
{
    ScriptedServer server([](QTcpSocket *s, const Request &) {
        s->write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
        s->flush();
        s->disconnectFromHost();
    });
    auto result = watch(client().start(post(server.url())));
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::Broken);
    QCOMPARE(result->status, 200);
    QCOMPARE(result->body, QByteArray("partial"));
}

void TestUpstreamClient::notHttp()
{
    ScriptedServer server([](QTcpSocket *s, const Request &) {
        s->write("SSH-2.0-OpenSSH_9.2\r\n\r\n");
        s->flush();
        s->disconnectFromHost();
    });
    auto result = watch(client().start(post(server.url())));
    QTRY_VERIFY(result->done);
    QVERIFY(result->error == UpstreamError::Failed);
    QCOMPARE(result->heads, 0);
}

void TestUpstreamClient::firstByteDeadline()
{
    ScriptedServer server([](QTcpSocket *, const Request &) {}); // never answers
    UpstreamRequest r = post(server.url());
    r.firstByteTimeoutMs = 200;
    QElapsedTimer t;
    t.start();
    auto result = watch(client().start(r));
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::Timeout);
    QCOMPARE(result->message, QStringLiteral("no response within 200 ms"));
    QVERIFY(t.elapsed() >= 200);
    QTRY_COMPARE(server.disconnected, 1); // the connection is not kept
}

void TestUpstreamClient::idleDeadline()
{
    ScriptedServer server([](QTcpSocket *s, const Request &) {
        s->write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nstart");
    });
    UpstreamRequest r = post(server.url());
    r.idleTimeoutMs = 200;
    auto result = watch(client().start(r));
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::Timeout);
    QCOMPARE(result->message, QStringLiteral("the response stalled for 200 ms"));
    QCOMPARE(result->body, QByteArray("start"));
}

void TestUpstreamClient::totalDeadline()
{
    // A byte every 50 ms keeps the idle deadline away; the total one still ends it.
    ScriptedServer server([](QTcpSocket *s, const Request &) {
        s->write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
        auto *timer = new QTimer(s);
        QObject::connect(timer, &QTimer::timeout, s, [s] { s->write("x"); });
        timer->start(50);
    });
    UpstreamRequest r = post(server.url());
    r.idleTimeoutMs = 1000;
    r.totalTimeoutMs = 400;
    QElapsedTimer t;
    t.start();
    auto result = watch(client().start(r));
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::Timeout);
    QVERIFY2(t.elapsed() >= 400 && t.elapsed() < 2000, qPrintable(QString::number(t.elapsed())));
    QVERIFY(result->body.size() > 0);
}

void TestUpstreamClient::pauseHoldsData()
{
    // Three pieces arrive at once; the receiver pauses at the first. Nothing more comes while
    // paused (not even after the idle limit), and the rest arrives in order once resumed.
    QPointer<QTcpSocket> peer;
    ScriptedServer server([&peer](QTcpSocket *s, const Request &) {
        peer = s;
        s->write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\none\r\n");
        s->flush();
    });
    UpstreamRequest r = post(server.url());
    r.idleTimeoutMs = 150;
    const UpstreamCallPtr call = client().start(r);
    auto result = watch(call);
    call->onData = [result, call](const QByteArray &data) {
        result->body += data;
        call->setPaused(true);
    };
    QTRY_COMPARE(result->body, QByteArray("one"));
    QVERIFY(call->isPaused());
    peer->write("3\r\ntwo\r\n5\r\nthree\r\n0\r\n\r\n");
    peer->flush();
    QTest::qWait(400);
    QCOMPARE(result->body, QByteArray("one"));
    QVERIFY(!result->done);
    call->onData = [result](const QByteArray &data) { result->body += data; };
    call->setPaused(false);
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::None);
    QCOMPARE(result->body, QByteArray("onetwothree"));
}

void TestUpstreamClient::pauseWithTheRestKept()
{
    // The whole answer arrives in one piece and the receiver pauses at its first chunk: the
    // rest, end included, waits until the resume, which completes the call (and closes the
    // connection, as the answer asked).
    ScriptedServer server([](QTcpSocket *s, const Request &) {
        s->write("HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n");
    });
    const UpstreamCallPtr call = client().start(post(server.url()));
    auto result = watch(call);
    call->onData = [result, call](const QByteArray &data) {
        result->body += data;
        call->setPaused(true);
    };
    QTRY_COMPARE(result->body, QByteArray("one"));
    QTest::qWait(200);
    QCOMPARE(result->body, QByteArray("one"));
    QVERIFY(!result->done);
    call->setPaused(false);
    QTRY_COMPARE(result->body, QByteArray("onetwo"));
    call->setPaused(false);
    QTRY_VERIFY(result->done);
    QCOMPARE(result->error, UpstreamError::None);
    QTRY_COMPARE(server.disconnected, 1);
}

void TestUpstreamClient::pauseAtTheHead()
{
    ScriptedServer server([](QTcpSocket *s, const Request &) { s->write(answer("the body")); });
    const UpstreamCallPtr call = client().start(post(server.url()));
    auto result = watch(call);
    call->onHead = [result, call](int status, const HttpHeaders &) {
        result->status = status;
        call->setPaused(true);
    };
    QTRY_COMPARE(result->status, 200);
    QTest::qWait(200);
    QVERIFY(result->body.isEmpty());
    QVERIFY(!result->done);
    call->setPaused(false);
    QTRY_VERIFY(result->done);
    QCOMPARE(result->body, QByteArray("the body"));
}

void TestUpstreamClient::unaskedBytesWhileIdle()
{
    // Some servers send a 408 on an idle connection before closing it: a kept connection
    // holding bytes nobody asked for is not used again, and the next call gets its own answer.
    ScriptedServer server([](QTcpSocket *s, const Request &r) {
        s->write(answer(r.body) + "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n");
    });
    UpstreamClient &c = client();
    auto first = watch(c.start(post(server.url(), "1")));
    QTRY_VERIFY(first->done);
    QCOMPARE(first->body, QByteArray("1"));
    auto second = watch(c.start(post(server.url(), "2")));
    QTRY_VERIFY(second->done);
    QCOMPARE(second->error, UpstreamError::None);
    QCOMPARE(second->status, 200);
    QCOMPARE(second->body, QByteArray("2"));
    QCOMPARE(server.accepted, 2);
}

void TestUpstreamClient::abortClosesConnection()
{
    ScriptedServer server([](QTcpSocket *s, const Request &) {
        s->write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome");
    });
    UpstreamClient &c = client();
    const UpstreamCallPtr call = c.start(post(server.url()));
    auto result = watch(call);
    QTRY_COMPARE(result->body, QByteArray("some"));
    call->abort();
    QTRY_COMPARE(server.disconnected, 1); // a half-read connection is never reused
    QTest::qWait(100);
    QVERIFY(!result->done);
    auto next = watch(c.start(post(server.url())));
    QTRY_COMPARE(next->body, QByteArray("some"));
    QCOMPARE(server.accepted, 2);
}

void TestUpstreamClient::largeUpload()
{
    // 8 MiB: more than the socket takes at once, so the rest waits for the write notifier.
    QByteArray body(8 * 1024 * 1024, 'b');
    body[12345] = 'x';
    ScriptedServer server([](QTcpSocket *s, const Request &r) {
        s->write(answer(QByteArray::number(r.body.size()) + ":" +
                        QByteArray::number(r.body.indexOf('x'))));
    });
    auto result = watch(client().start(post(server.url(), body)));
    QTRY_VERIFY_WITH_TIMEOUT(result->done, 20'000);
    QCOMPARE(result->error, UpstreamError::None);
    QCOMPARE(result->body, QByteArray("8388608:12345"));
}

void TestUpstreamClient::idleDropClosesConnections()
{
    ScriptedServer server([](QTcpSocket *s, const Request &) { s->write(answer("{}")); });
    UpstreamClient c;
    c.setIdleDropMs(200);
    std::vector<std::shared_ptr<Result>> results;
    for (int i = 0; i < 4; ++i)
        results.push_back(watch(c.start(post(server.url()))));
    QTRY_VERIFY(std::all_of(results.begin(), results.end(), [](auto &r) { return r->done; }));
    QTRY_COMPARE(server.accepted, 4);
    QCOMPARE(c.idleHttp1Connections(), 4);
    QTRY_COMPARE(server.disconnected, 4);
    QCOMPARE(c.idleHttp1Connections(), 0);
}

QTEST_GUILESS_MAIN(TestUpstreamClient)
#include "tst_upstream_client.moc"
