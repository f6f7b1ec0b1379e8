#pragma once

#include <QByteArray>
#include <QElapsedTimer>
#include <QtGlobal>

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
// the server stops reading), sends that never block, reads with deadlines, and telling a close
// (EOF or reset) from silence. Header-only.
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

private:
    bool wait(short events, int timeoutMs)
    {
        pollfd p{m_fd, events, 0};
        return ::poll(&p, 1, qMax(0, timeoutMs)) > 0;
    }

    int m_fd = -1;
    bool m_connected = false;
    bool m_closed = false;
};
