#include "CostBound.h"

#include "GatewayConfig.h"
#include "RequestValidation.h"

#include <limits>
#include <QJsonArray>
#include <QSet>

namespace {

// Types of prompt parts and of objects inside them whose tokens are the text in the body:
// text, tool calls and results, reasoning carried over, citations, cache markers. Anything else
// (an image, a file, a document, audio, an item reference, a type not known yet) opens the
// prompt: erring on that side only holds more.
bool isTextType(const QString &type)
{
    static const QSet<QString> text = {
        // chat completions
        QStringLiteral("text"), QStringLiteral("refusal"), QStringLiteral("function"),
        // responses
        QStringLiteral("message"), QStringLiteral("input_text"), QStringLiteral("output_text"),
        QStringLiteral("function_call"), QStringLiteral("function_call_output"),
        QStringLiteral("custom_tool_call"), QStringLiteral("custom_tool_call_output"),
        QStringLiteral("reasoning"), QStringLiteral("summary_text"),
        // messages
        QStringLiteral("tool_use"), QStringLiteral("tool_result"), QStringLiteral("thinking"),
        QStringLiteral("redacted_thinking"), QStringLiteral("ephemeral"),
        QStringLiteral("search_result"), QStringLiteral("char_location"),
        QStringLiteral("page_location"), QStringLiteral("content_block_location"),
        QStringLiteral("search_result_location"), QStringLiteral("web_search_result_location")};
    return text.contains(type);
}

bool opens(const QJsonValue &v, int depth);

bool opensObject(const QJsonObject &o, int depth)
{
    const QJsonValue type = o.value(QLatin1String("type"));
    if (type.isString() && !isTextType(type.toString()))
        return true;
    // A tool call's input is the model's own JSON, whose "type" members say nothing of media.
    const bool toolInput = type.isString() && type.toString() == u"tool_use";
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (toolInput && it.key() == u"input")
            continue;
        if (opens(it.value(), depth + 1))
            return true;
    }
    return false;
}

bool opens(const QJsonValue &v, int depth)
{
    // Past any sane nesting, assume the worst rather than recurse without end.
    if (depth > 64)
        return v.isObject() || v.isArray();
    if (v.isObject())
        return opensObject(v.toObject(), depth);
    if (v.isArray()) {
        const QJsonArray a = v.toArray();
        for (const QJsonValue &e : a)
            if (opens(e, depth + 1))
                return true;
    }
    return false;
}

// Tools that run at the provider add their results to the prompt.
bool providerTools(const QJsonValue &tools)
{
    const QJsonArray a = tools.toArray();
    for (const QJsonValue &t : a) {
        const QJsonValue type = t.toObject().value(QLatin1String("type"));
        if (!type.isUndefined() && !type.isNull() && type.toString() != u"function" &&
            type.toString() != u"custom")
            return true;
    }
    return false;
}

bool present(const QJsonObject &body, const char *field)
{
    const QJsonValue v = body.value(QLatin1String(field));
    return !v.isUndefined() && !v.isNull();
}

// The client's output bound: its field's name and value (0: none given).
struct Asked
{
    QString param;
    double tokens = 0;
};

Asked asked(Protocol protocol, const QJsonObject &body)
{
    const char *fields[2] = {"max_tokens", nullptr};
    if (protocol == Protocol::Chat)
        fields[0] = "max_completion_tokens", fields[1] = "max_tokens";
    else if (protocol == Protocol::Responses)
        fields[0] = "max_output_tokens";
    for (const char *f : fields) {
        if (!f)
            break;
        const QJsonValue v = body.value(QLatin1String(f));
        if (v.isDouble())
            return {QLatin1String(f), v.toDouble()};
    }
    return {};
}

} // namespace

namespace CostBound {

bool opensPrompt(Protocol client, const QJsonObject &body)
{
    if (providerTools(body.value(QLatin1String("tools"))))
        return true;
    switch (client) {
    case Protocol::Chat:
        return present(body, "web_search_options") ||
               opens(body.value(QLatin1String("messages")), 0);
    case Protocol::Responses:
        return present(body, "previous_response_id") || present(body, "conversation") ||
               present(body, "prompt") || opens(body.value(QLatin1String("input")), 0) ||
               opens(body.value(QLatin1String("instructions")), 0);
    case Protocol::Messages:
        return present(body, "mcp_servers") || present(body, "container") ||
               opens(body.value(QLatin1String("messages")), 0) ||
               opens(body.value(QLatin1String("system")), 0);
    }
    return true;
}

std::optional<qint64> cost(qint64 promptTokens, qint64 promptPrice, qint64 outputTokens,
                           qint64 outputPrice)
{
    if (promptTokens < 0 || promptPrice < 0 || outputTokens < 0 || outputPrice < 0)
        return std::nullopt;
    // Each product is below 2^126, so their sum fits in unsigned 128 bits.
    using U = unsigned __int128;
    const U total = U(promptTokens) * U(promptPrice) + U(outputTokens) * U(outputPrice);
    const U units = total / 1'000'000 + (total % 1'000'000 != 0 ? 1 : 0);
    if (units > U(std::numeric_limits<qint64>::max()))
        return std::nullopt;
    return qint64(units);
}

Hold text(Protocol client, const QJsonObject &body, qint64 upstreamBytes, const ModelEntry &model,
          qint64 relayDefault)
{
    Hold h;
    const qint64 modelMax =
        model.maxOutputTokens > 0 ? model.maxOutputTokens : GatewayConfig::kDefaultMaxOutputTokens;
    const qint64 window =
        model.contextWindow > 0 ? model.contextWindow : GatewayConfig::kDefaultContextWindow;

    const Asked a = asked(client, body);
    if (a.tokens > double(modelMax)) {
        h.status = 400;
        h.param = a.param;
        h.message = QStringLiteral("%1: %2 is more than the model '%3' generates in one answer "
                                   "(max_output_tokens %4).")
                        .arg(a.param, QString::number(a.tokens, 'f', 0), model.id)
                        .arg(modelMax);
        return h;
    }
    const qint64 perAnswer = a.tokens >= 1      ? qint64(a.tokens)
                             : relayDefault > 0 ? qMin(relayDefault, modelMax)
                                                : modelMax;
    // Chat's n answers each up to the bound (validated from 1 to 128).
    const qint64 answers = client == Protocol::Chat
                               ? qBound(qint64(1), body.value(QLatin1String("n")).toInteger(1),
                                        qint64(RequestValidation::kMaxChoices))
                               : 1;
    h.outputTokens = perAnswer * answers;

    h.promptTokens = qMax<qint64>(0, upstreamBytes) + kTemplateTokens;
    h.openPrompt = opensPrompt(client, body);
    if (h.openPrompt)
        h.promptTokens = qMax(h.promptTokens, window);

    const ModelPrice &p = model.price;
    const qint64 promptPrice = qMax(p.input, qMax(p.cacheRead, p.cacheWrite));
    const auto units = cost(h.promptTokens, promptPrice, h.outputTokens, p.output);
    if (!units) {
        h.status = 402;
        h.message = QStringLiteral("Insufficient credits: at the prices of the model '%1', this "
                                   "request (up to %2 prompt and %3 output tokens) can cost more "
                                   "than any balance holds.")
                        .arg(model.id)
                        .arg(h.promptTokens)
                        .arg(h.outputTokens);
        return h;
    }
    h.units = *units;
    return h;
}

} // namespace CostBound
