#pragma once

#include "EnvelopeScanner.h"
#include "RequestContext.h"
#include "ResponseCache.h"
#include "SocialConfig.h"
#include "upstream/ProviderCall.h"

#include <memory>
#include <QByteArray>
#include <QSet>
#include <QString>
#include <QTimer>

// One social-data request relayed to the upstream and its answer relayed back byte for byte,
// streamed: the upstream's status, Content-Type and body go to the client as they arrive, the
// upstream paused while the client has more than kHighWater unread, and the stream's end (its
// last chunk) sent once the charge has committed. Billing: the price, for a success (the
// upstream answered 2xx and its envelope's top-level code is 200 or 0, EnvelopeScanner), once
// the whole answer has been written to the connection, whether or not the client stays for its
// last bytes; a client that leaves before is billed when some of the body of a success reached
// the connection (the envelope's code already seen), not when none did. Nothing is billed
// otherwise. Errors before the answer starts, in the social
// envelope: timeout 504 "Upstream request timed out", unreachable 503 "Failed to reach
// upstream service" (server/social/README.md); the upstream refusing Switchyard's key 502. A key
// answering 429 or 5xx rests and the call is made once more with another key, if there is one.
// After the answer started, a failure drops the connection (the body is visibly cut, never ended).
// The upstream call is a ProviderCall relaying every status.
class DatabaseService;

class SocialRelay : public ProviderCall::Receiver, public std::enable_shared_from_this<SocialRelay>
{
public:
    struct Request
    {
        QByteArray method;      // GET or POST
        QByteArray url;         // {base}{prefix}{action}?{query as the client sent it}
        QByteArray body;        // POST: the client's body
        QByteArray contentType; // POST: the body's Content-Type as the client sent it
        QString platform;       // for the usage record
        qint64 price = 0;
        // The response cache, when this answer may be kept (GET, the platform's TTL > 0).
        std::shared_ptr<ResponseCache> cache;
        QByteArray cacheKey;
        qint64 cacheTtlMs = 0;
        // On PostgreSQL, the cache the instances share (SocialFamily::sharedCache): a kept
        // answer is also stored there, bounded by sharedMaxBytes.
        DatabaseService *sharedCache = nullptr;
        qint64 sharedMaxBytes = 0;
    };
    // What a relay may hold for a slow client: 100 concurrent answers cost about 100 times this
    // (tests/bench/social-bench.sh measures it).
    static constexpr qint64 kHighWater = 256 << 10;
    static constexpr qint64 kLowWater = 64 << 10;

    static void start(UpstreamClient &client, KeyRotation &keys, const SocialProvider &provider,
                      const ContextPtr &ctx, Request request);

    // ProviderCall::Receiver: a failure before the answer; the answer's start, pieces and end.
    void answered(const UpstreamAnswer &failure) override;
    void started(int status, const HttpHeaders &headers) override;
    void received(const QByteArray &data) override;
    void ended(UpstreamError error, const QString &message) override;

private:
    SocialRelay() = default;
    void fail(int status, const QString &message);
    void clientLeft();
    void watch(); // polls drainCheck() until stopped
    void drainCheck();
    bool succeeded() const;
    // Notes whether any of the body has reached the client (unsent: the exchange's
    // unacknowledged bytes).
    void noteTaken(qint64 unsent);

    SocialProvider m_provider;
    ContextPtr m_ctx;
    Request m_request;
    ProviderCallPtr m_call;
    std::unique_ptr<QTimer> m_drain;
    EnvelopeScanner m_scanner;
    QByteArray m_kept; // the answer so far, for the cache (while it fits)
    // The body's bytes as written, chunk framing included, and the first chunk's size line.
    qint64 m_bodyWire = 0;
    qint64 m_firstFraming = 0;
    bool m_bodyTaken = false; // some of the body taken by the connection (not only its head)
    QByteArray m_contentType;
    bool m_keep = false;
    int m_status = 0;
    bool m_paused = false; // the upstream, while the client has more than kHighWater unread
    qint64 m_pausedSinceMs = 0;
    bool m_streaming = false;
    bool m_done = false;
};
