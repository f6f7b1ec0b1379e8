#pragma once

#include <QByteArray>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QtGlobal>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

// A client on a plain non-blocking POSIX socket to 127.0.0.1, for tests that must control what
// the kernel does: small socket buffers (a reader that stalls early, sends that stop as soon as
// the server stops reading), sends that never block, reads with deadlines, telling a close (EOF
// or reset) from silence, and taking an answer no further than asked (a QTcpSocket reads
// whatever arrives whenever the event loop runs). Header-only.
//
// Two ways to read, not to be mixed on one connection: readSome() and the reads built on it take
// whatever has arrived, as it came; readBody() takes one chunked answer, no more of it than it
// needs, and keeps its status and body.
class RawClient
{
public:
    // Buffer sizes of 0 keep the system's; set, they apply before connecting (the window).
    explicit RawClient(quint16 port, int receiveBuffer = 0, int sendBuffer = 0)
    {
        m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (receiveBuffer > 0)
            ::setsockopt(m_fd, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, sizeof receiveBuffer);
        if (sendBuffer > 0)
            ::setsockopt(m_fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, sizeof sendBuffer);
        const int one = 1;
        ::setsockopt(m_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(port);
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        m_connected = ::connect(m_fd, reinterpret_cast<sockaddr *>(&to), sizeof to) == 0;
        ::fcntl(m_fd, F_SETFL, ::fcntl(m_fd, F_GETFL) | O_NONBLOCK);
    }
    ~RawClient() { close(); }
    RawClient(const RawClient &) = delete;
    RawClient &operator=(const RawClient &) = delete;

    bool isConnected() const { return m_connected; }
    // Closing with unread bytes waiting makes the kernel answer the server with a reset.
    void close()
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
    }

    // Sends what the kernel takes now; how many bytes (-1 on an error: the server closed).
    qint64 sendSome(const char *data, qint64 size)
    {
        const ssize_t sent = ::send(m_fd, data, size_t(size), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        return sent;
    }
    qint64 sendSome(const QByteArray &bytes) { return sendSome(bytes.constData(), bytes.size()); }
    // Sends all of it, waiting up to timeoutMs for room; false when it could not.
    bool sendAll(const QByteArray &bytes, int timeoutMs = 5'000)
    {
        QElapsedTimer t;
        t.start();
        qint64 at = 0;
        while (at < bytes.size()) {
            const qint64 sent = sendSome(bytes.constData() + at, bytes.size() - at);
            if (sent < 0)
                return false;
            at += sent;
            if (at < bytes.size() && !wait(POLLOUT, timeoutMs - int(t.elapsed())))
                return false;
        }
        return true;
    }

    // What arrives within timeoutMs (returns as soon as something has); sets closed() on EOF
    // or a reset.
    QByteArray readSome(int timeoutMs)
    {
        QByteArray out;
        if (!wait(POLLIN, timeoutMs))
            return out;
        char chunk[65536];
        for (;;) {
            const ssize_t got = ::recv(m_fd, chunk, sizeof chunk, MSG_DONTWAIT);
            if (got > 0) {
                out.append(chunk, got);
                continue;
            }
            if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
                m_closed = true;
            return out;
        }
    }
    // Everything until the server closes, or timeoutMs.
    QByteArray readUntilClosed(int timeoutMs)
    {
        QElapsedTimer t;
        t.start();
        QByteArray out;
        while (!m_closed && t.elapsed() < timeoutMs)
            out += readSome(timeoutMs - int(t.elapsed()));
        return out;
    }
    // Reads until `needle` has arrived (kept in what is returned), the close, or timeoutMs.
    QByteArray readUntil(const QByteArray &needle, int timeoutMs)
    {
        QElapsedTimer t;
        t.start();
        QByteArray out;
        while (!out.contains(needle) && !m_closed && t.elapsed() < timeoutMs)
            out += readSome(timeoutMs - int(t.elapsed()));
        return out;
    }
    // Whether the server closed the connection: EOF or a reset seen (reading what came).
    bool closed() const { return m_closed; }
    bool waitClosed(int timeoutMs)
    {
        readUntilClosed(timeoutMs);
        return m_closed;
    }
    // Whether the server has closed or reset the connection within timeoutMs, without reading
    // (a stalled reader stays stalled while it waits).
    bool hungUp(int timeoutMs) { return wait(POLLRDHUP, timeoutMs); }

    // Reads until the answer's head and at least `bytes` of its chunked body (framing removed)
    // have arrived, the answer ended, the connection closed or timeoutMs passed; returns the
    // body read so far. Past the head it never takes more than the body asked for (and a chunk
    // line), so with a small receive buffer what it leaves stays with the server.
    QByteArray readBody(qint64 bytes, int timeoutMs = 60'000)
    {
        QDeadlineTimer deadline(timeoutMs);
        char buffer[16384];
        while (m_fd >= 0 && !m_closed && !m_ended && (m_body.size() < bytes || m_status == 0)) {
            if (!wait(POLLIN, int(deadline.remainingTime())))
                break;
            const qint64 want = m_status == 0
                                    ? qint64(sizeof buffer)
                                    : std::min<qint64>(sizeof buffer, bytes + 64 - m_body.size());
            const ssize_t n = ::recv(m_fd, buffer, size_t(std::max<qint64>(want, 1)), MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                continue;
            if (n <= 0) {
                m_closed = true;
                break;
            }
            m_raw.append(buffer, n);
            parseAnswer();
        }
        return m_body;
    }
    // The status of the answer readBody() reads; 0 until its head has arrived.
    int status() const { return m_status; }
    // Whether readBody() has seen the answer's last chunk.
    bool ended() const { return m_ended; }

private:
    bool wait(short events, int timeoutMs)
    {
        pollfd p{m_fd, events, 0};
        return ::poll(&p, 1, qMax(0, timeoutMs)) > 0;
    }

    // Moves what arrived from m_raw to m_status and m_body: the head, then chunk after chunk.
    void parseAnswer()
    {
        if (m_status == 0) {
            const qsizetype end = m_raw.indexOf("\r\n\r\n");
            if (end < 0)
                return;
            m_status = m_raw.mid(9, 3).toInt();
            m_raw.remove(0, end + 4);
        }
        while (!m_ended && !m_raw.isEmpty()) {
            if (m_chunkLeft == 0) {
                const qsizetype from = m_afterChunk ? 2 : 0;
                const qsizetype line = m_raw.indexOf("\r\n", from);
                if (line < 0)
                    return;
                m_chunkLeft = m_raw.mid(from, line - from).toLongLong(nullptr, 16);
                m_raw.remove(0, line + 2);
                m_afterChunk = true;
                if (m_chunkLeft == 0) {
                    m_ended = true;
                    return;
                }
            }
            const qint64 n = std::min<qint64>(m_chunkLeft, m_raw.size());
            m_body += m_raw.left(n);
            m_raw.remove(0, n);
            m_chunkLeft -= n;
        }
    }

    int m_fd = -1;
    bool m_connected = false;
    bool m_closed = false;
    // readBody()'s answer: what arrived and is not parsed yet, the status, the body so far.
    QByteArray m_raw;
    int m_status = 0;
    QByteArray m_body;
    qint64 m_chunkLeft = 0;
    bool m_afterChunk = false; // a chunk's CRLF comes before the next size line
    bool m_ended = false;
};
