// SIGKILL during a burst of billed gateway requests: after the kill, every response a client
// received in full (a whole answer, or a stream through its final event) has its usage record
// and its ledger charge, and the balance equals the ledger.

#include "FakeUpstreamProcess.h"
#include "Migrations.h"
#include "Money.h"
#include "Store.h"
#include "TestSupport.h"

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
private slots:
    void killDuringBilledBurst_data() { addBackendRows(); }
    void killDuringBilledBurst()
    {
        SY_OPEN_DB(t);
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());

        QTemporaryFile config;
        QVERIFY(config.open());
        const QString base = fake.base("/v1");
        config.write(
            QJsonDocument(
                QJsonObject{
                    {"gateway",
                     QJsonObject{
                         {"providers",
                          QJsonObject{{"openai",
                                       QJsonObject{{"base_url", base}, {"keys", QJsonArray{"u1"}}}},
                                      {"anthropic", QJsonObject{{"base_url", base},
                                                                {"keys", QJsonArray{"u2"}}}}}}}},
                    {"rate_limits", QJsonObject{{"default", QJsonObject{{"chat", 0}}}}}})
                .toJson());
        config.flush();

        const QStringList where = t.cliArgs();
        QByteArray key;
        QCOMPARE(runCli(QStringList{"keys", "create", "--name", "burst"} + where, &key), QString());
        QCOMPARE(runCli(QStringList{"credits", "grant", "--amount", "1000"} + where), QString());

        QProcess server;
        server.start(
            QStringLiteral(SERVER_BINARY),
            QStringList{"serve", "--listen", "127.0.0.1:0", "--config", config.fileName()} + where);
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

        constexpr int kClients = 24;
        constexpr int kKillAfter = 300;
        std::vector<std::unique_ptr<Client>> clients;
        QSet<QByteArray> received;
        for (int i = 0; i < kClients; ++i) {
            auto c = std::make_unique<Client>();
            c->stream = i % 2 == 1;
            c->socket.connectToHost(QHostAddress::LocalHost, port);
            QVERIFY(c->socket.waitForConnected());
            c->socket.write(chatRequest(key, c->stream));
            Client *raw = c.get();
            connect(&c->socket, &QTcpSocket::readyRead, this, [raw, &received, &key] {
                raw->buffer += raw->socket.readAll();
                QByteArray id;
                int status = 0;
                while (takeResponse(raw->buffer, &id, &status)) {
                    if (status == 200)
                        received.insert(id);
                    raw->socket.write(chatRequest(key, raw->stream));
                }
            });
            clients.push_back(std::move(c));
        }
        QElapsedTimer burst;
        burst.start();
        while (received.size() < kKillAfter && burst.elapsed() < 60'000)
            QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
        QVERIFY2(received.size() >= kKillAfter, "the burst did not get going");
        server.kill(); // SIGKILL: no shutdown, no flush
        QVERIFY(server.waitForFinished(5000));
        QCOMPARE(server.exitStatus(), QProcess::CrashExit);
        // Responses that were complete in the socket buffers when the server died.
        for (auto &c : clients) {
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
        qInfo("received %lld complete billed responses; %lld charges and %lld billed usage "
              "records in the database",
              qint64(received.size()), qint64(charged.size()), qint64(recorded.size()));
        QCOMPARE(missing, 0);
        QCOMPARE(charged, recorded); // charge and usage record commit together
        const qint64 account = store.defaultAccountId();
        QCOMPARE(store.balance(account), store.ledgerSum(account));
    }
};

QTEST_GUILESS_MAIN(TestGatewaySigkill)
#include "tst_gateway_sigkill.moc"
