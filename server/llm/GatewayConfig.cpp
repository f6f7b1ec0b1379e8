#include "GatewayConfig.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

namespace {

const ConfigOptions<ProviderType> kProviderTypes = {{"openai", ProviderType::OpenAI},
                                                    {"anthropic", ProviderType::Anthropic},
                                                    {"catalog", ProviderType::Catalog}};

// A provider's own fields, after the shared ones (UpstreamProvider::parseShared).
void parseProvider(ProviderConfig &p, const ConfigFields &o)
{
    p.type = o.choice(QStringLiteral("type"), p.type, kProviderTypes);
    if (p.baseUrl.isEmpty())
        o.fail(QStringLiteral("base_url"), QStringLiteral("is required"));
    p.messagesTimeoutMs = o.section(QStringLiteral("timeouts"))
                              .ms(QStringLiteral("messages_ms"), p.messagesTimeoutMs);
    p.refreshMinutes = o.whole(QStringLiteral("refresh_minutes"), p.refreshMinutes,
                               {0, 1'000'000, {}, QStringLiteral("0: only on demand")});
    const ConfigFields overrides = o.section(QStringLiteral("price_overrides"));
    for (const QString &model : overrides.json().keys())
        p.priceOverrides.insert(model, overrides.within(
                                           model,
                                           [&] {
                                               return ModelCatalog::priceFromJson(
                                                   overrides.section(model).json(), QString());
                                           },
                                           QString()));
}

} // namespace

QString providerTypeName(ProviderType type)
{
    return optionName(kProviderTypes, type);
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

GatewayConfig GatewayConfig::fromJson(const QJsonObject &json)
{
    const ConfigFields gateway(json, QStringLiteral("gateway"));
    GatewayConfig g = defaults();
    g.autoModel = gateway.string(QStringLiteral("auto_model"), g.autoModel);
    g.keepAliveMs = gateway.ms(QStringLiteral("keepalive_ms"), g.keepAliveMs);
    const WholeRange tokens{1, ModelCatalog::kMaxTokenLimit, QStringLiteral("tokens")};
    g.defaultMaxOutputTokens = gateway.whole(QStringLiteral("default_max_output_tokens"),
                                             g.defaultMaxOutputTokens, tokens);
    g.defaultContextWindow =
        gateway.whole(QStringLiteral("default_context_window"), g.defaultContextWindow, tokens);
    applyProviderSection(
        g.providers, gateway, [] { return ProviderConfig(); },
        [&](ProviderConfig &p, const ConfigFields &o) {
            if (p.name.isEmpty() || p.name.contains(u'/'))
                gateway.fail(QStringLiteral("providers"),
                             QStringLiteral("names '%1', which is not a valid "
                                            "provider name")
                                 .arg(p.name));
            parseProvider(p, o);
        });
    for (const ConfigFields &m :
         gateway.list(QStringLiteral("models"), QStringLiteral("an array of catalog entries")))
        g.models.append(gateway.within(
            QStringLiteral("models"), [&] { return ModelCatalog::entryFromJson(m.json()); },
            QStringLiteral(": ")));
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
            configFail({}, QStringLiteral("model %1 names provider '%2', which is not configured")
                               .arg(m.id, m.provider));
        if (p->type == ProviderType::Catalog)
            configFail({}, QStringLiteral("model %1: a catalog provider's models are reached as "
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
