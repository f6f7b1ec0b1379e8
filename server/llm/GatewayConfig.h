#pragma once

#include "ModelCatalog.h"

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

struct ProviderConfig
{
    QString name;
    ProviderType type = ProviderType::OpenAI;
    QString baseUrl;     // includes the version path: https://api.openai.com/v1
    QStringList keys;    // from the file; used round-robin, a key answering 429/5xx rests
    QString keysEnv;     // an environment variable with more keys, comma-separated
    QStringList envKeys; // read from keysEnv at load; never written back to the file
    int connectTimeoutMs = 10'000;
    int firstByteTimeoutMs = 0;      // until the response head arrives (0: the total applies)
    int idleTimeoutMs = 60'000;      // longest silence inside a body or stream
    int totalTimeoutMs = 600'000;    // whole call; the messages endpoint uses messagesTimeoutMs
    int messagesTimeoutMs = 120'000; // contract: messages upstream timeout 120 s
    int restMs = 30'000;             // how long a failing key sits out
    int refreshMinutes = 60;         // catalog: model list refresh period (0: only on demand)
    QHash<QString, ModelPrice> priceOverrides; // catalog: upstream model id -> local price

    // Every key to use: the file's, then the environment's.
    QStringList allKeys() const { return keys + envKeys; }
    // Upstream keys shown after entry: at most the first and last 4 characters, fewer for
    // short keys.
    static QString maskKey(const QString &key);
};

// The gateway's part of the config file ("gateway": {...}): providers, catalog additions and
// overrides, the model `auto` resolves to, SSE keep-alive period.
struct GatewayConfig
{
    QString autoModel; // empty: the catalog's default
    QList<ProviderConfig> providers;
    QList<ModelEntry> models; // added to (or replacing) the default catalog's entries by id
    int keepAliveMs = 15'000;

    // The built-in providers (no keys): openai, anthropic, deepseek, openrouter.
    static GatewayConfig defaults();
    // Parses the "gateway" object on top of defaults(); throws std::runtime_error naming the
    // field on a bad value.
    static GatewayConfig fromJson(const QJsonObject &gateway);
    QJsonObject toJson() const;

    const ProviderConfig *provider(const QString &name) const;
    // The default catalog with `models` and `autoModel` applied; throws on a model naming an
    // unknown provider.
    ModelCatalog buildCatalog(const ModelCatalog &base) const;

    // Rewrites only the "gateway" section of a JSON config file (creating the file if needed),
    // keeping every other section as it was. Returns an error message, empty on success.
    QString saveTo(const QString &path) const;
};
