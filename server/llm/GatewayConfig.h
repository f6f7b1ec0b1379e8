#pragma once

#include "ModelCatalog.h"
#include "upstream/UpstreamProvider.h"

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

// What an upstream speaks. `catalog` is an OpenRouter-style gateway: OpenAI chat completions
// plus a live model list with prices at GET {base}/models.
enum class ProviderType
{
    OpenAI,
    Anthropic,
    Catalog
};

QString providerTypeName(ProviderType type);

// A text provider: the settings every upstream shares (UpstreamProvider) plus what speaks it,
// the messages timeout and, for a catalog, its live list's refresh and price overrides.
struct ProviderConfig : UpstreamProvider
{
    ProviderType type = ProviderType::OpenAI;
    int messagesTimeoutMs = 120'000; // contract: messages upstream timeout 120 s
    int refreshMinutes = 60;         // catalog: model list refresh period (0: only on demand)
    QHash<QString, ModelPrice> priceOverrides; // catalog: upstream model id -> local price
};

// The gateway's part of the config file ("gateway": {...}): providers, catalog additions and
// overrides, the model `auto` resolves to, SSE keep-alive period.
struct GatewayConfig
{
    QString autoModel; // empty: the catalog's default
    QList<ProviderConfig> providers;
    QList<ModelEntry> models; // added to (or replacing) the default catalog's entries by id
    int keepAliveMs = 15'000;
    // What a model that states no max_output_tokens or context_window (a live catalog's model
    // without them, a config model) is taken to have.
    static constexpr qint64 kDefaultMaxOutputTokens = 32'768;
    static constexpr qint64 kDefaultContextWindow = 200'000;
    qint64 defaultMaxOutputTokens = kDefaultMaxOutputTokens;
    qint64 defaultContextWindow = kDefaultContextWindow;

    // The built-in providers (no keys): openai, anthropic, deepseek, openrouter.
    static GatewayConfig defaults();
    // Parses the "gateway" object on top of defaults(); throws std::runtime_error naming the
    // field on a bad value.
    static GatewayConfig fromJson(const QJsonObject &gateway);
    QJsonObject toJson() const;

    const ProviderConfig *provider(const QString &name) const;
    // The default catalog with `models`, `autoModel` and the limit defaults applied; throws on a
    // model naming an unknown provider.
    ModelCatalog buildCatalog(const ModelCatalog &base) const;

    // Rewrites only the "gateway" section of a JSON config file (creating the file if needed),
    // keeping every other section, and the section's settings this struct does not hold
    // (min_reservation), as they were. Returns an error message, empty on success.
    QString saveTo(const QString &path) const;
};
