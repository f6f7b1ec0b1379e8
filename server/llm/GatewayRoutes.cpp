#include "GatewayRoutes.h"

#include "CostBound.h"
#include "Gateway.h"
#include "GatewayCall.h"
#include "MessagesEnvelope.h"
#include "ProviderRegistry.h"
#include "RequestValidation.h"

#include <QRegularExpression>

QList<RouteSpec> gatewayRoutes(Gateway &gateway, qint64 minimumReservation)
{
    QList<RouteSpec> routes;
    auto route = [&](const char *path, Protocol protocol, const char *bucket) {
        RouteSpec spec;
        spec.method = "POST";
        spec.pattern = QLatin1String(path);
        spec.family = QStringLiteral("llm");
        spec.auth = AuthMode::ApiKey;
        spec.bucket = QLatin1String(bucket);
        spec.reservation = minimumReservation;
        spec.handler = [&gateway, protocol](const ContextPtr &ctx) {
            const auto body = ctx->jsonBody();
            if (!body)
                return;
            std::optional<RequestError> problem;
            QList<QByteArray> extra;
            if (protocol == Protocol::Messages) {
                const QByteArray version = ctx->request().header("anthropic-version");
                static const QRegularExpression date(QStringLiteral("^\\d{4}-\\d{2}-\\d{2}$"));
                if (version.isEmpty()) {
                    ctx->respondError(400, QStringLiteral("The anthropic-version header is "
                                                          "required, e.g. anthropic-version: "
                                                          "2023-06-01."));
                    return;
                }
                if (!date.match(QString::fromLatin1(version)).hasMatch()) {
                    ctx->respondError(400, QStringLiteral("anthropic-version must be a date such "
                                                          "as 2023-06-01."));
                    return;
                }
                extra.append("anthropic-version: " + version);
                const QByteArray beta = ctx->request().header("anthropic-beta");
                if (!beta.isEmpty())
                    extra.append("anthropic-beta: " + beta);
                problem = RequestValidation::messages(*body);
            } else if (protocol == Protocol::Responses) {
                problem = RequestValidation::responses(*body);
            } else {
                problem = RequestValidation::chat(*body);
            }
            if (problem) {
                ctx->respondError(*problem);
                return;
            }
            const auto snapshot = gateway.registry().snapshot();
            ResolvedModel model = ProviderRegistry::resolve(
                *snapshot, body->value("model").toString(), LlmProtocol::endpointName(protocol));
            if (!model.error.isEmpty()) {
                ctx->respondError(400, model.error, {}, QStringLiteral("model"),
                                  QStringLiteral("model_not_found"));
                return;
            }
            if (!ctx->allowsModel(model.entry.id)) // the key's rule, on what auto resolved to
                return;
            const Protocol upstream = LlmProtocol::upstreamOf(model.provider.type);
            if (protocol == Protocol::Responses && upstream != Protocol::Chat) {
                ctx->respondError(400,
                                  QStringLiteral("The model '%1' is not served on "
                                                 "/v1/responses.")
                                      .arg(model.entry.id),
                                  {}, QStringLiteral("model"));
                return;
            }
            // The responses protocol goes to an OpenAI upstream as responses.
            const Protocol upstreamProtocol =
                protocol == Protocol::Responses ? Protocol::Responses : upstream;
            if (upstreamProtocol == Protocol::Messages && protocol == Protocol::Chat &&
                extra.isEmpty())
                extra.append("anthropic-version: 2023-06-01");
            std::unique_ptr<Relay> relay =
                Relay::create(protocol, upstreamProtocol, model.entry.id);
            if (!relay) {
                ctx->respondError(
                    400,
                    QStringLiteral("The model '%1' is served by a provider "
                                   "that speaks %2, which this endpoint "
                                   "cannot translate to yet.")
                        .arg(model.entry.id, LlmProtocol::endpointName(upstreamProtocol)),
                    {}, QStringLiteral("model"));
                return;
            }
            if (const QString error = relay->prepare(*body, model.entry.upstreamModel);
                !error.isEmpty()) {
                ctx->respondError(400, error);
                return;
            }
            // The request's worst case is held before the upstream call (402 when the balance
            // cannot cover it); the route's reservation is part of it.
            const CostBound::Hold hold =
                CostBound::text(protocol, *body, relay->upstreamBody().size(), model.entry,
                                relay->defaultMaxTokens());
            if (!hold.ok()) {
                ctx->respondError(hold.status, hold.message, {}, hold.param);
                return;
            }
            auto call = std::make_shared<GatewayCall>(gateway, ctx, std::move(relay),
                                                      std::move(model), std::move(extra));
            ctx->reserve(hold.units - ctx->route()->reservation, [call] { call->start(); });
        };
        routes.append(std::move(spec));
    };
    route("/v1/chat/completions", Protocol::Chat, "chat");
    route("/v1/responses", Protocol::Responses, "responses");
    route("/v1/messages", Protocol::Messages, "messages");
    routes.last().errorStyle = messagesErrorStyle();
    return routes;
}
