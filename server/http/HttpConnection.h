#pragma once

#include "HttpExchange.h"

#include <QObject>
#include <QTcpSocket>
#include <QTimer>

class HttpHandler;
struct HttpLimits
{
    int maxHeaderBytes = 64 * 1024;
    int maxHeaderCount = 100;
    int idleTimeoutMs = 60'000;
    int headerTimeoutMs = 15'000; // a request head must arrive this fast (slow-loris guard)
};

// One client connection. Requests are answered strictly in order: while one is in flight the
// next is not parsed, so pipelined requests cannot overtake each other.
class HttpConnection : public QObject
{
    Q_OBJECT
public:
    HttpConnection(qintptr descriptor, HttpHandler &handler, const HttpLimits &limits,
                   QObject *parent = nullptr);
    ~HttpConnection() override;

    void write(const QByteArray &data);
    void exchangeFinished(HttpExchange *exchange); // response complete
    bool isIdle() const { return !m_current; }
    qint64 unsentBytes() const;
    void closeWhenIdle(); // graceful shutdown: finish the current response, then close
    // Drops the connection now; a response in progress is told its client left.
    void abortNow();

signals:
    void closed(HttpConnection *self);

private:
    enum class Phase
    {
        Head,
        Body,
        ChunkSize,
        ChunkData,
        ChunkTrailer,
        Waiting
    };
    void onReadyRead();
    void parse();
    bool parseHead(qsizetype headEnd);
    void dispatch();
    void fail(int status, const QString &message);
    void onDisconnected();

    QTcpSocket *m_socket;
    HttpHandler &m_handler;
    HttpLimits m_limits;
    QTimer m_idle;
    QByteArray m_buffer;
    qsizetype m_scanFrom = 0;
    Phase m_phase = Phase::Head;
    HttpRequest m_request;
    qint64 m_bodyRemaining = 0;
    qint64 m_bodyLimit = 0;
    bool m_keepAlive = true;
    bool m_closing = false;
    bool m_gone = false;
    ExchangePtr m_current;
};
