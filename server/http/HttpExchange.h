#pragma once

#include "HttpHeaders.h"
#include "HttpRequest.h"

#include <atomic>
#include <functional>
#include <memory>
#include <QPointer>

class HttpConnection;

// One request and the means to answer it, now or later. Made when the request's head has
// arrived: the head step (HttpHandler::head) admits its body with readBody(), or answers it
// without reading the body. The connection may go away at any time (the client left); every
// write checks, and onClosed() lets long work stop early.
class HttpExchange : public std::enable_shared_from_this<HttpExchange>
{
public:
    HttpExchange(HttpRequest request, HttpConnection *connection);

    const HttpRequest &request() const { return m_request; }
    HttpRequest &request() { return m_request; }

    bool isOpen() const; // the client is still there
    bool hasLeft() const { return m_closed.load(std::memory_order_relaxed); } // any thread
    qint64 unsentBytes() const; // written but not yet taken by the client (a slow reader)
    // Written and not yet acknowledged by the client's TCP: unsentBytes() and what the kernel
    // still holds for it. What reached the client's machine, for billing a partial answer.
    // 0 once the connection is gone: sample it while it is open.
    qint64 unackedBytes() const;
    // Caps what the kernel queues for this client (SO_SNDBUF; Linux reserves twice `bytes`,
    // bookkeeping included). unackedBytes() is sampled, so between samples the client can take
    // at most what was queued: an answer billed by what was taken keeps that lag small. Without
    // it the kernel's own tuning lets the queue grow to megabytes on a fast link.
    void limitSendQueue(int bytes);
    // Drops the connection now, with a reset (onClosed runs).
    void abortConnection();
    bool isAnswered() const { return m_state != State::Pending; }
    bool isStreaming() const { return m_state == State::Streaming; }

    // The head step's admission: read the body, at most bodyLimit bytes (413 beyond), then call
    // run on the connection's thread with the whole request in request(). Without a body, run
    // comes as soon as the connection goes on: within this call's caller when the head step
    // decides at once, no later than the next read otherwise. run is dropped, never called, if
    // the body fails or the client leaves first. Ignored once answered.
    void readBody(qint64 bodyLimit, std::function<void()> run);

    // A complete response with Content-Length. Ignored if already answered.
    void respond(int status, const HttpHeaders &headers, const QByteArray &body);
    // A chunked response: head now, then chunks as they come, then end(). To HEAD, the head
    // alone.
    void startStream(int status, const HttpHeaders &headers);
    void writeChunk(const QByteArray &data);
    void endStream();
    // Closes the connection after the response (used for protocol errors).
    void setCloseAfter() { m_closeAfter = true; }
    // Set by the connection from the head until the body has been read: an answer given
    // meanwhile (a refusal at the head) closes the connection, whose unread body is never read.
    void setBodyUnread(bool unread) { m_bodyUnread = unread; }
    bool closeAfter() const { return m_closeAfter || m_bodyUnread; }

    // Called once if the client disconnects before the response is complete; registered after
    // that, it runs from the event loop, soon after.
    void onClosed(std::function<void()> callback);
    void notifyClosed();

    static QByteArray reasonPhrase(int status);

private:
    enum class State
    {
        Pending,
        Streaming,
        Done
    };
    // The status line and headers; room: bytes more to reserve (a body appended after it).
    QByteArray head(int status, const HttpHeaders &headers, bool chunked, qint64 length,
                    qsizetype room = 0) const;

    HttpRequest m_request;
    QPointer<HttpConnection> m_connection;
    State m_state = State::Pending;
    bool m_closeAfter = false;
    bool m_bodyUnread = false;
    // The client left: the connection object lingers until its deletion is processed.
    std::atomic_bool m_closed = false; // read from workers by hasLeft()
    std::function<void()> m_onClosed;
};

using ExchangePtr = std::shared_ptr<HttpExchange>;
