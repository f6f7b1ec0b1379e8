#include "HttpConnection.h"

#include "HttpHandler.h"

#include <QScopedValueRollback>

#ifdef Q_OS_UNIX
#include <sys/socket.h>
#endif
#ifdef Q_OS_LINUX
#include <linux/sockios.h>
#include <sys/ioctl.h>
#endif

using Event = HttpRequestReader::Event;
using State = HttpRequestReader::State;

namespace {

// IPv4 clients of a dual-stack socket arrive as ::ffff:a.b.c.d: one client, one address.
QHostAddress clientOf(const QHostAddress &peer)
{
    bool v4 = false;
    const quint32 ip = peer.toIPv4Address(&v4);
    return v4 ? QHostAddress(ip) : peer;
}

} // namespace

HttpConnection::HttpConnection(qintptr descriptor, HttpHandler &handler, const HttpLimits &limits,
                               HttpBufferBudget &budget, QObject *parent)
    : QObject(parent), m_socket(new QTcpSocket(this)), m_handler(handler), m_limits(limits),
      m_budget(budget), m_reader(limits, &budget)
{
    m_socket->setSocketDescriptor(descriptor);
    m_socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    // Back-pressure: what the socket reads ahead of the connection stops here, and the rest
    // stays in the kernel, whose window then holds the client back.
    m_socket->setReadBufferSize(kReadBuffer);
    m_peer = clientOf(m_socket->peerAddress());
    connect(m_socket, &QTcpSocket::readyRead, this, &HttpConnection::onReadyRead);
    connect(m_socket, &QTcpSocket::bytesWritten, this, &HttpConnection::onBytesWritten);
    connect(m_socket, &QTcpSocket::disconnected, this, &HttpConnection::onDisconnected);
    m_clock.start();
    m_readTimer.setSingleShot(true);
    connect(&m_readTimer, &QTimer::timeout, this, [this] {
        // While the server decides or answers, nothing is asked of the client.
        if (m_reader.state() == State::HeadStep || m_reader.state() == State::Handling)
            return;
        // Between requests, while an answer is still being taken, the write timer judges.
        if (m_reader.state() == State::Head && m_socket->bytesToWrite() > 0) {
            m_readTimer.start(m_limits.idleTimeoutMs);
            return;
        }
        if (m_reader.state() == State::Head && m_reader.buffered() == 0) {
            m_socket->abort(); // idle between requests: an ordinary close
            onDisconnected();
        } else {
            abortNow(); // a head or a body too slow, or the end of a linger
        }
    });
    m_writeTimer.setSingleShot(true);
    connect(&m_writeTimer, &QTimer::timeout, this, [this] {
        if (m_socket->bytesToWrite() == 0)
            return;
        const qint64 still = m_clock.elapsed() - m_lastWriteProgressMs;
        if (still < m_limits.idleTimeoutMs) {
            m_writeTimer.start(int(m_limits.idleTimeoutMs - still));
            return;
        }
        qWarning("dropping a client that took no bytes for %d ms", m_limits.idleTimeoutMs);
        ++m_budget.stalledReaders;
        abortNow();
    });
    m_readTimer.start(m_limits.idleTimeoutMs);
}

HttpConnection::~HttpConnection()
{
    m_gone = true;
    m_budget.held -= std::exchange(m_held, 0);
    if (auto current = std::move(m_current))
        current->notifyClosed();
}

void HttpConnection::write(const QByteArray &data)
{
    if (m_gone || m_dropping) // a dropped client gets nothing more, reset or not yet
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
        if (sent > 0)
            m_socket->write(data.constData() + sent, data.size() - sent);
        else
            m_socket->write(data);
    } else {
        m_socket->write(data);
    }
#else
    m_socket->write(data);
#endif
    // Bytes wait unsent: the client must take some in time, and they count against the budget.
    if (!m_writeTimer.isActive()) {
        m_lastWriteProgressMs = m_clock.elapsed();
        m_writeTimer.start(m_limits.idleTimeoutMs);
    }
    account();
    if (m_budget.held > m_budget.cap && m_current && m_current->isStreaming()) {
        // A stream the server cannot buffer goes as a slow reader does, from the event loop
        // (not inside the family's own write).
        m_dropping = true;
        ++m_budget.droppedStreams;
        qWarning("dropping a stream: the server's buffers are full");
        QMetaObject::invokeMethod(this, &HttpConnection::abortNow, Qt::QueuedConnection);
    }
}

void HttpConnection::onBytesWritten()
{
    m_lastWriteProgressMs = m_clock.elapsed();
    const qint64 unsent = m_socket->bytesToWrite();
    if (unsent == 0) {
        m_writeTimer.stop();
        if (m_close == Closing::Flushing)
            linger();
    }
    account();
    if (unsent <= kReadBuffer && m_reader.state() == State::Head &&
        (m_reader.buffered() > 0 || m_socket->bytesAvailable() > 0))
        pump();
}

void HttpConnection::closeWhenIdle()
{
    m_closing = true;
    if (!m_current && m_close == Closing::No)
        m_socket->disconnectFromHost();
}

qint64 HttpConnection::unsentBytes() const
{
    return m_socket->bytesToWrite();
}

qint64 HttpConnection::unackedBytes() const
{
    qint64 unacked = m_socket->bytesToWrite();
#ifdef Q_OS_LINUX
    // SIOCOUTQ on a TCP socket: bytes written and not yet acknowledged by the peer.
    int queued = 0;
    if (!m_gone && m_socket->state() == QAbstractSocket::ConnectedState &&
        ::ioctl(int(m_socket->socketDescriptor()), SIOCOUTQ, &queued) == 0 && queued > 0)
        unacked += queued;
#endif
    return unacked;
}

void HttpConnection::limitSendQueue(int bytes)
{
#ifdef Q_OS_UNIX
    if (!m_gone && m_socket->state() == QAbstractSocket::ConnectedState)
        ::setsockopt(int(m_socket->socketDescriptor()), SOL_SOCKET, SO_SNDBUF, &bytes,
                     sizeof bytes);
#else
    Q_UNUSED(bytes)
#endif
}

void HttpConnection::abortNow()
{
#ifdef Q_OS_UNIX
    // No linger: the kernel sends RST and drops what it still holds for the client, instead of
    // keeping the connection to deliver it to a client that is not reading.
    const ::linger hard{1, 0};
    ::setsockopt(int(m_socket->socketDescriptor()), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
#endif
    m_socket->abort();
    onDisconnected();
}

void HttpConnection::onDisconnected()
{
    if (m_gone)
        return;
    m_gone = true;
    m_readTimer.stop();
    m_writeTimer.stop();
    m_budget.held -= std::exchange(m_held, 0);
    m_run = nullptr; // a request admitted at its head but never complete goes with its context
    if (auto current = std::move(m_current))
        current->notifyClosed();
    emit closed(this);
    deleteLater();
}

void HttpConnection::onReadyRead()
{
    if (m_close == Closing::Lingering) {
        m_lingered += m_socket->skip(m_socket->bytesAvailable());
        if (m_lingered > kLingerBytes)
            abortNow();
        return;
    }
    if (m_closing && !m_current) { // shutting down: no new request
        m_socket->skip(m_socket->bytesAvailable());
        return;
    }
    pump();
}

// Reads and parses as far as the reader's state allows. Not re-entered: a state change made
// inside (an answer at once, a head step that decides at once) is picked up by the loop.
void HttpConnection::pump()
{
    if (m_pumping || m_gone)
        return;
    QScopedValueRollback<bool> pumping(m_pumping, true);
    while (!m_gone) {
        // Answers the client has not taken hold the next request back (onBytesWritten goes on):
        // otherwise requests with large answers, pipelined and never read, would pile answers up.
        if (m_reader.state() == State::Head && m_socket->bytesToWrite() > kReadBuffer)
            break;
        const Event event = m_reader.next();
        if (event == Event::NeedBytes) {
            const qint64 n = qMin(m_reader.readBudget(), m_socket->bytesAvailable());
            if (n <= 0) {
                waitForBytes();
                break;
            }
            const qint64 got = m_socket->read(m_reader.prepareRead(n), n);
            m_reader.commitRead(got);
            if (got <= 0)
                break;
        } else if (event == Event::Head) {
            onHead();
        } else if (event == Event::Complete) {
            dispatch();
        } else if (event == Event::Failed) {
            fail();
        } else {
            break; // Wait
        }
    }
    account();
}

void HttpConnection::waitForBytes()
{
    switch (m_reader.state()) {
    case State::Head:
        // The idle timer runs until a request's first bytes; then its head has a deadline.
        if (m_reader.buffered() > 0 && !m_headTimed) {
            m_headTimed = true;
            m_readTimer.start(m_limits.headerTimeoutMs);
        }
        break;
    case State::Body:
    case State::ChunkSize:
    case State::ChunkData:
    case State::ChunkEnd:
    case State::Trailer: {
        // Waited for after progress (or first): no stall longer than bodyTimeoutMs, and on
        // average minBodyRate once the first bodyTimeoutMs have passed.
        const qint64 now = m_clock.elapsed();
        if (m_bodyStartMs < 0)
            m_bodyStartMs = now;
        qint64 deadline = now + m_limits.bodyTimeoutMs;
        if (m_limits.minBodyRate > 0)
            deadline = qMin(deadline, m_bodyStartMs + m_limits.bodyTimeoutMs +
                                          m_reader.bodyReceived() * 1000 / m_limits.minBodyRate);
        m_readTimer.start(int(qMax<qint64>(0, deadline - now)));
        break;
    }
    case State::HeadStep:
    case State::Handling:
    case State::Closed:
        break;
    }
}

void HttpConnection::onHead()
{
    HttpRequest head = m_reader.takeHead();
    head.peer = m_peer;
    auto exchange = std::make_shared<HttpExchange>(std::move(head), this);
    if (!m_reader.keepAlive() || m_closing)
        exchange->setCloseAfter();
    if (m_reader.hasBody())
        exchange->setBodyUnread(true);
    m_current = exchange;
    m_headTimed = false;
    const qint64 declared = exchange->request().bodyLength;
    if (!m_budget.allows(qMax<qint64>(0, declared))) {
        refuse(503, HttpRequestReader::busyMessage());
        return;
    }
    QScopedValueRollback<bool> inHeadStep(m_inHeadStep, true);
    m_handler.head(exchange);
}

void HttpConnection::readBody(HttpExchange *exchange, qint64 bodyLimit, std::function<void()> run)
{
    if (m_gone || exchange != m_current.get() || m_reader.state() != State::HeadStep)
        return;
    if (!m_reader.admit(bodyLimit)) {
        fail();
        return;
    }
    m_run = std::move(run);
    m_bodyStartMs = -1;
    if (m_reader.wantsContinue())
        write(QByteArrayLiteral("HTTP/1.1 100 Continue\r\n\r\n"));
    // Decided later than the head step's own call (the database was asked): go on from here.
    if (!m_inHeadStep)
        pump();
}

void HttpConnection::dispatch()
{
    m_readTimer.stop();
    HttpRequest &request = m_current->request();
    request.body = m_reader.takeBody();
    m_current->setBodyUnread(false);
    m_handledBody = request.body.capacity();
    if (auto run = std::move(m_run))
        run();
}

// The reader refused the request (malformed, too large, over the budget): answered, closed.
void HttpConnection::fail()
{
    if (!m_current) // before its head was out: what of it was parsed, for the envelope
        m_current = std::make_shared<HttpExchange>(m_reader.takeRequest(), this);
    refuse(m_reader.failStatus(), m_reader.failMessage());
}

void HttpConnection::refuse(int status, const QString &message)
{
    m_run = nullptr;
    m_current->setCloseAfter();
    if (status == 503) // the budget's refusal, whether the reader or the head decided it
        ++m_budget.refusals;
    m_reader.close();
    const ExchangePtr exchange = m_current;
    m_handler.reject(exchange, status, message);
}

void HttpConnection::exchangeFinished(HttpExchange *exchange)
{
    if (!m_current || m_current.get() != exchange)
        return;
    // Keep the exchange alive until this call returns; the caller is inside it.
    ExchangePtr finished = std::move(m_current);
    m_run = nullptr; // answered at its head: what it would have run goes
    m_handledBody = 0;
    m_bodyStartMs = -1;
    if (finished->closeAfter() || m_closing) {
        closeAfterAnswer();
        return;
    }
    m_reader.finish();
    m_readTimer.start(m_limits.idleTimeoutMs);
    // Pipelined bytes: within a pump, its loop goes on; otherwise later, not inside the
    // handler's call stack.
    if (!m_pumping && (m_reader.buffered() > 0 || m_socket->bytesAvailable() > 0))
        QMetaObject::invokeMethod(this, &HttpConnection::pump, Qt::QueuedConnection);
    account();
}

void HttpConnection::closeAfterAnswer()
{
    m_reader.close();
    m_readTimer.stop();
    m_close = Closing::Flushing;
    if (m_socket->bytesToWrite() == 0)
        linger();
    account();
}

void HttpConnection::linger()
{
    m_close = Closing::Lingering;
#ifdef Q_OS_UNIX
    // The answer ends with FIN; the connection stays until the client closes its side too, or
    // the linger is over.
    ::shutdown(int(m_socket->socketDescriptor()), SHUT_WR);
    m_lingered = m_socket->skip(m_socket->bytesAvailable());
    m_readTimer.start(qMin(kLingerMs, m_limits.idleTimeoutMs));
#else
    m_socket->disconnectFromHost();
#endif
}

void HttpConnection::account()
{
    const qint64 now = m_reader.buffered() + m_reader.bodyHeld() + m_handledBody +
                       m_socket->bytesAvailable() + m_socket->bytesToWrite();
    m_budget.held += now - m_held;
    m_held = now;
}
