#include "HttpConnection.h"

#include "HttpHandler.h"
#include "HttpHead.h"

#ifdef Q_OS_UNIX
#include <sys/socket.h>
#endif

namespace {

constexpr int kRequestReadTimeoutMs = 60'000; // head and body of one request, once started

} // namespace

HttpConnection::HttpConnection(qintptr descriptor, HttpHandler &handler, const HttpLimits &limits,
                               QObject *parent)
    : QObject(parent), m_socket(new QTcpSocket(this)), m_handler(handler), m_limits(limits)
{
    m_socket->setSocketDescriptor(descriptor);
    m_socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    m_request.peer = m_socket->peerAddress();
    connect(m_socket, &QTcpSocket::readyRead, this, &HttpConnection::onReadyRead);
    connect(m_socket, &QTcpSocket::disconnected, this, &HttpConnection::onDisconnected);
    m_idle.setSingleShot(true);
    connect(&m_idle, &QTimer::timeout, this, [this] {
        // Idle keep-alive connection, or a request that did not arrive in time.
        if (!m_current)
            m_socket->abort();
    });
    m_idle.start(m_limits.idleTimeoutMs);
}

HttpConnection::~HttpConnection()
{
    if (m_current)
        m_current->notifyClosed();
}

void HttpConnection::write(const QByteArray &data)
{
    if (m_gone)
        return;
#ifdef Q_OS_UNIX
    // Straight to the kernel when nothing is queued before it: QTcpSocket would queue the bytes
    // and turn its write notifier on and off again, and with the GLib event dispatcher each of
    // those wakes the loop (two eventfd writes per response, measured with perf). What the
    // kernel does not take, and any error, goes the Qt way, which buffers and reports.
    if (m_socket->bytesToWrite() == 0 && m_socket->state() == QAbstractSocket::ConnectedState) {
        const ssize_t sent = ::send(int(m_socket->socketDescriptor()), data.constData(),
                                    size_t(data.size()), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent == data.size())
            return;
        if (sent > 0) {
            m_socket->write(data.constData() + sent, data.size() - sent);
            return;
        }
    }
#endif
    m_socket->write(data);
}

void HttpConnection::closeWhenIdle()
{
    m_closing = true;
    if (!m_current)
        m_socket->disconnectFromHost();
}

qint64 HttpConnection::unsentBytes() const
{
    return m_socket->bytesToWrite();
}

void HttpConnection::abortNow()
{
    m_socket->abort();
    onDisconnected();
}

void HttpConnection::onDisconnected()
{
    if (m_gone)
        return;
    m_gone = true;
    m_idle.stop();
    if (auto current = std::move(m_current))
        current->notifyClosed();
    emit closed(this);
    deleteLater();
}

void HttpConnection::onReadyRead()
{
    if (m_closing && !m_current) {
        m_socket->readAll();
        return;
    }
    const bool startingRequest = m_buffer.isEmpty() && m_phase == Phase::Head;
    // Straight into the buffer: readAll() would allocate 32 KB (QIODevice's chunk, twice) for
    // every request, then copy (perf probe on malloc: about one per request).
    const qint64 available = m_socket->bytesAvailable();
    if (available > 0) {
        const qsizetype had = m_buffer.size();
        m_buffer.resize(had + available);
        const qint64 got = m_socket->read(m_buffer.data() + had, available);
        m_buffer.truncate(had + qMax<qint64>(got, 0));
    }
    if (startingRequest && !m_buffer.isEmpty())
        m_idle.start(kRequestReadTimeoutMs);
    parse();
}

void HttpConnection::fail(int status, const QString &message)
{
    m_closing = true;
    m_keepAlive = false;
    m_phase = Phase::Waiting;
    m_buffer.clear();
    auto exchange = std::make_shared<HttpExchange>(std::move(m_request), this);
    m_request = HttpRequest();
    exchange->setCloseAfter();
    m_current = exchange;
    m_idle.stop();
    m_handler.reject(exchange, status, message);
}

bool HttpConnection::parseHead(qsizetype headEnd)
{
    HttpHead::Error error;
    const bool parsed = HttpHead::parse(QByteArrayView(m_buffer).first(headEnd),
                                        m_limits.maxHeaderCount, &m_request, &error);
    m_buffer.remove(0, headEnd + 4);
    m_scanFrom = 0;
    if (!parsed) {
        fail(error.status, error.message);
        return false;
    }
    const bool http10 = m_request.versionMinor == 0;
    const QByteArray connection = m_request.header("connection").toLower();
    m_keepAlive = http10 ? connection.contains("keep-alive") : !connection.contains("close");

    const QByteArray te = m_request.header("transfer-encoding").toLower();
    const bool hasLength = m_request.hasHeader("content-length");
    if (!te.isEmpty() || hasLength) // the route's limit: looked up only for a body to read
        m_bodyLimit = m_handler.bodyLimit(m_request);
    if (!te.isEmpty()) {
        if (te != "chunked" || hasLength) {
            fail(400, QStringLiteral("Unsupported Transfer-Encoding."));
            return false;
        }
        m_phase = Phase::ChunkSize;
    } else if (hasLength) {
        QByteArray lengthText;
        for (const auto &h : m_request.headers) {
            if (h.first != "content-length")
                continue;
            if (!lengthText.isEmpty() && lengthText != h.second) {
                fail(400, QStringLiteral("Conflicting Content-Length headers."));
                return false;
            }
            lengthText = h.second;
        }
        bool ok = false;
        const qint64 length = lengthText.toLongLong(&ok);
        if (!ok || length < 0 || lengthText.front() == '+' || lengthText.front() == '-') {
            fail(400, QStringLiteral("Malformed Content-Length."));
            return false;
        }
        if (length > m_bodyLimit) {
            fail(413, QStringLiteral("Request body of %1 bytes is larger than the limit of %2 "
                                     "bytes for this endpoint.")
                          .arg(length)
                          .arg(m_bodyLimit));
            return false;
        }
        m_bodyRemaining = length;
        // Bounded by the route's limit above; one allocation keeps a large upload from being
        // copied on every growth (peak memory stays near the body's size).
        m_request.body.reserve(length);
        m_phase = length > 0 ? Phase::Body : Phase::Waiting;
    } else {
        m_phase = Phase::Waiting;
    }
    if (m_phase != Phase::Waiting &&
        m_request.header("expect").compare("100-continue", Qt::CaseInsensitive) == 0 &&
        m_buffer.isEmpty())
        write(QByteArrayLiteral("HTTP/1.1 100 Continue\r\n\r\n"));
    return true;
}

void HttpConnection::parse()
{
    while (!m_current && !m_gone) {
        switch (m_phase) {
        case Phase::Head: {
            const qsizetype end = m_buffer.indexOf("\r\n\r\n", qMax<qsizetype>(0, m_scanFrom - 3));
            if (end < 0) {
                if (m_buffer.size() > m_limits.maxHeaderBytes) {
                    fail(431, QStringLiteral("Request header block is larger than %1 bytes.")
                                  .arg(m_limits.maxHeaderBytes));
                } else {
                    m_scanFrom = m_buffer.size();
                }
                return;
            }
            if (end > m_limits.maxHeaderBytes) {
                fail(431, QStringLiteral("Request header block is larger than %1 bytes.")
                              .arg(m_limits.maxHeaderBytes));
                return;
            }
            if (!parseHead(end))
                return;
            break;
        }
        case Phase::Body: {
            const qint64 take = qMin<qint64>(m_bodyRemaining, m_buffer.size());
            m_request.body += m_buffer.left(take);
            m_buffer.remove(0, take);
            m_bodyRemaining -= take;
            if (m_bodyRemaining > 0)
                return;
            m_phase = Phase::Waiting;
            break;
        }
        case Phase::ChunkSize: {
            const qsizetype eol = m_buffer.indexOf("\r\n");
            if (eol < 0) {
                if (m_buffer.size() > 1024)
                    fail(400, QStringLiteral("Malformed chunk size line."));
                return;
            }
            QByteArray sizeText = m_buffer.left(eol);
            m_buffer.remove(0, eol + 2);
            const qsizetype semi = sizeText.indexOf(';');
            if (semi >= 0)
                sizeText.truncate(semi);
            bool ok = false;
            const qint64 size = sizeText.trimmed().toLongLong(&ok, 16);
            if (!ok || size < 0) {
                fail(400, QStringLiteral("Malformed chunk size line."));
                return;
            }
            if (m_request.body.size() + size > m_bodyLimit) {
                fail(413, QStringLiteral("Request body is larger than the limit of %1 bytes "
                                         "for this endpoint.")
                              .arg(m_bodyLimit));
                return;
            }
            m_bodyRemaining = size;
            m_phase = size == 0 ? Phase::ChunkTrailer : Phase::ChunkData;
            break;
        }
        case Phase::ChunkData: {
            if (m_bodyRemaining > 0) {
                const qint64 take = qMin<qint64>(m_bodyRemaining, m_buffer.size());
                m_request.body += m_buffer.left(take);
                m_buffer.remove(0, take);
                m_bodyRemaining -= take;
                if (m_bodyRemaining > 0)
                    return;
            }
            if (m_buffer.size() < 2)
                return;
            if (!m_buffer.startsWith("\r\n")) {
                fail(400, QStringLiteral("Malformed chunk."));
                return;
            }
            m_buffer.remove(0, 2);
            m_phase = Phase::ChunkSize;
            break;
        }
        case Phase::ChunkTrailer: {
            // Trailer fields are read and ignored, up to the empty line.
            const qsizetype eol = m_buffer.indexOf("\r\n");
            if (eol < 0) {
                if (m_buffer.size() > m_limits.maxHeaderBytes)
                    fail(431, QStringLiteral("Chunked trailer is too large."));
                return;
            }
            m_buffer.remove(0, eol + 2);
            if (eol == 0)
                m_phase = Phase::Waiting;
            break;
        }
        case Phase::Waiting:
            dispatch();
            return;
        }
    }
}

void HttpConnection::dispatch()
{
    m_idle.stop();
    auto exchange = std::make_shared<HttpExchange>(std::move(m_request), this);
    m_request = HttpRequest();
    m_request.peer = m_socket->peerAddress();
    if (!m_keepAlive || m_closing)
        exchange->setCloseAfter();
    m_current = exchange;
    m_handler.handle(exchange);
}

void HttpConnection::exchangeFinished(HttpExchange *exchange)
{
    if (!m_current || m_current.get() != exchange)
        return;
    const bool close = exchange->closeAfter() || m_closing;
    // Keep the exchange alive until this call returns; the caller is inside it.
    ExchangePtr finished = std::move(m_current);
    if (close) {
        m_socket->disconnectFromHost();
        return;
    }
    m_phase = Phase::Head;
    m_scanFrom = 0;
    m_idle.start(m_buffer.isEmpty() ? m_limits.idleTimeoutMs : kRequestReadTimeoutMs);
    // Continue with pipelined bytes later, not inside the handler's call stack.
    if (!m_buffer.isEmpty())
        QMetaObject::invokeMethod(this, &HttpConnection::parse, Qt::QueuedConnection);
}
