#include "ChatEvaluatorCall.h"

#include "ChatEvaluator.h"
#include "llm/CostBound.h"
#include "llm/Gateway.h"
#include "llm/GatewayCall.h"
#include "llm/ProviderRegistry.h"
#include "Money.h"
#include "upstream/JsonScan.h"

#include <QJsonDocument>

namespace {

// The exact credits of `units` as JSON number text: "0.000219", "1", "0".
QByteArray creditsNumber(qint64 units)
{
    QByteArray text = Money::formatCredits(units).toLatin1();
    while (text.endsWith('0'))
        text.chop(1);
    if (text.endsWith('.'))
        text.chop(1);
    return text;
}

// The whole answer: the contract's shape, with usage.cost written as the exact units charged.
QByteArray decision(const ContextPtr &ctx, const QByteArray &upstreamBody,
                    const QJsonObject &answers, const QString &fallbackModel)
{
    const UsageRecord &u = ctx->usage();
    // The model the upstream says it served (the relay's chat body names the gateway's id).
    QString model = QJsonDocument::fromJson(upstreamBody).object().value("model").toString();
    if (model.isEmpty())
        model = fallbackModel;
    const QJsonObject body{
        {"id", QStringLiteral("dec-") + ctx->requestId().section(u'_', -1)},
        {"object", "decision"},
        {"model", model},
        {"answers", answers},
        {"usage",
         QJsonObject{{"input_tokens", u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens},
                     {"output_tokens", u.outputTokens},
                     {"cost", "-"}}}};
    QByteArray bytes = QJsonDocument(body).toJson(QJsonDocument::Compact);
    JsonScan::replaceString(bytes, {"usage", "cost"}, creditsNumber(u.cost));
    return bytes;
}

} // namespace

void evaluateOverChat(const ChatEvaluatorConfig &config, qint64 minimumReservation,
                      Gateway &gateway, const ContextPtr &ctx, const QJsonObject &body,
                      const QString &notDecisions)
{
    const QString asked = body.value("model").toString();
    const auto snapshot = gateway.registry().snapshot();
    ResolvedModel model =
        ProviderRegistry::resolve(*snapshot, asked, QStringLiteral("chat.completions"));
    const QString notFound = QStringLiteral("model_not_found");
    if (!model.error.isEmpty())
        return ctx->respondError(400,
                                 QStringLiteral("%1 Nor is it a chat model of the gateway: %2")
                                     .arg(notDecisions, model.error),
                                 QStringLiteral("invalid_request_error"), QStringLiteral("model"),
                                 notFound);
    if (!config.allows(asked, model.entry.id))
        return ctx->respondError(400,
                                 QStringLiteral("%1 The chat model '%2' is not one this server "
                                                "evaluates decisions with.")
                                     .arg(notDecisions, asked),
                                 QStringLiteral("invalid_request_error"), QStringLiteral("model"),
                                 notFound);

    const Protocol upstream = LlmProtocol::upstreamOf(model.provider.type);
    ChatEvaluator::Ask ask;
    ask.jsonSchema = upstream == Protocol::Chat;
    ask.topLogprobs = config.topLogprobs;
    // Never more than the model generates (the upstream would refuse it).
    ask.maxOutputTokens = int(qMin<qint64>(config.maxOutputTokens, model.entry.maxOutputTokens));
    ask.maxCompletionTokens = model.provider.type == ProviderType::OpenAI;
    const QList<ChatEvaluator::Question> questions = ChatEvaluator::questions(body);
    const QJsonObject chat = ChatEvaluator::chatRequest(body.value("state"), questions, ask);

    // The contract's timeout, and the usage record naming the model as the client asked.
    model.provider.totalTimeoutMs = config.timeoutMs;
    model.provider.messagesTimeoutMs = config.timeoutMs;
    const QString upstreamModel = model.entry.upstreamModel;
    std::unique_ptr<Relay> relay = Relay::create(Protocol::Chat, upstream, asked);
    const QString error = relay ? relay->prepare(chat, upstreamModel)
                                : QStringLiteral("The model's provider cannot be asked.");
    if (!error.isEmpty())
        return ctx->respondError(400, error, {}, QStringLiteral("model"));

    // Held until the answer: the call's worst case as the gateway bounds a chat request (the
    // prompt, built from the state, by the bytes sent upstream; the answer by the output bound
    // asked), or the gateway's minimum when that is more.
    const CostBound::Hold bound = CostBound::text(
        Protocol::Chat, chat, relay->upstreamBody().size(), model.entry, relay->defaultMaxTokens());
    if (!bound.ok())
        return ctx->respondError(bound.status, bound.message, {}, bound.param);
    const qint64 hold = qMax(minimumReservation, bound.units);

    model.entry.id = asked;
    QList<QByteArray> extra;
    if (upstream == Protocol::Messages)
        extra.append("anthropic-version: 2023-06-01");
    auto call = std::make_shared<GatewayCall>(gateway, ctx, std::move(relay), model, extra);
    call->setAnswerHandler([ctx, questions, model](const QByteArray &upstreamBody,
                                                   const QByteArray &chatBody) {
        const ChatEvaluator::Result r =
            ChatEvaluator::answers(questions, QJsonDocument::fromJson(chatBody).object());
        if (!r.error.isEmpty()) // not billed: a failed request
            return ctx->respondError(
                502,
                QStringLiteral("The model '%1' did not answer with the expected JSON: %2.")
                    .arg(model.entry.id, r.error),
                QStringLiteral("upstream_error"), {}, QStringLiteral("upstream_invalid_answer"));
        ctx->respondRaw(200, "application/json",
                        decision(ctx, upstreamBody, r.answers, model.entry.upstreamModel));
    });
    ctx->reserve(hold, [call] { call->start(); });
}
