#include "Http1Client.h"

#include "UpstreamClient.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <QSocketNotifier>
#include <unistd.h>
#include <utility>

struct Http1Connection
{
    int fd = -1;
    QByteArray origin;
    QString ip;
    QSocketNotifier *read = nullptr;
    QSocketNotifier *write = nullptr; // made when first needed
    UpstreamCall *call = nullptr;     // the call it serves; null while idle
    Http1Response response;
    QByteArray pending; // bytes read but not parsed: the call paused in the middle of them
    qsizetype sent = 0;
    qint64 connectStartedMs = 0;
    bool connecting = false;
    bool reused = false; // it served a call before this one
    bool resumeQueued = false;
};

namespace {

constexpr qsizetype kReadSize = 64 * 1024;

QByteArrayView trimmedView(QByteArrayView v)
{
    while (!v.isEmpty() && (v.front() == ' ' || v.front() == '\t'))
        v = v.sliced(1);
    while (!v.isEmpty() && (v.back() == ' ' || v.back() == '\t'))
        v.chop(1);
    return v;
}

bool named(QByteArrayView name, QByteArrayView what)
{
    return name.compare(what, Qt::CaseInsensitive) == 0;
}

QString errorText(int error)
{
    return QString::fromLocal8Bit(strerror(error));
}

QString connectError(int error)
{
    return QStringLiteral("Couldn't connect to server (%1)").arg(errorText(error));
}

} // namespace

Http1Client::Http1Client(UpstreamClient *owner)
    : m_owner(owner), m_buffer(std::make_unique<char[]>(size_t(kReadSize)))
{
}

Http1Client::~Http1Client()
{
    const auto all = m_all;
    for (Http1Connection *c : all) {
        if (c->call)
            detach(c->call);
        else
            close(c);
    }
}

std::unique_ptr<Http1Exchange> Http1Client::plan(const UpstreamRequest &r)
{
    if (!r.pinnedResolve.isEmpty() || r.allowConnect || r.freshConnection ||
        !r.protocols.isEmpty() || !r.caFile.isEmpty())
        return nullptr;
    QByteArrayView url(r.url);
    if (url.size() < 8 || !named(url.first(7), "http://"))
        return nullptr;
    for (char ch : url)
        if (uchar(ch) <= 0x20 || uchar(ch) >= 0x7f)
            return nullptr;
    url = url.sliced(7);
    qsizetype authorityEnd = 0;
    while (authorityEnd < url.size() && url[authorityEnd] != '/' && url[authorityEnd] != '?' &&
           url[authorityEnd] != '#')
        ++authorityEnd;
    const QByteArrayView authority = url.first(authorityEnd);
    QByteArrayView rest = url.sliced(authorityEnd);
    if (authority.contains('@'))
        return nullptr;

    QByteArrayView host;
    QByteArrayView portText;
    bool hasPort = false;
    const bool v6 = authority.startsWith('[');
    if (v6) {
        const qsizetype close = authority.indexOf(']');
        if (close < 0)
            return nullptr;
        host = authority.sliced(1, close - 1);
        const QByteArrayView after = authority.sliced(close + 1);
        if (!after.isEmpty()) {
            if (after.front() != ':')
                return nullptr;
            portText = after.sliced(1);
            hasPort = true;
        }
    } else {
        const qsizetype colon = authority.indexOf(':');
        host = colon < 0 ? authority : authority.first(colon);
        if (colon >= 0) {
            portText = authority.sliced(colon + 1);
            hasPort = true;
        }
    }
    int port = 80;
    if (hasPort) {
        if (portText.isEmpty() || portText.size() > 5)
            return nullptr;
        port = 0;
        for (char ch : portText) {
            if (ch < '0' || ch > '9')
                return nullptr;
            port = port * 10 + (ch - '0');
        }
        if (port < 1 || port > 65535)
            return nullptr;
    }

    auto x = std::make_unique<Http1Exchange>();
    const QByteArray hostZ = host.toByteArray();
    char printed[INET6_ADDRSTRLEN] = {};
    if (v6) {
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(quint16(port));
        if (inet_pton(AF_INET6, hostZ.constData(), &a.sin6_addr) != 1) // a zone id: libcurl's
            return nullptr;
        inet_ntop(AF_INET6, &a.sin6_addr, printed, sizeof printed);
        std::memcpy(&x->address, &a, sizeof a);
        x->addressLength = sizeof a;
    } else {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(quint16(port));
        // inet_pton takes only the dotted-decimal form; a name or another spelling is libcurl's.
        if (inet_pton(AF_INET, hostZ.constData(), &a.sin_addr) != 1)
            return nullptr;
        inet_ntop(AF_INET, &a.sin_addr, printed, sizeof printed);
        std::memcpy(&x->address, &a, sizeof a);
        x->addressLength = sizeof a;
    }
    x->ip = QString::fromLatin1(printed);
    x->origin = QByteArray(printed) + ' ' + QByteArray::number(port);

    if (const qsizetype hash = rest.indexOf('#'); hash >= 0)
        rest = rest.first(hash);
    QByteArray target = rest.toByteArray();
    if (target.isEmpty() || target.startsWith('?'))
        target.prepend('/');
    // Dot segments: libcurl removes them (RFC 3986 section 5.2.4); a provider's path has none.
    const qsizetype query = target.indexOf('?');
    const QByteArrayView path = QByteArrayView(target).first(query < 0 ? target.size() : query);
    if (path.contains("/./") || path.contains("/../") || path.endsWith("/.") ||
        path.endsWith("/.."))
        return nullptr;

    // The head as libcurl writes it: Host (without the default port), User-Agent and Accept
    // unless the request sets or removes them ("Name:" with no value removes a header, as with
    // CURLOPT_HTTPHEADER), the request's own headers, then the body's length and, for a POST
    // without one, libcurl's default Content-Type.
    const bool post = r.method == "POST";
    bool userAgent = false;
    bool accept = false;
    bool contentType = false;
    QByteArray own;
    for (const QByteArray &h : r.headers) {
        if (h.contains('\r') || h.contains('\n') || h.contains('\0'))
            return nullptr;
        const qsizetype colon = h.indexOf(':');
        if (colon <= 0)
            return nullptr; // "Name;" (an empty header) and other forms: libcurl's
        const QByteArrayView name = QByteArrayView(h).first(colon);
        const bool removal = trimmedView(QByteArrayView(h).sliced(colon + 1)).isEmpty();
        if (named(name, "expect") && removal)
            continue; // never sent here anyway (no 100-continue round trip)
        if (named(name, "host") || named(name, "content-length") ||
            named(name, "transfer-encoding") || named(name, "connection") || named(name, "expect"))
            return nullptr; // framing a caller changes: libcurl's
        userAgent = userAgent || named(name, "user-agent");
        accept = accept || named(name, "accept");
        contentType = contentType || named(name, "content-type");
        if (removal)
            continue; // removes it
        own += h;
        own += "\r\n";
    }
    QByteArray &out = x->request;
    out.reserve(128 + own.size() + (post ? r.body.size() : 0));
    out += r.method;
    out += ' ';
    out += target;
    out += " HTTP/1.1\r\nHost: ";
    out += v6 ? '[' + hostZ + ']' : hostZ;
    if (port != 80)
        out += ':' + QByteArray::number(port);
    out += "\r\n";
    if (!userAgent)
        out += "User-Agent: Switchyard\r\n";
    if (!accept)
        out += "Accept: */*\r\n";
    out += own;
    if (post) {
        out += "Content-Length: " + QByteArray::number(r.body.size()) + "\r\n";
        if (!contentType)
            out += "Content-Type: application/x-www-form-urlencoded\r\n";
    }
    out += "\r\n";
    if (post)
        out += r.body;
    x->noBody = r.method == "HEAD";
    x->connectTimeoutMs =
        r.connectTimeoutMs > 0 ? r.connectTimeoutMs : 300'000; // libcurl's default
    x->totalTimeoutMs = r.totalTimeoutMs;
    return x;
}

void Http1Client::begin(UpstreamCall *call)
{
    Http1Connection *c = takeIdle(call->m_http1->origin);
    if (!c) {
        int error = 0;
        c = open(call, &error);
        if (!c) {
            m_owner->finish(call, UpstreamError::ConnectFailed, connectError(error));
            return;
        }
    }
    attach(c, call);
    if (!c->connecting)
        send(c);
}

Http1Connection *Http1Client::takeIdle(const QByteArray &origin)
{
    while (true) {
        const auto it = m_idle.find(origin);
        if (it == m_idle.end() || it->empty())
            return nullptr;
        Http1Connection *c = it->back();
        it->pop_back();
        if (it->empty())
            m_idle.erase(it);
        --m_idleCount;
        // Readable while idle (its notifier has not run yet this pass): closed by the peer, or
        // holding what nobody asked for (a 408 before the close). Either way not for a request.
        char byte;
        const ssize_t n = ::recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return c;
        close(c);
    }
}

Http1Connection *Http1Client::open(UpstreamCall *call, int *error)
{
    const Http1Exchange &x = *call->m_http1;
    const int fd = ::socket(x.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *error = errno;
        return nullptr;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc;
    do
        rc = ::connect(fd, reinterpret_cast<const sockaddr *>(&x.address), x.addressLength);
    while (rc < 0 && errno == EINTR);
    if (rc < 0 && errno != EINPROGRESS) {
        *error = errno;
        ::close(fd);
        return nullptr;
    }
    auto *c = new Http1Connection;
    c->fd = fd;
    c->origin = x.origin;
    c->ip = x.ip;
    c->connecting = rc < 0;
    c->connectStartedMs = m_owner->m_clock.elapsed();
    c->read = new QSocketNotifier(qintptr(fd), QSocketNotifier::Read, m_owner);
    QObject::connect(c->read, &QSocketNotifier::activated, m_owner, [this, c] { onReadable(c); });
    if (c->connecting) {
        c->read->setEnabled(false);
        c->write = new QSocketNotifier(qintptr(fd), QSocketNotifier::Write, m_owner);
        QObject::connect(c->write, &QSocketNotifier::activated, m_owner,
                         [this, c] { onWritable(c); });
    }
    m_all.push_back(c);
    return c;
}

void Http1Client::attach(Http1Connection *c, UpstreamCall *call)
{
    c->call = call;
    call->m_http1->connection = c;
    c->response = Http1Response(call->m_http1->noBody);
    c->pending.clear();
    c->sent = 0;
    if (!c->connecting)
        call->m_primaryIp = c->ip;
}

void Http1Client::onWritable(Http1Connection *c)
{
    if (c->call && c->call->m_finished) { // aborted: nothing more is sent for it
        detach(c->call);
        return;
    }
    if (c->connecting) {
        int error = 0;
        socklen_t length = sizeof error;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0)
            error = errno;
        if (error == EINPROGRESS || error == EALREADY)
            return;
        if (error != 0) {
            failCall(c, UpstreamError::ConnectFailed, connectError(error));
            return;
        }
        connected(c);
    }
    send(c);
}

void Http1Client::connected(Http1Connection *c)
{
    c->connecting = false;
    c->write->setEnabled(false);
    c->read->setEnabled(true);
    if (c->call)
        c->call->m_primaryIp = c->ip;
}

void Http1Client::send(Http1Connection *c)
{
    if (!c->call)
        return;
    const QByteArray &request = c->call->m_http1->request;
    while (c->sent < request.size()) {
        const ssize_t n = ::send(c->fd, request.constData() + c->sent,
                                 size_t(request.size() - c->sent), MSG_NOSIGNAL);
        if (n > 0) {
            c->sent += n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->write) {
                c->write = new QSocketNotifier(qintptr(c->fd), QSocketNotifier::Write, m_owner);
                QObject::connect(c->write, &QSocketNotifier::activated, m_owner,
                                 [this, c] { onWritable(c); });
            }
            c->write->setEnabled(true);
            return;
        }
        retryOrFail(c, UpstreamError::Broken,
                    QStringLiteral("Failure when sending data to the peer (%1)")
                        .arg(errorText(n < 0 ? errno : EPIPE)));
        return;
    }
    if (c->write && c->write->isEnabled())
        c->write->setEnabled(false);
}

void Http1Client::onReadable(Http1Connection *c)
{
    if (!c->call) {
        close(c); // idle: the peer closed it, or sent what nobody asked for
        return;
    }
    if (c->call->m_finished) { // aborted, its release queued: nothing more is read for it
        detach(c->call);
        return;
    }
    if (c->call->m_paused || !c->pending.isEmpty()) {
        c->read->setEnabled(false); // resume() turns it on again
        return;
    }
    ssize_t n;
    do
        n = ::recv(c->fd, m_buffer.get(), size_t(kReadSize), 0);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
        deliver(c, m_buffer.get(), m_buffer.get() + n);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    ended(c, n < 0 ? errno : 0);
}

bool Http1Client::deliver(Http1Connection *c, const char *p, const char *end)
{
    UpstreamCall *call = c->call;
    const UpstreamCallPtr keep = m_owner->m_calls.value(call); // callbacks may drop the last ref
    // After a callback: still this call's connection? An aborted call's connection closes now
    // (its release is queued), so nothing more is read, or sent again, for it.
    const auto attached = [this, call, c] {
        if (call->m_http1->connection != c)
            return false; // detached, and c with it
        if (!call->m_finished)
            return true;
        detach(call);
        return false;
    };
    // Paused by a callback: the rest waits in pending, the socket unread, until resume().
    const auto held = [c, call, &p, end] {
        if (!call->m_paused)
            return false;
        if (p != end)
            c->pending = QByteArray(p, end - p);
        c->read->setEnabled(false);
        return true;
    };
    while (true) {
        switch (c->response.next(p, end)) {
        case Http1Response::Event::NeedMore:
            return true;
        case Http1Response::Event::Head:
            call->m_status = c->response.status();
            call->m_headers = c->response.headers();
            m_owner->deliverHead(call);
            if (!attached())
                return false;
            if (held())
                return true;
            break;
        case Http1Response::Event::Data:
            m_owner->deliverHead(call);
            call->m_lastActivityMs = m_owner->m_clock.elapsed();
            if (call->onData) {
                const QByteArrayView piece = c->response.data();
                call->onData(QByteArray(piece.data(), piece.size()));
            }
            if (!attached())
                return false;
            if (held())
                return true;
            break;
        case Http1Response::Event::Done:
            complete(c, p != end);
            return false;
        case Http1Response::Event::Error:
            failCall(c, c->response.headDone() ? UpstreamError::Broken : UpstreamError::Failed,
                     c->response.error());
            return false;
        }
    }
}

void Http1Client::setPaused(UpstreamCall *call, bool paused)
{
    Http1Connection *c = call->m_http1 ? call->m_http1->connection : nullptr;
    if (!c || c->connecting)
        return;
    if (paused) {
        c->read->setEnabled(false);
        return;
    }
    if (c->pending.isEmpty()) {
        c->read->setEnabled(true);
        return;
    }
    // The bytes kept at the pause go first, from the event loop (never inside the caller).
    if (c->resumeQueued)
        return;
    c->resumeQueued = true;
    std::weak_ptr<UpstreamCall> weak = m_owner->m_calls.value(call);
    QMetaObject::invokeMethod(
        m_owner,
        [this, weak, c] {
            const UpstreamCallPtr call = weak.lock();
            if (!call || !call->m_http1 || call->m_http1->connection != c)
                return; // the call is over, and its connection with it
            c->resumeQueued = false;
            resume(c);
        },
        Qt::QueuedConnection);
}

void Http1Client::resume(Http1Connection *c)
{
    if (c->call->m_paused || c->call->m_finished)
        return;
    const QByteArray pending = std::move(c->pending);
    c->pending.clear();
    // Still attached and not paused again: read the socket again.
    if (deliver(c, pending.constData(), pending.constData() + pending.size()) && !c->call->m_paused)
        c->read->setEnabled(true);
}

void Http1Client::ended(Http1Connection *c, int error)
{
    if (!c->response.started() && c->reused) {
        retryOrFail(c, UpstreamError::Broken,
                    QStringLiteral("the upstream closed the connection without an answer"));
        return;
    }
    const Http1Response::Event e = c->response.eof();
    if (e == Http1Response::Event::Done && error == 0) {
        complete(c, false);
        return;
    }
    QString message = c->response.error();
    if (error != 0)
        message =
            QStringLiteral("Failure when receiving data from the peer (%1)").arg(errorText(error));
    failCall(c, UpstreamError::Broken, message);
}

void Http1Client::retryOrFail(Http1Connection *c, UpstreamError kind, QString message)
{
    UpstreamCall *call = c->call;
    Http1Exchange &x = *call->m_http1;
    if (!c->reused || c->response.started() || x.retried || call->m_finished) {
        failCall(c, kind, message);
        return;
    }
    // A kept connection the peer had closed as the request went out: once more, on a new one.
    x.retried = true;
    detach(call);
    int error = 0;
    Http1Connection *fresh = open(call, &error);
    if (!fresh) {
        m_owner->finish(call, UpstreamError::ConnectFailed, connectError(error));
        return;
    }
    attach(fresh, call);
    if (!fresh->connecting)
        send(fresh);
}

void Http1Client::complete(Http1Connection *c, bool leftovers)
{
    UpstreamCall *call = c->call;
    call->m_http1->connection = nullptr;
    c->call = nullptr;
    c->pending.clear();
    if (c->response.keepAlive() && !leftovers && c->sent == call->m_http1->request.size() &&
        m_idleCount < kMaxIdle) {
        c->reused = true;
        c->read->setEnabled(true); // an idle connection the peer closes goes at once
        m_idle[c->origin].push_back(c);
        ++m_idleCount;
    } else {
        close(c);
    }
    m_owner->finish(call, UpstreamError::None, {});
}

void Http1Client::failCall(Http1Connection *c, UpstreamError kind, QString message)
{
    UpstreamCall *call = c->call;
    if (!call) {
        close(c);
        return;
    }
    detach(call);
    m_owner->finish(call, kind, message);
}

void Http1Client::detach(UpstreamCall *call)
{
    if (!call->m_http1)
        return;
    Http1Connection *c = call->m_http1->connection;
    call->m_http1->connection = nullptr;
    if (!c)
        return;
    c->call = nullptr;
    close(c); // the response was not read to its end
}

bool Http1Client::connecting(const UpstreamCall *call, qint64 *sinceMs) const
{
    const Http1Connection *c = call->m_http1 ? call->m_http1->connection : nullptr;
    if (!c || !c->connecting)
        return false;
    *sinceMs = c->connectStartedMs;
    return true;
}

void Http1Client::dropIdle()
{
    const auto idle = std::exchange(m_idle, {});
    m_idleCount = 0;
    for (const auto &list : idle)
        for (Http1Connection *c : list)
            close(c);
}

void Http1Client::close(Http1Connection *c)
{
    // An idle connection leaves the pool (dropIdle() clears the pool itself afterwards).
    if (!c->call) {
        const auto it = m_idle.find(c->origin);
        if (it != m_idle.end()) {
            auto &list = *it;
            const auto at = std::find(list.begin(), list.end(), c);
            if (at != list.end()) {
                list.erase(at);
                --m_idleCount;
                if (list.empty())
                    m_idle.erase(it);
            }
        }
    }
    // Disabled before the descriptor closes (epoll forgets a closed one silently), deleted later:
    // this may run inside one of their activations.
    for (QSocketNotifier *n : {c->read, c->write}) {
        if (!n)
            continue;
        n->setEnabled(false);
        n->deleteLater();
    }
    ::close(c->fd);
    m_all.erase(std::find(m_all.begin(), m_all.end(), c));
    delete c;
}
