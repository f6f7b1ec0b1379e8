#include "DecisionsFamily.h"

#include "ChatEvaluatorCall.h"
#include "llm/Gateway.h"
#include "llm/GatewayFamily.h"
#include "RequestContext.h"
#include "upstream/JsonScan.h"
#include "upstream/ProviderCall.h"
#include "upstream/UpstreamClient.h"
#include "UpstreamReply.h"

#include <functional>
#include <QJsonDocument>
#include <QPointer>
#include <stdexcept>

namespace {

// An answer larger than this is not a decision.
constexpr qsizetype kMaxAnswerBytes = 16 * 1024 * 1024;

// A decisions request whose model is not a decisions model, evaluated over a chat model (the
// chat evaluator, when enabled): ctx, the body, and the 400 message for a model that is not.
using OverChat = std::function<void(const ContextPtr &, const QJsonObject &, const QString &)>;

void decide(DecisionsFamily &family, UpstreamClient *client, const ContextPtr &ctx,
            const OverChat &overChat)
{
    const auto body = ctx->jsonBody();
    if (!body)
        return;
    const DecisionsConfig &config = family.config();
    RequestError error;
    const auto req = DecisionRequests::validate(*body, config.bounds, &error);
    if (!req)
        return ctx->respondError(error);
    const DecisionModel *model = config.model(req->model);
    if (!model) {
        QStringList ids;
        for (const DecisionModel &m : config.models)
            ids.append(m.id);
        const QString notDecisions = QStringLiteral("The model '%1' is not a decisions model "
                                                    "(%2, each also with the prefix gateway/).")
                                         .arg(req->model, ids.join(u", "));
        if (overChat)
            return overChat(ctx, *body, notDecisions);
        return ctx->respondError(400, notDecisions, QStringLiteral("invalid_request_error"),
                                 QStringLiteral("model"), QStringLiteral("model_not_found"));
    }
    if (!ctx->allowsModel(model->id))
        return;
    const DecisionProvider *provider = config.provider(model->provider);
    if (const QString why = provider->unusableReason(); !why.isEmpty())
        return ctx->respondError(503, why, QStringLiteral("server_error"), {},
                                 QStringLiteral("provider_unavailable"));
    // The client's bytes with only the model replaced (and the gateway/ prefix gone).
    QByteArray upstreamBody = ctx->request().body;
    JsonScan::replaceString(upstreamBody, {"model"},
                            JsonScan::quote(model->upstreamModel.toUtf8()));
    // Held until the answer: the model's max_cost, or the worst case from its prices, the body's
    // size and its output bound (README, Billing); the answer is charged what it costs.
    const auto hold = DecisionsConfig::holdFor(*model, upstreamBody.size());
    if (!hold)
        return ctx->respondError(402,
                                 QStringLiteral("Insufficient credits: at the prices of the model "
                                                "'%1', this request can cost more than any "
                                                "balance holds.")
                                     .arg(req->model));
    ctx->usage().model = req->model;
    ctx->reserve(*hold, [&family, client, ctx, provider = *provider, model = *model, upstreamBody] {
        ProviderCall::Request post;
        post.url = provider.baseUrl.toUtf8() + provider.path.toUtf8();
        post.headers = {"Content-Type: application/json"};
        post.body = upstreamBody;
        post.configPath = QStringLiteral("decisions.providers");
        post.maxAnswerBytes = kMaxAnswerBytes;
        post.maxKeys = 2;
        const ProviderCallPtr call = ProviderCall::start(
            *client, family.keys(), provider, std::move(post),
            [ctx, model](const UpstreamAnswer &a) {
                if (ctx->clientGone()) // nothing delivered: nothing billed
                    return ctx->respondError(499,
                                             QStringLiteral("The client closed the connection."));
                if (!a.ok())
                    return respondUpstreamFailure(ctx, a);
                const QJsonObject answer = QJsonDocument::fromJson(a.body).object();
                if (answer.isEmpty())
                    return ctx->respondError(502,
                                             QStringLiteral("The decisions provider sent an answer "
                                                            "that is not a JSON object."),
                                             QStringLiteral("upstream_error"), {},
                                             QStringLiteral("upstream_invalid_answer"));
                const QJsonObject usage = answer.value("usage").toObject();
                UsageRecord &u = ctx->usage();
                u.inputTokens = usage.value("input_tokens").toInteger();
                u.outputTokens = usage.value("output_tokens").toInteger();
                const JsonScan::Span cost = JsonScan::find(a.body, {"usage", "cost"});
                const auto reported =
                    cost.found() ? DecisionsConfig::costUnits(QByteArrayView(
                                       a.body.constData() + cost.begin, cost.end - cost.begin))
                                 : std::nullopt;
                u.cost = reported
                             ? *reported
                             : DecisionsConfig::tokenCost(u.inputTokens, u.outputTokens, model);
                u.estimated = !reported;
                ctx->respondRaw(
                    200, a.contentType.isEmpty() ? QByteArray("application/json") : a.contentType,
                    a.body);
            });
        // A client that leaves stops the upstream call: nothing delivered, nothing billed.
        ctx->exchange()->onClosed([weak = std::weak_ptr<RequestContext>(ctx), call] {
            const ContextPtr gone = weak.lock(); // before abort() drops the call's hold on it
            if (!gone || call->isFinished())
                return;
            call->abort();
            gone->respondClientLeft();
        });
    });
}

} // namespace

DecisionsFamily::DecisionsFamily() : m_config(DecisionsConfig::defaults()) {}

void DecisionsFamily::configure(const QJsonObject &section, const ServerSettings &server)
{
    m_config = DecisionsConfig::fromJson(section);
    m_maxStreamBuffer = server.maxStreamBuffer;
}

void DecisionsFamily::link(const QList<ServiceFamily *> &families)
{
    m_gateway = nullptr;
    if (!m_config.chatEvaluator.enabled)
        return;
    for (ServiceFamily *f : families)
        if (auto *gateway = dynamic_cast<GatewayFamily *>(f))
            m_gateway = gateway;
    if (!m_gateway)
        configFail(QStringLiteral("decisions.chat_evaluator.enabled"),
                   QStringLiteral("needs the text gateway family (llm), which this build does "
                                  "not have"));
}

QList<RateBucket> DecisionsFamily::rateBuckets() const
{
    // Shared with chat completions (the text gateway registers it with the same limit).
    return {{QStringLiteral("chat"), 60}};
}

QList<RouteSpec> DecisionsFamily::routes(const ServerScope &scope)
{
    UpstreamClient *client = &scope.upstream(); // the server's one client, shared
    // The chat evaluator's calls go through a gateway of their own on this server's thread,
    // over the gateway family's registry (its providers, catalog and keys in rotation).
    OverChat overChat;
    if (m_gateway) {
        auto *gateway = new Gateway(m_gateway->registry(), m_maxStreamBuffer, scope.parent());
        overChat = [this, gateway](const ContextPtr &ctx, const QJsonObject &body,
                                   const QString &notDecisions) {
            evaluateOverChat(m_config.chatEvaluator, m_gateway->minimumReservation(), *gateway, ctx,
                             body, notDecisions);
        };
    }
    QList<RouteSpec> routes;
    for (const char *path : {"/v1/decisions", "/api/alpha/decisions"}) {
        RouteSpec r;
        r.method = "POST";
        r.pattern = QLatin1String(path);
        r.auth = AuthMode::ApiKey;
        r.bucket = QStringLiteral("chat"); // shared with chat completions
        r.bodyLimit = 1024 * 1024;
        r.handler = [this, client, overChat](const ContextPtr &ctx) {
            decide(*this, client, ctx, overChat);
        };
        routes.append(std::move(r));
    }
    return routes;
}

QJsonArray DecisionsFamily::models() const
{
    return m_config.modelsJson();
}

std::unique_ptr<ServiceFamily> makeFamily_decisions()
{
    return std::make_unique<DecisionsFamily>();
}
