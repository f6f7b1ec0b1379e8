#include "UpstreamClient.h"

#include <curl/curl.h>
#include <mutex>
#include <netinet/in.h>
#include <QHostAddress>
#include <QPointer>
#include <QSocketNotifier>
#include <sys/socket.h>

namespace {

void globalInit()
{
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

UpstreamError classify(CURLcode code)
{
    switch (code) {
    case CURLE_OK:
        return UpstreamError::None;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
        return UpstreamError::ConnectFailed;
    case CURLE_OPERATION_TIMEDOUT:
        return UpstreamError::Timeout;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return UpstreamError::Broken;
    default:
        return UpstreamError::Failed;
    }
}

// Guarded requests: curl may resolve no name itself (the pinned entries are the only answers).
int vetoResolve(void *, void *, void *)
{
    return 1;
}

// The address the handle's connection went to. curl 7.88 sets it once a connection is made
// (a TLS handshake that fails afterwards keeps it), not for one refused or vetoed.
QString primaryIpOf(CURL *easy)
{
    char *ip = nullptr;
    if (!easy || curl_easy_getinfo(easy, CURLINFO_PRIMARY_IP, &ip) != CURLE_OK || !ip)
        return {};
    return QString::fromLatin1(ip);
}

} // namespace

struct UpstreamClient::Socket
{
    QSocketNotifier *read = nullptr;
    QSocketNotifier *write = nullptr;
};

UpstreamCall::~UpstreamCall() = default;

QString UpstreamCall::primaryIp() const
{
    return m_easy ? primaryIpOf(static_cast<CURL *>(m_easy)) : m_primaryIp;
}

void UpstreamCall::setPaused(bool paused)
{
    if (paused == m_paused || m_finished)
        return;
    m_paused = paused;
    if (m_http1 && m_client) {
        if (!paused)
            m_lastActivityMs = m_client->m_clock.elapsed();
        m_client->m_http1.setPaused(this, paused);
        return;
    }
    if (paused || !m_easy || !m_client)
        return; // the write callback pauses the transfer at its next piece
    m_lastActivityMs = m_client->m_clock.elapsed();
    // Not from inside a curl callback: the relay resumes from its own timer.
    curl_easy_pause(static_cast<CURL *>(m_easy), CURLPAUSE_CONT);
}

void UpstreamCall::abort()
{
    if (m_finished)
        return;
    m_finished = true;
    onHead = nullptr;
    onData = nullptr;
    onDone = nullptr;
    // The handle may be inside a curl callback right now: remove it from the event loop. The
    // queued release holds the call, so its address cannot be reused by a newer call meanwhile.
    if (m_client) {
        QPointer<UpstreamClient> client = m_client;
        UpstreamCallPtr keep = m_client->m_calls.value(this);
        QMetaObject::invokeMethod(
            client,
            [client, keep] {
                if (client && keep)
                    client->release(keep.get());
            },
            Qt::QueuedConnection);
    }
}

UpstreamClient::UpstreamClient(QObject *parent) : QObject(parent)
{
    globalInit();
    m_clock.start();
    initMulti();
    // Idle for kIdleDropMs: the cached connections go (with the memory they hold), and the
    // next call connects afresh.
    m_idleDrop.setSingleShot(true);
    m_idleDrop.setInterval(kIdleDropMs);
    connect(&m_idleDrop, &QTimer::timeout, this, [this] {
        if (!m_calls.isEmpty())
            return;
        curl_multi_cleanup(static_cast<CURLM *>(m_multi));
        initMulti();
        // The kept notifiers go too: allocated during a burst, they pin heap pages that
        // malloc_trim() could otherwise give back (RSS a minute after the load, 5 MB).
        dropSpareSockets();
        m_http1.dropIdle();
    });
    m_curlTimer.setSingleShot(true);
    connect(&m_curlTimer, &QTimer::timeout, this, [this] { socketAction(CURL_SOCKET_TIMEOUT, 0); });
    m_sweep.setInterval(50);
    connect(&m_sweep, &QTimer::timeout, this, &UpstreamClient::sweepDeadlines);
}

void UpstreamClient::initMulti()
{
    m_multi = curl_multi_init();
    CURLM *multi = m_multi;
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &UpstreamClient::socketCallback);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &UpstreamClient::timerCallback);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
    // Idle keep-alive connections kept for reuse, about 14 KB each: at 2,048, a burst of 1,000
    // streams left 1,000 of them (and 14 MB) behind long after it ended. 256 keep what a steady
    // load reuses; beyond them the oldest close as transfers end, and all of them go once the
    // client has been idle for kIdleDropMs.
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, 256L);
}

UpstreamClient::~UpstreamClient()
{
    const auto calls = m_calls.keys();
    for (UpstreamCall *call : calls) {
        call->m_finished = true;
        release(call);
    }
    curl_multi_cleanup(static_cast<CURLM *>(m_multi));
    dropSpareSockets();
}

void UpstreamClient::dropSpareSockets()
{
    for (Socket *sock : m_spareSockets) {
        delete sock->read; // disabled, and not inside their own activation: the client is idle
        delete sock->write;
        delete sock;
    }
    m_spareSockets.clear();
}

UpstreamCallPtr UpstreamClient::start(const UpstreamRequest &request)
{
    auto call = std::make_shared<UpstreamCall>();
    call->m_client = this;
    call->m_firstByteTimeoutMs = request.firstByteTimeoutMs;
    call->m_idleTimeoutMs = request.idleTimeoutMs;
    if (m_ownHttp1)
        call->m_http1 = Http1Client::plan(request);
    if (!call->m_http1)
        setUpEasy(call.get(), request);

    m_calls.insert(call.get(), call);
    m_idleDrop.stop();
    call->m_startedMs = call->m_lastActivityMs = m_clock.elapsed();
    if (!m_sweep.isActive())
        m_sweep.start();
    // Added from the event loop: start() may be called from inside another call's callback,
    // where curl forbids touching the multi handle. One queued call adds every call started
    // before it runs (each posted event wakes GLib's loop through its eventfd).
    m_starting.push_back(call);
    if (m_starting.size() == 1)
        QMetaObject::invokeMethod(this, &UpstreamClient::addStarted, Qt::QueuedConnection);
    return call;
}

void UpstreamClient::setUpEasy(UpstreamCall *call, const UpstreamRequest &request)
{
    call->m_body = request.body;
    CURL *easy = curl_easy_init();
    call->m_easy = easy;
    curl_easy_setopt(easy, CURLOPT_URL, request.url.constData());
    curl_easy_setopt(easy, CURLOPT_PRIVATE, call);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_PROXY, "");          // never an environment proxy
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L); // a redirect is the upstream's answer
    curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, long(request.connectTimeoutMs));
    if (request.totalTimeoutMs > 0)
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, long(request.totalTimeoutMs));
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "Switchyard");
    if (request.method == "POST") {
        curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, call->m_body.constData());
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(call->m_body.size()));
    } else if (request.method != "GET") {
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.constData());
    }
    curl_slist *list = nullptr;
    call->m_headerStorage = request.headers;
    call->m_headerStorage.append("Expect:"); // no 100-continue round trip on large bodies
    for (const QByteArray &h : std::as_const(call->m_headerStorage))
        list = curl_slist_append(list, h.constData());
    call->m_headerList = list;
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &UpstreamClient::headerCallback);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, call);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &UpstreamClient::writeCallback);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, call);

    if (!request.pinnedResolve.isEmpty()) {
        // A DNS cache of this request's own: pins never leak to, or come from, other requests.
        CURLSH *share = curl_share_init();
        curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        call->m_share = share;
        curl_easy_setopt(easy, CURLOPT_SHARE, share);
        curl_slist *resolve = nullptr;
        for (const QByteArray &entry : request.pinnedResolve)
            resolve = curl_slist_append(resolve, entry.constData());
        call->m_resolveList = resolve;
        curl_easy_setopt(easy, CURLOPT_RESOLVE, resolve);
        curl_easy_setopt(easy, CURLOPT_RESOLVER_START_FUNCTION, &vetoResolve);
    }
    if (request.allowConnect) {
        call->m_allowConnect = request.allowConnect;
        curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, call);
        curl_easy_setopt(
            easy, CURLOPT_OPENSOCKETFUNCTION,
            +[](void *clientp, curlsocktype purpose, curl_sockaddr *address) -> curl_socket_t {
                auto *c = static_cast<UpstreamCall *>(clientp);
                if (purpose != CURLSOCKTYPE_IPCXN || !connectAllowed(c, &address->addr))
                    return CURL_SOCKET_BAD;
                return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
            });
    }
    if (request.freshConnection) {
        curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(easy, CURLOPT_FORBID_REUSE, 1L);
    }
    if (!request.protocols.isEmpty()) {
        call->m_protocols = request.protocols;
        curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, call->m_protocols.constData());
    }
    if (!request.caFile.isEmpty()) {
        // Instead of the system's CAs: the bundle alone, without the system's directory.
        call->m_caFile = request.caFile;
        curl_easy_setopt(easy, CURLOPT_CAINFO, call->m_caFile.constData());
        curl_easy_setopt(easy, CURLOPT_CAPATH, nullptr);
    }
}

void UpstreamClient::addStarted()
{
    std::vector<std::weak_ptr<UpstreamCall>> starting;
    starting.swap(m_starting);
    bool added = false;
    for (const auto &weak : starting) {
        auto c = weak.lock();
        if (!c || c->m_finished || c->m_client != this)
            continue;
        if (c->m_http1) {
            m_http1.begin(c.get());
            continue;
        }
        if (!c->m_easy)
            continue;
        curl_multi_add_handle(static_cast<CURLM *>(m_multi), c->m_easy);
        added = true;
    }
    // Started now rather than from the zero timeout curl has just asked for: one pass of the
    // event loop less per call.
    if (added)
        socketAction(CURL_SOCKET_TIMEOUT, 0);
}

void UpstreamClient::release(UpstreamCall *call)
{
    auto it = m_calls.find(call);
    if (it == m_calls.end())
        return;
    UpstreamCallPtr keep = it.value();
    m_calls.erase(it);
    m_http1.detach(call);
    if (call->m_easy) {
        call->m_primaryIp = primaryIpOf(static_cast<CURL *>(call->m_easy));
        curl_multi_remove_handle(static_cast<CURLM *>(m_multi), call->m_easy);
        curl_easy_cleanup(call->m_easy);
        call->m_easy = nullptr;
    }
    curl_slist_free_all(static_cast<curl_slist *>(call->m_headerList));
    call->m_headerList = nullptr;
    curl_slist_free_all(static_cast<curl_slist *>(call->m_resolveList));
    call->m_resolveList = nullptr;
    if (call->m_share) // after the easy handle that used it
        curl_share_cleanup(static_cast<CURLSH *>(call->m_share));
    call->m_share = nullptr;
    call->m_client = nullptr;
    if (m_calls.isEmpty()) {
        m_sweep.stop();
        m_idleDrop.start();
    }
}

void UpstreamClient::finish(UpstreamCall *call, UpstreamError error, const QString &message)
{
    if (call->m_finished) {
        release(call);
        return;
    }
    UpstreamCallPtr keep = m_calls.value(call);
    if (error == UpstreamError::None)
        deliverHead(call); // a response with an empty body still has a head
    call->m_finished = true;
    auto done = std::move(call->onDone);
    call->onHead = nullptr;
    call->onData = nullptr;
    release(call);
    if (done)
        done(error, message);
}

int UpstreamClient::socketCallback(void *, int fd, int what, void *clientp, void *socketp)
{
    auto *self = static_cast<UpstreamClient *>(clientp);
    auto *sock = static_cast<Socket *>(socketp);
    CURLM *multi = self->m_multi;
    if (what == CURL_POLL_REMOVE) {
        if (sock) {
            // A keep-alive connection is removed after every call and added back for the next:
            // its notifiers are kept, disabled, for the next socket instead of being deleted
            // (later: this may run inside one's own activation) and made again.
            const bool keep = self->m_spareSockets.size() < kSpareSockets;
            for (QSocketNotifier *n : {sock->read, sock->write}) {
                if (!n)
                    continue;
                n->setEnabled(false);
                if (!keep)
                    n->deleteLater();
            }
            if (keep)
                self->m_spareSockets.push_back(sock);
            else
                delete sock;
            curl_multi_assign(multi, fd, nullptr);
        }
        return 0;
    }
    if (!sock) {
        if (self->m_spareSockets.empty()) {
            sock = new Socket;
        } else {
            sock = self->m_spareSockets.back();
            self->m_spareSockets.pop_back();
        }
        curl_multi_assign(multi, fd, sock);
    }
    // A notifier is made when curl first asks for its direction, and made disabled: with GLib's
    // event dispatcher every notifier registered or unregistered wakes the loop through its
    // eventfd, and a keep-alive request only ever waits to read (perf counted four wake-ups
    // per chat completion when both were made enabled and one turned off at once).
    const auto want = [self, fd](QSocketNotifier *&n, QSocketNotifier::Type type, int action,
                                 bool on) {
        if (!n) {
            if (!on)
                return;
            n = new QSocketNotifier(type, self);
            connect(n, &QSocketNotifier::activated, self, [self, action](QSocketDescriptor socket) {
                self->socketAction(int(socket), action);
            });
        }
        if (on && n->socket() != fd)
            n->setSocket(fd); // new, or a spare one (disabled) from another socket
        n->setEnabled(on);
    };
    want(sock->read, QSocketNotifier::Read, CURL_CSELECT_IN,
         what == CURL_POLL_IN || what == CURL_POLL_INOUT);
    want(sock->write, QSocketNotifier::Write, CURL_CSELECT_OUT,
         what == CURL_POLL_OUT || what == CURL_POLL_INOUT);
    return 0;
}

int UpstreamClient::timerCallback(void *, long timeoutMs, void *clientp)
{
    auto *self = static_cast<UpstreamClient *>(clientp);
    if (timeoutMs < 0)
        self->m_curlTimer.stop();
    else
        self->m_curlTimer.start(int(timeoutMs));
    return 0;
}

void UpstreamClient::socketAction(int fd, int events)
{
    int running = 0;
    curl_multi_socket_action(static_cast<CURLM *>(m_multi), fd, events, &running);
    drainMessages();
}

void UpstreamClient::drainMessages()
{
    int pending = 0;
    while (CURLMsg *msg = curl_multi_info_read(static_cast<CURLM *>(m_multi), &pending)) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        UpstreamCall *call = nullptr;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &call);
        const CURLcode code = msg->data.result;
        QString message;
        if (code == CURLE_OPERATION_TIMEDOUT) {
            // Worded as sweepDeadlines() words it: when the first-byte and total limits are
            // equal, which of the two fires first is a matter of a millisecond.
            const qint64 waited = m_clock.elapsed() - call->m_startedMs;
            message = call->m_headDelivered
                          ? QStringLiteral("the response did not complete within %1 ms").arg(waited)
                          : QStringLiteral("no response within %1 ms").arg(waited);
        } else if (code != CURLE_OK) {
            message = QString::fromLatin1(curl_easy_strerror(code));
        }
        finish(call, classify(code), message);
    }
}

size_t UpstreamClient::headerCallback(char *data, size_t size, size_t count, void *userp)
{
    auto *call = static_cast<UpstreamCall *>(userp);
    const size_t n = size * count;
    if (call->m_finished)
        return 0;
    QByteArray line(data, qsizetype(n));
    while (line.endsWith('\n') || line.endsWith('\r'))
        line.chop(1);
    if (line.startsWith("HTTP/")) { // a new header block (after 100 Continue, say)
        const QList<QByteArray> parts = line.split(' ');
        call->m_status = parts.size() > 1 ? parts.at(1).toInt() : 0;
        call->m_headers.clear();
        return n;
    }
    if (line.isEmpty()) {
        if (call->m_status >= 200 && call->m_client)
            call->m_client->deliverHead(call);
        return n;
    }
    const qsizetype colon = line.indexOf(':');
    if (colon > 0)
        call->m_headers.append(
            {line.left(colon).trimmed().toLower(), line.mid(colon + 1).trimmed()});
    return n;
}

bool UpstreamClient::connectAllowed(UpstreamCall *call, const void *sockaddr)
{
    if (call->m_finished || !call->m_allowConnect)
        return false;
    const auto *sa = static_cast<const struct sockaddr *>(sockaddr);
    quint16 port = 0;
    if (sa->sa_family == AF_INET)
        port = ntohs(reinterpret_cast<const sockaddr_in *>(sa)->sin_port);
    else if (sa->sa_family == AF_INET6)
        port = ntohs(reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_port);
    else
        return false; // a Unix socket or anything else is never a guarded destination
    return call->m_allowConnect(QHostAddress(sa), port);
}

void UpstreamClient::deliverHead(UpstreamCall *call)
{
    if (call->m_headDelivered || call->m_finished)
        return;
    call->m_headDelivered = true;
    call->m_lastActivityMs = m_clock.elapsed();
    if (call->onHead)
        call->onHead(call->m_status, call->m_headers);
}

size_t UpstreamClient::writeCallback(char *data, size_t size, size_t count, void *userp)
{
    auto *call = static_cast<UpstreamCall *>(userp);
    const size_t n = size * count;
    if (call->m_finished || !call->m_client)
        return 0; // aborted: stop the transfer
    if (call->m_paused)
        return CURL_WRITEFUNC_PAUSE; // the same bytes come again after setPaused(false)
    call->m_client->deliverHead(call);
    call->m_lastActivityMs = call->m_client->m_clock.elapsed();
    if (call->onData && !call->m_finished)
        call->onData(QByteArray(data, qsizetype(n)));
    return call->m_finished ? 0 : n;
}

void UpstreamClient::sweepDeadlines()
{
    const qint64 now = m_clock.elapsed();
    QList<UpstreamCall *> expired;
    for (auto it = m_calls.cbegin(); it != m_calls.cend(); ++it) {
        UpstreamCall *c = it.key();
        if (c->m_finished)
            continue;
        // libcurl keeps the connect and total limits of its own calls; these are Http1Client's.
        if (c->m_http1) {
            qint64 since = 0;
            const int connectMs = c->m_http1->connectTimeoutMs;
            const int totalMs = c->m_http1->totalTimeoutMs;
            if (connectMs > 0 && m_http1.connecting(c, &since) && now - since > connectMs) {
                // Worded as libcurl's connect timeout is (drainMessages()).
                c->m_deadlineMessage =
                    QStringLiteral("no response within %1 ms").arg(now - c->m_startedMs);
                expired.append(c);
                continue;
            }
            if (totalMs > 0 && now - c->m_startedMs > totalMs) {
                c->m_deadlineMessage =
                    c->m_headDelivered
                        ? QStringLiteral("the response did not complete within %1 ms").arg(totalMs)
                        : QStringLiteral("no response within %1 ms").arg(totalMs);
                expired.append(c);
                continue;
            }
        }
        if (!c->m_headDelivered) {
            if (c->m_firstByteTimeoutMs > 0 && now - c->m_startedMs > c->m_firstByteTimeoutMs) {
                c->m_deadlineMessage =
                    QStringLiteral("no response within %1 ms").arg(c->m_firstByteTimeoutMs);
                expired.append(c);
            }
        } else if (c->m_idleTimeoutMs > 0 && !c->m_paused &&
                   now - c->m_lastActivityMs > c->m_idleTimeoutMs) {
            c->m_deadlineMessage =
                QStringLiteral("the response stalled for %1 ms").arg(c->m_idleTimeoutMs);
            expired.append(c);
        }
    }
    for (UpstreamCall *c : expired)
        finish(c, UpstreamError::Timeout, c->m_deadlineMessage);
}
