#include "SocialRelay.h"

#include "DatabaseService.h"
#include "social/SocialStore.h"

#include "upstream/KeyScrub.h"

#include <algorithm>
#include <bit>
#include <QDateTime>

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
    self->m_client = &client;
    self->m_keys = &keys;
    self->m_provider = provider;
    self->m_ctx = ctx;
    self->m_request = std::move(request);
    std::weak_ptr<SocialRelay> weak = self;
    ctx->exchange()->onClosed([weak] {
        if (auto relay = weak.lock())
            relay->clientLeft();
    });
    self->attempt();
}

void SocialRelay::attempt()
{
    m_key = m_keys->pick(m_provider, m_tried);
    if (!m_key.isEmpty() && !m_tried.contains(m_key))
        m_tried.append(m_key);
    UpstreamRequest req;
    req.method = m_request.method;
    req.url = m_request.url;
    req.body = m_request.body;
    req.headers = {"Accept: application/json"};
    if (!m_key.isEmpty())
        req.headers.append("Authorization: Bearer " + m_key.toUtf8());
    if (m_request.method == "POST")
        req.headers.append("Content-Type: " + m_request.contentType);
    m_provider.applyTimeouts(req);
    m_status = 0;
    m_call = m_client->start(req);
    // The call holds the relay alive until it ends; the relay drops the call when it does.
    auto self = shared_from_this();
    m_call->onHead = [self](int status, const HttpHeaders &h) { self->onHead(status, h); };
    m_call->onData = [self](const QByteArray &d) { self->onData(d); };
    m_call->onDone = [self](UpstreamError e, const QString &m) { self->onDone(e, m); };
}

void SocialRelay::onHead(int status, const HttpHeaders &headers)
{
    m_status = status;
    const bool retryable = status == 429 || status >= 500;
    if (retryable && !m_key.isEmpty()) {
        m_keys->rest(m_provider, m_key);
        if (!m_keys->pick(m_provider, m_tried).isEmpty()) {
            // Another key gets the same request before anything reached the client.
            auto old = std::exchange(m_call, nullptr);
            old->abort();
            attempt();
            return;
        }
    }
    if (status == 401) {
        m_call->abort();
        m_call.reset();
        return fail(502, QStringLiteral("The social-data upstream refused Switchyard's key: set "
                                        "social.providers.%1.keys (or keys_env).")
                             .arg(m_provider.name));
    }
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

void SocialRelay::onData(const QByteArray &data)
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

void SocialRelay::onDone(UpstreamError error, const QString &message)
{
    m_call.reset();
    if (m_done)
        return;
    if (!m_streaming) {
        m_done = true;
        if (error == UpstreamError::Timeout)
            return fail(504, timedOut());
        qInfo("social: upstream call failed: %s", qPrintable(KeyScrub::scrub(message, {m_key})));
        return fail(503, unreachable());
    }
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
