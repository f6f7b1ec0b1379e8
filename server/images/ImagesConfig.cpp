#include "ImagesConfig.h"

#include "Money.h"

#include <cmath>
#include <QUrl>
#include <stdexcept>

namespace {

[[noreturn]] void fail(const QString &message)
{
    throw std::runtime_error(("config: images." + message).toStdString());
}

int wholeNumber(const QJsonObject &o, const char *field, int fallback, int lo, int hi,
                const QString &where)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (v.isUndefined())
        return fallback;
    const double d = v.toDouble(-1);
    if (!v.isDouble() || d != std::floor(d) || d < lo || d > hi)
        fail(QStringLiteral("%1%2 must be a whole number from %3 to %4")
                 .arg(where, QLatin1String(field))
                 .arg(lo)
                 .arg(hi));
    return int(d);
}

QJsonObject objectField(const QJsonObject &o, const char *field, const QString &where)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (!v.isUndefined() && !v.isObject())
        fail(where + QLatin1String(field) + QStringLiteral(" must be an object"));
    return v.toObject();
}

UrlPolicy policyFrom(UrlPolicy base, const QJsonObject &settings, bool httpAllowed,
                     const QString &where)
{
    try {
        base.applySettings(settings, httpAllowed);
    } catch (const std::exception &e) {
        fail(where + QString::fromUtf8(e.what()));
    }
    return base;
}

void parseProviders(ImagesConfig &c, const QJsonObject &section)
{
    applyProviderSection(
        c.providers, section, QStringLiteral("images"), [] { return ImageProvider(); },
        [](ImageProvider &p, const QJsonObject &o, const QString &where) {
            p.type = o.value("type").toString(p.type);
            if (p.type != u"openai")
                throw std::runtime_error(QStringLiteral("config: %1.type must be openai, not '%2'")
                                             .arg(where, p.type)
                                             .toStdString());
            p.responseFormat = o.value("response_format").toString(p.responseFormat);
            if (p.responseFormat != u"b64_json" && p.responseFormat != u"url")
                throw std::runtime_error(
                    QStringLiteral("config: %1.response_format must be b64_json or url")
                        .arg(where)
                        .toStdString());
        });
}

void parseModels(ImagesConfig &c, const QJsonObject &section)
{
    const QJsonValue models = section.value("models");
    if (!models.isUndefined() && !models.isArray())
        fail(QStringLiteral("models must be an array of model entries"));
    const QJsonArray ma = models.toArray();
    for (qsizetype i = 0; i < ma.size(); ++i) {
        const QString where = QStringLiteral("models[%1]").arg(i);
        const QJsonObject o = ma.at(i).toObject();
        ImageModel m;
        m.id = o.value("id").toString();
        if (m.id.isEmpty())
            fail(where + QStringLiteral(".id is required"));
        const bool known = c.model(m.id) != nullptr;
        if (known)
            m = *c.model(m.id);
        else
            m.pricePerImage = ImagesConfig::kDefaultPricePerImage;
        m.provider = o.value("provider").toString(m.provider);
        if (m.provider.isEmpty())
            fail(where + QStringLiteral(".provider is required"));
        if (!c.provider(m.provider))
            fail(where + QStringLiteral(".provider names no provider ('%1')").arg(m.provider));
        m.upstreamModel =
            o.value("upstream_model").toString(m.upstreamModel.isEmpty() ? m.id : m.upstreamModel);
        m.ownedBy = o.value("owned_by").toString(m.ownedBy.isEmpty() ? m.provider : m.ownedBy);
        if (o.contains("price_per_image")) {
            const QJsonValue v = o.value("price_per_image");
            const auto units = Money::parseCredits(v.toString());
            if (!v.isString() || !units || *units < 0 || *units > ImagesConfig::kMaxPricePerImage)
                fail(where + QStringLiteral(".price_per_image must be a decimal string of "
                                            "credits from 0 to 1000000, e.g. \"0.04\""));
            m.pricePerImage = *units;
        }
        bool replaced = false;
        for (ImageModel &e : c.models)
            if (e.id == m.id) {
                e = m;
                replaced = true;
            }
        if (!replaced)
            c.models.append(m);
    }
}

void parseWebhooks(WebhookSettings &w, const QJsonObject &o)
{
    const QString where = QStringLiteral("webhooks.");
    w.timeoutMs = wholeNumber(o, "timeout_ms", w.timeoutMs, 100, 300'000, where);
    w.retries = wholeNumber(o, "retries", w.retries, 0, 50, where);
    w.backoffMs = wholeNumber(o, "backoff_ms", w.backoffMs, 1, 3'600'000, where);
    w.backoffCapMs = wholeNumber(o, "backoff_cap_ms", w.backoffCapMs, 1, 86'400'000, where);
    w.leaseMs = wholeNumber(o, "lease_ms", w.leaseMs, 1'000, 3'600'000, where);
    w.concurrency = wholeNumber(o, "concurrency", w.concurrency, 1, 1'000, where);
    w.pollMs = wholeNumber(o, "poll_ms", w.pollMs, 10, 60'000, where);
    if (o.contains("schedule_scale")) {
        const double s = o.value("schedule_scale").toDouble(-1);
        if (!(s > 0 && s <= 1))
            fail(where + QStringLiteral("schedule_scale must be a number above 0, at most 1"));
        w.scheduleScale = s;
    }
    if (w.leaseMs <= w.timeoutMs)
        fail(where + QStringLiteral("lease_ms must exceed timeout_ms, so that no other instance "
                                    "retries an attempt still in flight"));
    w.policy = policyFrom(UrlPolicy::callback(), objectField(o, "fetch", where), false,
                          where + QStringLiteral("fetch."));
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

ImagesConfig ImagesConfig::fromJson(const QJsonObject &section)
{
    ImagesConfig c = defaults();
    parseProviders(c, section);
    parseModels(c, section);
    c.defaultModel = section.value("default_model").toString(c.defaultModel);
    if (!c.model(c.defaultModel))
        fail(QStringLiteral("default_model names no model ('%1')").arg(c.defaultModel));
    if (section.contains("public_base_url")) {
        const QString base = section.value("public_base_url").toString();
        const QUrl url(base, QUrl::StrictMode);
        if (!url.isValid() || (url.scheme() != u"http" && url.scheme() != u"https") ||
            url.host().isEmpty() || url.hasQuery() || url.hasFragment())
            fail(QStringLiteral("public_base_url must be an http or https URL without query, "
                                "e.g. \"https://switchyard.example.com\""));
        c.publicBaseUrl = base;
        while (c.publicBaseUrl.endsWith(u'/'))
            c.publicBaseUrl.chop(1);
    }
    c.linkTtlS = wholeNumber(section, "link_ttl_s", c.linkTtlS, 60, 7 * 86'400, {});
    c.retentionHours = wholeNumber(section, "retention_hours", c.retentionHours, 1, 24 * 3'650, {});
    c.syncWaitS = wholeNumber(section, "sync_wait_s", c.syncWaitS, 1, 3'600, {});
    c.maxConcurrent = wholeNumber(section, "max_concurrent", c.maxConcurrent, 1, 256, {});
    c.maxImageBytes =
        wholeNumber(section, "max_image_bytes", int(c.maxImageBytes), 1'024, 512 << 20, {});
    c.taskLeaseMs = wholeNumber(section, "task_lease_ms", c.taskLeaseMs, 200, 3'600'000, {});
    c.sweepMs = wholeNumber(section, "sweep_ms", c.sweepMs, 50, 3'600'000, {});
    c.download = policyFrom(UrlPolicy::download(), objectField(section, "download", {}), true,
                            QStringLiteral("download."));
    c.download.maxBytes = c.maxImageBytes;
    parseWebhooks(c.webhooks, objectField(section, "webhooks", {}));
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
