#include "ImagesConfig.h"

#include "Money.h"

#include <cmath>

namespace {

void parseProviders(ImagesConfig &c, const ConfigFields &section)
{
    applyProviderSection(
        c.providers, section, [] { return ImageProvider(); },
        [](ImageProvider &p, const ConfigFields &o) {
            p.type =
                o.choice(QStringLiteral("type"), p.type, {{"openai", QStringLiteral("openai")}});
            p.responseFormat = o.choice(
                QStringLiteral("response_format"), p.responseFormat,
                {{"b64_json", QStringLiteral("b64_json")}, {"url", QStringLiteral("url")}});
        });
}

void parseWebhooks(WebhookSettings &w, const ConfigFields &o)
{
    w.timeoutMs = o.whole(QStringLiteral("timeout_ms"), w.timeoutMs, {100, 300'000});
    w.retries = o.whole(QStringLiteral("retries"), w.retries, {0, 50});
    w.backoffMs = o.whole(QStringLiteral("backoff_ms"), w.backoffMs, {1, 3'600'000});
    w.backoffCapMs = o.whole(QStringLiteral("backoff_cap_ms"), w.backoffCapMs, {1, 86'400'000});
    w.leaseMs = o.whole(QStringLiteral("lease_ms"), w.leaseMs, {1'000, 3'600'000});
    w.concurrency = o.whole(QStringLiteral("concurrency"), w.concurrency, {1, 1'000});
    w.pollMs = o.whole(QStringLiteral("poll_ms"), w.pollMs, {10, 60'000});
    if (o.has(QStringLiteral("schedule_scale"))) {
        const double s = o.value(QStringLiteral("schedule_scale")).toDouble(-1);
        if (!(s > 0 && s <= 1))
            o.fail(QStringLiteral("schedule_scale"),
                   QStringLiteral("must be a number above 0, at most 1"));
        w.scheduleScale = s;
    }
    if (w.leaseMs <= w.timeoutMs)
        o.fail(QStringLiteral("lease_ms"), QStringLiteral("must exceed timeout_ms, so that no "
                                                          "other instance retries an attempt "
                                                          "still in flight"));
    w.policy = urlPolicyField(o, QStringLiteral("fetch"), UrlPolicy::callback(), false);
    w.policy.totalTimeoutMs = w.timeoutMs;
    w.policy.connectTimeoutMs = qMin(w.policy.connectTimeoutMs, w.timeoutMs);
}

} // namespace

qint64 WebhookSettings::backoffAfter(int attempt) const
{
    double wait = backoffMs;
    for (int i = 1; i < attempt && wait < backoffCapMs; ++i)
        wait *= 2;
    return qint64(std::llround(qMin<double>(wait, backoffCapMs) * scheduleScale));
}

QString ImageProvider::unusableReason() const
{
    return missingSetting(QStringLiteral("images"), QStringLiteral("image"));
}

ImagesConfig ImagesConfig::defaults()
{
    ImagesConfig c;
    ImageProvider openai;
    openai.name = QStringLiteral("openai");
    openai.baseUrl = QStringLiteral("https://api.openai.com/v1");
    openai.firstByteTimeoutMs = 180'000;
    openai.totalTimeoutMs = 300'000;
    c.providers = {openai};
    const QString o = QStringLiteral("openai");
    c.models = {
        {QStringLiteral("gpt-image-1"), o, QStringLiteral("gpt-image-1"), o, kDefaultPricePerImage},
        {QStringLiteral("dall-e-3"), o, QStringLiteral("dall-e-3"), o, kDefaultPricePerImage},
        {QStringLiteral("dall-e-2"), o, QStringLiteral("dall-e-2"), o, 20'000'000},
    };
    c.download.maxBytes = c.maxImageBytes;
    return c;
}

ImagesConfig ImagesConfig::fromJson(const QJsonObject &json)
{
    const ConfigFields section(json, QStringLiteral("images"));
    ImagesConfig c = defaults();
    parseProviders(c, section);
    applyModelSection(
        c.models, c.providers, section,
        [] {
            ImageModel m;
            m.pricePerImage = kDefaultPricePerImage;
            return m;
        },
        [](ImageModel &m, const ConfigFields &o, bool) {
            m.pricePerImage = o.credits(QStringLiteral("price_per_image"), m.pricePerImage,
                                        QStringLiteral("0.04"), {0, kMaxPricePerImage});
        });
    c.defaultModel = section.string(QStringLiteral("default_model"), c.defaultModel);
    if (!c.model(c.defaultModel))
        section.fail(QStringLiteral("default_model"),
                     QStringLiteral("names no model ('%1')").arg(c.defaultModel));
    c.publicBaseUrl = section.httpUrl(QStringLiteral("public_base_url"), c.publicBaseUrl, true);
    c.linkTtlS = section.whole(QStringLiteral("link_ttl_s"), c.linkTtlS, {60, 7 * 86'400});
    c.retentionHours =
        section.whole(QStringLiteral("retention_hours"), c.retentionHours, {1, 24 * 3'650});
    c.syncWaitS = section.whole(QStringLiteral("sync_wait_s"), c.syncWaitS, {1, 3'600});
    c.maxConcurrent = section.whole(QStringLiteral("max_concurrent"), c.maxConcurrent, {1, 256});
    c.maxImageBytes =
        section.whole(QStringLiteral("max_image_bytes"), c.maxImageBytes, {1'024, 512 << 20});
    c.taskLeaseMs = section.whole(QStringLiteral("task_lease_ms"), c.taskLeaseMs, {200, 3'600'000});
    c.sweepMs = section.whole(QStringLiteral("sweep_ms"), c.sweepMs, {50, 3'600'000});
    c.download = urlPolicyField(section, QStringLiteral("download"), UrlPolicy::download(), true);
    c.download.maxBytes = c.maxImageBytes;
    parseWebhooks(c.webhooks, section.section(QStringLiteral("webhooks")));
    return c;
}

const ImageProvider *ImagesConfig::provider(const QString &name) const
{
    return findProvider(providers, name);
}

const ImageModel *ImagesConfig::model(const QString &id) const
{
    for (const ImageModel &m : models)
        if (m.id == id)
            return &m;
    return nullptr;
}

QJsonArray ImagesConfig::modelsJson() const
{
    QJsonArray out;
    for (const ImageModel &m : models)
        out.append(QJsonObject{
            {"id", m.id},
            {"object", "model"},
            {"created", 0},
            {"owned_by", m.ownedBy},
            {"endpoints", QJsonArray{"images.generations"}},
            {"pricing", QJsonObject{{"per_image", Money::formatCredits(m.pricePerImage)}}}});
    return out;
}
