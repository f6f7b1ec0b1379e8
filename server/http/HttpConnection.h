#pragma once

#include "HttpExchange.h"
#include "HttpLimits.h"
#include "HttpRequestReader.h"

#include <functional>
#include <QElapsedTimer>
#include <QHostAddress>
#include <QObject>
#include <QTcpSocket>
#include <QTimer>

class HttpHandler;

// One client connection: the socket around an HttpRequestReader. Requests are answered
// strictly in order: while one is in its head step or handled, the next is not parsed, and the
// socket is not read past its read buffer (kReadBuffer, the pipelining allowance), so TCP's flow
// control holds a client that sends ahead. Nor is the next request parsed while more than
// kReadBuffer bytes of answers wait for the client to take them.
//
// Bounds (HttpLimits): a head within headerTimeoutMs of its first bytes, a body that never
// stalls bodyTimeoutMs and keeps minBodyRate; between requests, idleTimeoutMs. Whenever bytes of
// an answer wait unsent, the client must take some (bytes the kernel accepts) within
// idleTimeoutMs, or it is dropped as if it had left: a stream's family sees its client leave.
// What it holds (read bytes, the body, unsent bytes) counts against the server's budget.
class HttpConnection : public QObject
{
    Q_OBJECT
public:
    // What the socket may hold of a client's bytes that the connection has not read yet: all a
    // client may send ahead of a request being handled (with at most kReadStep in the reader).
    static constexpr qint64 kReadBuffer = 48 * 1024;
    // After an answer that closes the connection, its input is read and dropped for at most
    // this long (capped by idleTimeoutMs) and this many bytes, so that the client reads the
    // answer before the close (closing with unread input sends a reset, which can destroy it).
    static constexpr int kLingerMs = 2'000;
    static constexpr qint64 kLingerBytes = 1024 * 1024;

    HttpConnection(qintptr descriptor, HttpHandler &handler, const HttpLimits &limits,
                   HttpBufferBudget &budget, QObject *parent = nullptr);
    ~HttpConnection() override;

    void write(const QByteArray &data);
    void readBody(HttpExchange *exchange, qint64 bodyLimit, std::function<void()> run);
    void exchangeFinished(HttpExchange *exchange); // response complete
    bool isIdle() const { return !m_current; }
    qint64 unsentBytes() const;
    // unsentBytes() plus what the kernel holds that the client has not acknowledged yet (sent
    // or not): what has not reached the client's machine. Linux only; elsewhere unsentBytes().
    qint64 unackedBytes() const;
    void limitSendQueue(int bytes); // SO_SNDBUF (HttpExchange::limitSendQueue)
    // The client's address (an IPv4 client on a dual-stack socket as IPv4).
    QHostAddress clientAddress() const { return m_peer; }
    void closeWhenIdle(); // graceful shutdown: finish the current response, then close
    // Drops the connection now, with a reset (what the kernel still holds for the client goes
    // too); a response in progress is told its client left.
    void abortNow();

signals:
    void closed(HttpConnection *self);

private:
    void onReadyRead();
    void onBytesWritten();
    void pump();
    void onHead();
    void dispatch();
    void fail();
    void refuse(int status, const QString &message);
    void waitForBytes();
    void closeAfterAnswer();
    void linger();
    void account();
    void onDisconnected();

    QTcpSocket *m_socket;
    HttpHandler &m_handler;
    HttpLimits m_limits;
    HttpBufferBudget &m_budget;
    HttpRequestReader m_reader;
    QHostAddress m_peer;
    QElapsedTimer m_clock;
    // Idle between requests, a head's or a body's deadline, or the linger after a close.
    QTimer m_readTimer;
    // Runs while bytes of an answer wait unsent: the client must take some in time.
    QTimer m_writeTimer;
    qint64 m_lastWriteProgressMs = 0;
    ExchangePtr m_current;
    std::function<void()> m_run; // what the head step admitted, for when the body is complete
    qint64 m_held = 0;           // this connection's share of m_budget
    qint64 m_handledBody = 0;    // the body of the request being handled
    qint64 m_bodyStartMs = -1;   // when the body being read was first waited for
    qint64 m_lingered = 0;       // bytes dropped while lingering
    enum class Closing
    {
        No,
        Flushing, // the last answer is still being written
        Lingering // written and shut down for writing; the client's input is dropped
    } m_close = Closing::No;
    bool m_headTimed = false; // the current head's deadline is set
    bool m_closing = false;   // graceful shutdown
    bool m_pumping = false;
    bool m_inHeadStep = false;
    bool m_gone = false;
    bool m_dropping = false; // to be reset from the event loop
};
