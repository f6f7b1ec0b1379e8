#include "HttpClient.h"

#include <QElapsedTimer>
#include <QJsonDocument>

QByteArray HttpReply::header(const QByteArray &name) const
{
    const QByteArray lower = name.toLower();
    for (const auto &h : headers)
        if (h.first == lower)
            return h.second;
    return {};
}

QJsonObject HttpReply::json() const
{
    return QJsonDocument::fromJson(body).object();
}

QString HttpReply::errorMessage() const
{
    return json().value("error").toObject().value("message").toString();
}

HttpClient::HttpClient(quint16 port) : m_port(port) {}

bool HttpClient::connectIfNeeded()
{
    if (m_socket.state() == QAbstractSocket::ConnectedState)
        return true;
    m_buffer.clear();
    m_socket.abort();
    m_socket.connectToHost(QHostAddress::LocalHost, m_port);
    return m_socket.waitForConnected(5000);
}

void HttpClient::sendRaw(const QByteArray &bytes)
{
    connectIfNeeded();
    m_socket.write(bytes);
    m_socket.waitForBytesWritten(5000);
}

bool HttpClient::fill(int timeoutMs)
{
    if (m_socket.bytesAvailable() == 0 && !m_socket.waitForReadyRead(timeoutMs))
        return false;
    m_buffer += m_socket.readAll();
    return true;
}

HttpReply HttpClient::readReply(int timeoutMs)
{
    HttpReply r;
    QElapsedTimer timer;
    timer.start();
    auto remaining = [&] { return qMax(1, timeoutMs - int(timer.elapsed())); };
    qsizetype headEnd;
    for (;;) {
        while ((headEnd = m_buffer.indexOf("\r\n\r\n")) < 0)
            if (!fill(remaining()))
                return r;
        // Skip interim 1xx responses.
        if (m_buffer.startsWith("HTTP/1.1 1")) {
            m_buffer.remove(0, headEnd + 4);
            continue;
        }
        break;
    }
    const QList<QByteArray> lines = m_buffer.left(headEnd).split('\n');
    m_buffer.remove(0, headEnd + 4);
    r.status = lines.first().split(' ').value(1).toInt();
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QByteArray line = lines[i].trimmed();
        const qsizetype colon = line.indexOf(':');
        if (colon > 0)
            r.headers.append({line.left(colon).toLower(), line.mid(colon + 1).trimmed()});
    }
    if (r.header("transfer-encoding") == "chunked") {
        for (;;) {
            qsizetype eol;
            while ((eol = m_buffer.indexOf("\r\n")) < 0)
                if (!fill(remaining()))
                    return r;
            const qint64 size = m_buffer.left(eol).toLongLong(nullptr, 16);
            while (m_buffer.size() < eol + 2 + size + 2)
                if (!fill(remaining()))
                    return r;
            r.body += m_buffer.mid(eol + 2, size);
            m_buffer.remove(0, eol + 2 + size + 2);
            if (size == 0)
                break;
        }
    } else {
        const qint64 length = r.header("content-length").toLongLong();
        while (m_buffer.size() < length)
            if (!fill(remaining()))
                return r;
        r.body = m_buffer.left(length);
        m_buffer.remove(0, length);
    }
    r.ok = true;
    return r;
}

QByteArray HttpClient::readUntilClosed(int timeoutMs)
{
    QElapsedTimer timer;
    timer.start();
    while (m_socket.state() == QAbstractSocket::ConnectedState && timer.elapsed() < timeoutMs) {
        if (m_socket.waitForReadyRead(100))
            m_buffer += m_socket.readAll();
    }
    m_buffer += m_socket.readAll();
    return std::exchange(m_buffer, {});
}

void HttpClient::send(const QByteArray &method, const QByteArray &target,
                      const QList<QPair<QByteArray, QByteArray>> &headers, const QByteArray &body)
{
    // Host with the port, as real clients send it (answers that name the server use it).
    QByteArray out = method + ' ' + target +
                     " HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(m_port) + "\r\n";
    for (const auto &h : headers)
        out += h.first + ": " + h.second + "\r\n";
    if (!body.isEmpty() || method == "POST" || method == "PUT")
        out += "Content-Length: " + QByteArray::number(body.size()) + "\r\n";
    out += "\r\n" + body;
    sendRaw(out);
}

HttpReply HttpClient::request(const QByteArray &method, const QByteArray &target,
                              const QList<QPair<QByteArray, QByteArray>> &headers,
                              const QByteArray &body)
{
    if (!connectIfNeeded())
        return {};
    send(method, target, headers, body);
    HttpReply r = readReply();
    if (r.header("connection") == "close")
        m_socket.disconnectFromHost();
    return r;
}

HttpReply HttpClient::get(const QByteArray &target, const QByteArray &bearer)
{
    QList<QPair<QByteArray, QByteArray>> h;
    if (!bearer.isEmpty())
        h.append({"Authorization", "Bearer " + bearer});
    return request("GET", target, h);
}

HttpReply HttpClient::postJson(const QByteArray &target, const QByteArray &json,
                               const QByteArray &bearer)
{
    QList<QPair<QByteArray, QByteArray>> h{{"Content-Type", "application/json"}};
    if (!bearer.isEmpty())
        h.append({"Authorization", "Bearer " + bearer});
    return request("POST", target, h, json);
}
