#pragma once

#include "http/HttpHeaders.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QString>

// An incremental parser of one HTTP/1.x response read from an upstream's connection: untrusted
// bytes, in whatever pieces the socket gives. It never copies the body: a Data event points into
// the caller's input. The caller feeds bytes with next() until it returns NeedMore (all consumed)
// and stops at any other event to act on it, keeping the rest of its input for the next call;
// that is how a relay pauses mid-buffer.
//
// Events, in order: Head once (a final status, 200-599; 1xx interim heads are skipped, a 101 is
// an error), Data any number of times, then Done or Error. Framing follows RFC 9112 section 6:
// no body for a HEAD request or a 1xx/204/304 status; chunked when it is the last transfer
// coding (chunk extensions and trailers are read and dropped); another transfer coding, or none
// and no Content-Length, reads until the peer closes (eof()); otherwise Content-Length, whose
// copies must agree. Limits: a head (status line and fields), or a trailer section, of at most
// kMaxHead bytes; a chunk-size line of at most kMaxChunkLine. Anything malformed is an Error
// with a message for the operator's log; the connection is then never reused.
class Http1Response
{
public:
    enum class Event
    {
        NeedMore, // the input is consumed; more is needed
        Head,     // status() and headers() are set
        Data,     // data() holds the next piece of the body
        Done, // the response is complete; keepAlive() says whether the connection may serve another
        Error // error() says what was wrong; nothing more is parsed
    };

    static constexpr qsizetype kMaxHead = 100 * 1024; // as libcurl's limit on a header block
    static constexpr qsizetype kMaxChunkLine = 4096;

    // noBody: the response to a HEAD request (its Content-Length describes no body).
    explicit Http1Response(bool noBody = false) : m_noBody(noBody) {}

    // Parses from p (advanced past what was consumed) up to end.
    Event next(const char *&p, const char *end);
    // The peer closed the connection: Done where the body ends at the close, else Error
    // (nothing, a partial head, a short body).
    Event eof();

    bool started() const { return m_started; }   // any byte has arrived
    bool headDone() const { return m_headDone; } // the Head event has been returned
    int status() const { return m_status; }
    const HttpHeaders &headers() const { return m_headers; } // names lower-cased, values trimmed
    QByteArrayView data() const { return m_data; }
    bool keepAlive() const { return m_keepAlive; }
    // Error: whether the response broke off after its head (the body was cut or malformed) or
    // before it (no answer, or not HTTP).
    const QString &error() const { return m_error; }

private:
    enum class State
    {
        Head,
        Length, // m_remaining bytes of body
        UntilClose,
        ChunkSize, // a chunk-size line into m_line
        ChunkData, // m_remaining bytes of chunk
        ChunkEnd,  // the CRLF after a chunk's data
        Trailers,  // trailer lines until an empty one
        Done,
        Failed
    };

    Event fail(const QString &message);
    Event takeRemaining(const char *&p, const char *end); // up to m_remaining bytes as Data
    Event parseHead();
    Event startBody();

    enum class Scan
    {
        InLine,
        LineStart,  // just after a line's LF (or at the start of a trailer section)
        LineStartCr // a CR there: an LF now ends the section
    };

    bool m_noBody = false;
    Scan m_scan = Scan::InLine;
    bool m_started = false;
    bool m_headDone = false;
    bool m_keepAlive = true;
    State m_state = State::Head;
    int m_status = 0;
    HttpHeaders m_headers;
    QByteArray m_line; // the head so far, a chunk-size line or the trailers so far
    qint64 m_remaining = 0;
    QByteArrayView m_data;
    QString m_error;
};
