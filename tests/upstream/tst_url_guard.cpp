// The URL guard: the address classifier, the literal normaliser, the URL checks and the
// guarded fetch against a loopback HTTP server inside the test. Every connection goes to
// 127.0.0.1, 127.0.0.2 or ::1; names are answered by an injected resolver (no DNS query leaves
// the machine), except localhost, which the system resolver answers from /etc/hosts.

#include "upstream/GuardedFetch.h"
#include "upstream/UpstreamClient.h"
#include "upstream/UrlGuard.h"
#include "WebhookReceiver.h"

#include <arpa/inet.h>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QUrlQuery>

using namespace UrlGuard;

namespace {

QHostAddress addr(const char *text)
{
    return QHostAddress(QString::fromLatin1(text));
}

Cidr cidr(const char *text)
{
    QString error;
    const std::optional<Cidr> c = Cidr::parse(QString::fromLatin1(text), &error);
    if (!c)
        qFatal("bad CIDR in the test: %s", qPrintable(error));
    return *c;
}

// Canned answers per name. A name can answer differently on each lookup (the last answer
// repeats): the DNS rebinding attacker. Answers come later, from the event loop, as a real
// resolver's do.
class FakeResolver : public HostResolver
{
public:
    QHash<QString, QList<QList<QHostAddress>>> answers;
    QHash<QString, int> lookups;

    void lookup(const QString &name, QObject *context, Done done) override
    {
        const int n = lookups[name]++;
        const QList<QList<QHostAddress>> list = answers.value(name);
        const QList<QHostAddress> a = list.isEmpty()
                                          ? QList<QHostAddress>{}
                                          : list.at(std::min<qsizetype>(n, list.size() - 1));
        QMetaObject::invokeMethod(
            context,
            [done, a] { done(a, a.isEmpty() ? QStringLiteral("Host not found") : QString()); },
            Qt::QueuedConnection);
    }
};

struct SeenRequest
{
    QByteArray method;
    QByteArray target;
    QList<QByteArray> headerLines;
    QByteArray body;
    bool hasHeader(const QByteArray &name) const
    {
        for (const QByteArray &h : headerLines)
            if (h.toLower().startsWith(name.toLower() + ':'))
                return true;
        return false;
    }
};

// A loopback HTTP/1.1 server with canned answers, counting connections. It runs on the test's
// event loop, as the guarded fetch does (libcurl never blocks it).
//   /ok                 200 "hello"
//   /redirect?to=U&code=C   C (302 default) with Location: U
//   /hops/N             302 to /hops/N-1 (relative); /hops/0 answers 200 "done"
//   /echo               200 with the request body
//   /status/N           N with a short body
//   /slow               never answers
//   /trickle            200 and one byte every 50 ms, never ending
//   /stream             200, three pieces 50 ms apart, closed-delimited
//   /huge               200, Content-Length: 1 MiB, the whole body
//   /huge-chunked       200, 1 MiB in 4 KiB chunks, no Content-Length
//   /size/N             200, exactly N bytes
class TestServer : public QObject
{
public:
    explicit TestServer(const QHostAddress &address = QHostAddress::LocalHost, quint16 port = 0)
    {
        m_listening = m_server.listen(address, port);
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = m_server.nextPendingConnection()) {
                ++connections;
                s->setParent(this);
                connect(s, &QTcpSocket::readyRead, this, [this, s] { onRead(s); });
                connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
    }
    bool listening() const { return m_listening; }
    quint16 port() const { return m_server.serverPort(); }
    QString base(const QString &host = QStringLiteral("127.0.0.1")) const
    {
        return QStringLiteral("http://%1:%2").arg(host).arg(port());
    }

    int connections = 0;
    QList<SeenRequest> requests;

private:
    void onRead(QTcpSocket *s)
    {
        QByteArray &buf = m_buffers[s];
        buf += s->readAll();
        const qsizetype end = buf.indexOf("\r\n\r\n");
        if (end < 0)
            return;
        QList<QByteArray> lines = buf.left(end).split('\n');
        for (QByteArray &l : lines)
            l = l.trimmed();
        SeenRequest r;
        const QList<QByteArray> first = lines.takeFirst().split(' ');
        r.method = first.value(0);
        r.target = first.value(1);
        r.headerLines = lines;
        qsizetype length = 0;
        for (const QByteArray &h : std::as_const(lines))
            if (h.toLower().startsWith("content-length:"))
                length = h.mid(15).trimmed().toLongLong();
        if (buf.size() < end + 4 + length)
            return; // the body is still coming
        r.body = buf.mid(end + 4, length);
        m_buffers.remove(s);
        requests.append(r);
        answer(s, r);
    }

    static QByteArray head(int status, const QByteArray &extra = {})
    {
        return "HTTP/1.1 " + QByteArray::number(status) + " X\r\nConnection: close\r\n" + extra +
               "\r\n";
    }

    void send(QTcpSocket *s, const QByteArray &data)
    {
        s->write(data);
        s->disconnectFromHost();
    }

    void answer(QTcpSocket *s, const SeenRequest &r)
    {
        const QUrl url(QString::fromLatin1(r.target));
        const QString path = url.path();
        const QUrlQuery query(url);
        if (path == u"/ok") {
            send(s, head(200, "Content-Length: 5\r\n") + "hello");
        } else if (path == u"/redirect") {
            const int code = query.hasQueryItem(QStringLiteral("code"))
                                 ? query.queryItemValue(QStringLiteral("code")).toInt()
                                 : 302;
            const QByteArray to =
                query.queryItemValue(QStringLiteral("to"), QUrl::FullyDecoded).toUtf8();
            send(s, head(code, "Location: " + to + "\r\nContent-Length: 0\r\n"));
        } else if (path.startsWith(u"/hops/")) {
            const int n = path.mid(6).toInt();
            if (n == 0)
                send(s, head(200, "Content-Length: 4\r\n") + "done");
            else
                send(s, head(302, "Location: " + QByteArray::number(n - 1) +
                                      "\r\nContent-Length: 0\r\n"));
        } else if (path == u"/echo") {
            send(s, head(200, "Content-Length: " + QByteArray::number(r.body.size()) + "\r\n") +
                        r.body);
        } else if (path.startsWith(u"/status/")) {
            send(s, head(path.mid(8).toInt(), "Content-Length: 5\r\n") + "error");
        } else if (path == u"/slow") {
            // never answers
        } else if (path == u"/trickle") {
            s->write(head(200, "Content-Length: 1000000\r\n"));
            auto *t = new QTimer(s);
            connect(t, &QTimer::timeout, s, [s] { s->write("x"); });
            t->start(50);
        } else if (path == u"/stream") {
            s->write(head(200) + "one,");
            QPointer<QTcpSocket> p = s;
            QTimer::singleShot(50, s, [p] {
                if (p)
                    p->write("two,");
            });
            QTimer::singleShot(100, s, [this, p] {
                if (p)
                    send(p, "three");
            });
        } else if (path == u"/huge") {
            send(s, head(200, "Content-Length: 1048576\r\n") + QByteArray(1 << 20, 'h'));
        } else if (path == u"/huge-chunked") {
            QByteArray out = head(200, "Transfer-Encoding: chunked\r\n");
            for (int i = 0; i < 256; ++i)
                out += "1000\r\n" + QByteArray(4096, 'c') + "\r\n";
            send(s, out + "0\r\n\r\n");
        } else if (path.startsWith(u"/size/")) {
            const int n = path.mid(6).toInt();
            send(s, head(200, "Content-Length: " + QByteArray::number(n) + "\r\n") +
                        QByteArray(n, 's'));
        } else {
            send(s, head(404, "Content-Length: 0\r\n"));
        }
    }

    QTcpServer m_server;
    bool m_listening = false;
    QHash<QTcpSocket *, QByteArray> m_buffers;
};

QString serverUrl(const TestServer &server, const QString &host,
                  const QString &path = QStringLiteral("/ok"))
{
    return server.base(host) + path;
}

struct Result
{
    FetchOutcome outcome;
    QByteArray body;
    int chunks = 0;
    bool done = false;
    qint64 ms = 0;
};

// Runs one fetch to its end (or 20 s) on the test's event loop.
Result run(GuardedFetch &fetch, const FetchRequest &request, const UrlPolicy &policy,
           bool readBody = true)
{
    Result r;
    QElapsedTimer clock;
    clock.start();
    QEventLoop loop;
    GuardedFetchCallPtr call = fetch.start(request, policy);
    if (readBody)
        call->onData = [&r](const QByteArray &chunk) {
            r.body += chunk;
            ++r.chunks;
            return true;
        };
    call->onDone = [&](const FetchOutcome &o) {
        r.outcome = o;
        r.done = true;
        loop.quit();
    };
    QTimer::singleShot(20'000, &loop, &QEventLoop::quit);
    loop.exec();
    r.ms = clock.elapsed();
    if (!r.done)
        call->abort();
    return r;
}

Result get(GuardedFetch &fetch, const QString &url, const UrlPolicy &policy)
{
    FetchRequest req;
    req.url = url;
    return run(fetch, req, policy);
}

// http allowed, loopback (127.0.0.0/8) allowed through the explicit operator setting.
UrlPolicy loopbackPolicy(const QList<Cidr> &allow = {cidr("127.0.0.0/8")})
{
    UrlPolicy p = UrlPolicy::download(QJsonObject{{"allow_http", true}});
    p.allowCidrs = allow;
    p.totalTimeoutMs = 10'000;
    return p;
}

// A loopback port where nothing listens (it did a moment ago).
quint16 closedPort()
{
    QTcpServer s;
    if (!s.listen(QHostAddress::LocalHost, 0))
        qFatal("cannot listen on 127.0.0.1");
    return s.serverPort();
}

// Lets the servers see any connection that was (wrongly) on its way.
void settle()
{
    QTest::qWait(100);
}

} // namespace

class TestUrlGuard : public QObject
{
    Q_OBJECT

private slots:
    // ---- the address classifier ----
    void classifier_data();
    void classifier();
    void operatorExceptions();

    // ---- literals ----
    void literals_data();
    void literals();
    void ipv4MatchesInetAton_data();
    void ipv4MatchesInetAton();

    // ---- URL checks without DNS ----
    void check_data();
    void check();
    void checkCanonical();
    void ports();
    void policySettings_data();
    void policySettings();
    void caFileSetting();
    void redirectResolution();

    // ---- libcurl pinning (UpstreamClient's guard hooks) ----
    void curlNeverResolvesItself();
    void openSocketCheckSeesDialledAddress();

    // ---- guarded fetch ----
    void fetchWithExplicitLoopback();
    void loopbackRefusedByDefault();
    void localhostRefused();
    void localhostAllowedExplicitly();
    void rebindingResolver();
    void preflightThenRebind();
    void fallsBackAcrossPinnedAddresses();
    void ipv6Literal();
    void redirectToPrivateRefused_data();
    void redirectToPrivateRefused();
    void redirectToNameResolvingPrivate();
    void redirectHopLimit();
    void redirectsNotFollowedForCallbacks();
    void redirectMethodsAndHeaders();
    void sizeLimit();
    void timeout();
    void streamsInChunks();
    void httpError();
    void callbackPost();
    void resolveAndConnectFailures();
    void abortStopsCallbacks();
    void socketsComeAndGo_data();
    void socketsComeAndGo();
    void keptNotifiersAreBounded();

    // ---- https with the operator's CA (ca_file), the dialled address ----
    void httpsWithCaFile();
    void dialledAddress();
};

// ---- the address classifier -------------------------------------------------------------------

void TestUrlGuard::classifier_data()
{
    QTest::addColumn<QString>("address");
    QTest::addColumn<QString>("reason"); // empty: allowed
    const auto row = [](const char *a, const char *why) {
        QTest::newRow(a) << QString::fromLatin1(a) << QString::fromLatin1(why);
    };
    // Each IPv4 range: inside at both ends, and the neighbours just outside.
    row("0.0.0.0", "an unspecified address");
    row("0.255.255.255", "a 'this network' address");
    row("1.0.0.0", "");
    row("9.255.255.255", "");
    row("10.0.0.0", "a private address");
    row("10.255.255.255", "a private address");
    row("11.0.0.0", "");
    row("100.63.255.255", "");
    row("100.64.0.0", "a shared (carrier-grade NAT) address");
    row("100.127.255.255", "a shared (carrier-grade NAT) address");
    row("100.128.0.0", "");
    row("126.255.255.255", "");
    row("127.0.0.1", "a loopback address");
    row("127.255.255.255", "a loopback address");
    row("128.0.0.0", "");
    row("169.253.255.255", "");
    row("169.254.0.0", "a link-local address");
    row("169.254.169.254", "a cloud metadata address");
    row("169.254.255.255", "a link-local address");
    row("169.255.0.0", "");
    row("172.15.255.255", "");
    row("172.16.0.0", "a private address");
    row("172.31.255.255", "a private address");
    row("172.32.0.0", "");
    row("191.255.255.255", "");
    row("192.0.0.0", "an IETF protocol assignments address");
    row("192.0.0.255", "an IETF protocol assignments address");
    row("192.0.1.0", "");
    row("192.0.2.0", "a documentation address");
    row("192.0.2.255", "a documentation address");
    row("192.0.3.0", "");
    row("192.167.255.255", "");
    row("192.168.0.0", "a private address");
    row("192.168.255.255", "a private address");
    row("192.169.0.0", "");
    row("198.17.255.255", "");
    row("198.18.0.0", "a benchmarking address");
    row("198.19.255.255", "a benchmarking address");
    row("198.20.0.0", "");
    row("198.51.99.255", "");
    row("198.51.100.0", "a documentation address");
    row("198.51.100.255", "a documentation address");
    row("198.51.101.0", "");
    row("203.0.112.255", "");
    row("203.0.113.0", "a documentation address");
    row("203.0.113.255", "a documentation address");
    row("203.0.114.0", "");
    row("223.255.255.255", "");
    row("224.0.0.0", "a multicast address");
    row("239.255.255.255", "a multicast address");
    row("240.0.0.0", "a reserved address");
    row("255.255.255.254", "a reserved address");
    row("255.255.255.255", "the broadcast address");
    row("8.8.8.8", "");
    row("93.184.216.34", "");
    // IPv6.
    row("::", "an unspecified address");
    row("::1", "a loopback address");
    row("::2", "an IPv4-compatible address (deprecated)");
    row("::7f00:1", "an IPv4-compatible address (deprecated)");
    row("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "");
    row("fc00::", "a private (unique local) address");
    row("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a private (unique local) address");
    row("fd00:ec2::254", "a cloud metadata address");
    row("fe00::", "");
    row("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "");
    row("fe80::", "a link-local address");
    row("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a link-local address");
    row("fec0::1", "a site-local address (deprecated)");
    row("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a site-local address (deprecated)");
    row("ff00::", "a multicast address");
    row("ff02::1", "a multicast address");
    row("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a multicast address");
    row("2001:db8::1", "a documentation address");
    row("2001::1", "a Teredo address");
    row("100::1", "a discard-only address");
    row("64:ff9b:1::1", "a local-use NAT64 address");
    row("2606:4700:4700::1111", "");
    row("2a00:1450:4001:81c::200e", "");
    // Embedded IPv4, judged on the embedded address.
    row("::ffff:127.0.0.1", "a loopback address (IPv4-mapped IPv6)");
    row("::ffff:7f00:1", "a loopback address (IPv4-mapped IPv6)");
    row("::ffff:169.254.169.254", "a cloud metadata address (IPv4-mapped IPv6)");
    row("::ffff:10.1.2.3", "a private address (IPv4-mapped IPv6)");
    row("::ffff:0.0.0.0", "an unspecified address (IPv4-mapped IPv6)");
    row("::ffff:8.8.8.8", "");
    row("::ffff:0:127.0.0.1", "a loopback address (IPv4-translated IPv6)");
    row("::ffff:0:8.8.8.8", "");
    row("64:ff9b::7f00:1", "a loopback address (NAT64 IPv6)");
    row("64:ff9b::a9fe:a9fe", "a cloud metadata address (NAT64 IPv6)");
    row("64:ff9b::808:808", "");
    row("2002:7f00:1::1", "a loopback address (6to4 IPv6)");
    row("2002:c0a8:101::", "a private address (6to4 IPv6)");
    row("2002:808:808::1", "");
}

void TestUrlGuard::classifier()
{
    QFETCH(QString, address);
    QFETCH(QString, reason);
    const QHostAddress a(address);
    QVERIFY2(!a.isNull(), qPrintable(address));
    QCOMPARE(forbiddenReason(a), reason);
    // The same through checkResolved, as a resolver's answer.
    const QString resolved = checkResolved({a}, UrlPolicy{});
    QCOMPARE(resolved, reason.isEmpty() ? QString() : QStringLiteral("resolves to ") + reason);
}

void TestUrlGuard::operatorExceptions()
{
    const QList<Cidr> loopback = {cidr("127.0.0.0/8")};
    QCOMPARE(forbiddenReason(addr("127.0.0.1"), loopback), QString());
    QCOMPARE(forbiddenReason(addr("127.9.9.9"), loopback), QString());
    QCOMPARE(forbiddenReason(addr("::ffff:127.0.0.1"), loopback), QString()); // embedded
    QCOMPARE(forbiddenReason(addr("::1"), loopback), QStringLiteral("a loopback address"));
    QCOMPARE(forbiddenReason(addr("10.0.0.1"), loopback), QStringLiteral("a private address"));
    QCOMPARE(forbiddenReason(addr("128.0.0.1"), loopback), QString());

    const QList<Cidr> intranet = {cidr("10.1.0.0/16"), cidr("fd12:3456::/32")};
    QCOMPARE(forbiddenReason(addr("10.1.200.3"), intranet), QString());
    QCOMPARE(forbiddenReason(addr("10.2.0.1"), intranet), QStringLiteral("a private address"));
    QCOMPARE(forbiddenReason(addr("fd12:3456::9"), intranet), QString());
    QCOMPARE(forbiddenReason(addr("64:ff9b::a01:1"), intranet), QString());

    // A broad exception never opens the metadata addresses, 0.0.0.0 or ::.
    const QList<Cidr> broad = {cidr("0.0.0.0/0"), cidr("::/0")};
    QCOMPARE(forbiddenReason(addr("169.254.1.1"), broad), QString());
    QCOMPARE(forbiddenReason(addr("169.254.169.254"), broad),
             QStringLiteral("a cloud metadata address"));
    QCOMPARE(forbiddenReason(addr("::ffff:169.254.169.254"), broad),
             QStringLiteral("a cloud metadata address (IPv4-mapped IPv6)"));
    QCOMPARE(forbiddenReason(addr("fd00:ec2::254"), broad),
             QStringLiteral("a cloud metadata address"));
    QCOMPARE(forbiddenReason(addr("0.0.0.0"), broad), QStringLiteral("an unspecified address"));
    QCOMPARE(forbiddenReason(addr("::"), broad), QStringLiteral("an unspecified address"));
    // ... but an exception naming exactly that address does.
    QCOMPARE(forbiddenReason(addr("169.254.169.254"), {cidr("169.254.169.254/32")}), QString());
    QCOMPARE(forbiddenReason(addr("169.254.169.254"), {cidr("169.254.169.254")}), QString());
}

// ---- literals -----------------------------------------------------------------------------------

void TestUrlGuard::literals_data()
{
    QTest::addColumn<QString>("host");
    QTest::addColumn<int>("form");
    QTest::addColumn<QString>("canonical"); // or the error for Invalid
    const auto row = [](const char *name, const QString &host, HostForm form, const char *out) {
        QTest::newRow(name) << host << int(form) << QString::fromUtf8(out);
    };
    const auto v4 = [&](const char *host, const char *out) {
        row(host, QString::fromUtf8(host), HostForm::IPv4, out);
    };
    v4("127.0.0.1", "127.0.0.1");
    v4("2130706433", "127.0.0.1");    // one 32-bit decimal
    v4("0x7f000001", "127.0.0.1");    // one 32-bit hex
    v4("017700000001", "127.0.0.1");  // one 32-bit octal
    v4("0177.0.0.1", "127.0.0.1");    // octal part
    v4("0x7f.1", "127.0.0.1");        // hex part, 8.24
    v4("0X7F.0x0.0.01", "127.0.0.1"); // mixed bases, upper-case X
    v4("127.1", "127.0.0.1");         // short, 8.24
    v4("127.0.1", "127.0.0.1");       // short, 8.8.16
    v4("127.0.0.1.", "127.0.0.1");    // one trailing dot
    v4("0", "0.0.0.0");
    v4("0x0", "0.0.0.0");
    v4("00000000000000000177.1", "127.0.0.1");
    // A part longer than a DNS label (which IDNA refuses) is still an IPv4 literal to libcurl;
    // found by fuzz_url_guard.
    v4("000000000000000000000000000000000000000000000000000000000000000000000127.0.0.1",
       "87.0.0.1");
    v4("169.254.43518", "169.254.169.254");
    v4("0xa9fea9fe", "169.254.169.254");
    v4("4294967295", "255.255.255.255");
    v4("10.0.65535", "10.0.255.255");
    row("full-width digits", QString::fromUtf8("１２７.０.０.１"), HostForm::IPv4, "127.0.0.1");
    row("ideographic dots", QString::fromUtf8("127。0。0。1"), HostForm::IPv4, "127.0.0.1");
    row("percent-encoded", QStringLiteral("%31%32%37.0.0.1"), HostForm::IPv4, "127.0.0.1");
    const auto v6 = [&](const char *host, const char *out) {
        row(host, QString::fromUtf8(host), HostForm::IPv6, out);
    };
    v6("[::1]", "::1");
    v6("[0:0:0:0:0:0:0:1]", "::1");
    v6("[::ffff:127.0.0.1]", "::ffff:127.0.0.1");
    v6("[::FFFF:7F00:1]", "::ffff:127.0.0.1");
    v6("[fe80::1%25eth0]", "fe80::1");
    v6("[fe80::1%eth0]", "fe80::1");
    v6("[64:ff9b::127.0.0.1]", "64:ff9b::7f00:1");
    const auto name = [&](const char *host, const char *out) {
        row(host, QString::fromUtf8(host), HostForm::Name, out);
    };
    name("localhost", "localhost");
    name("LOCALHOST", "localhost");
    name("Example.COM.", "example.com");
    name("bücher.de", "xn--bcher-kva.de");
    name("a_b.example", "a_b.example");
    name("1.2.3.example", "1.2.3.example");
    name("0x7f.example", "0x7f.example");
    name("%61.example", "a.example");
    const auto bad = [&](const char *host, const char *why) {
        row(host, QString::fromUtf8(host), HostForm::Invalid, why);
    };
    bad("256.0.0.1", "the host is not a valid IPv4 address");
    bad("1.2.3.4.5", "the host is not a valid IPv4 address");
    bad("08.0.0.1", "the host is not a valid IPv4 address");
    bad("0x", "the host is not a valid IPv4 address");
    name("0x1g", "0x1g");
    bad("4294967296", "the host is not a valid IPv4 address");
    bad("1.16777216", "the host is not a valid IPv4 address");
    bad("1.2.65536", "the host is not a valid IPv4 address");
    bad("127.0.0.1..", "the host name is not valid");
    bad("example.123", "the host is not a valid IPv4 address");
    bad("+127.0.0.1", "the host name is not valid");
    bad("[::1", "the IPv6 address is not closed by ]");
    bad("[127.0.0.1]", "the IPv6 address is not valid");
    bad("[::g]", "the IPv6 address is not valid");
    bad("[fe80::1%]", "the IPv6 zone id is not valid");
    bad("[fe80::1%25a/b]", "the IPv6 zone id is not valid");
    bad("a b", "the host name is not valid");
    bad("a..b", "the host name is not valid");
    bad("-a.example", "the host name is not valid");
    bad("a@b", "the host name is not valid");
    bad("%2525", "the host name is not valid");
    bad("%ff", "the host name is not valid");
    bad("", "the host is empty");
}

void TestUrlGuard::literals()
{
    QFETCH(QString, host);
    QFETCH(int, form);
    QFETCH(QString, canonical);
    const ParsedHost p = parseHost(host);
    QCOMPARE(int(p.form), form);
    if (HostForm(form) == HostForm::Invalid) {
        QCOMPARE(p.error, canonical);
        return;
    }
    QCOMPARE(p.canonical, canonical);
    if (HostForm(form) != HostForm::Name)
        QCOMPARE(p.address, QHostAddress(canonical));
    if (host.contains(u"eth0"))
        QCOMPARE(p.zone, QStringLiteral("eth0"));
}

void TestUrlGuard::ipv4MatchesInetAton_data()
{
    QTest::addColumn<QString>("text");
    for (const char *t : {"127.0.0.1",
                          "2130706433",
                          "0177.0.0.1",
                          "0x7f.1",
                          "127.1",
                          "127.0.1",
                          "0",
                          "0x",
                          "08",
                          "09.1",
                          "0x7g",
                          "1.2.3.4.5",
                          "256.1",
                          "1.256.1",
                          "1.1.65536",
                          "1.1.1.256",
                          "4294967295",
                          "4294967296",
                          "99999999999999999999",
                          "0x100000000",
                          "0xffffffff",
                          "0.0.0.0",
                          "1..1",
                          ".1",
                          "1.",
                          "1.2.3.",
                          "00",
                          "0x0.0x0.0x0.0x0",
                          "037777777777",
                          "040000000000",
                          "0xA.0XB"})
        QTest::newRow(t) << QString::fromLatin1(t);
}

void TestUrlGuard::ipv4MatchesInetAton()
{
    QFETCH(QString, text);
    in_addr in{};
    const bool aton = inet_aton(text.toLatin1().constData(), &in) != 0;
    const std::optional<quint32> ours = parseIpv4(text);
    QCOMPARE(ours.has_value(), aton);
    if (aton)
        QCOMPARE(*ours, ntohl(in.s_addr));
}

// ---- URL checks without DNS --------------------------------------------------------------------

void TestUrlGuard::check_data()
{
    QTest::addColumn<QString>("url");
    QTest::addColumn<bool>("allowHttp");
    QTest::addColumn<QString>("error"); // empty: accepted
    const auto row = [](const char *url, bool http, const char *error) {
        QTest::newRow(url) << QString::fromUtf8(url) << http << QString::fromUtf8(error);
    };
    row("https://example.com/audio.mp3", false, "");
    row("HTTPS://EXAMPLE.COM/a", false, "");
    row("https://example.com:8443/a", false, ""); // any port unless the operator restricts
    // Schemes.
    row("http://example.com/", false, "https is required");
    QTest::newRow("http allowed") << QStringLiteral("http://example.com/") << true << QString();
    row("ftp://example.com/a", false, "https is required");
    QTest::newRow("ftp, http allowed") << QStringLiteral("ftp://example.com/a") << true
                                       << QStringLiteral("https or http is required");
    row("file:///etc/passwd", true, "https or http is required");
    row("gopher://example.com/", true, "https or http is required");
    row("dict://example.com:11211/", true, "https or http is required");
    row("javascript:alert(1)", true,
        "the URL is not valid (Unsupported number of slashes following scheme)");
    // User info, in every shape libcurl accepts.
    row("https://user@example.com/", false, "user info is not allowed");
    row("https://user:pw@example.com/", false, "user info is not allowed");
    row("https://:pw@example.com/", false, "user info is not allowed");
    row("https://@example.com/", false, "user info is not allowed");
    row("https://u;opt@example.com/", false, "user info is not allowed");
    row("https://example.com\\@127.0.0.1/", false, "user info is not allowed");
    row("https://example.com@127.0.0.1/", false, "user info is not allowed");
    // Literal hosts in every form.
    row("https://127.0.0.1/", false, "the host is a loopback address (127.0.0.1)");
    row("https://2130706433/", false, "the host is a loopback address (127.0.0.1)");
    row("https://0177.0.0.1/", false, "the host is a loopback address (127.0.0.1)");
    row("https://0x7f.1/", false, "the host is a loopback address (127.0.0.1)");
    row("https://127.1/", false, "the host is a loopback address (127.0.0.1)");
    row("https://127.0.0.1./", false, "the host is a loopback address (127.0.0.1)");
    row("https://%31%32%37.0.0.1/", false, "the host is a loopback address (127.0.0.1)");
    row("https://１２７.０.０.１/", false, "the host is a loopback address (127.0.0.1)");
    row("https://0/", false, "the host is an unspecified address (0.0.0.0)");
    row("https://[::]/", false, "the host is an unspecified address (::)");
    row("https://[::1]/", false, "the host is a loopback address (::1)");
    row("https://[::1]:8080/", false, "the host is a loopback address (::1)");
    row("https://[::ffff:127.0.0.1]/", false,
        "the host is a loopback address (IPv4-mapped IPv6) (::ffff:127.0.0.1)");
    row("https://[::ffff:7f00:1]/", false,
        "the host is a loopback address (IPv4-mapped IPv6) (::ffff:127.0.0.1)");
    row("https://[64:ff9b::10.0.0.1]/", false,
        "the host is a private address (NAT64 IPv6) (64:ff9b::a00:1)");
    row("https://[2002:a9fe:a9fe::]/", false,
        "the host is a cloud metadata address (6to4 IPv6) (2002:a9fe:a9fe::)");
    row("https://[fe80::1%25eth0]/", false, "the host is a link-local address (fe80::1)");
    row("https://[2606:4700::1111%25eth0]/", false, "an IPv6 zone id is not allowed");
    row("https://169.254.169.254/latest/meta-data/", false,
        "the host is a cloud metadata address (169.254.169.254)");
    row("https://[fd00:ec2::254]/", false, "the host is a cloud metadata address (fd00:ec2::254)");
    row("https://10.0.0.1/", false, "the host is a private address (10.0.0.1)");
    row("https://0xa.1/", false, "the host is a private address (10.0.0.1)");
    row("https://192.168.1.1/", false, "the host is a private address (192.168.1.1)");
    row("https://93.184.216.34/", false, "");
    row("https://[2606:4700::1111]/", false, "");
    row("https://0x5db8d822/", false, "");
    // Hosts that are neither a name nor an address.
    row("https://1.2.3.4.5/", false, "the host is not a valid IPv4 address");
    row("https://256.0.0.1/", false, "the host is not a valid IPv4 address");
    row("https://0x/", false, "the host is not a valid IPv4 address");
    row("https://a..b/", false, "the host name is not valid");
    // Ports.
    row("https://example.com:0/", false, "port 0 is not valid");
    row("https://example.com:65536/", false,
        "the URL is not valid (Port number was not a decimal number between 0 and 65535)");
    // Not URLs.
    row("example.com/a", false, "the URL is not valid (Bad scheme)");
    row("https://", false, "the URL is not valid (No host part in the URL)");
    row("https://exa mple.com/", false, "the URL contains spaces or control characters");
    row("https://example.com/\ta", false, "the URL contains spaces or control characters");
}

void TestUrlGuard::check()
{
    QFETCH(QString, url);
    QFETCH(bool, allowHttp);
    QFETCH(QString, error);
    const UrlPolicy policy = UrlPolicy::download(QJsonObject{{"allow_http", allowHttp}});
    const Verdict v = UrlGuard::check(url, policy);
    QCOMPARE(v.error, error);
    QCOMPARE(v.ok(), error.isEmpty());
}

void TestUrlGuard::checkCanonical()
{
    UrlPolicy p;
    Verdict v = UrlGuard::check(QStringLiteral("https://Example.COM./a/b?c=d#frag"), p);
    QVERIFY2(v.ok(), qPrintable(v.error));
    QCOMPARE(v.url.url, QByteArray("https://example.com/a/b?c=d"));
    QCOMPARE(v.url.host, QStringLiteral("example.com"));
    QCOMPARE(v.url.port, quint16(443));
    QVERIFY(!v.url.literal);

    v = UrlGuard::check(QString::fromUtf8("https://bücher.de/ä"), p);
    QVERIFY2(v.ok(), qPrintable(v.error));
    QCOMPARE(v.url.host, QStringLiteral("xn--bcher-kva.de"));
    QCOMPARE(v.url.url, QByteArray("https://xn--bcher-kva.de/%c3%a4"));

    // An operator exception lets a literal through, in its canonical spelling.
    p.allowCidrs = {cidr("127.0.0.0/8")};
    v = UrlGuard::check(QStringLiteral("https://0x7f.1:8443/x"), p);
    QVERIFY2(v.ok(), qPrintable(v.error));
    QCOMPARE(v.url.url, QByteArray("https://127.0.0.1:8443/x"));
    QCOMPARE(v.url.literal, std::optional<QHostAddress>(addr("127.0.0.1")));
    QCOMPARE(v.url.port, quint16(8443));
}

void TestUrlGuard::ports()
{
    const UrlPolicy p = UrlPolicy::download(QJsonObject{{"ports", QJsonArray{443, 8443}}});
    QVERIFY(UrlGuard::check(QStringLiteral("https://example.com/"), p).ok());
    QVERIFY(UrlGuard::check(QStringLiteral("https://example.com:8443/"), p).ok());
    QCOMPARE(UrlGuard::check(QStringLiteral("https://example.com:22/"), p).error,
             QStringLiteral("port 22 is not allowed"));
    QCOMPARE(UrlGuard::check(QStringLiteral("https://example.com:80/"), p).error,
             QStringLiteral("port 80 is not allowed"));
    // No restriction by default.
    QVERIFY(UrlGuard::check(QStringLiteral("https://example.com:22/"), UrlPolicy::download()).ok());
}

void TestUrlGuard::policySettings_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<bool>("callback");
    QTest::addColumn<QString>("error"); // the start of std::runtime_error's text; empty: accepted
    QTest::newRow("empty") << QByteArray("{}") << false << QString();
    QTest::newRow("full") << QByteArray(R"({"allow_http": true, "allow_cidrs": ["10.1.0.0/16",
        "fd12::/16", "192.168.1.5"], "ports": [443, 8443]})")
                          << false << QString();
    QTest::newRow("callback https") << QByteArray(R"({"allow_http": false})") << true << QString();
    QTest::newRow("callback http") << QByteArray(R"({"allow_http": true})") << true
                                   << QStringLiteral("allow_http: this use requires https");
    QTest::newRow("http not bool") << QByteArray(R"({"allow_http": "yes"})") << false
                                   << QStringLiteral("allow_http: must be true or false");
    QTest::newRow("cidrs not array") << QByteArray(R"({"allow_cidrs": "10.0.0.0/8"})") << false
                                     << QStringLiteral("allow_cidrs: must be an array");
    QTest::newRow("cidr not string") << QByteArray(R"({"allow_cidrs": [10]})") << false
                                     << QStringLiteral("allow_cidrs[0]: must be a string");
    QTest::newRow("prefix too long")
        << QByteArray(R"({"allow_cidrs": ["10.0.0.0/8", "10.0.0.0/33"]})") << false
        << QStringLiteral("allow_cidrs[1]: \"10.0.0.0/33\" is not a "
                          "CIDR: the prefix must be 0 to 32");
    QTest::newRow("host bits") << QByteArray(R"({"allow_cidrs": ["10.1.2.3/16"]})") << false
                               << QStringLiteral("allow_cidrs[0]: \"10.1.2.3/16\" is not a CIDR: "
                                                 "host bits are set (did you mean 10.1.0.0/16?)");
    QTest::newRow("short ipv4") << QByteArray(R"({"allow_cidrs": ["10.1/16"]})") << false
                                << QStringLiteral("allow_cidrs[0]: \"10.1/16\" is not a CIDR: not "
                                                  "a dotted-quad IPv4 address");
    QTest::newRow("octal ipv4") << QByteArray(R"({"allow_cidrs": ["010.0.0.0/8"]})") << false
                                << QStringLiteral("allow_cidrs[0]");
    QTest::newRow("ipv6 prefix") << QByteArray(R"({"allow_cidrs": ["::1/129"]})") << false
                                 << QStringLiteral("allow_cidrs[0]: \"::1/129\" is not a CIDR: "
                                                   "the prefix must be 0 to 128");
    QTest::newRow("bad ipv6") << QByteArray(R"({"allow_cidrs": ["fe80::1%eth0/64"]})") << false
                              << QStringLiteral("allow_cidrs[0]");
    QTest::newRow("mapped cidr") << QByteArray(R"({"allow_cidrs": ["::ffff:10.0.0.0/104"]})")
                                 << false
                                 << QStringLiteral("allow_cidrs[0]: \"::ffff:10.0.0.0/104\" is "
                                                   "not a CIDR: an IPv6 form of IPv4 addresses");
    QTest::newRow("empty prefix") << QByteArray(R"({"allow_cidrs": ["10.0.0.0/"]})") << false
                                  << QStringLiteral("allow_cidrs[0]");
    QTest::newRow("ports not array")
        << QByteArray(R"({"ports": 443})") << false << QStringLiteral("ports: must be an array");
    QTest::newRow("port range") << QByteArray(R"({"ports": [443, 70000]})") << false
                                << QStringLiteral(
                                       "ports[1]: must be a port number from 1 to 65535");
    QTest::newRow("port zero") << QByteArray(R"({"ports": [0]})") << false
                               << QStringLiteral("ports[0]");
    QTest::newRow("port fraction")
        << QByteArray(R"({"ports": [1.5]})") << false << QStringLiteral("ports[0]");
    QTest::newRow("port string") << QByteArray(R"({"ports": ["443"]})") << false
                                 << QStringLiteral("ports[0]");
    QTest::newRow("unknown key") << QByteArray(R"({"allow_cidr": []})") << false
                                 << QStringLiteral("allow_cidr: not a fetch setting");
}

void TestUrlGuard::policySettings()
{
    QFETCH(QByteArray, json);
    QFETCH(bool, callback);
    QFETCH(QString, error);
    const QJsonObject settings = QJsonDocument::fromJson(json).object();
    try {
        const UrlPolicy p =
            callback ? UrlPolicy::callback(settings) : UrlPolicy::download(settings);
        QVERIFY2(error.isEmpty(), qPrintable(QStringLiteral("accepted; expected ") + error));
        if (callback) {
            QCOMPARE(p.schemes, QStringList{QStringLiteral("https")});
            QCOMPARE(p.maxRedirects, 0);
            QCOMPARE(p.totalTimeoutMs, 10'000);
        } else {
            QCOMPARE(p.maxRedirects, 3);
            QCOMPARE(p.maxBytes, qint64(25 * 1024 * 1024));
        }
        if (QTest::currentDataTag() == QByteArrayView("full")) {
            QCOMPARE(p.schemes, (QStringList{QStringLiteral("https"), QStringLiteral("http")}));
            QCOMPARE(p.allowCidrs.size(), 3);
            QCOMPARE(p.allowCidrs[0].toString(), QStringLiteral("10.1.0.0/16"));
            QCOMPARE(p.allowCidrs[1].toString(), QStringLiteral("fd12::/16"));
            QCOMPARE(p.allowCidrs[2].toString(), QStringLiteral("192.168.1.5/32"));
            QCOMPARE(p.ports, (QList<quint16>{443, 8443}));
        }
        if (QTest::currentDataTag() == QByteArrayView("empty")) {
            QCOMPARE(p.schemes, QStringList{QStringLiteral("https")});
            QVERIFY(p.allowCidrs.isEmpty()); // never loopback by default
            QVERIFY(p.ports.isEmpty());
        }
    } catch (const std::runtime_error &e) {
        const QString what = QString::fromUtf8(e.what());
        QVERIFY2(!error.isEmpty(), qPrintable(QStringLiteral("refused: ") + what));
        QVERIFY2(what.startsWith(error), qPrintable(what));
    }
}

// ca_file: a readable file with a PEM certificate, kept as an absolute path; anything else
// throws naming the field.
void TestUrlGuard::caFileSetting()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    const UrlPolicy p = UrlPolicy::callback(QJsonObject{{"ca_file", receiver.caFile()}});
    QCOMPARE(p.caFile, receiver.caFile());
    QVERIFY(UrlPolicy::callback().caFile.isEmpty()); // the system's CAs by default
    QCOMPARE(UrlPolicy::download(QJsonObject{{"ca_file", receiver.caFile()}}).caFile,
             receiver.caFile());

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QFile notPem(dir.filePath(QStringLiteral("not.pem")));
    QVERIFY(notPem.open(QIODevice::WriteOnly));
    notPem.write("not a certificate\n");
    notPem.close();
    const QString missing = dir.filePath(QStringLiteral("missing.pem"));
    const QList<std::pair<QJsonValue, QString>> bad = {
        {missing, QStringLiteral("ca_file: \"%1\" does not exist").arg(missing)},
        {dir.path(), QStringLiteral("ca_file: \"%1\" is not a file").arg(dir.path())},
        {notPem.fileName(),
         QStringLiteral("ca_file: \"%1\" holds no PEM certificate").arg(notPem.fileName())},
        {QString(), QStringLiteral("ca_file: must be the path of a PEM file")},
        {42, QStringLiteral("ca_file: must be the path of a PEM file")},
    };
    for (const auto &[value, error] : bad) {
        QString what;
        try {
            UrlPolicy::callback(QJsonObject{{"ca_file", value}});
        } catch (const std::runtime_error &e) {
            what = QString::fromUtf8(e.what());
        }
        QVERIFY2(what.startsWith(error), qPrintable(what + QStringLiteral(" <> ") + error));
    }
}

void TestUrlGuard::redirectResolution()
{
    const QByteArray base = "http://a.test:8080/dir/file?x=1";
    QCOMPARE(resolveRedirect(base, "/abs"), QByteArray("http://a.test:8080/abs"));
    QCOMPARE(resolveRedirect(base, "rel"), QByteArray("http://a.test:8080/dir/rel"));
    QCOMPARE(resolveRedirect(base, "../up"), QByteArray("http://a.test:8080/up"));
    QCOMPARE(resolveRedirect(base, "//b.test/p"), QByteArray("http://b.test/p"));
    QCOMPARE(resolveRedirect(base, "?q=2"), QByteArray("http://a.test:8080/dir/file?q=2"));
    QCOMPARE(resolveRedirect(base, "https://c.test/x y"), QByteArray("https://c.test/x%20y"));
    QCOMPARE(resolveRedirect(base, "ftp://c.test/"), QByteArray("ftp://c.test/"));
    QCOMPARE(resolveRedirect(base, ""), std::nullopt);
    QCOMPARE(resolveRedirect(base, "javascript:alert(1)"), std::nullopt);
}

// ---- libcurl pinning
// -----------------------------------------------------------------------------

// With pins set, curl may resolve no name itself: "localhost" would resolve (from /etc/hosts) to
// the test server, yet the call fails without a connection.
void TestUrlGuard::curlNeverResolvesItself()
{
    TestServer server;
    UpstreamClient client;
    UpstreamRequest r;
    r.method = "GET";
    r.url = QStringLiteral("http://localhost:%1/ok").arg(server.port()).toLatin1();
    r.pinnedResolve = {"pinned.test:" + QByteArray::number(server.port()) + ":127.0.0.1"};
    r.totalTimeoutMs = 5000;
    UpstreamError error = UpstreamError::None;
    bool done = false;
    UpstreamCallPtr call = client.start(r);
    call->onDone = [&](UpstreamError e, const QString &) {
        error = e;
        done = true;
    };
    QTRY_VERIFY(done);
    QCOMPARE(error, UpstreamError::ConnectFailed);
    settle();
    QCOMPARE(server.connections, 0);

    // The pinned name itself works.
    r.url = QStringLiteral("http://pinned.test:%1/ok").arg(server.port()).toLatin1();
    int status = 0;
    done = false;
    call = client.start(r);
    call->onHead = [&](int s, const HttpHeaders &) { status = s; };
    call->onDone = [&](UpstreamError e, const QString &) {
        error = e;
        done = true;
    };
    QTRY_VERIFY(done);
    QCOMPARE(error, UpstreamError::None);
    QCOMPARE(status, 200);
    QCOMPARE(server.connections, 1);
    QCOMPARE(server.requests.last().headerLines.contains("Host: pinned.test:" +
                                                         QByteArray::number(server.port())),
             true);
}

// The open-socket hook sees the address and port actually dialled, and refusing it means no
// connection at all.
void TestUrlGuard::openSocketCheckSeesDialledAddress()
{
    TestServer server;
    UpstreamClient client;
    UpstreamRequest r;
    r.method = "GET";
    r.url = QStringLiteral("http://pinned.test:%1/ok").arg(server.port()).toLatin1();
    r.pinnedResolve = {"pinned.test:" + QByteArray::number(server.port()) + ":127.0.0.1"};
    QList<QPair<QHostAddress, quint16>> dialled;
    r.allowConnect = [&](const QHostAddress &a, quint16 port) {
        dialled.append({a, port});
        return false;
    };
    UpstreamError error = UpstreamError::None;
    bool done = false;
    UpstreamCallPtr call = client.start(r);
    call->onDone = [&](UpstreamError e, const QString &) {
        error = e;
        done = true;
    };
    QTRY_VERIFY(done);
    QCOMPARE(error, UpstreamError::ConnectFailed);
    QCOMPARE(dialled.size(), 1);
    QCOMPARE(dialled[0].first, addr("127.0.0.1"));
    QCOMPARE(dialled[0].second, server.port());
    settle();
    QCOMPARE(server.connections, 0);
}

// ---- guarded fetch
// ----------------------------------------------------------------------------------

void TestUrlGuard::fetchWithExplicitLoopback()
{
    TestServer server;
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("files.test")] = {{addr("127.0.0.1")}};
    GuardedFetch fetch(resolver);

    Result r = get(fetch, server.base(QStringLiteral("files.test")) + QStringLiteral("/ok"),
                   loopbackPolicy());
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.outcome.status, 200);
    QCOMPARE(r.body, QByteArray("hello"));
    QCOMPARE(r.outcome.bytes, qint64(5));
    QCOMPARE(r.outcome.redirects, 0);
    QCOMPARE(server.connections, 1);
    QVERIFY(server.requests.last().headerLines.contains("Host: files.test:" +
                                                        QByteArray::number(server.port())));
    QCOMPARE(resolver->lookups.value(QStringLiteral("files.test")), 1);

    // A literal in any spelling needs no resolver.
    r = get(fetch, QStringLiteral("http://0x7f.1:%1/ok").arg(server.port()), loopbackPolicy());
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.body, QByteArray("hello"));
    QCOMPARE(r.outcome.url, QStringLiteral("http://127.0.0.1:%1/ok").arg(server.port()).toLatin1());
    QCOMPARE(server.connections, 2);
}

// Without the explicit setting, the same loopback URLs are refused before any connection.
void TestUrlGuard::loopbackRefusedByDefault()
{
    TestServer server;
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("files.test")] = {{addr("127.0.0.1")}};
    GuardedFetch fetch(resolver);
    const UrlPolicy policy = UrlPolicy::download(QJsonObject{{"allow_http", true}});

    Result r =
        get(fetch, server.base(QStringLiteral("files.test")) + QStringLiteral("/ok"), policy);
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.message, QStringLiteral("resolves to a loopback address"));
    QCOMPARE(r.outcome.refusedAddress, addr("127.0.0.1")); // for the operator, not the message

    for (const char *host : {"127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1",
                             "[::ffff:127.0.0.1]", "[::1]"}) {
        r = get(fetch,
                QStringLiteral("http://%1:%2/ok").arg(QLatin1String(host)).arg(server.port()),
                policy);
        QCOMPARE(r.outcome.error, FetchError::Refused);
        QVERIFY2(r.outcome.message.startsWith(u"the host is a loopback address"),
                 qPrintable(r.outcome.message));
    }
    QVERIFY(r.body.isEmpty());
    settle();
    QCOMPARE(server.connections, 0);
}

// localhost through the system resolver (answered from /etc/hosts): refused by default, at
// preflight (submission) and at fetch time.
void TestUrlGuard::localhostRefused()
{
    TestServer server;
    GuardedFetch fetch; // the system resolver
    const UrlPolicy policy = UrlPolicy::download(QJsonObject{{"allow_http", true}});
    const QString url = server.base(QStringLiteral("localhost")) + QStringLiteral("/ok");

    FetchError error = FetchError::None;
    QString message;
    bool done = false;
    fetch.preflight(url, policy, this, [&](FetchError e, const QString &m) {
        error = e;
        message = m;
        done = true;
    });
    QVERIFY(!done); // never from inside preflight()
    QTRY_VERIFY_WITH_TIMEOUT(done, 10'000);
    QCOMPARE(error, FetchError::Refused);
    QCOMPARE(message, QStringLiteral("resolves to a loopback address"));

    const Result r = get(fetch, url, policy);
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.message, QStringLiteral("resolves to a loopback address"));
    for (const char *name : {"LOCALHOST", "localhost."}) {
        const Result r2 =
            get(fetch, server.base(QLatin1String(name)) + QStringLiteral("/ok"), policy);
        QCOMPARE(r2.outcome.error, FetchError::Refused);
    }
    settle();
    QCOMPARE(server.connections, 0);
}

void TestUrlGuard::localhostAllowedExplicitly()
{
    TestServer server;
    GuardedFetch fetch;
    const Result r = get(fetch, server.base(QStringLiteral("localhost")) + QStringLiteral("/ok"),
                         loopbackPolicy({cidr("127.0.0.0/8"), cidr("::1/128")}));
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.body, QByteArray("hello"));
    QCOMPARE(server.connections, 1);
}

// The rebinding attacker's resolver: 127.0.0.1 (allowed here, by the explicit setting for
// 127.0.0.1/32 only) on the first lookup, 127.0.0.2 (forbidden) afterwards. A server listens on
// each, on the same port, so a connection made to the second answer would be seen. The fetch
// checks the first answer and connects to it, pinned: nothing asks the resolver again, and the
// server on the forbidden address never sees a connection.
void TestUrlGuard::rebindingResolver()
{
    TestServer allowed;
    QVERIFY(allowed.listening());
    TestServer forbidden(addr("127.0.0.2"), allowed.port());
    if (!forbidden.listening())
        QSKIP("the port is taken on 127.0.0.2");
    auto resolver = std::make_shared<FakeResolver>();
    const QString name = QStringLiteral("rebind.test");
    resolver->answers[name] = {{addr("127.0.0.1")}, {addr("127.0.0.2")}};
    GuardedFetch fetch(resolver);
    const UrlPolicy policy = loopbackPolicy({cidr("127.0.0.1/32")});

    Result r = get(fetch, serverUrl(allowed, name), policy);
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.body, QByteArray("hello"));
    QCOMPARE(resolver->lookups.value(name), 1); // resolved once, then pinned
    QCOMPARE(allowed.connections, 1);

    // The next fetch sees the new answer and refuses it before connecting.
    r = get(fetch, serverUrl(allowed, name), policy);
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.message, QStringLiteral("resolves to a loopback address"));
    QCOMPARE(r.outcome.refusedAddress, addr("127.0.0.2"));
    QCOMPARE(resolver->lookups.value(name), 2);
    settle();
    QCOMPARE(allowed.connections, 1);
    QCOMPARE(forbidden.connections, 0);
}

// A submission-time check is not trusted at fetch time: the fetch resolves and checks again.
void TestUrlGuard::preflightThenRebind()
{
    TestServer server;
    TestServer forbidden(addr("127.0.0.2"), server.port());
    if (!forbidden.listening())
        QSKIP("the port is taken on 127.0.0.2");
    auto resolver = std::make_shared<FakeResolver>();
    const QString name = QStringLiteral("rebind.test");
    resolver->answers[name] = {{addr("127.0.0.1")}, {addr("127.0.0.2")}};
    GuardedFetch fetch(resolver);
    const UrlPolicy policy = loopbackPolicy({cidr("127.0.0.1/32")});
    const QString url = serverUrl(server, name);

    bool done = false;
    FetchError error = FetchError::Failed;
    fetch.preflight(url, policy, this, [&](FetchError e, const QString &) {
        error = e;
        done = true;
    });
    QTRY_VERIFY(done);
    QCOMPARE(error, FetchError::None);

    const Result r = get(fetch, url, policy);
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.message, QStringLiteral("resolves to a loopback address"));
    QCOMPARE(resolver->lookups.value(name), 2);
    settle();
    QCOMPARE(server.connections, 0);
    QCOMPARE(forbidden.connections, 0);
}

// Every resolved address is pinned: when the first refuses the connection, the next is tried.
void TestUrlGuard::fallsBackAcrossPinnedAddresses()
{
    TestServer server; // 127.0.0.1 only; nothing listens on [::1] at that port
    QTcpServer probe;
    if (!probe.listen(addr("::1"), server.port()))
        QSKIP("the port is taken on ::1");
    probe.close();
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("dual.test")] = {{addr("::1"), addr("127.0.0.1")}};
    GuardedFetch fetch(resolver);
    const Result r = get(fetch, serverUrl(server, QStringLiteral("dual.test")),
                         loopbackPolicy({cidr("127.0.0.0/8"), cidr("::1/128")}));
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(server.connections, 1);

    // One forbidden address among allowed ones refuses the whole name.
    resolver->answers[QStringLiteral("mixed.test")] = {{addr("127.0.0.1"), addr("10.0.0.1")}};
    const Result m = get(fetch, serverUrl(server, QStringLiteral("mixed.test")), loopbackPolicy());
    QCOMPARE(m.outcome.error, FetchError::Refused);
    QCOMPARE(m.outcome.message, QStringLiteral("resolves to a private address"));
    QCOMPARE(server.connections, 1);
}

// A bracketed IPv6 literal: libcurl reads it itself (no DNS), the open-socket check holds it.
void TestUrlGuard::ipv6Literal()
{
    TestServer server(addr("::1"));
    GuardedFetch fetch(std::make_shared<FakeResolver>());
    const QString url = QStringLiteral("http://[::1]:%1/ok").arg(server.port());
    Result r = get(fetch, url, loopbackPolicy({cidr("::1/128")}));
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.body, QByteArray("hello"));
    QCOMPARE(r.outcome.address, QStringLiteral("::1"));
    QCOMPARE(server.connections, 1);

    r = get(fetch, url, loopbackPolicy());
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.message, QStringLiteral("the host is a loopback address (::1)"));
    r = get(fetch, QStringLiteral("http://[::1%25lo]:%1/ok").arg(server.port()),
            loopbackPolicy({cidr("::1/128")}));
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.message, QStringLiteral("an IPv6 zone id is not allowed"));
    settle();
    QCOMPARE(server.connections, 1);
}

void TestUrlGuard::redirectToPrivateRefused_data()
{
    QTest::addColumn<QString>("location");
    QTest::addColumn<QString>("message");
    const auto row = [](const char *loc, const char *msg) {
        QTest::newRow(loc) << QString::fromLatin1(loc) << QString::fromLatin1(msg);
    };
    row("http://10.0.0.1/a", "redirect 1: the host is a private address (10.0.0.1)");
    row("http://169.254.169.254/latest/meta-data/",
        "redirect 1: the host is a cloud metadata address (169.254.169.254)");
    row("http://[::ffff:10.0.0.1]/", "redirect 1: the host is a private address (IPv4-mapped IPv6) "
                                     "(::ffff:10.0.0.1)");
    row("http://0xa9fea9fe/", "redirect 1: the host is a cloud metadata address (169.254.169.254)");
    row("http://192.168.0.1:8080/", "redirect 1: the host is a private address (192.168.0.1)");
    row("http://[::1]/", "redirect 1: the host is a loopback address (::1)");
    row("ftp://files.test/a", "redirect 1: https or http is required");
    row("file:///etc/passwd", "redirect 1: https or http is required");
    row("http://user:pw@files.test/", "redirect 1: user info is not allowed");
    row("javascript:alert(1)", "redirect 1: the Location is not a valid URL");
}

// The first hop is allowed (loopback, explicitly); the redirect's target is checked again and
// refused before any connection to it.
void TestUrlGuard::redirectToPrivateRefused()
{
    QFETCH(QString, location);
    QFETCH(QString, message);
    TestServer server;
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("files.test")] = {{addr("127.0.0.1")}};
    GuardedFetch fetch(resolver);
    const QString url =
        serverUrl(server, QStringLiteral("files.test"), QStringLiteral("/redirect")) +
        QStringLiteral("?to=") + QString::fromLatin1(QUrl::toPercentEncoding(location));
    const Result r = get(fetch, url, loopbackPolicy({cidr("127.0.0.1/32")}));
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.message, message);
    QCOMPARE(server.connections, 1);
    QVERIFY(r.body.isEmpty());
}

// A redirect to a name that resolves to a forbidden address is refused at the hop; the server
// on that address never sees a connection. Ports are checked on every hop too.
void TestUrlGuard::redirectToNameResolvingPrivate()
{
    TestServer server;
    TestServer forbidden(addr("127.0.0.2"));
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("files.test")] = {{addr("127.0.0.1")}};
    resolver->answers[QStringLiteral("internal.test")] = {{addr("127.0.0.2")}};
    GuardedFetch fetch(resolver);
    UrlPolicy policy = loopbackPolicy({cidr("127.0.0.1/32")});
    const QString target = serverUrl(forbidden, QStringLiteral("internal.test"));
    Result r =
        get(fetch,
            serverUrl(server, QStringLiteral("files.test"), QStringLiteral("/redirect")) +
                QStringLiteral("?to=") + QString::fromLatin1(QUrl::toPercentEncoding(target)),
            policy);
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.message, QStringLiteral("redirect 1: resolves to a loopback address"));
    QCOMPARE(r.outcome.refusedAddress, addr("127.0.0.2"));
    settle();
    QCOMPARE(server.connections, 1);
    QCOMPARE(forbidden.connections, 0);

    policy.ports = {server.port()};
    r = get(
        fetch,
        serverUrl(server, QStringLiteral("files.test"), QStringLiteral("/redirect")) +
            QStringLiteral("?to=") +
            QString::fromLatin1(QUrl::toPercentEncoding(QStringLiteral("http://files.test:1/"))),
        policy);
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.message, QStringLiteral("redirect 1: port 1 is not allowed"));
    QCOMPARE(server.connections, 2);
}

void TestUrlGuard::redirectHopLimit()
{
    TestServer server;
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("files.test")] = {{addr("127.0.0.1")}};
    GuardedFetch fetch(resolver);

    Result r =
        get(fetch, serverUrl(server, QStringLiteral("files.test"), QStringLiteral("/hops/3")),
            loopbackPolicy());
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.outcome.redirects, 3);
    QCOMPARE(r.body, QByteArray("done"));
    QCOMPARE(r.outcome.url,
             serverUrl(server, QStringLiteral("files.test"), QStringLiteral("/hops/0")).toLatin1());
    QCOMPARE(server.connections, 4); // a fresh connection per hop
    QCOMPARE(resolver->lookups.value(QStringLiteral("files.test")), 4); // resolved per hop

    r = get(fetch, serverUrl(server, QStringLiteral("files.test"), QStringLiteral("/hops/4")),
            loopbackPolicy());
    QCOMPARE(r.outcome.error, FetchError::TooManyRedirects);
    QCOMPARE(r.outcome.message, QStringLiteral("more than 3 redirects"));
    QCOMPARE(r.outcome.redirects, 3);
    QCOMPARE(server.connections, 8); // the fourth redirect is not followed

    // 301, 307 and 308 are followed as 302 is.
    for (int code : {301, 303, 307, 308}) {
        r = get(fetch,
                serverUrl(server, QStringLiteral("files.test"), QStringLiteral("/redirect")) +
                    QStringLiteral("?code=%1&to=/ok").arg(code),
                loopbackPolicy());
        QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
        QCOMPARE(r.body, QByteArray("hello"));
    }
}

void TestUrlGuard::redirectsNotFollowedForCallbacks()
{
    TestServer server;
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("hooks.test")] = {{addr("127.0.0.1")}};
    GuardedFetch fetch(resolver);
    UrlPolicy policy = UrlPolicy::callback();
    policy.schemes = {QStringLiteral("http")}; // the test server has no TLS
    policy.allowCidrs = {cidr("127.0.0.0/8")};
    FetchRequest req;
    req.method = "POST";
    req.url = serverUrl(server, QStringLiteral("hooks.test"), QStringLiteral("/redirect")) +
              QStringLiteral("?to=/echo");
    req.body = "{}";
    const Result r = run(fetch, req, policy, false);
    QCOMPARE(r.outcome.error, FetchError::Http);
    QCOMPARE(r.outcome.status, 302);
    QCOMPARE(r.outcome.message, QStringLiteral("HTTP 302 (redirects are not followed)"));
    QCOMPARE(server.connections, 1);

    // And the callback policy itself refuses http.
    QCOMPARE(UrlGuard::check(req.url, UrlPolicy::callback()).error,
             QStringLiteral("https is required"));
}

void TestUrlGuard::redirectMethodsAndHeaders()
{
    TestServer server;
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("a.test")] = {{addr("127.0.0.1")}};
    resolver->answers[QStringLiteral("b.test")] = {{addr("127.0.0.1")}};
    GuardedFetch fetch(resolver);
    const auto redirect = [&](const QString &from, int code, const QString &to) {
        return serverUrl(server, from, QStringLiteral("/redirect")) +
               QStringLiteral("?code=%1&to=").arg(code) +
               QString::fromLatin1(QUrl::toPercentEncoding(to));
    };
    FetchRequest req;
    req.method = "POST";
    req.body = "payload";
    req.headers = {"Content-Type: application/json", "Authorization: Bearer secret"};

    // 307 keeps the method, body and (same origin) credentials.
    req.url = redirect(QStringLiteral("a.test"), 307, QStringLiteral("/echo"));
    Result r = run(fetch, req, loopbackPolicy());
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.body, QByteArray("payload"));
    QCOMPARE(server.requests.last().method, QByteArray("POST"));
    QVERIFY(server.requests.last().hasHeader("authorization"));

    // To another origin, credentials are dropped.
    req.url = redirect(QStringLiteral("a.test"), 307,
                       serverUrl(server, QStringLiteral("b.test"), QStringLiteral("/echo")));
    r = run(fetch, req, loopbackPolicy());
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(server.requests.last().method, QByteArray("POST"));
    QVERIFY(!server.requests.last().hasHeader("authorization"));
    QVERIFY(server.requests.last().hasHeader("content-type"));

    // 302 after a POST continues as a GET without the body.
    req.url = redirect(QStringLiteral("a.test"), 302, QStringLiteral("/echo"));
    r = run(fetch, req, loopbackPolicy());
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(server.requests.last().method, QByteArray("GET"));
    QVERIFY(server.requests.last().body.isEmpty());
    QVERIFY(!server.requests.last().hasHeader("content-type"));
}

void TestUrlGuard::sizeLimit()
{
    TestServer server;
    GuardedFetch fetch(std::make_shared<FakeResolver>());
    UrlPolicy policy = loopbackPolicy();
    policy.maxBytes = 64 * 1024;

    // A declared length over the limit: refused at the head, nothing delivered.
    Result r = get(fetch, server.base() + QStringLiteral("/huge"), policy);
    QCOMPARE(r.outcome.error, FetchError::TooLarge);
    QCOMPARE(r.outcome.message,
             QStringLiteral("the body is larger than 65536 bytes (Content-Length 1048576)"));
    QCOMPARE(r.body.size(), 0);

    // No declared length: counted as it streams, stopped at the limit.
    r = get(fetch, server.base() + QStringLiteral("/huge-chunked"), policy);
    QCOMPARE(r.outcome.error, FetchError::TooLarge);
    QCOMPARE(r.outcome.message, QStringLiteral("the body is larger than 65536 bytes"));
    QVERIFY(r.body.size() <= 64 * 1024);
    QCOMPARE(r.outcome.bytes, qint64(r.body.size()));

    // Exactly the limit is fine.
    r = get(fetch, server.base() + QStringLiteral("/size/65536"), policy);
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.body.size(), 65536);
    r = get(fetch, server.base() + QStringLiteral("/size/65537"), policy);
    QCOMPARE(r.outcome.error, FetchError::TooLarge);
}

void TestUrlGuard::timeout()
{
    TestServer server;
    GuardedFetch fetch(std::make_shared<FakeResolver>());
    UrlPolicy policy = loopbackPolicy();
    policy.totalTimeoutMs = 400;

    Result r = get(fetch, server.base() + QStringLiteral("/slow"), policy);
    QCOMPARE(r.outcome.error, FetchError::Timeout);
    QCOMPARE(r.outcome.message, QStringLiteral("did not finish within 400 ms"));
    QVERIFY2(r.ms >= 350 && r.ms < 3000, qPrintable(QString::number(r.ms)));

    // A body that keeps trickling is bounded by the total time, not an idle timer.
    r = get(fetch, server.base() + QStringLiteral("/trickle"), policy);
    QCOMPARE(r.outcome.error, FetchError::Timeout);
    QVERIFY(r.body.size() > 0);
    QVERIFY2(r.ms < 3000, qPrintable(QString::number(r.ms)));
}

void TestUrlGuard::streamsInChunks()
{
    TestServer server;
    GuardedFetch fetch(std::make_shared<FakeResolver>());
    QList<QByteArray> chunks;
    QList<qint64> at;
    QElapsedTimer clock;
    clock.start();
    FetchRequest req;
    req.url = server.base() + QStringLiteral("/stream");
    GuardedFetchCallPtr call = fetch.start(req, loopbackPolicy());
    int headStatus = 0;
    call->onHead = [&](int status, const HttpHeaders &) {
        headStatus = status;
        return true;
    };
    call->onData = [&](const QByteArray &chunk) {
        chunks.append(chunk);
        at.append(clock.elapsed());
        return true;
    };
    bool done = false;
    FetchOutcome outcome;
    call->onDone = [&](const FetchOutcome &o) {
        outcome = o;
        done = true;
    };
    QTRY_VERIFY(done);
    QVERIFY2(outcome.ok(), qPrintable(outcome.message));
    QCOMPARE(headStatus, 200);
    QCOMPARE(chunks.join(), QByteArray("one,two,three"));
    QVERIFY2(chunks.size() >= 3, qPrintable(QString::number(chunks.size())));
    QVERIFY(at.last() - at.first() >= 80); // delivered as they came, not at the end
}

void TestUrlGuard::httpError()
{
    TestServer server;
    GuardedFetch fetch(std::make_shared<FakeResolver>());
    const Result r = get(fetch, server.base() + QStringLiteral("/status/500"), loopbackPolicy());
    QCOMPARE(r.outcome.error, FetchError::Http);
    QCOMPARE(r.outcome.status, 500);
    QCOMPARE(r.outcome.message, QStringLiteral("HTTP 500"));
    QVERIFY(r.body.isEmpty()); // an error page never reaches the consumer
}

void TestUrlGuard::callbackPost()
{
    TestServer server;
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("hooks.test")] = {{addr("127.0.0.1")}};
    GuardedFetch fetch(resolver);
    UrlPolicy policy = UrlPolicy::callback();
    policy.schemes = {QStringLiteral("http")};
    policy.allowCidrs = {cidr("127.0.0.0/8")};
    FetchRequest req;
    req.method = "POST";
    req.url = serverUrl(server, QStringLiteral("hooks.test"), QStringLiteral("/echo"));
    req.headers = {"Content-Type: application/json"};
    req.body = R"({"id":"img_1","status":"completed"})";
    const Result r = run(fetch, req, policy, false); // no onData: the status is enough
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.outcome.status, 200);
    QCOMPARE(server.requests.size(), 1);
    QCOMPARE(server.requests[0].method, QByteArray("POST"));
    QCOMPARE(server.requests[0].body, req.body);
    QVERIFY(server.requests[0].hasHeader("content-type"));
    QVERIFY(!server.requests[0].hasHeader("cookie"));
}

void TestUrlGuard::resolveAndConnectFailures()
{
    auto resolver = std::make_shared<FakeResolver>();
    GuardedFetch fetch(resolver);
    Result r = get(fetch, QStringLiteral("http://nowhere.test/"), loopbackPolicy());
    QCOMPARE(r.outcome.error, FetchError::Resolve);
    QCOMPARE(r.outcome.message, QStringLiteral("the host did not resolve (Host not found)"));

    r = get(fetch, QStringLiteral("http://127.0.0.1:%1/").arg(closedPort()), loopbackPolicy());
    QCOMPARE(r.outcome.error, FetchError::Connect);
}

// `width` concurrent calls to the server's /echo, each with its own body: all must come back
// with their own answers.
static void callWave(UpstreamClient &client, const TestServer &server, int width,
                     const QString &tag)
{
    QList<UpstreamCallPtr> calls;
    QStringList bodies(width), sent(width);
    int done = 0;
    for (int i = 0; i < width; ++i) {
        UpstreamRequest r;
        r.url = (server.base() + QStringLiteral("/echo")).toLatin1();
        sent[i] = QStringLiteral("%1 call %2").arg(tag).arg(i);
        r.body = sent[i].toUtf8();
        r.totalTimeoutMs = 10'000;
        UpstreamCallPtr call = client.start(r);
        call->onData = [&bodies, i](const QByteArray &d) { bodies[i] += QString::fromUtf8(d); };
        call->onDone = [&done](UpstreamError e, const QString &message) {
            QVERIFY2(e == UpstreamError::None, qPrintable(message));
            ++done;
        };
        calls.append(call);
    }
    QTRY_COMPARE_WITH_TIMEOUT(done, width, 20'000);
    QCOMPARE(bodies, sent);
}

void TestUrlGuard::socketsComeAndGo_data()
{
    QTest::addColumn<bool>("own");
    QTest::newRow("Http1Client") << true;
    QTest::newRow("libcurl") << false;
}

// Every connection here closes after its answer, so socket descriptors are closed and handed out
// again all the time, and the client's kept notifiers (libcurl's) or its connections' own
// (Http1Client's) serve descriptor after descriptor: waves of concurrent calls and calls one
// after another all get their own answers.
void TestUrlGuard::socketsComeAndGo()
{
    QFETCH(bool, own);
    TestServer server;
    UpstreamClient client;
    client.setOwnHttp1(own);
    callWave(client, server, 40, QStringLiteral("wave 0"));
    for (int round = 0; round < 40; ++round) {
        callWave(client, server, 1, QStringLiteral("wave 1 round %1").arg(round));
        if (QTest::currentTestFailed())
            return;
    }
    callWave(client, server, 40, QStringLiteral("wave 2"));
    QCOMPARE(server.connections, 40 + 40 + 40);
}

// libcurl's notifiers kept for the next socket are bounded, and go once the client is idle (they
// pin heap pages a burst allocated); calls after that make new ones and still get their answers.
void TestUrlGuard::keptNotifiersAreBounded()
{
    TestServer server;
    UpstreamClient client;
    client.setOwnHttp1(false);
    client.setIdleDropMs(300);
    callWave(client, server, 100, QStringLiteral("burst"));
    const int kept = client.keptNotifiers();
    QVERIFY2(kept > 0 && kept <= int(UpstreamClient::kSpareSockets),
             qPrintable(QString::number(kept)));
    QTRY_COMPARE_WITH_TIMEOUT(client.keptNotifiers(), 0, 5'000);
    callWave(client, server, 20, QStringLiteral("after the drop"));
    QVERIFY(client.keptNotifiers() > 0);
    QCOMPARE(server.connections, 100 + 20);
}

void TestUrlGuard::abortStopsCallbacks()
{
    TestServer server;
    GuardedFetch fetch(std::make_shared<FakeResolver>());
    FetchRequest req;
    req.url = server.base() + QStringLiteral("/stream");
    GuardedFetchCallPtr call = fetch.start(req, loopbackPolicy());
    int data = 0;
    bool done = false;
    call->onData = [&](const QByteArray &) {
        ++data;
        call->abort();
        return true;
    };
    call->onDone = [&](const FetchOutcome &) { done = true; };
    QTRY_VERIFY(data > 0);
    QTest::qWait(300);
    QCOMPARE(data, 1);
    QVERIFY(!done);
    QVERIFY(call->isFinished());

    // Aborted before it starts: nothing runs, nothing connects.
    const int before = server.connections;
    GuardedFetchCallPtr early = fetch.start(req, loopbackPolicy());
    early->onDone = [&](const FetchOutcome &) { done = true; };
    early->abort();
    QTest::qWait(200);
    QVERIFY(!done);
    QCOMPARE(server.connections, before);
}

// ---- https with the operator's CA (ca_file), the dialled address ------------------------------

// A callback POST to an https receiver whose certificate the test made: delivered with the
// certificate in ca_file, a TLS failure (Connect) without it, before any request is read.
void TestUrlGuard::httpsWithCaFile()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("localhost")] = {{addr("127.0.0.1")}};
    resolver->answers[QStringLiteral("hooks.test")] = {{addr("127.0.0.1")}};
    GuardedFetch fetch(resolver);
    const QJsonArray loopback = {QStringLiteral("127.0.0.0/8")};
    const UrlPolicy trusted =
        UrlPolicy::callback(QJsonObject{{"allow_cidrs", loopback}, {"ca_file", receiver.caFile()}});
    FetchRequest req;
    req.method = "POST";
    req.url = receiver.url();
    req.headers = {"Content-Type: application/json"};
    req.body = "{\"id\":\"img_1\"}";

    Result r = run(fetch, req, trusted, false);
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.outcome.status, 200);
    QCOMPARE(r.outcome.address, QStringLiteral("127.0.0.1"));
    QCOMPARE(receiver.requests().size(), 1);
    QCOMPARE(receiver.requests()[0].body, req.body);

    // The name in the certificate (DNS:localhost) verifies too, pinned as any name is.
    req.url = QStringLiteral("https://localhost:%1/hook").arg(receiver.port());
    r = run(fetch, req, trusted, false);
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(receiver.requests().size(), 2);

    // A name the certificate does not carry fails verification, CA or not.
    req.url = QStringLiteral("https://hooks.test:%1/hook").arg(receiver.port());
    r = run(fetch, req, trusted, false);
    QCOMPARE(r.outcome.error, FetchError::Connect);
    QCOMPARE(r.outcome.address, QStringLiteral("127.0.0.1")); // dialled, then refused by TLS

    // Without ca_file the system's CAs do not know the test's certificate.
    const UrlPolicy untrusted = UrlPolicy::callback(QJsonObject{{"allow_cidrs", loopback}});
    req.url = receiver.url();
    r = run(fetch, req, untrusted, false);
    QCOMPARE(r.outcome.error, FetchError::Connect);
    QVERIFY2(r.outcome.message.contains(QStringLiteral("certificate"), Qt::CaseInsensitive),
             qPrintable(r.outcome.message));
    QCOMPARE(r.outcome.status, 0);
    // curl refuses the unknown CA in the handshake (an alert); a name it checks afterwards.
    QTRY_COMPARE(receiver.handshakeFailures(), 1);
    QCOMPARE(receiver.requests().size(), 2); // nothing reached the receiver over those
}

// FetchOutcome::address: the address dialled for the final hop, empty when none was.
void TestUrlGuard::dialledAddress()
{
    TestServer server; // 127.0.0.1
    TestServer second(addr("127.0.0.2"));
    QVERIFY(second.listening());
    auto resolver = std::make_shared<FakeResolver>();
    resolver->answers[QStringLiteral("files.test")] = {{addr("127.0.0.2")}};
    GuardedFetch fetch(resolver);
    const QString named = second.base(QStringLiteral("files.test"));

    Result r = get(fetch, named + QStringLiteral("/ok"), loopbackPolicy());
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.outcome.address, QStringLiteral("127.0.0.2")); // the address, not the name

    // After a redirect: the final hop's address.
    const QString target = server.base() + QStringLiteral("/ok");
    r = get(fetch,
            named + QStringLiteral("/redirect?to=") +
                QString::fromLatin1(QUrl::toPercentEncoding(target)),
            loopbackPolicy());
    QVERIFY2(r.outcome.ok(), qPrintable(r.outcome.message));
    QCOMPARE(r.outcome.redirects, 1);
    QCOMPARE(r.outcome.address, QStringLiteral("127.0.0.1"));

    // An error answer and a timeout still name it: a connection was made.
    r = get(fetch, server.base() + QStringLiteral("/status/503"), loopbackPolicy());
    QCOMPARE(r.outcome.error, FetchError::Http);
    QCOMPARE(r.outcome.address, QStringLiteral("127.0.0.1"));
    UrlPolicy quick = loopbackPolicy();
    quick.totalTimeoutMs = 300;
    r = get(fetch, server.base() + QStringLiteral("/slow"), quick);
    QCOMPARE(r.outcome.error, FetchError::Timeout);
    QCOMPARE(r.outcome.address, QStringLiteral("127.0.0.1"));

    // Refused by the guard, or nothing listening: none.
    r = get(fetch, server.base() + QStringLiteral("/ok"), loopbackPolicy({}));
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.address, QString());
    const QString refusedHop = second.base(QStringLiteral("127.0.0.1"));
    r = get(fetch,
            named + QStringLiteral("/redirect?to=") +
                QString::fromLatin1(QUrl::toPercentEncoding(refusedHop + QStringLiteral("/ok"))),
            loopbackPolicy({cidr("127.0.0.2/32")}));
    QCOMPARE(r.outcome.error, FetchError::Refused);
    QCOMPARE(r.outcome.redirects, 1);
    QCOMPARE(r.outcome.address, QString()); // the final hop was never dialled
    r = get(fetch, QStringLiteral("http://127.0.0.1:%1/").arg(closedPort()), loopbackPolicy());
    QCOMPARE(r.outcome.error, FetchError::Connect);
    QCOMPARE(r.outcome.address, QString());
}

QTEST_GUILESS_MAIN(TestUrlGuard)
#include "tst_url_guard.moc"
