#include "GuardedFetch.h"

#include "upstream/UpstreamClient.h"

#include <algorithm>
#include <QFile>
#include <QTimer>

namespace {

// The address without a scope id, for comparing what was pinned with what is dialled.
QHostAddress plain(const QHostAddress &a)
{
    if (a.protocol() == QAbstractSocket::IPv4Protocol)
        return QHostAddress(a.toIPv4Address());
    return QHostAddress(a.toIPv6Address());
}

bool isRedirect(int status)
{
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool hasHeader(const QByteArray &line, QByteArrayView name)
{
    const qsizetype colon = line.indexOf(':');
    return colon > 0 && line.left(colon).trimmed().compare(name, Qt::CaseInsensitive) == 0;
}

FetchError fromUpstream(UpstreamError e)
{
    switch (e) {
    case UpstreamError::None:
        return FetchError::None;
    case UpstreamError::ConnectFailed:
        return FetchError::Connect;
    case UpstreamError::Timeout:
        return FetchError::Timeout;
    case UpstreamError::Broken:
        return FetchError::Broken;
    case UpstreamError::Failed:
        break;
    }
    return FetchError::Failed;
}

} // namespace

GuardedFetchCall::~GuardedFetchCall()
{
    if (m_deadline)
        m_deadline->deleteLater();
}

void GuardedFetchCall::abort()
{
    if (m_finished)
        return;
    m_finished = true;
    onHead = nullptr;
    onData = nullptr;
    onDone = nullptr;
    if (m_upstream)
        m_upstream->abort();
    if (m_deadline)
        m_deadline->stop();
    if (m_fetch)
        m_fetch->release(this);
}

GuardedFetch::GuardedFetch(QObject *parent)
    : GuardedFetch(std::make_shared<SystemHostResolver>(), parent)
{
}

GuardedFetch::GuardedFetch(std::shared_ptr<HostResolver> resolver, QObject *parent)
    : QObject(parent), m_resolver(std::move(resolver)), m_client(new UpstreamClient(this))
{
}

GuardedFetch::~GuardedFetch()
{
    const auto calls = m_calls.values();
    for (const GuardedFetchCallPtr &c : calls)
        c->abort();
}

GuardedFetchCallPtr GuardedFetch::start(const FetchRequest &request, const UrlPolicy &policy)
{
    auto call = std::make_shared<GuardedFetchCall>();
    call->m_fetch = this;
    call->m_policy = policy;
    call->m_url = request.url;
    call->m_method = request.method;
    call->m_headers = request.headers;
    call->m_body = request.body;
    call->m_clock.start();
    m_calls.insert(call.get(), call);

    auto *deadline = new QTimer(this);
    deadline->setSingleShot(true);
    // A coarse timer may fire up to 5% early; a receiver is owed the whole timeout.
    deadline->setTimerType(Qt::PreciseTimer);
    call->m_deadline = deadline;
    std::weak_ptr<GuardedFetchCall> weak = call;
    connect(deadline, &QTimer::timeout, this, [this, weak] {
        if (auto c = weak.lock())
            finish(c.get(), FetchError::Timeout,
                   QStringLiteral("did not finish within %1 ms").arg(c->m_policy.totalTimeoutMs));
    });
    deadline->start(std::max(1, policy.totalTimeoutMs));

    // The first hop starts from the event loop, so the caller can set the callbacks first.
    QMetaObject::invokeMethod(
        this,
        [this, weak] {
            if (auto c = weak.lock(); c && !c->m_finished)
                startHop(c);
        },
        Qt::QueuedConnection);
    return call;
}

void GuardedFetch::startHop(const GuardedFetchCallPtr &call)
{
    const int hop = ++call->m_hop;
    const int redirect = call->m_outcome.redirects;
    const QString prefix = redirect ? QStringLiteral("redirect %1: ").arg(redirect) : QString();
    call->m_outcome.url = call->m_url.toUtf8();
    const UrlGuard::Verdict verdict = UrlGuard::check(call->m_url, call->m_policy);
    if (!verdict.ok())
        return finish(call.get(), FetchError::Refused, prefix + verdict.error);

    if (redirect) {
        const UrlGuard::GuardedUrl &prev = call->m_current;
        const bool sameOrigin = prev.scheme == verdict.url.scheme &&
                                prev.host == verdict.url.host && prev.port == verdict.url.port;
        if (!sameOrigin) // credentials meant for one origin never travel to another
            call->m_headers.removeIf([](const QByteArray &h) {
                return hasHeader(h, "authorization") || hasHeader(h, "cookie") ||
                       hasHeader(h, "proxy-authorization");
            });
    }
    call->m_current = verdict.url;
    call->m_outcome.url = verdict.url.url;

    if (verdict.url.literal) {
        call->m_pinned = {*verdict.url.literal};
        return connectHop(call);
    }
    std::weak_ptr<GuardedFetchCall> weak = call;
    m_resolver->lookup(
        verdict.url.host, this,
        [this, weak, hop, prefix](const QList<QHostAddress> &addresses, const QString &error) {
            auto c = weak.lock();
            if (!c || c->m_finished || c->m_hop != hop)
                return; // aborted, timed out or superseded meanwhile
            if (addresses.isEmpty())
                return finish(c.get(), FetchError::Resolve,
                              prefix + QStringLiteral("the host did not resolve (%1)").arg(error));
            const QString why =
                UrlGuard::checkResolved(addresses, c->m_policy, &c->m_outcome.refusedAddress);
            if (!why.isEmpty())
                return finish(c.get(), FetchError::Refused, prefix + why);
            c->m_pinned.clear();
            for (const QHostAddress &a : addresses)
                if (!c->m_pinned.contains(plain(a)))
                    c->m_pinned.append(plain(a));
            connectHop(c);
        });
}

void GuardedFetch::connectHop(const GuardedFetchCallPtr &call)
{
    const qint64 remaining = call->m_policy.totalTimeoutMs - call->m_clock.elapsed();
    if (remaining <= 0)
        return finish(
            call.get(), FetchError::Timeout,
            QStringLiteral("did not finish within %1 ms").arg(call->m_policy.totalTimeoutMs));
    const UrlGuard::GuardedUrl &url = call->m_current;
    UpstreamRequest r;
    r.method = call->m_method;
    r.url = url.url;
    r.headers = call->m_headers;
    r.body = call->m_body;
    r.connectTimeoutMs = int(std::min<qint64>(call->m_policy.connectTimeoutMs, remaining));
    r.firstByteTimeoutMs = r.idleTimeoutMs = r.totalTimeoutMs = int(remaining);
    r.freshConnection = true;
    r.protocols = "http,https";
    r.caFile = QFile::encodeName(call->m_policy.caFile);
    // libcurl cannot pin a bracketed IPv6 host with CURLOPT_RESOLVE; it reads such a literal
    // itself, without DNS, and the open-socket check below still holds it to the literal.
    if (!(url.literal && url.literal->protocol() == QAbstractSocket::IPv6Protocol)) {
        QByteArray entry = url.host.toLatin1() + ':' + QByteArray::number(url.port) + ':';
        for (qsizetype i = 0; i < call->m_pinned.size(); ++i) {
            const QHostAddress &a = call->m_pinned[i];
            entry += (i ? "," : "") + (a.protocol() == QAbstractSocket::IPv6Protocol
                                           ? '[' + a.toString().toLatin1() + ']'
                                           : a.toString().toLatin1());
        }
        r.pinnedResolve = {entry};
    }
    std::weak_ptr<GuardedFetchCall> weak = call;
    const QList<QHostAddress> pinned = call->m_pinned;
    const QList<UrlGuard::Cidr> allow = call->m_policy.allowCidrs;
    const quint16 port = url.port;
    r.allowConnect = [weak, pinned, allow, port](const QHostAddress &address, quint16 dialled) {
        // Defence in depth: the address actually dialled must be one that was checked.
        const QHostAddress a = plain(address);
        const bool ok =
            dialled == port && pinned.contains(a) && UrlGuard::forbiddenReason(a, allow).isEmpty();
        if (!ok)
            if (auto c = weak.lock()) {
                c->m_connectRefused = true;
                c->m_outcome.refusedAddress = a;
            }
        return ok;
    };

    call->m_connectRefused = false;
    call->m_upstream = m_client->start(r);
    const int hop = call->m_hop;
    call->m_upstream->onHead = [this, weak, hop](int status, const HttpHeaders &headers) {
        if (auto c = weak.lock(); c && !c->m_finished && c->m_hop == hop)
            onHead(c, status, headers);
    };
    call->m_upstream->onData = [this, weak, hop](const QByteArray &chunk) {
        if (auto c = weak.lock(); c && !c->m_finished && c->m_hop == hop)
            onData(c, chunk);
    };
    call->m_upstream->onDone = [this, weak, hop](UpstreamError error, const QString &message) {
        auto c = weak.lock();
        if (!c || c->m_finished || c->m_hop != hop)
            return;
        if (c->m_errorBody) // the error answer's body ended (or broke): the answer stands
            return finish(c.get(), FetchError::Http, c->m_errorMessage);
        const QString prefix = c->m_outcome.redirects
                                   ? QStringLiteral("redirect %1: ").arg(c->m_outcome.redirects)
                                   : QString();
        if (error == UpstreamError::ConnectFailed && c->m_connectRefused)
            return finish(c.get(), FetchError::Refused,
                          prefix + QStringLiteral("the connection was refused by the guard: the "
                                                  "address dialled was not the one checked"));
        if (error == UpstreamError::Timeout &&
            c->m_clock.elapsed() >= c->m_policy.totalTimeoutMs - 100)
            return finish(
                c.get(), FetchError::Timeout,
                QStringLiteral("did not finish within %1 ms").arg(c->m_policy.totalTimeoutMs));
        if (error != UpstreamError::None)
            return finish(c.get(), fromUpstream(error), prefix + message);
        if (c->m_outcome.status < 200 || c->m_outcome.status > 299)
            return finish(c.get(), FetchError::Failed, prefix + QStringLiteral("no answer"));
        finish(c.get(), FetchError::None, {});
    };
}

void GuardedFetch::onHead(const GuardedFetchCallPtr &call, int status, const HttpHeaders &headers)
{
    FetchOutcome &out = call->m_outcome;
    out.status = status;
    out.headers = headers;
    const QString prefix =
        out.redirects ? QStringLiteral("redirect %1: ").arg(out.redirects) : QString();
    const UrlPolicy &policy = call->m_policy;
    if (isRedirect(status)) {
        if (policy.maxRedirects <= 0)
            return finish(call.get(), FetchError::Http,
                          prefix +
                              QStringLiteral("HTTP %1 (redirects are not followed)").arg(status));
        const QByteArray location = headerValue(headers, "location");
        if (location.isEmpty())
            return finish(call.get(), FetchError::Http,
                          prefix + QStringLiteral("HTTP %1 without a Location").arg(status));
        if (out.redirects >= policy.maxRedirects)
            return finish(call.get(), FetchError::TooManyRedirects,
                          QStringLiteral("more than %1 redirects").arg(policy.maxRedirects));
        const std::optional<QByteArray> next = UrlGuard::resolveRedirect(out.url, location);
        if (!next)
            return finish(call.get(), FetchError::Refused,
                          QStringLiteral("redirect %1: the Location is not a valid URL")
                              .arg(out.redirects + 1));
        // This answer is done with: its body is not read and its connection is closed.
        call->m_upstream->abort();
        call->m_upstream.reset();
        ++out.redirects;
        if (status == 303 || ((status == 301 || status == 302) && call->m_method == "POST")) {
            call->m_method = "GET"; // what browsers and libcurl do; 307 and 308 keep the method
            call->m_body.clear();
            call->m_headers.removeIf([](const QByteArray &h) {
                return hasHeader(h, "content-type") || hasHeader(h, "content-length");
            });
        }
        out.status = 0;
        out.headers.clear();
        call->m_url = QString::fromUtf8(*next);
        return startHop(call);
    }
    if (status < 200 || status > 299) {
        const QString message = prefix + QStringLiteral("HTTP %1").arg(status);
        if (!call->onData || policy.errorBodyBytes <= 0)
            return finish(call.get(), FetchError::Http, message);
        call->m_errorBody = true; // its first bytes go to onData, then Http
        call->m_errorMessage = message;
        return;
    }
    bool ok = false;
    const qint64 length = headerValue(headers, "content-length").toLongLong(&ok);
    if (ok && length > policy.maxBytes)
        return finish(call.get(), FetchError::TooLarge,
                      QStringLiteral("the body is larger than %1 bytes (Content-Length %2)")
                          .arg(policy.maxBytes)
                          .arg(length));
    // Called through copies: the consumer may abort(), which clears the members, meanwhile.
    if (auto head = call->onHead; head && !head(status, headers) && !call->m_finished)
        return finish(call.get(), FetchError::Stopped, QStringLiteral("stopped at the head"));
    if (!call->onData && !call->m_finished)
        finish(call.get(), FetchError::None, {}); // the status is all that was wanted
}

void GuardedFetch::onData(const GuardedFetchCallPtr &call, const QByteArray &chunk)
{
    FetchOutcome &out = call->m_outcome;
    if (call->m_errorBody) {
        const QByteArray piece = chunk.left(call->m_policy.errorBodyBytes - out.bytes);
        out.bytes += piece.size();
        const bool more = call->onData(piece);
        if (!call->m_finished && (!more || out.bytes >= call->m_policy.errorBodyBytes))
            finish(call.get(), FetchError::Http, call->m_errorMessage);
        return;
    }
    if (out.bytes + chunk.size() > call->m_policy.maxBytes)
        return finish(
            call.get(), FetchError::TooLarge,
            QStringLiteral("the body is larger than %1 bytes").arg(call->m_policy.maxBytes));
    out.bytes += chunk.size();
    if (auto data = call->onData; data && !data(chunk) && !call->m_finished)
        finish(call.get(), FetchError::Stopped, QStringLiteral("stopped by the consumer"));
}

void GuardedFetch::finish(GuardedFetchCall *call, FetchError error, const QString &message)
{
    if (call->m_finished)
        return;
    GuardedFetchCallPtr keep = m_calls.value(call);
    call->m_finished = true;
    // The final hop's connection, if it made one (a redirect starts its hop afresh).
    call->m_outcome.address = call->m_upstream ? call->m_upstream->primaryIp() : QString();
    if (call->m_upstream)
        call->m_upstream->abort();
    if (call->m_deadline)
        call->m_deadline->stop();
    FetchOutcome outcome = call->m_outcome;
    outcome.error = error;
    outcome.message = message;
    auto done = std::move(call->onDone);
    call->onHead = nullptr;
    call->onData = nullptr;
    call->onDone = nullptr;
    release(call);
    if (done)
        done(outcome);
}

void GuardedFetch::release(GuardedFetchCall *call)
{
    if (call->m_deadline) {
        call->m_deadline->stop();
        call->m_deadline->deleteLater();
        call->m_deadline = nullptr;
    }
    call->m_upstream.reset();
    call->m_fetch = nullptr;
    m_calls.remove(call);
}

void GuardedFetch::preflight(const QString &url, const UrlPolicy &policy, QObject *context,
                             std::function<void(FetchError error, const QString &message)> done)
{
    if (!context)
        context = this;
    const UrlGuard::Verdict verdict = UrlGuard::check(url, policy);
    if (!verdict.ok() || verdict.url.literal) {
        const FetchError e = verdict.ok() ? FetchError::None : FetchError::Refused;
        QMetaObject::invokeMethod(
            context, [done, e, message = verdict.error] { done(e, message); },
            Qt::QueuedConnection);
        return;
    }
    m_resolver->lookup(verdict.url.host, context,
                       [done, policy](const QList<QHostAddress> &addresses, const QString &error) {
                           if (addresses.isEmpty())
                               return done(
                                   FetchError::Resolve,
                                   QStringLiteral("the host did not resolve (%1)").arg(error));
                           const QString why = UrlGuard::checkResolved(addresses, policy);
                           done(why.isEmpty() ? FetchError::None : FetchError::Refused, why);
                       });
}
