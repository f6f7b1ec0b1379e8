// Hostile raw-socket clients against the real switchyard-server program, run as a child process
// so that its resident memory can be read (VmRSS in /proc/PID/status): overflowing chunk sizes,
// pipelined floods behind slow requests, stalled readers of streams (an SSE chat through the
// fake upstream, a long speech answer from the local engine with Connection: close), huge bodies
// with bad credentials, slow loris on heads and on bodies. After each attack the server's
// resident memory stays within kRssBoundMiB of where it started, and its open connections (the
// gauge on /metrics) come back to idle. The server's timeouts are small (the config below), so
// the suite takes seconds.

#include "FakeUpstreamProcess.h"
#include "HttpClient.h"
#include "MetricsPage.h"
#include "RawClient.h"
#include "TestSupport.h"

#include <functional>
#include <memory>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QThread>
#include <vector>

namespace {

// What an attack may leave the server holding, over its resident memory before the first one.
// Without the edge's bounds, the overflowing chunk size alone grew it by about 220 MiB and the
// pipelined flood by about 230 MiB.
constexpr qint64 kRssBoundMiB = 48;
constexpr int kTimeoutMs = 1000;     // the server's idle, head and body timeouts here
constexpr qint64 kBufferCapMiB = 24; // its max_buffered_bytes: a 20 MB upload fits

QByteArray chatBody(bool stream, const QString &content, const char *model = "vendorB-5-nano")
{
    return QJsonDocument(QJsonObject{{"model", model},
                                     {"stream", stream},
                                     {"messages", QJsonArray{QJsonObject{{"role", "user"},
                                                                         {"content", content}}}}})
        .toJson(QJsonDocument::Compact);
}

QByteArray post(const QByteArray &path, const QByteArray &key, const QByteArray &body,
                const QByteArray &extra = {})
{
    return "POST " + path + " HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + key +
           "\r\nContent-Type: application/json\r\n" + extra +
           "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" + body;
}

// Sends `bytes` over and over for up to ms milliseconds, as fast as the server takes them;
// how many bytes it took. Stops early when the connection fails.
qint64 flood(RawClient &c, const QByteArray &bytes, int ms)
{
    qint64 sent = 0;
    qint64 at = 0;
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms) {
        const qint64 k = c.sendSome(bytes.constData() + at, bytes.size() - at);
        if (k < 0)
            break;
        sent += k;
        at = (at + k) % bytes.size();
        if (k == 0)
            QThread::msleep(2);
    }
    return sent;
}

} // namespace

class TestHostileClients : public QObject
{
    Q_OBJECT

    TestDatabase m_db{QStringLiteral("sqlite")};
    FakeUpstreamProcess m_fake;
    QTemporaryDir m_dir;
    QProcess m_server;
    quint16 m_port = 0;
    QByteArray m_key;
    qint64 m_baselineKb = 0;

    qint64 rssKb() const
    {
        QFile status(QStringLiteral("/proc/%1/status").arg(m_server.processId()));
        if (!status.open(QIODevice::ReadOnly))
            return -1;
        for (const QByteArray &line : status.readAll().split('\n'))
            if (line.startsWith("VmRSS:"))
                return line.mid(6).trimmed().split(' ').first().toLongLong();
        return -1;
    }

    // After an attack: the connections back to idle (the asking one alone) and the memory
    // within its bound.
    void afterAttack(const char *attack)
    {
        QTRY_COMPARE_WITH_TIMEOUT(metric(m_port, "switchyard_open_connections"), 1.0, 10'000);
        const qint64 rss = rssKb();
        qInfo("%s: the server's resident memory is %lld MiB (%lld MiB before the attacks), "
              "%g bytes buffered",
              attack, rss / 1024, m_baselineKb / 1024,
              metric(m_port, "switchyard_http_buffered_bytes"));
        QVERIFY(rss > 0);
        QVERIFY2(
            rss - m_baselineKb <= kRssBoundMiB * 1024,
            qPrintable(
                QStringLiteral("%1: grew by %2 MiB").arg(attack).arg((rss - m_baselineKb) / 1024)));
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_db.ready(), qPrintable(m_db.skipReason()));
        QVERIFY(m_fake.start());
        const QString base = m_fake.base("/v1");
        const QJsonObject config{
            {"server", QJsonObject{{"idle_timeout_ms", kTimeoutMs},
                                   {"header_timeout_ms", kTimeoutMs},
                                   {"body_timeout_ms", kTimeoutMs},
                                   {"min_body_rate", 10000},
                                   {"max_buffered_bytes", kBufferCapMiB << 20}}},
            {"gateway",
             QJsonObject{
                 {"providers", QJsonObject{{"openai", QJsonObject{{"base_url", base},
                                                                  {"keys", QJsonArray{"u1"}}}}}}}},
            {"rate_limits", QJsonObject{{"default", QJsonObject{{"default", 0}, {"chat", 0}}}}}};
        const QString configPath = m_dir.filePath(QStringLiteral("config.json"));
        QFile file(configPath);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QJsonDocument(config).toJson());
        file.close();

        const QStringList where = m_db.cliArgs();
        QCOMPARE(runProgram(QStringLiteral(SERVER_BINARY),
                            QStringList{"keys", "create", "--name", "hostile"} + where, &m_key),
                 QString());
        QCOMPARE(runProgram(QStringLiteral(SERVER_BINARY),
                            QStringList{"credits", "grant", "--amount", "1000"} + where),
                 QString());

        // Its log to a file: a pipe nobody reads would stall it.
        const QString log = m_dir.filePath(QStringLiteral("server.log"));
        m_server.setStandardErrorFile(log);
        m_server.setStandardOutputFile(QProcess::nullDevice());
        m_server.start(QStringLiteral(SERVER_BINARY),
                       QStringList{"serve", "--listen", "127.0.0.1:0", "--config", configPath} +
                           where);
        QVERIFY(m_server.waitForStarted());
        QByteArray err;
        QElapsedTimer t;
        t.start();
        while (!err.contains("listening on") && t.elapsed() < 15'000) {
            QThread::msleep(50);
            QFile f(log);
            if (f.open(QIODevice::ReadOnly))
                err = f.readAll();
        }
        const qsizetype at = err.indexOf("http://127.0.0.1:");
        QVERIFY2(at >= 0, err.constData());
        m_port = quint16(err.mid(at + 17, err.indexOf(' ', at) - at - 17).toUInt());

        // Warm up what the attacks use, so that the baseline holds it: a chat answer, a speech
        // answer, the metrics.
        HttpClient c(m_port);
        const HttpReply chat =
            c.request("POST", "/v1/chat/completions",
                      {{"Authorization", "Bearer " + m_key}, {"Content-Type", "application/json"}},
                      chatBody(false, QStringLiteral("hello")));
        QVERIFY2(chat.status == 200, chat.body.constData());
        const HttpReply speech =
            c.request("POST", "/v1/audio/speech",
                      {{"Authorization", "Bearer " + m_key}, {"Content-Type", "application/json"}},
                      R"({"model": "vendorE-tts-nano", "input": "Hello there.", "voice": "nova"})");
        QVERIFY2(speech.status == 200, speech.body.constData());
        QTRY_COMPARE_WITH_TIMEOUT(metric(m_port, "switchyard_open_connections"), 1.0, 10'000);
        m_baselineKb = rssKb();
        QVERIFY(m_baselineKb > 0);
    }

    void cleanupTestCase()
    {
        if (m_server.state() != QProcess::NotRunning) {
            m_server.terminate();
            if (!m_server.waitForFinished(15'000))
                m_server.kill();
        }
    }

    // Chunk sizes that overflowed the body's bound (a first chunk, then one near the largest
    // integer, then megabytes of data): refused at once with 413, the data never read.
    void overflowingChunkSizes()
    {
        const QByteArray junk(1 << 20, 'x');
        for (const char *size :
             {"7fffffffffffffff", "ffffffffffffffff", "8000000000000000", "10000000000000000"}) {
            RawClient c(m_port);
            QVERIFY(c.sendAll("POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nAuthorization: "
                              "Bearer " +
                              m_key + "\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n" + size +
                              "\r\n"));
            flood(c, junk, 500);
            const QByteArray reply = c.readUntilClosed(5'000);
            QVERIFY2(reply.startsWith("HTTP/1.1 413"), reply.left(200).constData());
            QVERIFY(c.closed());
        }
        afterAttack("overflowing chunk sizes");
    }

    // Megabytes pipelined behind slow requests on several connections: the server reads a
    // small allowance of each and TCP holds the rest back in the clients.
    void pipelinedFloods()
    {
        std::vector<std::unique_ptr<RawClient>> clients;
        const QByteArray slow =
            post("/v1/chat/completions", m_key, chatBody(false, "slow [fake delay-ms=2000]"));
        QByteArray pipelined;
        while (pipelined.size() < (1 << 20))
            pipelined += "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
        for (int i = 0; i < 8; ++i) {
            clients.push_back(std::make_unique<RawClient>(m_port, 0, 64 * 1024));
            QVERIFY(clients.back()->sendAll(slow));
        }
        for (auto &c : clients) {
            const qint64 taken = flood(*c, pipelined, 150);
            QVERIFY2(taken < 8 * 1024 * 1024, qPrintable(QString::number(taken)));
        }
        const double held = metric(m_port, "switchyard_http_buffered_bytes");
        QVERIFY2(held <= 8 * 80 * 1024, qPrintable(QString::number(held)));
        clients.clear();
        afterAttack("pipelined floods");
    }

    // Readers that stop reading a stream: an SSE chat of some 6 MB through the fake upstream,
    // asked with Connection: close, and a speech answer of some 50 MB from the local engine.
    // Each client is dropped once it has taken no bytes for the idle timeout, the speech while
    // it is still being made: its family sees its client leave (the usage record says 499), as
    // for a disconnect. Neither answer is held whole meanwhile: the engine waits for the
    // connection once it is a little ahead (the memory check after the attack).
    void stalledReaders()
    {
        RawClient chat(m_port, 4096);
        QVERIFY(chat.sendAll(post("/v1/chat/completions", m_key,
                                  chatBody(true, "long [fake chunks=30000]"),
                                  "Connection: close\r\n")));
        QByteArray words;
        for (int i = 0; i < 4000 / 8; ++i)
            words += "Go home. ";
        RawClient speech(m_port, 4096);
        QVERIFY(speech.sendAll(
            post("/v1/audio/speech", m_key,
                 QJsonDocument(QJsonObject{{"model", "vendorE-tts-nano"},
                                           {"voice", "nova"},
                                           {"input", QString::fromLatin1(words.left(4000))}})
                     .toJson(QJsonDocument::Compact))));
        QElapsedTimer t;
        t.start();
        QVERIFY(chat.hungUp(15'000));
        qInfo("the chat's reader dropped after %lld ms", t.elapsed());
        QVERIFY(speech.hungUp(30'000));
        qInfo("the speech's reader dropped after %lld ms", t.elapsed());
        QVERIFY(chat.readSome(1'000).startsWith("HTTP/1.1 200"));
        QVERIFY(speech.readSome(1'000).startsWith("HTTP/1.1 200"));

        // The speech was still being made: its family saw its client leave (499).
        QSqlDatabase db = m_db.config().open(QStringLiteral("check"));
        QSqlQuery q(db);
        const auto speechStatus = [&q] {
            return q.exec("SELECT status FROM usage_records WHERE endpoint LIKE '%speech%' "
                          "ORDER BY id DESC LIMIT 1") &&
                           q.next()
                       ? q.value(0).toInt()
                       : 0;
        };
        QTRY_COMPARE_WITH_TIMEOUT(speechStatus(), 499, 10'000);
        QVERIFY(metric(m_port, "switchyard_http_stalled_readers_total") >= 2);
        afterAttack("stalled readers");
    }

    // Uploads of 20 MB with a key that does not exist: the 401 comes from the head while most
    // of the body is still unsent (the server reads none of it), and the connection closes.
    void hugeBodiesWithBadCredentials()
    {
        const QByteArray body(1 << 20, 'z');
        for (int i = 0; i < 4; ++i) {
            RawClient c(m_port);
            QVERIFY(c.sendAll("POST /v1/audio/transcriptions HTTP/1.1\r\nHost: t\r\n"
                              "Authorization: Bearer sk-" +
                              QByteArray(43, char('A' + i)) +
                              "\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                              "Content-Length: 20000000\r\n\r\n"));
            qint64 sent = 0;
            QByteArray reply;
            QElapsedTimer t;
            t.start();
            while (reply.isEmpty() && !c.closed() && t.elapsed() < 10'000 && sent < 20'000'000) {
                const qint64 k =
                    c.sendSome(body.constData(), qMin<qint64>(body.size(), 20'000'000 - sent));
                if (k < 0)
                    break;
                sent += k;
                reply = c.readSome(k == 0 ? 5 : 0);
            }
            QVERIFY2(sent < 10'000'000, qPrintable(QString::number(sent)));
            reply += c.readUntilClosed(5'000);
            QVERIFY2(reply.startsWith("HTTP/1.1 401"), reply.left(200).constData());
            QVERIFY(reply.contains("Connection: close"));
            QVERIFY(c.closed());
        }
        afterAttack("huge bodies with bad credentials");
    }

    // Slow loris: heads trickled a byte at a time, and admitted bodies trickled below the
    // minimum rate: every one is dropped by its deadline, none answered.
    void slowLoris()
    {
        std::vector<std::unique_ptr<RawClient>> heads;
        std::vector<std::unique_ptr<RawClient>> bodies;
        const QByteArray head = "GET /healthz HTTP/1.1\r\nX-Slow: " + QByteArray(4000, 's');
        for (int i = 0; i < 30; ++i) {
            heads.push_back(std::make_unique<RawClient>(m_port));
            bodies.push_back(std::make_unique<RawClient>(m_port));
            QVERIFY(bodies.back()->sendAll(
                "POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + m_key +
                "\r\nContent-Length: 10000\r\n\r\n"));
        }
        QElapsedTimer t;
        t.start();
        int open = 60;
        for (int at = 0; open > 0 && t.elapsed() < 10 * kTimeoutMs; ++at) {
            open = 0;
            for (auto *group : {&heads, &bodies}) {
                for (auto &c : *group) {
                    if (c->hungUp(0))
                        continue;
                    ++open;
                    c->sendSome(group == &heads ? head.mid(at % head.size(), 1) : "x");
                }
            }
            QThread::msleep(50);
        }
        QCOMPARE(open, 0);
        for (auto *group : {&heads, &bodies})
            for (auto &c : *group)
                QVERIFY(c->readUntilClosed(1'000).isEmpty());
        afterAttack("slow loris");
    }
};

QTEST_GUILESS_MAIN(TestHostileClients)
#include "tst_hostile_clients.moc"
