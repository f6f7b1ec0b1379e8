#pragma once

#include "AudioTestSupport.h"
#include "Pipeline.h"
#include "RequestContext.h"
#include "ServerFixture.h"

#include <atomic>
#include <memory>
#include <netinet/in.h>
#include <poll.h>
#include <QDeadlineTimer>
#include <QSqlQuery>
#include <QTest>
#include <sys/socket.h>
#include <unistd.h>

// What the audio suites over HTTP share: the SQLite-only data row, the balance, a form POST, a
// client that reads exactly as much as it is told, the usage rows.
namespace AudioTest {

inline const QByteArray kBoundary = "----switchyard-test-7MA4YWxkTrZu0gW";

inline void sqliteRow()
{
    QTest::addColumn<QString>("backend");
    QTest::newRow("sqlite") << QStringLiteral("sqlite");
}

inline qint64 balance(ServerFixture &f)
{
    return f.store().balance(f.store().defaultAccountId());
}

inline HttpReply postForm(ServerFixture &f, const QByteArray &path, const QList<Part> &parts,
                          const QByteArray &key)
{
    return f.client().request("POST", path,
                              {{"Authorization", "Bearer " + key},
                               {"Content-Type", "multipart/form-data; boundary=" + kBoundary}},
                              multipart(parts, kBoundary));
}

// A ServerFixture route hook: GET /test/speech.bin answers `bytes` (a file_uri to fetch), and
// counts its requests in *hits when given.
inline std::function<void(Pipeline &)> serveFile(const QByteArray &bytes,
                                                 std::shared_ptr<std::atomic_int> hits = {})
{
    return [bytes, hits](Pipeline &p) {
        RouteSpec r;
        r.method = "GET";
        r.pattern = QStringLiteral("/test/speech.bin");
        r.auth = AuthMode::Public;
        r.handler = [bytes, hits](const ContextPtr &ctx) {
            if (hits)
                ++*hits;
            ctx->respondRaw(200, "application/octet-stream", bytes);
        };
        p.addRoute(r);
    };
}

// A JSON POST as it goes on the wire.
inline QByteArray rawPost(const QByteArray &path, const QByteArray &key, const QByteArray &json)
{
    return "POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key +
           "\r\nContent-Type: application/json\r\nContent-Length: " +
           QByteArray::number(json.size()) + "\r\n\r\n" + json;
}

// A client on a plain socket that reads exactly as much as a test asks, no more (a QTcpSocket
// reads whatever arrives whenever the event loop runs), with a small receive buffer, so the
// kernel holds little on its behalf: a client that stops reading stops taking the answer.
class RawClient
{
public:
    explicit RawClient(quint16 port)
    {
        m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
        const int buffer = 64 * 1024;
        ::setsockopt(m_fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        m_connected = ::connect(m_fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
    }
    ~RawClient() { close(); }
    RawClient(const RawClient &) = delete;
    RawClient &operator=(const RawClient &) = delete;

    bool send(const QByteArray &bytes)
    {
        qsizetype sent = 0;
        while (m_connected && sent < bytes.size()) {
            const ssize_t n =
                ::send(m_fd, bytes.constData() + sent, size_t(bytes.size() - sent), MSG_NOSIGNAL);
            if (n <= 0)
                return false;
            sent += n;
        }
        return m_connected;
    }

    // Reads until the answer's head and at least `bytes` of its body (chunk framing removed)
    // have arrived, the answer ended, the connection closed or the time is up; returns the body
    // read so far.
    QByteArray readBody(qint64 bytes, int timeoutMs = 60'000)
    {
        QDeadlineTimer deadline(timeoutMs);
        char buffer[16384];
        while (m_fd >= 0 && !m_ended && (m_body.size() < bytes || m_status == 0)) {
            pollfd p{m_fd, POLLIN, 0};
            if (::poll(&p, 1, int(deadline.remainingTime())) <= 0)
                break;
            // Never more than asked: what stays in the socket is not taken.
            const qint64 want = m_status == 0
                                    ? qint64(sizeof buffer)
                                    : std::min<qint64>(sizeof buffer, bytes + 64 - m_body.size());
            const ssize_t n = ::recv(m_fd, buffer, size_t(std::max<qint64>(want, 1)), 0);
            if (n <= 0)
                break;
            m_raw.append(buffer, n);
            parse();
        }
        return m_body;
    }
    int status() const { return m_status; }
    bool ended() const { return m_ended; } // the last chunk arrived
    // Closes with unread bytes waiting: the kernel answers the server with a reset.
    void close()
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
    }

private:
    void parse()
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
                const qsizetype line = m_raw.indexOf("\r\n", m_afterChunk ? 2 : 0);
                if (line < 0)
                    return;
                const qsizetype from = m_afterChunk ? 2 : 0;
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
    QByteArray m_raw;
    QByteArray m_body;
    int m_status = 0;
    qint64 m_chunkLeft = 0;
    bool m_afterChunk = false; // a chunk's CRLF comes before the next size line
    bool m_ended = false;
};

// What a speech answer's count of the audio taken may lag behind what the connection took
// (server/audio/README.md, "Billing"): the 64 KiB the server lets wait unsent, and one piece.
constexpr qint64 kTakenSlack = (64 + 16) * 1024;

// One request's usage row, as stored.
struct UsageRow
{
    qint64 cost = -1;
    int status = 0;
    qint64 characters = 0;
    qint64 audioMs = 0;
};

// The usage rows of an endpoint, oldest first.
inline QList<UsageRow> usageRows(ServerFixture &f, const QString &endpoint)
{
    QList<UsageRow> rows;
    QSqlQuery q(f.store().database());
    q.prepare("SELECT cost, status, characters, audio_ms FROM usage_records WHERE endpoint = ? "
              "ORDER BY id");
    q.addBindValue(endpoint);
    if (q.exec())
        while (q.next())
            rows.append({q.value(0).toLongLong(), q.value(1).toInt(), q.value(2).toLongLong(),
                         q.value(3).toLongLong()});
    return rows;
}

} // namespace AudioTest
