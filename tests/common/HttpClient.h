#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QTcpSocket>

// A deliberately plain HTTP/1.1 client over a blocking QTcpSocket, so tests see exactly what
// the server sent (status line, every header, chunked framing) with no client-side magic.
struct HttpReply
{
    int status = 0;
    QList<QPair<QByteArray, QByteArray>> headers; // names lowercased
    QByteArray body;
    bool ok = false; // a complete response was read

    QByteArray header(const QByteArray &name) const;
    QJsonObject json() const;
    // The OpenAI-style error message, for readable failures.
    QString errorMessage() const;
};

class HttpClient
{
public:
    explicit HttpClient(quint16 port);
    HttpReply request(const QByteArray &method, const QByteArray &target,
                      const QList<QPair<QByteArray, QByteArray>> &headers = {},
                      const QByteArray &body = {});
    // The same request sent without waiting for its answer (readReply() reads it): requests
    // left in flight, or several pipelined on the connection.
    void send(const QByteArray &method, const QByteArray &target,
              const QList<QPair<QByteArray, QByteArray>> &headers = {},
              const QByteArray &body = {});
    HttpReply get(const QByteArray &target, const QByteArray &bearer = {});
    HttpReply postJson(const QByteArray &target, const QByteArray &json,
                       const QByteArray &bearer = {});

    // Raw access for protocol tests.
    QTcpSocket &socket() { return m_socket; }
    bool connectIfNeeded();
    void sendRaw(const QByteArray &bytes);
    // Reads one response from the connection.
    HttpReply readReply(int timeoutMs = 10'000);
    // Reads everything until the server closes (or the timeout), without parsing.
    QByteArray readUntilClosed(int timeoutMs = 5'000);

private:
    bool fill(int timeoutMs);
    quint16 m_port;
    QTcpSocket m_socket;
    QByteArray m_buffer;
};
