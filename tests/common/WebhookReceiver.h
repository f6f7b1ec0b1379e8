#pragma once

#include <memory>
#include <QByteArray>
#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <utility>

class QTcpServer;
class QTcpSocket;
class QTemporaryDir;

// A scriptable webhook receiver for tests: an HTTPS server on 127.0.0.1 and a port the system
// picks, with a certificate the test makes at start() with the openssl command line (RSA 2048,
// one day, CN localhost, subjectAltName IP:127.0.0.1 and DNS:localhost), or a plain HTTP
// server (Mode::Http, for "http is refused" tests). caFile() is the certificate's PEM file:
// what a fetch policy's ca_file names so that libcurl trusts it.
//
// Each request gets the next answer of the script, then the default answer ({200} unless
// set); every request is recorded with its arrival time, head, body and the answer it got.
// HTTP/1.1 with Content-Length bodies (a body announced with Expect: 100-continue gets
// "100 Continue" first); one request per connection, every answer closes it (Connection:
// close), so any number of requests can come one after another. A chunked body or a
// malformed head is answered 501 or 400 and not recorded. Runs on the thread's event loop,
// which the test must spin (waitForRequests(), QTRY_*, QTest::qWait or a QEventLoop).
//
//   WebhookReceiver receiver;
//   QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
//   receiver.script({{500}, {500}, WebhookReceiver::Answer::after(3000)});
//   receiver.setDefault({200});
//   UrlPolicy policy = UrlPolicy::callback(QJsonObject{
//       {"allow_cidrs", QJsonArray{"127.0.0.0/8"}}, {"ca_file", receiver.caFile()}});
//   ... POST to receiver.url() through GuardedFetch ...
//   QVERIFY(receiver.waitForRequests(3, 5000));
//   QCOMPARE(receiver.requests()[0].header("content-type"), QByteArray("application/json"));
class WebhookReceiver : public QObject
{
    Q_OBJECT
public:
    // One answer: {200}, {500, 0, false, "busy"}, or one of the helpers.
    struct Answer
    {
        int status = 200;
        int delayMs = 0;                // wait this long before answering
        bool never = false;             // never answer: hold the connection open until the client
                                        // leaves or the receiver is destroyed
        QByteArray body = {};           // sent with its Content-Length (0 when empty)
        QList<QByteArray> headers = {}; // extra "Name: value" lines, e.g. "Location: https://x/"

        static Answer after(int delayMs, int status = 200);
        static Answer silence(); // never answers
        static Answer redirect(const QByteArray &location, int status = 302);
    };

    struct Request
    {
        QDateTime arrived;    // wall clock (UTC, ms) when the request's head was read
        qint64 elapsedMs = 0; // the same moment on a monotonic clock, ms since start()
        QByteArray method;    // "POST"
        QByteArray target;    // as sent: "/hook?attempt=2"
        QList<std::pair<QByteArray, QByteArray>> headers; // in order, names as sent
        QByteArray body;
        Answer answer; // the answer it got (or, delayed or never, is getting)

        QByteArray path() const; // the target without its query
        // The first header of that name, case-insensitive; empty when there is none.
        QByteArray header(QByteArrayView name) const;
        bool hasHeader(QByteArrayView name) const;
    };

    enum class Mode
    {
        Https,
        Http
    };

    explicit WebhookReceiver(QObject *parent = nullptr);
    ~WebhookReceiver() override;

    // Makes the certificate (Https) and listens on 127.0.0.1; false with errorString() when
    // openssl is missing or fails, or the server cannot listen.
    bool start(Mode mode = Mode::Https);
    QString errorString() const { return m_error; }
    quint16 port() const;
    // "https://127.0.0.1:PORT/hook" ("http://..." in Mode::Http).
    QString url(const QString &path = QStringLiteral("/hook")) const;
    // The certificate's PEM file (valid while the receiver lives); empty in Mode::Http.
    QString caFile() const { return m_caFile; }

    // Answers for the next requests, in order; replaces what was left of the previous script.
    void script(const QList<Answer> &answers);
    void setDefault(const Answer &answer) { m_default = answer; }
    qsizetype scriptLeft() const { return m_script.size(); }

    QList<Request> requests() const { return m_requests; }
    // Spins the event loop until count requests have been received in all, or timeoutMs.
    bool waitForRequests(int count, int timeoutMs = 5000);
    // TLS handshakes that failed (a client that does not trust caFile() gives up here).
    int handshakeFailures() const { return m_handshakeFailures; }

signals:
    void received(int index); // requests()[index] has just been recorded

private:
    struct Connection
    {
        QByteArray buffer;
        Request request;
        qint64 length = -1; // the body's Content-Length once the head is read
        bool complete = false;
    };
    bool makeCertificate();
    void accept();
    void onRead(QTcpSocket *socket);
    void reject(QTcpSocket *socket, int status, const QByteArray &why);
    void dispatch(QTcpSocket *socket, Request request);
    static void respond(QTcpSocket *socket, const Answer &answer);

    Mode m_mode = Mode::Https;
    QTcpServer *m_server = nullptr;
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_caFile;
    QString m_keyFile;
    QString m_error;
    QElapsedTimer m_clock;
    QList<Answer> m_script;
    Answer m_default;
    QList<Request> m_requests;
    QHash<QTcpSocket *, Connection> m_connections;
    int m_handshakeFailures = 0;
};
