#include "GatewayConfig.h"

#include "Money.h"

#include <cmath>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <stdexcept>

namespace {

[[noreturn]] void fail(const QString &message)
{
    throw std::runtime_error(("config: " + message).toStdString());
}

ProviderType parseType(const QString &name, const QString &where)
{
    if (name == u"openai")
        return ProviderType::OpenAI;
    if (name == u"anthropic")
        return ProviderType::Anthropic;
    if (name == u"catalog")
        return ProviderType::Catalog;
    fail(QStringLiteral("%1.type must be openai, anthropic or catalog, not '%2'").arg(where, name));
}

ModelPrice parsePrice(const QJsonObject &o, const QString &where)
{
    try {
        return ModelCatalog::priceFromJson(o, where);
    } catch (const std::exception &e) {
        fail(QString::fromUtf8(e.what()));
    }
}

ProviderConfig parseProvider(const QString &name, const QJsonObject &o, ProviderConfig p)
{
    const QString where = QStringLiteral("gateway.providers.%1").arg(name);
    p.name = name;
    if (o.contains("type"))
        p.type = parseType(o.value("type").toString(), where);
    UpstreamProvider::parseShared(p, o, where);
    if (p.baseUrl.isEmpty())
        fail(QStringLiteral("%1.base_url is required").arg(where));
    p.messagesTimeoutMs =
        UpstreamProvider::parseMs(o.value("timeouts").toObject(), "messages_ms",
                                  p.messagesTimeoutMs, where + QStringLiteral(".timeouts"));
    if (o.contains("refresh_minutes")) {
        const QJsonValue v = o.value("refresh_minutes");
        if (!v.isDouble() || v.toDouble() < 0 || v.toDouble() != std::floor(v.toDouble()) ||
            v.toDouble() > 1e6)
            fail(QStringLiteral("%1.refresh_minutes must be a whole number (0: only on demand)")
                     .arg(where));
        p.refreshMinutes = v.toInt();
    }
    const QJsonObject overrides = o.value("price_overrides").toObject();
    for (auto it = overrides.begin(); it != overrides.end(); ++it)
        p.priceOverrides.insert(it.key(),
                                parsePrice(it.value().toObject(),
                                           where + QStringLiteral(".price_overrides.") + it.key()));
    return p;
}

} // namespace

QString providerTypeName(ProviderType type)
{
    switch (type) {
    case ProviderType::OpenAI:
        return QStringLiteral("openai");
    case ProviderType::Anthropic:
        return QStringLiteral("anthropic");
    case ProviderType::Catalog:
        return QStringLiteral("catalog");
    }
    return {};
}

GatewayConfig GatewayConfig::defaults()
{
    GatewayConfig g;
    auto add = [&](const char *name, ProviderType type, const char *base) {
        ProviderConfig p;
        p.name = QLatin1String(name);
        p.type = type;
        p.baseUrl = QLatin1String(base);
        g.providers.append(p);
    };
    add("openai", ProviderType::OpenAI, "https://api.openai.com/v1");
    add("anthropic", ProviderType::Anthropic, "https://api.anthropic.com/v1");
    // DeepSeek serves the messages protocol under /anthropic; chat completions to a vendorC
    // model are translated.
    add("deepseek", ProviderType::Anthropic, "https://api.deepseek.com/anthropic/v1");
    add("openrouter", ProviderType::Catalog, "https://openrouter.ai/api/v1");
    return g;
}

GatewayConfig GatewayConfig::fromJson(const QJsonObject &gateway)
{
    GatewayConfig g = defaults();
    if (gateway.contains("auto_model"))
        g.autoModel = gateway.value("auto_model").toString();
    if (gateway.contains("keepalive_ms"))
        g.keepAliveMs = UpstreamProvider::parseMs(gateway, "keepalive_ms", g.keepAliveMs,
                                                  QStringLiteral("gateway"));
    auto limit = [&](const char *field, qint64 fallback) -> qint64 {
        const QJsonValue v = gateway.value(QLatin1String(field));
        if (v.isUndefined())
            return fallback;
        const double d = v.toDouble();
        if (!v.isDouble() || d < 1 || d > double(ModelCatalog::kMaxTokenLimit) ||
            d != std::floor(d))
            fail(QStringLiteral("gateway.%1 must be a positive whole number of tokens (at most "
                                "%2)")
                     .arg(QLatin1String(field))
                     .arg(ModelCatalog::kMaxTokenLimit));
        return qint64(d);
    };
    g.defaultMaxOutputTokens = limit("default_max_output_tokens", g.defaultMaxOutputTokens);
    g.defaultContextWindow = limit("default_context_window", g.defaultContextWindow);
    const QJsonValue providers = gateway.value("providers");
    if (!providers.isUndefined() && !providers.isObject())
        fail(QStringLiteral("gateway.providers must be an object of name: provider"));
    const QJsonObject po = providers.toObject();
    for (auto it = po.begin(); it != po.end(); ++it) {
        if (!it.value().isObject())
            fail(QStringLiteral("gateway.providers.%1 must be an object").arg(it.key()));
        if (it.key().isEmpty() || it.key().contains(u'/'))
            fail(QStringLiteral("gateway.providers: '%1' is not a valid provider name")
                     .arg(it.key()));
        const ProviderConfig *existing = g.provider(it.key());
        ProviderConfig p =
            parseProvider(it.key(), it.value().toObject(), existing ? *existing : ProviderConfig{});
        if (existing) {
            for (ProviderConfig &e : g.providers)
                if (e.name == p.name)
                    e = p;
        } else {
            g.providers.append(p);
        }
    }
    const QJsonValue models = gateway.value("models");
    if (!models.isUndefined() && !models.isArray())
        fail(QStringLiteral("gateway.models must be an array of catalog entries"));
    for (const QJsonValue &m : models.toArray()) {
        try {
            g.models.append(ModelCatalog::entryFromJson(m.toObject()));
        } catch (const std::exception &e) {
            fail(QStringLiteral("gateway.models: %1").arg(QString::fromUtf8(e.what())));
        }
    }
    return g;
}

QJsonObject GatewayConfig::toJson() const
{
    QJsonObject providersJson;
    for (const ProviderConfig &p : providers) {
        QJsonObject o = p.sharedJson();
        o.insert("type", providerTypeName(p.type));
        QJsonObject timeouts = o.value("timeouts").toObject();
        timeouts.insert("messages_ms", p.messagesTimeoutMs);
        o.insert("timeouts", timeouts);
        if (p.type == ProviderType::Catalog) {
            o.insert("refresh_minutes", p.refreshMinutes);
            QJsonObject overrides;
            for (auto it = p.priceOverrides.begin(); it != p.priceOverrides.end(); ++it)
                overrides.insert(it.key(), ModelCatalog::priceToJson(it.value()));
            o.insert("price_overrides", overrides);
        }
        providersJson.insert(p.name, o);
    }
    QJsonArray modelsJson;
    for (const ModelEntry &m : models) {
        QJsonObject o{{"id", m.id},
                      {"owned_by", m.ownedBy},
                      {"provider", m.provider},
                      {"upstream_model", m.upstreamModel},
                      {"endpoints", QJsonArray::fromStringList(m.endpoints)},
                      {"pricing", ModelCatalog::priceToJson(m.price)}};
        if (m.maxOutputTokens > 0)
            o.insert("max_output_tokens", m.maxOutputTokens);
        if (m.contextWindow > 0)
            o.insert("context_window", m.contextWindow);
        modelsJson.append(o);
    }
    QJsonObject g{{"providers", providersJson}, {"keepalive_ms", keepAliveMs}};
    if (!autoModel.isEmpty())
        g.insert("auto_model", autoModel);
    if (defaultMaxOutputTokens != kDefaultMaxOutputTokens)
        g.insert("default_max_output_tokens", defaultMaxOutputTokens);
    if (defaultContextWindow != kDefaultContextWindow)
        g.insert("default_context_window", defaultContextWindow);
    if (!modelsJson.isEmpty())
        g.insert("models", modelsJson);
    return g;
}

const ProviderConfig *GatewayConfig::provider(const QString &name) const
{
    for (const ProviderConfig &p : providers)
        if (p.name == name)
            return &p;
    return nullptr;
}

ModelCatalog GatewayConfig::buildCatalog(const ModelCatalog &base) const
{
    ModelCatalog c = base;
    for (const ModelEntry &m : models)
        c.upsert(m);
    for (const ModelEntry &m : c.models()) {
        const ProviderConfig *p = provider(m.provider);
        if (!p)
            fail(QStringLiteral("model %1 names provider '%2', which is not configured")
                     .arg(m.id, m.provider));
        if (p->type == ProviderType::Catalog)
            fail(QStringLiteral("model %1: a catalog provider's models are reached as "
                                "gateway/%2/...")
                     .arg(m.id, m.provider));
    }
    if (!autoModel.isEmpty())
        c.setAutoModel(autoModel);
    c.applyLimitDefaults(defaultMaxOutputTokens, defaultContextWindow);
    return c;
}

QString GatewayConfig::saveTo(const QString &path) const
{
    QJsonObject root;
    QFile in(path);
    if (in.exists()) {
        if (!in.open(QIODevice::ReadOnly))
            return QStringLiteral("cannot read %1: %2").arg(path, in.errorString());
        QJsonParseError err;
        const QJsonDocument doc = QJsonDocument::fromJson(in.readAll(), &err);
        if (err.error != QJsonParseError::NoError || !doc.isObject())
            return QStringLiteral("%1 is not a JSON object; not overwriting it").arg(path);
        root = doc.object();
    }
    // The settings this struct holds are written whole; the others stay as they were.
    QJsonObject section = root.value("gateway").toObject();
    for (const char *managed : {"providers", "models", "auto_model", "keepalive_ms",
                                "default_max_output_tokens", "default_context_window"})
        section.remove(QLatin1String(managed));
    const QJsonObject mine = toJson();
    for (auto it = mine.begin(); it != mine.end(); ++it)
        section.insert(it.key(), it.value());
    root.insert("gateway", section);
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly))
        return QStringLiteral("cannot write %1: %2").arg(path, out.errorString());
    out.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner); // holds upstream keys
    out.write(QJsonDocument(root).toJson(QJsonDocument::Indented));
    if (!out.commit())
        return QStringLiteral("cannot write %1: %2").arg(path, out.errorString());
    return {};
}
