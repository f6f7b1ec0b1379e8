// SIGKILL during a burst of billed requests (gateway calls, streamed or not; and the cheapest
// billed request at the highest rate the server takes): after the kill, every response a client
// received in full (a whole answer, or a stream through its final event) has its usage record
// and its ledger charge, and the balance equals the ledger.

#include "FakeUpstreamProcess.h"
#include "Migrations.h"
#include "Money.h"
#include "Store.h"
#include "TestSupport.h"

#include <functional>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSqlQuery>
#include <QTcpSocket>
#include <QTemporaryFile>

namespace {

QByteArray chatRequest(const QByteArray &key, bool stream)
{
    const QByteArray body =
        QJsonDocument(
            QJsonObject{{"model", stream ? "vendorA-haiku-4-5" : "vendorB-5-nano"},
                        {"stream", stream},
                        {"messages", QJsonArray{QJsonObject{
                                         {"role", "user"}, {"content", "burst [fake chunks=4]"}}}}})
            .toJson(QJsonDocument::Compact);
    return "POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + key +
           "\r\nContent-Type: application/json\r\nContent-Length: " +
           QByteArray::number(body.size()) + "\r\n\r\n" + body;
}

// One keep-alive connection sending requests back to back, noting each complete 200.
struct Client
{
    QTcpSocket socket;
    QByteArray buffer;
    bool stream = false;
};

// The request id of a complete response at the start of buffer, consumed; empty if incomplete.
bool takeResponse(QByteArray &buffer, QByteArray *requestId, int *status)
{
    const qsizetype headEnd = buffer.indexOf("\r\n\r\n");
    if (headEnd < 0)
        return false;
    const QByteArray head = buffer.left(headEnd).toLower();
    *status = head.mid(9, 3).toInt();
    const qsizetype id = head.indexOf("x-request-id: ");
    *requestId = id < 0 ? QByteArray() : buffer.mid(id + 14, buffer.indexOf("\r\n", id) - id - 14);
    qsizetype end;
    if (head.contains("transfer-encoding: chunked")) {
        end = buffer.indexOf("\r\n0\r\n\r\n", headEnd);
        if (end < 0)
            return false;
        end += 7;
        // A complete stream ends with the protocol's final event.
        if (!buffer.left(end).contains("data: [DONE]"))
            *status = -1;
    } else {
        const qsizetype cl = head.indexOf("content-length: ");
        const qint64 length = head.mid(cl + 16, head.indexOf("\r\n", cl) - cl - 16).toLongLong();
        end = headEnd + 4 + length;
        if (buffer.size() < end)
            return false;
    }
    buffer.remove(0, end);
    return true;
}

QString runCli(const QStringList &args, QByteArray *out = nullptr)
{
    return runProgram(QStringLiteral(SERVER_BINARY), args, out);
}

} // namespace

class TestGatewaySigkill : public QObject
{
    Q_OBJECT
    // Starts the real server over t's database, keeps `clients` keep-alive connections
    // sending request(key, i) back to back, SIGKILLs the server once killAfter complete 200s
    // arrived, and checks the database against every complete 200 a client got.
    void burstThenKill(TestDatabase &t, const QJsonObject &config, int clients, int killAfter,
                       const std::function<QByteArray(const QByteArray &key, int client)> &request)
    {
        QTemporaryFile configFile;
        QVERIFY(configFile.open());
        configFile.write(QJsonDocument(config).toJson());
        configFile.flush();

        const QStringList where = t.cliArgs();
        QByteArray key;
        QCOMPARE(runCli(QStringList{"keys", "create", "--name", "burst"} + where, &key), QString());
        QCOMPARE(runCli(QStringList{"credits", "grant", "--amount", "1000"} + where), QString());

        QProcess server;
        server.start(QStringLiteral(SERVER_BINARY), QStringList{"serve", "--listen", "127.0.0.1:0",
                                                                "--config", configFile.fileName()} +
                                                        where);
        QByteArray err;
        QElapsedTimer t0;
        t0.start();
        while (!err.contains("listening on") && t0.elapsed() < 15'000) {
            server.waitForReadyRead(100);
            err += server.readAllStandardError();
        }
        const qsizetype at = err.indexOf("http://127.0.0.1:");
        QVERIFY2(at >= 0, err.constData());
        const quint16 port = quint16(err.mid(at + 17, err.indexOf(' ', at) - at - 17).toUInt());

        std::vector<std::unique_ptr<Client>> open;
        QSet<QByteArray> received;
        for (int i = 0; i < clients; ++i) {
            auto c = std::make_unique<Client>();
            c->stream = false;
            c->socket.connectToHost(QHostAddress::LocalHost, port);
            QVERIFY(c->socket.waitForConnected());
            c->socket.write(request(key, i));
            Client *raw = c.get();
            connect(&c->socket, &QTcpSocket::readyRead, this, [raw, i, &received, &key, &request] {
                raw->buffer += raw->socket.readAll();
                QByteArray id;
                int status = 0;
                while (takeResponse(raw->buffer, &id, &status)) {
                    if (status == 200)
                        received.insert(id);
                    raw->socket.write(request(key, i));
                }
            });
            open.push_back(std::move(c));
        }
        QElapsedTimer burst;
        burst.start();
        while (received.size() < killAfter && burst.elapsed() < 60'000)
            QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
        QVERIFY2(received.size() >= killAfter, "the burst did not get going");
        server.kill(); // SIGKILL: no shutdown, no flush
        QVERIFY(server.waitForFinished(5000));
        QCOMPARE(server.exitStatus(), QProcess::CrashExit);
        // Responses that were complete in the socket buffers when the server died.
        for (auto &c : open) {
            c->buffer += c->socket.readAll();
            QByteArray id;
            int status = 0;
            while (takeResponse(c->buffer, &id, &status))
                if (status == 200)
                    received.insert(id);
        }

        QSqlDatabase db = t.config().open(QStringLiteral("check"));
        Store store(db, t.config().kind());
        QSet<QString> charged;
        QSet<QString> recorded;
        QSqlQuery q(db);
        QVERIFY(q.exec("SELECT request_id FROM ledger WHERE kind = 'charge'"));
        while (q.next())
            charged.insert(q.value(0).toString());
        QVERIFY(q.exec("SELECT request_id FROM usage_records WHERE cost > 0"));
        while (q.next())
            recorded.insert(q.value(0).toString());
        int missing = 0;
        for (const QByteArray &id : std::as_const(received))
            if (!charged.contains(QString::fromLatin1(id)) ||
                !recorded.contains(QString::fromLatin1(id)))
                ++missing;
        qInfo("received %lld complete billed responses in %lld ms; %lld charges and %lld billed "
              "usage records in the database",
              qint64(received.size()), qint64(burst.elapsed()), qint64(charged.size()),
              qint64(recorded.size()));
        QCOMPARE(missing, 0);
        QCOMPARE(charged, recorded); // charge and usage record commit together
        const qint64 account = store.defaultAccountId();
        QCOMPARE(store.balance(account), store.ledgerSum(account));
    }

private slots:
    void killDuringBilledBurst_data() { addBackendRows(); }
    void killDuringBilledBurst()
    {
        SY_OPEN_DB(t);
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        const QString base = fake.base("/v1");
        const QJsonObject config{
            {"gateway",
             QJsonObject{{"providers",
                          QJsonObject{{"openai",
                                       QJsonObject{{"base_url", base}, {"keys", QJsonArray{"u1"}}}},
                                      {"anthropic", QJsonObject{{"base_url", base},
                                                                {"keys", QJsonArray{"u2"}}}}}}}},
            {"rate_limits", QJsonObject{{"default", QJsonObject{{"chat", 0}}}}}};
        burstThenKill(t, config, 24, 300, [](const QByteArray &key, int client) {
            return chatRequest(key, client % 2 == 1);
        });
    }

    // The highest-rate phase: 128 connections of the cheapest billed request (an address
    // coordinate conversion) as fast as they go, so that the writer commits batches of
    // hundreds of settlements and the checkpointer runs beside it; killed once 3,000 answers
    // are out.
    void killAtFullRate_data() { addBackendRows(); }
    void killAtFullRate()
    {
        SY_OPEN_DB(t);
        const QJsonObject config{
            {"rate_limits", QJsonObject{{"default", QJsonObject{{"default", 0}, {"address", 0}}}}}};
        burstThenKill(t, config, 128, 3000, [](const QByteArray &key, int) {
            const QByteArray body = R"({"text": "120.026208,30.279212", "srcCoord": "gcj02"})";
            return "POST /v1/address/transfer-coord HTTP/1.1\r\nHost: t\r\nAuthorization: "
                   "Bearer " +
                   key + "\r\nContent-Type: application/json\r\nContent-Length: " +
                   QByteArray::number(body.size()) + "\r\n\r\n" + body;
        });
    }
};

QTEST_GUILESS_MAIN(TestGatewaySigkill)
#include "tst_gateway_sigkill.moc"
