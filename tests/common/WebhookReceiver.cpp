#include "WebhookReceiver.h"

#include <QEventLoop>
#include <QFile>
#include <QProcess>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QSslKey>
#include <QSslServer>
#include <QSslSocket>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTimer>

namespace {

constexpr qsizetype maxHead = 64 * 1024;
constexpr qint64 maxBody = 64 * 1024 * 1024;

} // namespace

WebhookReceiver::Answer WebhookReceiver::Answer::after(int delayMs, int status)
{
    Answer a;
    a.status = status;
    a.delayMs = delayMs;
    return a;
}

WebhookReceiver::Answer WebhookReceiver::Answer::silence()
{
    Answer a;
    a.never = true;
    return a;
}

WebhookReceiver::Answer WebhookReceiver::Answer::redirect(const QByteArray &location, int status)
{
    Answer a;
    a.status = status;
    a.headers = {"Location: " + location};
    return a;
}

QByteArray WebhookReceiver::Request::path() const
{
    const qsizetype q = target.indexOf('?');
    return q < 0 ? target : target.left(q);
}

QByteArray WebhookReceiver::Request::header(QByteArrayView name) const
{
    for (const auto &[n, v] : headers)
        if (name.compare(n, Qt::CaseInsensitive) == 0)
            return v;
    return {};
}

bool WebhookReceiver::Request::hasHeader(QByteArrayView name) const
{
    for (const auto &h : headers)
        if (name.compare(h.first, Qt::CaseInsensitive) == 0)
            return true;
    return false;
}

WebhookReceiver::WebhookReceiver(QObject *parent) : QObject(parent) {}

WebhookReceiver::~WebhookReceiver()
{
    // Held and pending connections close here, before the members they use go.
    if (m_server)
        m_server->close();
    const QList<QTcpSocket *> sockets = m_connections.keys();
    m_connections.clear();
    for (QTcpSocket *s : sockets) {
        s->disconnect(this);
        delete s;
    }
}

bool WebhookReceiver::makeCertificate()
{
    const QString openssl = QStandardPaths::findExecutable(QStringLiteral("openssl"));
    if (openssl.isEmpty()) {
        m_error = QStringLiteral("the openssl program is not installed; WebhookReceiver makes "
                                 "its certificate with it (apt-get install openssl, or bash "
                                 "installer/build-deps.sh --tests)");
        return false;
    }
    if (!QSslSocket::supportsSsl()) {
        m_error = QStringLiteral("Qt has no TLS backend here (%1)")
                      .arg(QSslSocket::availableBackends().join(u", "));
        return false;
    }
    m_dir = std::make_unique<QTemporaryDir>();
    if (!m_dir->isValid()) {
        m_error = QStringLiteral("no temporary folder: %1").arg(m_dir->errorString());
        return false;
    }
    m_caFile = m_dir->filePath(QStringLiteral("cert.pem"));
    m_keyFile = m_dir->filePath(QStringLiteral("key.pem"));
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(openssl,
            {QStringLiteral("req"), QStringLiteral("-x509"), QStringLiteral("-newkey"),
             QStringLiteral("rsa:2048"), QStringLiteral("-nodes"), QStringLiteral("-days"),
             QStringLiteral("1"), QStringLiteral("-subj"), QStringLiteral("/CN=localhost"),
             QStringLiteral("-addext"), QStringLiteral("subjectAltName=IP:127.0.0.1,DNS:localhost"),
             QStringLiteral("-keyout"), m_keyFile, QStringLiteral("-out"), m_caFile});
    const bool finished = p.waitForFinished(60000);
    if (!finished || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        const QString why = finished && p.exitStatus() == QProcess::NormalExit
                                ? QStringLiteral("exit code %1").arg(p.exitCode())
                                : p.errorString();
        m_error = QStringLiteral("%1 req did not make a certificate (%2): %3")
                      .arg(openssl, why, QString::fromLocal8Bit(p.readAll()).trimmed());
        p.kill();
        p.waitForFinished(1000);
        return false;
    }
    QFile keyFile(m_keyFile);
    const QList<QSslCertificate> certs = QSslCertificate::fromPath(m_caFile);
    QSslKey key;
    if (keyFile.open(QIODevice::ReadOnly))
        key = QSslKey(&keyFile, QSsl::Rsa);
    if (certs.isEmpty() || key.isNull()) {
        m_error = QStringLiteral("openssl made a certificate or key Qt cannot read (%1)")
                      .arg(m_dir->path());
        return false;
    }
    QSslConfiguration config = QSslConfiguration::defaultConfiguration();
    config.setLocalCertificate(certs.first());
    config.setPrivateKey(key);
    config.setPeerVerifyMode(QSslSocket::VerifyNone); // clients present no certificate
    auto *server = new QSslServer(this);
    server->setSslConfiguration(config);
    connect(server, &QSslServer::errorOccurred, this,
            [this](QSslSocket *socket, QAbstractSocket::SocketError) {
                if (!socket->isEncrypted())
                    ++m_handshakeFailures;
            });
    m_server = server;
    return true;
}

bool WebhookReceiver::start(Mode mode)
{
    if (m_server) {
        m_error = QStringLiteral("already started");
        return false;
    }
    m_mode = mode;
    m_error.clear();
    if (mode == Mode::Https) {
        if (!makeCertificate())
            return false;
    } else {
        m_server = new QTcpServer(this);
    }
    // Not newConnection: Qt 6.4 emits it when the TCP connection comes, before QSslServer's
    // handshake; a connection is pending (both servers) once it is ready to use.
    connect(m_server, &QTcpServer::pendingConnectionAvailable, this, &WebhookReceiver::accept);
    if (!m_server->listen(QHostAddress::LocalHost, 0)) {
        m_error = QStringLiteral("cannot listen on 127.0.0.1: %1").arg(m_server->errorString());
        return false;
    }
    m_clock.start();
    return true;
}

quint16 WebhookReceiver::port() const
{
    return m_server ? m_server->serverPort() : 0;
}

QString WebhookReceiver::url(const QString &path) const
{
    const QString scheme = m_mode == Mode::Https ? QStringLiteral("https") : QStringLiteral("http");
    return QStringLiteral("%1://127.0.0.1:%2%3").arg(scheme).arg(port()).arg(path);
}

void WebhookReceiver::script(const QList<Answer> &answers)
{
    m_script = answers;
}

bool WebhookReceiver::waitForRequests(int count, int timeoutMs)
{
    if (m_requests.size() >= count)
        return true;
    QEventLoop loop;
    QTimer timer;
    timer.setSingleShot(true);
    connect(&timer, &QTimer::timeout, &loop, &QEventLoop::quit);
    connect(this, &WebhookReceiver::received, &loop, [&] {
        if (m_requests.size() >= count)
            loop.quit();
    });
    timer.start(timeoutMs);
    loop.exec();
    return m_requests.size() >= count;
}

void WebhookReceiver::accept()
{
    while (QTcpSocket *s = m_server->nextPendingConnection()) {
        s->setParent(this);
        m_connections.insert(s, {});
        connect(s, &QTcpSocket::readyRead, this, [this, s] { onRead(s); });
        connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
        connect(s, &QObject::destroyed, this, [this, s] { m_connections.remove(s); });
        if (s->bytesAvailable() > 0) // the request may have come with the handshake's end
            onRead(s);
    }
}

void WebhookReceiver::onRead(QTcpSocket *s)
{
    const auto it = m_connections.find(s);
    if (it == m_connections.end())
        return;
    Connection &c = *it;
    if (c.complete) { // one request per connection: whatever follows is not read
        s->readAll();
        return;
    }
    c.buffer += s->readAll();
    if (c.length < 0) {
        const qsizetype end = c.buffer.indexOf("\r\n\r\n");
        if (end < 0) {
            if (c.buffer.size() > maxHead)
                reject(s, 431, "the head is larger than 64 KiB");
            return;
        }
        Request &r = c.request;
        r.arrived = QDateTime::currentDateTimeUtc();
        r.elapsedMs = m_clock.elapsed();
        QList<QByteArray> lines = c.buffer.left(end).split('\n');
        c.buffer.remove(0, end + 4);
        for (QByteArray &l : lines)
            if (l.endsWith('\r'))
                l.chop(1);
        const QList<QByteArray> first = lines.takeFirst().split(' ');
        if (first.size() != 3 || !first[2].startsWith("HTTP/1."))
            return reject(s, 400, "not an HTTP/1.x request line");
        r.method = first[0];
        r.target = first[1];
        for (const QByteArray &l : std::as_const(lines)) {
            const qsizetype colon = l.indexOf(':');
            if (colon <= 0)
                return reject(s, 400, "a header line without a name");
            r.headers.append({l.left(colon).trimmed(), l.mid(colon + 1).trimmed()});
        }
        if (r.hasHeader("transfer-encoding"))
            return reject(s, 501, "a chunked body (only Content-Length bodies are read)");
        bool ok = true;
        const QByteArray length = r.header("content-length");
        c.length = length.isEmpty() ? 0 : length.toLongLong(&ok);
        if (!ok || c.length < 0)
            return reject(s, 400, "a bad Content-Length");
        if (c.length > maxBody)
            return reject(s, 413, "a body larger than 64 MiB");
        if (c.buffer.size() < c.length &&
            r.header("expect").compare("100-continue", Qt::CaseInsensitive) == 0)
            s->write("HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (c.buffer.size() < c.length)
        return; // the body is still coming
    c.complete = true;
    c.request.body = c.buffer.left(c.length);
    c.buffer.clear();
    dispatch(s, std::move(c.request));
}

void WebhookReceiver::reject(QTcpSocket *s, int status, const QByteArray &why)
{
    qWarning("WebhookReceiver: answered %d to %s", status, why.constData());
    m_connections[s].complete = true;
    Answer a;
    a.status = status;
    a.body = why;
    respond(s, a);
}

void WebhookReceiver::dispatch(QTcpSocket *s, Request request)
{
    const Answer answer = m_script.isEmpty() ? m_default : m_script.takeFirst();
    request.answer = answer;
    m_requests.append(std::move(request));
    if (!answer.never) {
        if (answer.delayMs > 0) // with the socket as context: nothing runs if it has gone
            QTimer::singleShot(answer.delayMs, s, [s, answer] { respond(s, answer); });
        else
            respond(s, answer);
    }
    emit received(int(m_requests.size() - 1));
}

void WebhookReceiver::respond(QTcpSocket *s, const Answer &answer)
{
    // The reason phrase is optional and clients ignore it: "OK" for 200, none otherwise.
    QByteArray out = "HTTP/1.1 " + QByteArray::number(answer.status) +
                     (answer.status == 200 ? " OK" : " ") +
                     "\r\nContent-Length: " + QByteArray::number(answer.body.size()) +
                     "\r\nConnection: close\r\n";
    for (const QByteArray &h : answer.headers)
        out += h + "\r\n";
    out += "\r\n" + answer.body;
    s->write(out);
    s->disconnectFromHost(); // after the bytes are written (and encrypted)
}
