#pragma once

#include "upstream/UpstreamProvider.h"
#include "upstream/UrlGuard.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>

// An OpenAI-compatible images API (the real one, LocalAI, stable-diffusion servers that speak
// it): POST {base_url}/images/generations.
struct ImageProvider : UpstreamProvider
{
    QString type = QStringLiteral("openai");
    // What Switchyard asks the upstream for: b64_json (default) or url (then downloaded
    // through the URL guard with the section's `download` settings).
    QString responseFormat = QStringLiteral("b64_json");
    // Empty when the provider can serve; else what to configure.
    QString unusableReason() const;
};

struct ImageModel
{
    QString id;
    QString provider;
    QString upstreamModel;
    QString ownedBy;
    qint64 pricePerImage = 0; // credit units
};

// The webhook schedule and delivery settings (contract 6.1 by default).
struct WebhookSettings
{
    int timeoutMs = 10'000; // per attempt, answer included
    int retries = 5;        // after the first attempt
    int backoffMs = 2'000;  // before the first retry, doubling
    int backoffCapMs = 30'000;
    double scheduleScale = 1.0; // test-only: scales every backoff
    int leaseMs = 60'000;       // a claimed delivery is this instance's for this long
    int concurrency = 16;       // attempts in flight per instance
    int pollMs = 1'000;         // the longest wait before looking for due deliveries again
    UrlPolicy policy = UrlPolicy::callback();

    // The wait after the scheduled attempt `attempt` (1-based) failed: backoff * 2^(attempt-1),
    // capped, scaled.
    qint64 backoffAfter(int attempt) const;
};

// The "images" section of the config file (server/images/README.md, "Configuration"). Every
// field is optional:
//   providers        {name: {type: openai, base_url, keys, keys_env, timeouts, key_rest_ms,
//                    response_format: b64_json|url}}; `openai` (https://api.openai.com/v1, no
//                    key) exists unless replaced;
//   models           [{id, provider, upstream_model, owned_by, price_per_image}], added to or
//                    replacing the defaults (gpt-image-1, dall-e-3, dall-e-2) by id; prices
//                    from 0 to 1,000,000 credits;
//   default_model    the model of a request without one (default gpt-image-1);
//   public_base_url  the scheme, host and path prefix of image links (behind a proxy); else
//                    the Host the request came to;
//   link_ttl_s       how long an image and its link live (3600);
//   retention_hours  how long a task record outlives its end (168), then GET answers 410;
//   sync_wait_s      how long a POST without callbackUrl waits for its result (120);
//   max_concurrent   upstream calls in flight per instance (4); more tasks wait queued;
//   max_image_bytes  the largest image accepted from an upstream (32 MiB);
//   task_lease_ms, sweep_ms  the lease on a running task (30 s) and how often abandoned tasks
//                    are looked for (5 s);
//   download         the URL guard's settings for upstream image URLs (UrlPolicy::download);
//   webhooks         {timeout_ms, retries, backoff_ms, backoff_cap_ms, lease_ms, concurrency,
//                    poll_ms, schedule_scale, fetch: the URL guard's settings for callbackUrl}.
struct ImagesConfig
{
    QList<ImageProvider> providers;
    QList<ImageModel> models;
    QString defaultModel = QStringLiteral("gpt-image-1");
    QString publicBaseUrl;
    int linkTtlS = 3'600;
    int retentionHours = 168;
    int syncWaitS = 120;
    int maxConcurrent = 4;
    qint64 maxImageBytes = 32LL * 1024 * 1024;
    int taskLeaseMs = 30'000;
    int sweepMs = 5'000;
    UrlPolicy download = UrlPolicy::download();
    WebhookSettings webhooks;

    static constexpr qint64 kDefaultPricePerImage = 40'000'000; // 0.04 credits
    // price_per_image at most 10^6 credits, so that n images' hold is far inside 64 bits.
    static constexpr qint64 kMaxPricePerImage = 1'000'000'000'000'000;

    static ImagesConfig defaults();
    // Parses the section on top of defaults(); throws std::runtime_error("config: images.<field>
    // ...").
    static ImagesConfig fromJson(const QJsonObject &section);

    const ImageProvider *provider(const QString &name) const;
    const ImageModel *model(const QString &id) const;
    // The GET /v1/models items.
    QJsonArray modelsJson() const;
};
