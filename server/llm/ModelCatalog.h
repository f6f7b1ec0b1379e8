#pragma once

#include <optional>
#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>

struct ModelPrice
{
    qint64 input = 0; // credit units per 1M tokens
    qint64 output = 0;
    qint64 cacheRead = 0;
    qint64 cacheWrite = 0;
};

struct ModelEntry
{
    QString id;
    QString ownedBy;
    QString provider;
    QString upstreamModel;
    QStringList endpoints; // chat.completions, responses, messages
    ModelPrice price;
    // The most tokens the model generates in one answer, and the most its prompt and answer
    // hold together: the bounds of a request's hold (CostBound.h). 0 in a config or catalog
    // entry that states none; every resolved model (ProviderRegistry::resolve) has both.
    qint64 maxOutputTokens = 0;
    qint64 contextWindow = 0;
};

// The model catalog: which model IDs exist, who serves them, on which endpoints, at what
// price, with which token limits. Loaded from the default catalog in resources (or a file given
// in the config).
class ModelCatalog
{
public:
    // Throws std::runtime_error naming the problem.
    static ModelCatalog fromJson(const QByteArray &json);
    static ModelCatalog builtin();

    const QList<ModelEntry> &models() const { return m_models; }
    std::optional<ModelEntry> find(const QString &id) const;
    QString autoModel() const { return m_auto; }
    // Adds a model or replaces the one with the same id.
    void upsert(const ModelEntry &entry);
    // Throws std::runtime_error when the model is not in the catalog.
    void setAutoModel(const QString &id);
    // Reads one "models" item of a catalog or config file; throws naming the bad field.
    static ModelEntry entryFromJson(const QJsonObject &o);
    // The largest max_output_tokens and context_window a model may state.
    static constexpr qint64 kMaxTokenLimit = 1'000'000'000;
    // Gives every model that states no max_output_tokens or context_window the defaults.
    void applyLimitDefaults(qint64 maxOutputTokens, qint64 contextWindow);
    // The /v1/models listing (OpenAI list shape, with endpoints and prices added).
    QJsonArray toJson() const;
    static QJsonObject entryJson(const ModelEntry &m);
    // A {input, output, cache_read, cache_write} object of decimal-string credits per 1M tokens
    // (absent fields are 0); throws std::runtime_error naming `where`.field on a bad value.
    static ModelPrice priceFromJson(const QJsonObject &pricing, const QString &where);
    static QJsonObject priceToJson(const ModelPrice &price);

private:
    QList<ModelEntry> m_models;
    QHash<QString, qsizetype> m_index;
    QString m_auto;
};
