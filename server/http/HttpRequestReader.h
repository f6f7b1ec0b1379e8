#pragma once

#include "HttpLimits.h"
#include "HttpRequest.h"

#include <QByteArray>
#include <QString>
#include <utility>

// The request side of one HTTP/1.1 connection as a plain state machine over its bytes, without
// the socket: HttpConnection reads what readBudget() allows into prepareRead(), then acts on
// next()'s events; the libFuzzer target tests/server/fuzz_http_connection.cpp drives it the
// same way with pipelined byte streams.
//
// One request at a time, in order:
//   Head      reading a head: at most maxHeaderBytes and its blank line (431 beyond);
//   HeadStep  the head is out (Event::Head, takeHead()); nothing more is read until the
//             connection admits the body (admit()) or answers without it (finish() or close());
//   Body, ChunkSize, ChunkData, ChunkEnd, Trailer
//             reading the admitted body straight into its buffer: a Content-Length body is
//             reserved once, a chunked one is checked chunk by chunk against the limit and the
//             server's budget before any of the chunk is read, with no arithmetic that can
//             overflow (413 over the limit, 503 over the budget, 400 malformed);
//   Handling  the request is out (Event::Complete, takeBody()); nothing is read until finish();
//   Closed    refused (Event::Failed) or closing: nothing more is read.
// Reads are bounded by what the state can use: a body's remaining bytes, a small step of a head
// or a chunk line. So bytes that follow the current request (pipelined ones) wait in the reader
// only up to one step; the rest stay in the socket, whose own buffer is bounded.
class HttpRequestReader
{
public:
    enum class State
    {
        Head,
        HeadStep,
        Body,
        ChunkSize,
        ChunkData,
        ChunkEnd,
        Trailer,
        Handling,
        Closed
    };
    enum class Event
    {
        NeedBytes, // read up to readBudget() (> 0) bytes, then call next() again
        Head,      // a head: takeHead(), then admit() or answer it
        Complete,  // a whole request: takeBody()
        Failed,    // refused at the protocol level: failStatus(), failMessage(), takeRequest()
        Wait,      // nothing to do until the connection moves the reader on
    };

    // The most read at once while the length needed is unknown (a head, a trailer).
    static constexpr qint64 kReadStep = 16 * 1024;
    // The longest chunk-size line (size and extensions).
    static constexpr int kMaxChunkLine = 1024;

    // budget: the server's, asked before a body or a chunk is taken on (may be null: no cap).
    explicit HttpRequestReader(const HttpLimits &limits, const HttpBufferBudget *budget = nullptr);

    State state() const { return m_state; }
    Event next();

    // How many bytes may be read now; 0 until the state changes. Never more than the body being
    // read still needs, nor more than the buffer may hold (headCapacity()).
    qint64 readBudget() const;
    // Room for n bytes (0 < n <= readBudget()); then commitRead() with how many were read into
    // it (0 to n).
    char *prepareRead(qint64 n);
    void commitRead(qint64 got);

    // After Event::Head: the head, its body empty and bodyLength set (moved out).
    HttpRequest takeHead();
    bool keepAlive() const { return m_keepAlive; }
    bool hasBody() const { return m_bodyLength != 0; }
    // In HeadStep: reads the body, at most bodyLimit bytes. False (and Closed, with
    // failStatus()) when the declared length is over the limit (413) or the server's budget
    // cannot take it (503).
    bool admit(qint64 bodyLimit);
    // Right after admit(): whether "100 Continue" is due (asked for by an HTTP/1.1 request
    // with a body, none of which has arrived).
    bool wantsContinue() const;
    // After Event::Complete: the body (moved out).
    QByteArray takeBody();
    // The answer is complete and the connection stays open: on to the next request. From
    // Handling, or from HeadStep for a request without a body (answered at its head); one
    // whose body was never read closes instead.
    void finish();
    void close();

    int failStatus() const { return m_failStatus; }
    QString failMessage() const { return m_failMessage; }
    // After Event::Failed before a head was out: what of it could be parsed (for the envelope).
    HttpRequest takeRequest() { return std::exchange(m_request, HttpRequest()); }

    qint64 buffered() const { return m_buffer.size(); }
    qint64 headCapacity() const { return qint64(m_limits.maxHeaderBytes) + 4; }
    // Bytes the body being read holds or has been promised (a reserved Content-Length body,
    // the rest of a declared chunk).
    qint64 bodyHeld() const;
    qint64 bodyReceived() const { return m_body.size(); }

    // The 413 message for a body over its limit (length < 0: chunked, unknown).
    static QString tooLargeMessage(qint64 length, qint64 limit);
    // The 503 message when the server's budget is reached.
    static QString busyMessage();

private:
    Event fail(int status, const QString &message);
    Event parseHead(qsizetype end);
    Event parseChunkSize(qsizetype eol);
    Event complete();
    void takeFromBuffer();
    bool readsIntoBody() const;

    HttpLimits m_limits;
    const HttpBufferBudget *m_budget;
    State m_state = State::Head;
    QByteArray m_buffer;      // read but not yet parsed
    qsizetype m_scanFrom = 0; // where the search for a head's end resumes
    HttpRequest m_request;
    QByteArray m_body;
    qint64 m_bodyLength = 0; // as HttpRequest::bodyLength
    qint64 m_bodyLimit = 0;
    qint64 m_remaining = 0;    // of a Content-Length body, or of the current chunk
    qint64 m_trailerBytes = 0; // of a chunked body's trailer section so far
    bool m_keepAlive = true;
    bool m_expectContinue = false;
    QByteArray *m_readInto = nullptr; // between prepareRead() and commitRead()
    qsizetype m_readFrom = 0;
    qint64 m_readSize = 0;
    int m_failStatus = 0;
    QString m_failMessage;
};
