#pragma once

#include "DecisionRequest.h"
#include "upstream/UpstreamProvider.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

// An OpenRouter-style decisions upstream: POST {base_url}{path} with the client's body (the
// model replaced by the upstream's name), answering {answers, usage, ...}.
struct DecisionProvider : UpstreamProvider
{
    QString path = QStringLiteral("/decisions");
    // Empty when the provider can serve; else what to configure.
    QString unusableReason() const;
};

struct DecisionModel
{
    QString id;
    QString provider;
    QString upstreamModel;
    QString ownedBy;
    qint64 inputPrice = 0;  // credit units per 1M input tokens, when the upstream reports no cost
    qint64 outputPrice = 0; // per 1M output tokens
    // The evaluator's output bound, in tokens: with the prices and the request's size, what a
    // request holds (holdFor()).
    qint64 maxOutputTokens = kDefaultMaxOutputTokens;
    // The most one request costs, in credit units, when the operator knows it from the
    // upstream's terms: held instead of the bound from prices (0: not set).
    qint64 maxCost = 0;
    static constexpr qint64 kDefaultMaxOutputTokens = 8'192;
};

// The optional evaluator over the gateway's chat models (ChatEvaluator.h; README "Chat
// evaluator"): off unless the operator turns it on.
struct ChatEvaluatorConfig
{
    bool enabled = false;
    // Gateway model ids a decisions request may name, exact or as a prefix ending in '*'
    // ("gateway/openrouter/*"); empty: any model the gateway serves on chat completions.
    QStringList models;
    int topLogprobs = 20; // alternatives asked per token (1 to 20)
    int maxOutputTokens = 4'096;
    int timeoutMs = 60'000; // the whole upstream call (the contract's 60 s)

    // Whether a request naming `asked` (resolved to the catalog id `resolved`) may use it.
    bool allows(const QString &asked, const QString &resolved) const;
};

// The "decisions" section of the config file (server/decisions/README.md). Every field is
// optional:
//   providers  {name: {type: decisions, base_url, path, keys, keys_env, timeouts, key_rest_ms}};
//              `openrouter` (https://openrouter.ai/api/v1, /decisions, no key) exists unless
//              replaced; the total timeout is 60 s unless timeouts.total_ms says otherwise;
//   models     [{id, provider, upstream_model, owned_by, input_per_1m, output_per_1m,
//              max_output_tokens, max_cost}], added to or replacing ~vendorD/evaluator-latest
//              and vendorD/evaluator-1.13 by id;
//   bounds     {max_questions, max_options, max_instructions_chars, max_description_chars};
//   chat_evaluator  {enabled, models, top_logprobs, max_output_tokens, timeout_ms}.
// Every model is also served as "gateway/<id>" (the prefix removed before the upstream call).
struct DecisionsConfig
{
    QList<DecisionProvider> providers;
    QList<DecisionModel> models;
    DecisionBounds bounds;
    ChatEvaluatorConfig chatEvaluator;

    static constexpr int kTimeoutMs = 60'000;
    static DecisionsConfig defaults();
    // Parses the section on top of defaults(); throws std::runtime_error("config:
    // decisions.<field> ...").
    static DecisionsConfig fromJson(const QJsonObject &section);

    const DecisionProvider *provider(const QString &name) const;
    // The model of a request's id, with or without the gateway/ prefix.
    const DecisionModel *model(const QString &id) const;
    // The GET /v1/models items: every model and its gateway/ alias.
    QJsonArray modelsJson() const;

    // Exact credit units of a cost the upstream reports as a JSON number in USD (1 credit =
    // 1 USD), rounded up once; nullopt for text that is not a non-negative number.
    static std::optional<qint64> costUnits(QByteArrayView number);
    // ceil((input * inputPrice + output * outputPrice) / 1M), one rounding.
    static qint64 tokenCost(qint64 input, qint64 output, const DecisionModel &model);
    // What a request to `model` whose body goes upstream as `upstreamBytes` bytes holds: the
    // model's max_cost when set, else its worst case from its prices: a prompt built from the
    // body, at most one token per byte plus CostBound::kTemplateTokens, and max_output_tokens
    // (at least one unit). nullopt when that does not fit in 64 bits.
    static std::optional<qint64> holdFor(const DecisionModel &model, qint64 upstreamBytes);
};
