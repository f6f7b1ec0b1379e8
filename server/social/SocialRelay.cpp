#include "SocialRelay.h"

#include "DatabaseService.h"
#include "social/SocialStore.h"

#include <algorithm>
#include <bit>
#include <QDateTime>
#include <utility>

namespace {

constexpr int kDrainPollMs = 5;

QString timedOut()
{
    return QStringLiteral("Upstream request timed out");
}

QString unreachable()
{
    return QStringLiteral("Failed to reach upstream service");
}

} // namespace

void SocialRelay::start(UpstreamClient &client, KeyRotation &keys, const SocialProvider &provider,
                        const ContextPtr &ctx, Request request)
{
    std::shared_ptr<SocialRelay> self(new SocialRelay);
    self->m_provider = provider;
    self->m_ctx = ctx;
    self->m_request = std::move(request);
    std::weak_ptr<SocialRelay> weak = self;
    ctx->exchange()->onClosed([weak] {
        if (auto relay = weak.lock())
            relay->clientLeft();
    });
    ProviderCall::Request req;
    req.method = self->m_request.method;
    req.url = self->m_request.url;
    req.body = std::exchange(self->m_request.body, {});
    req.headers = {"Accept: application/json"};
    if (req.method == "POST")
        req.headers.append("Content-Type: " + self->m_request.contentType);
    req.configPath = QStringLiteral("social.providers");
    req.mode = ProviderCall::Mode::Relay;
    self->m_call = ProviderCall::start(client, keys, provider, std::move(req), self);
}

void SocialRelay::answered(const UpstreamAnswer &failure)
{
    m_call.reset();
    if (m_done)
        return;
    // The contract's two messages; the operator's key refused is the operator's to fix.
    if (failure.code == u"upstream_timeout")
        return fail(504, timedOut());
    if (failure.code == u"upstream_auth_failed")
        return fail(502, failure.message);
    qInfo("social: upstream call failed: %s", qPrintable(failure.message));
    fail(503, unreachable());
}

void SocialRelay::started(int status, const HttpHeaders &headers)
{
    m_status = status;
    HttpHeaders extra;
    const QByteArray type = headerValue(headers, "content-type");
    extra.append(qMakePair(QByteArray("Content-Type"),
                           type.isEmpty() ? QByteArray("application/json") : type));
    if (const QByteArray retry = headerValue(headers, "retry-after"); !retry.isEmpty())
        extra.append(qMakePair(QByteArray("Retry-After"), retry));
    if (m_request.cache) {
        extra.append(qMakePair(QByteArray("X-Switchyard-Cache"), QByteArray("miss")));
        m_keep = status >= 200 && status < 300;
        m_contentType = extra.first().second;
    }
    m_ctx->usage().model = m_request.platform;
    m_streaming = true;
    m_ctx->startStream(status, extra);
}

void SocialRelay::received(const QByteArray &data)
{
    if (!m_streaming || m_done)
        return;
    if (m_status >= 200 && m_status < 300)
        m_scanner.feed(data);
    if (m_keep) {
        m_keep = m_kept.size() + data.size() <= m_request.cache->entryLimit();
        if (m_keep)
            m_kept += data;
        else
            m_kept.clear();
    }
    if (data.isEmpty())
        return;
    m_ctx->writeStream(data);
    // As the exchange frames it: the size in hex and CRLF, the bytes, CRLF.
    const qint64 sizeLine = std::max(1, (int(std::bit_width(quint64(data.size()))) + 3) / 4) + 2;
    if (m_bodyWire == 0) // the first chunk's size line is framing, not the answer's bytes
        m_firstFraming = sizeLine;
    m_bodyWire += sizeLine + data.size() + 2;
    const qint64 unsent = m_ctx->exchange()->unsentBytes();
    noteTaken(m_ctx->exchange()->unackedBytes());
    if (unsent > kHighWater && m_call) {
        // A slow reader: stop reading the upstream until the client catches up.
        m_call->setPaused(true);
        m_paused = true;
        m_pausedSinceMs = QDateTime::currentMSecsSinceEpoch();
    }
    // Watched while paused, and until the connection has taken some of the body.
    if (m_paused || !m_bodyTaken)
        watch();
}

void SocialRelay::watch()
{
    if (!m_drain) {
        m_drain = std::make_unique<QTimer>();
        m_drain->setInterval(kDrainPollMs);
        std::weak_ptr<SocialRelay> weak = shared_from_this();
        QObject::connect(m_drain.get(), &QTimer::timeout, [weak] {
            if (auto self = weak.lock())
                self->drainCheck();
        });
    }
    if (!m_drain->isActive())
        m_drain->start();
}

void SocialRelay::drainCheck()
{
    if (m_done) {
        m_drain->stop();
        return;
    }
    const qint64 unsent = m_ctx->exchange()->unsentBytes();
    noteTaken(m_ctx->exchange()->unackedBytes());
    if (m_paused && m_call) {
        if (unsent <= kLowWater) {
            m_paused = false;
            m_call->setPaused(false);
        } else if (QDateTime::currentMSecsSinceEpoch() - m_pausedSinceMs >
                   m_provider.idleTimeoutMs) {
            // A client that stopped reading is dropped after the provider's idle time.
            m_drain->stop();
            m_ctx->exchange()->abortConnection(); // reaches clientLeft()
            return;
        }
    }
    if (!(m_paused && m_call) && m_bodyTaken)
        m_drain->stop();
}

void SocialRelay::ended(UpstreamError error, const QString &)
{
    m_call.reset();
    if (m_done)
        return;
    m_done = true;
    if (m_drain)
        m_drain->stop();
    if (error != UpstreamError::None) {
        // Cut visibly: the client must not take a partial answer for a whole one.
        m_ctx->setStreamStatus(error == UpstreamError::Timeout ? 504 : 502);
        m_ctx->exchange()->abortConnection();
        m_ctx->finishStream({});
        return;
    }
    // Every byte of the answer has been written to the connection: a success is billed now,
    // and the stream's end leaves once the charge committed, whether or not the client stays
    // for its last bytes.
    if (succeeded()) {
        m_ctx->usage().cost = m_request.price;
        if (m_keep) {
            const qint64 now = QDateTime::currentMSecsSinceEpoch();
            m_request.cache->store(m_request.cacheKey, {m_status, m_contentType, m_kept}, now,
                                   m_request.cacheTtlMs);
            if (DatabaseService *db = m_request.sharedCache) {
                SocialStore::SharedResponse shared{m_status, m_contentType, m_kept,
                                                   now + m_request.cacheTtlMs};
                // On a reader's connection (autocommit): not on the writer, which billed
                // answers wait for, nor on the shared state's, which admissions wait for.
                db->read<bool>(
                    nullptr,
                    [key = m_request.cacheKey, shared, now,
                     max = m_request.sharedMaxBytes](Store &s) {
                        SocialStore::storeResponse(s, key, shared, now, max);
                        return true;
                    },
                    [](const DbResult<bool> &r) {
                        if (!r.ok())
                            qWarning("social: the shared response cache was not written: %s",
                                     qPrintable(r.error));
                    });
            }
        }
    }
    m_ctx->finishStream({});
}

bool SocialRelay::succeeded() const
{
    return m_status >= 200 && m_status < 300 && m_scanner.success();
}

void SocialRelay::noteTaken(qint64 unsent)
{
    // Only while the connection is open: once it closed, the count of unsent bytes is gone.
    if (!m_bodyTaken && m_ctx->exchange()->isOpen())
        m_bodyTaken = m_bodyWire - unsent > m_firstFraming;
}

void SocialRelay::fail(int status, const QString &message)
{
    m_done = true;
    m_ctx->respondError(status, message,
                        status >= 500 ? QStringLiteral("server_error")
                                      : QStringLiteral("invalid_request_error"));
}

void SocialRelay::clientLeft()
{
    if (m_done)
        return;
    m_done = true;
    if (m_call) {
        m_call->abort();
        m_call.reset();
    }
    if (m_drain)
        m_drain->stop();
    if (m_streaming) {
        // Left before the whole answer was handed on: billed when part of a success envelope
        // reached it (the envelope's code seen, some of the body taken by the connection),
        // never when nothing of the body did.
        if (m_bodyTaken && succeeded())
            m_ctx->usage().cost = m_request.price;
        m_ctx->setStreamStatus(499);
        m_ctx->finishStream({});
    } else {
        m_ctx->respondError(499, QStringLiteral("The client closed the connection."));
    }
}
