#pragma once

#include "DecisionsConfig.h"
#include "ServiceFamily.h"

class GatewayFamily;

// Typed decisions as a service family; server/decisions/README.md has the shapes,
// the validation, the configuration and the billing.
//   config   the "decisions" section (DecisionsConfig.h): providers, models, prices, bounds;
//   routes   POST /v1/decisions and its alias POST /api/alpha/decisions: one handler, the API
//            key, the chat rate-limit bucket (shared with chat completions), one billing;
//   models   ~vendorD/evaluator-latest and vendorD/evaluator-1.13, each also as gateway/<id>.
// The request is checked (DecisionRequest.h), credit is reserved, and the client's body goes
// upstream with only `model` replaced; the upstream's answer comes back byte for byte, billed
// from its usage.cost (1 credit = 1 USD), else from its tokens and the model's prices.
// With decisions.chat_evaluator.enabled, a model that is not a decisions model but a chat model
// of the text gateway is evaluated over that model instead (ChatEvaluatorCall.h), found
// through link().
class DecisionsFamily : public ServiceFamily
{
public:
    DecisionsFamily();

    QString name() const override { return QStringLiteral("decisions"); }
    void configure(const QJsonObject &section, const ServerSettings &server) override;
    // Keeps the text gateway for the chat evaluator; throws when the evaluator is enabled in a
    // build without it.
    void link(const QList<ServiceFamily *> &families) override;
    QList<RouteSpec> routes(const ServerScope &scope) override;
    QList<RateBucket> rateBuckets() const override;
    QJsonArray models() const override;

    const DecisionsConfig &config() const { return m_config; }
    // The providers' keys in rotation, shared by every server of the family.
    KeyRotation &keys() { return m_keys; }

private:
    DecisionsConfig m_config;
    KeyRotation m_keys;
    GatewayFamily *m_gateway = nullptr; // set by link() when the chat evaluator is enabled
    qint64 m_maxStreamBuffer = 0;
};
