#include "Relay.h"

#include "ChatOverMessages.h"
#include "ModelCatalog.h"
#include "upstream/JsonScan.h"

#include <cstring>
#include <functional>
#include <QJsonDocument>
#include <QSet>

namespace {

QJsonObject parseObject(QByteArrayView json)
{
    return QJsonDocument::fromJson(QByteArray::fromRawData(json.data(), json.size())).object();
}

qint64 field(const QJsonObject &o, const char *name)
{
    return qMax<qint64>(0, o.value(QLatin1String(name)).toInteger());
}

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

// Whether a streamed chat chunk carries generated text or tool-call arguments.
bool carriesOutput(const QByteArray &data)
{
    for (const char *field : {"\"content\":\"", "\"arguments\":\""}) {
        const qsizetype at = data.indexOf(field);
        if (at >= 0 && at + qsizetype(strlen(field)) < data.size() &&
            data.at(at + qsizetype(strlen(field))) != '"')
            return true;
    }
    return false;
}

// OpenAI chat usage: prompt_tokens includes cached tokens.
void readChatUsage(const QJsonObject &u, TokenUsage *out)
{
    const qint64 cached = field(u.value("prompt_tokens_details").toObject(), "cached_tokens");
    out->cacheRead = cached;
    out->input = qMax<qint64>(0, field(u, "prompt_tokens") - cached);
    out->output = field(u, "completion_tokens");
    out->haveInput = out->haveOutput = true;
}

// Responses usage: input_tokens includes cached tokens.
void readResponsesUsage(const QJsonObject &u, TokenUsage *out)
{
    const qint64 cached = field(u.value("input_tokens_details").toObject(), "cached_tokens");
    out->cacheRead = cached;
    out->input = qMax<qint64>(0, field(u, "input_tokens") - cached);
    out->output = field(u, "output_tokens");
    out->haveInput = out->haveOutput = true;
}

// The object at a span of a JSON text, parsed on its own (empty when absent or not an object).
QJsonObject objectIn(const QByteArray &json, const JsonScan::Span &s)
{
    if (!s.found() || json.at(s.begin) != '{')
        return {};
    return parseObject(QByteArrayView(json).sliced(s.begin, s.end - s.begin));
}

// The object at a path of a JSON text, parsed on its own (empty when absent or not an object).
QJsonObject objectAt(const QByteArray &json, std::initializer_list<QByteArrayView> path)
{
    return objectIn(json, JsonScan::find(json, path));
}

// A whole answer is checked before it is passed on: a truncated body is the upstream's fault.
// One validating pass also finds the member that makes it an answer (`choices`, `output`,
// `content`), its usage and its model, where a pass for each cost the server thread about 5% of
// a chat completion's instructions (perf, instructions:u).
struct Answer
{
    JsonScan::Span usage;
    JsonScan::Span model;
};
bool readAnswer(const QByteArray &json, QByteArrayView bodyKey, Answer *answer)
{
    JsonScan::Span spans[3];
    if (!JsonScan::isObject(json, {bodyKey, "usage", "model"}, spans) || !spans[0].found())
        return false;
    *answer = {spans[1], spans[2]};
    return true;
}

// Replaces the string at `at` (a span of `json`) with `value`; nothing when it is no string.
void replaceStringAt(QByteArray &json, const JsonScan::Span &at, const QByteArray &value)
{
    if (at.found() && json.at(at.begin) == '"')
        json.replace(at.begin, at.end - at.begin, value);
}

// Same protocol on both sides: the client's body goes upstream with only the model replaced.
class PassThroughRelay : public Relay
{
public:
    using Relay::Relay;

protected:
    QJsonObject passThrough(const QJsonObject &clientBody, const QString &upstreamModel,
                            qint64 promptTokens)
    {
        QJsonObject body = clientBody;
        body.insert("model", upstreamModel);
        m_stream = clientBody.value("stream").toBool();
        m_promptTokens = promptTokens;
        return body;
    }
};

QByteArray openAiErrorEvent(const QString &message, const QString &type)
{
    return SseParser::format(
        {}, compact(QJsonObject{{"error", QJsonObject{{"message", message},
                                                      {"type", type},
                                                      {"param", QJsonValue::Null},
                                                      {"code", QJsonValue::Null}}}}));
}

// --- chat completions, both sides ------------------------------------------------------------

class ChatRelay : public PassThroughRelay
{
public:
    using PassThroughRelay::PassThroughRelay;

    QString prepare(const QJsonObject &clientBody, const QString &upstreamModel) override
    {
        QJsonObject body = passThrough(clientBody, upstreamModel,
                                       estimatePromptTokens(clientBody.value("messages")));
        if (m_stream) {
            // Usage comes from the upstream: ask for it, strip it later if the client did not.
            QJsonObject options = body.value("stream_options").toObject();
            m_clientWantsUsage = options.value("include_usage").toBool();
            options.insert("include_usage", true);
            body.insert("stream_options", options);
        }
        m_upstreamBody = compact(body);
        return {};
    }

    bool convertBody(const QByteArray &upstream, QByteArray *client) override
    {
        Answer a;
        if (!readAnswer(upstream, "choices", &a))
            return false;
        if (const QJsonObject usage = objectIn(upstream, a.usage); !usage.isEmpty())
            readChatUsage(usage, &m_usage);
        *client = upstream;
        replaceStringAt(*client, a.model, m_quotedModel);
        return true;
    }

    void onEvent(const SseEvent &event, QByteArray *out) override
    {
        if (event.comment || m_finished)
            return;
        if (event.data == "[DONE]") {
            m_finished = true;
            return;
        }
        QByteArray data = event.data;
        JsonScan::Span spans[4];
        JsonScan::members(data, {"error", "usage", "choices", "model"}, spans);
        const JsonScan::Span &usage = spans[1], &choices = spans[2], &model = spans[3];
        if (spans[0].found()) {
            holdError(objectIn(data, spans[0]).value("message").toString(),
                      SseParser::format({}, data));
            return;
        }
        bool nullUsage = false;
        if (usage.found() && data.at(usage.begin) == '{') {
            readChatUsage(objectIn(data, usage), &m_usage);
            if (!m_clientWantsUsage) {
                QByteArray c = choices.found()
                                   ? data.mid(choices.begin, choices.end - choices.begin)
                                   : QByteArray();
                if (c.replace(' ', "").replace('\n', "") == "[]" || c.isEmpty())
                    return; // the usage-only chunk the client did not ask for
                nullUsage = true;
            }
        } else if (carriesOutput(data)) {
            noteDelta();
        }
        // The later span first, so that the earlier one's offsets still hold.
        if (nullUsage && usage.begin > model.begin)
            data.replace(usage.begin, usage.end - usage.begin, "null");
        replaceStringAt(data, model, m_quotedModel);
        if (nullUsage && usage.begin < model.begin)
            data.replace(usage.begin, usage.end - usage.begin, "null");
        out->append(SseParser::format({}, data));
    }

    QByteArray tail() const override { return QByteArrayLiteral("data: [DONE]\n\n"); }

    QByteArray errorEvent(const QString &message, const QString &type) const override
    {
        return openAiErrorEvent(message, type);
    }

private:
    bool m_clientWantsUsage = false;
};

// --- responses, both sides --------------------------------------------------------------------

class ResponsesRelay : public PassThroughRelay
{
public:
    using PassThroughRelay::PassThroughRelay;

    QString prepare(const QJsonObject &clientBody, const QString &upstreamModel) override
    {
        m_upstreamBody = compact(passThrough(clientBody, upstreamModel,
                                             estimatePromptTokens(clientBody.value("input"))));
        return {};
    }

    bool convertBody(const QByteArray &upstream, QByteArray *client) override
    {
        Answer a;
        if (!readAnswer(upstream, "output", &a))
            return false;
        if (const QJsonObject usage = objectIn(upstream, a.usage); !usage.isEmpty())
            readResponsesUsage(usage, &m_usage);
        *client = upstream;
        replaceStringAt(*client, a.model, m_quotedModel);
        return true;
    }

    void onEvent(const SseEvent &event, QByteArray *out) override
    {
        if (event.comment || m_finished)
            return;
        QByteArray data = event.data;
        QByteArray type = event.event;
        if (type.isEmpty()) {
            const JsonScan::Span t = JsonScan::find(data, {"type"});
            if (t.found())
                type = data.mid(t.begin + 1, t.end - t.begin - 2);
        }
        if (const JsonScan::Span seq = JsonScan::find(data, {"sequence_number"}); seq.found())
            m_sequence = data.mid(seq.begin, seq.end - seq.begin).toLongLong();
        if (type.startsWith("response.")) {
            JsonScan::replaceString(data, {"response", "model"}, m_quotedModel);
            if (type == "response.completed" || type == "response.incomplete" ||
                type == "response.failed") {
                readUsage(data, {"response", "usage"});
                m_finished = true;
                if (type == "response.failed")
                    m_streamError = QStringLiteral("the upstream reported the response failed");
                m_tail = SseParser::format(event.event, data);
                return;
            }
            if (type.endsWith(".delta"))
                noteDelta();
        } else if (type == "error") {
            holdError(parseObject(data).value("message").toString(),
                      SseParser::format(event.event, data));
            return;
        }
        out->append(SseParser::format(event.event, data));
    }

    QByteArray tail() const override { return m_tail; }

    QByteArray errorEvent(const QString &message, const QString &type) const override
    {
        return SseParser::format("error",
                                 compact(QJsonObject{{"type", "error"},
                                                     {"code", type},
                                                     {"message", message},
                                                     {"param", QJsonValue::Null},
                                                     {"sequence_number", m_sequence + 1}}));
    }

private:
    void readUsage(const QByteArray &json, std::initializer_list<QByteArrayView> path)
    {
        if (const QJsonObject usage = objectAt(json, path); !usage.isEmpty())
            readResponsesUsage(usage, &m_usage);
    }

    QByteArray m_tail;
    qint64 m_sequence = 0;
};

// --- messages, both sides ---------------------------------------------------------------------

class MessagesRelay : public PassThroughRelay
{
public:
    using PassThroughRelay::PassThroughRelay;

    QString prepare(const QJsonObject &clientBody, const QString &upstreamModel) override
    {
        m_upstreamBody = compact(passThrough(clientBody, upstreamModel,
                                             estimatePromptTokens(clientBody.value("messages")) +
                                                 estimatePromptTokens(clientBody.value("system"))));
        return {};
    }

    bool convertBody(const QByteArray &upstream, QByteArray *client) override
    {
        Answer a;
        if (!readAnswer(upstream, "content", &a))
            return false;
        mergeMessagesUsage(objectIn(upstream, a.usage), true);
        *client = upstream;
        replaceStringAt(*client, a.model, m_quotedModel);
        return true;
    }

    void onEvent(const SseEvent &event, QByteArray *out) override
    {
        if (event.comment || m_finished)
            return;
        QByteArray data = event.data;
        const QByteArray &type = event.event;
        if (type == "message_start") {
            JsonScan::replaceString(data, {"message", "model"}, m_quotedModel);
            mergeMessagesUsage(objectAt(data, {"message", "usage"}), false);
        } else if (type == "message_delta") {
            mergeMessagesUsage(objectAt(data, {"usage"}), true);
        } else if (type == "content_block_delta") {
            noteDelta();
        } else if (type == "message_stop") {
            m_finished = true;
            m_tail = SseParser::format(event.event, data);
            return;
        } else if (type == "error") {
            holdError(objectAt(data, {"error"}).value("message").toString(),
                      SseParser::format(event.event, data));
            return;
        }
        out->append(SseParser::format(event.event, data));
    }

    QByteArray tail() const override { return m_tail; }

    QByteArray errorEvent(const QString &message, const QString &type) const override
    {
        return SseParser::format(
            "error",
            compact(QJsonObject{{"type", "error"},
                                {"error", QJsonObject{{"type", type}, {"message", message}}}}));
    }

private:
    QByteArray m_tail;
};

} // namespace

qint64 TokenUsage::cost(const ModelPrice &price) const
{
    // Each product is below 2^126, so four of them fit in unsigned 128 bits.
    using U = unsigned __int128;
    auto term = [](qint64 count, qint64 unitPrice) {
        return count > 0 && unitPrice > 0 ? U(count) * U(unitPrice) : U(0);
    };
    const U total = term(input, price.input) + term(output, price.output) +
                    term(cacheRead, price.cacheRead) + term(cacheWrite, price.cacheWrite);
    if (total == 0)
        return 0;
    const U units = total / 1'000'000 + (total % 1'000'000 != 0 ? 1 : 0);
    return units > std::numeric_limits<qint64>::max() ? std::numeric_limits<qint64>::max()
                                                      : static_cast<qint64>(units);
}

Relay::Relay(Protocol client, Protocol upstream, QString clientModel)
    : m_client(client), m_upstream(upstream), m_clientModel(std::move(clientModel)),
      m_quotedModel(JsonScan::quote(m_clientModel.toUtf8()))
{
}

TokenUsage Relay::finalUsage(bool *estimated) const
{
    TokenUsage u = m_usage;
    *estimated = false;
    if (!u.haveInput) {
        u.input = qMax<qint64>(1, m_promptTokens);
        *estimated = true;
    }
    if (!u.haveOutput) {
        u.output = m_deltas;
        *estimated = true;
    }
    return u;
}

qint64 Relay::estimatePromptTokens(const QJsonValue &prompt)
{
    // About four characters of text a token, plus a few for each message's framing; images and
    // other binary payloads (data:, base64) and structural fields are not text.
    static const QSet<QString> skip = {"role", "type", "id",         "tool_call_id", "tool_use_id",
                                       "data", "url",  "media_type", "cache_control"};
    qint64 chars = 0;
    qint64 items = 0;
    std::function<void(const QJsonValue &)> walk = [&](const QJsonValue &v) {
        if (v.isString()) {
            chars += v.toString().size();
        } else if (v.isArray()) {
            for (const QJsonValue &e : v.toArray())
                walk(e);
        } else if (v.isObject()) {
            const QJsonObject o = v.toObject();
            if (o.contains(QLatin1String("role")))
                ++items;
            for (auto it = o.begin(); it != o.end(); ++it)
                if (!skip.contains(it.key()))
                    walk(it.value());
        }
    };
    walk(prompt);
    if (prompt.isString())
        items = 1;
    return (chars + 3) / 4 + 3 * items;
}

void Relay::mergeMessagesUsage(const QJsonObject &u, bool final)
{
    // message_start carries input and cache counters (output is a placeholder); message_delta
    // carries the final cumulative output and, in newer versions, the others again. Each
    // counter is taken once, as its latest report: never summed.
    auto take = [&](const char *name, qint64 *target) {
        const QJsonValue v = u.value(QLatin1String(name));
        if (v.isDouble()) {
            *target = qMax<qint64>(0, v.toInteger());
            return true;
        }
        return false;
    };
    if (take("input_tokens", &m_usage.input))
        m_usage.haveInput = true;
    take("cache_creation_input_tokens", &m_usage.cacheWrite);
    take("cache_read_input_tokens", &m_usage.cacheRead);
    // message_start's output_tokens is an early count, not the total.
    if (take("output_tokens", &m_usage.output) && final)
        m_usage.haveOutput = true;
}

std::unique_ptr<Relay> Relay::create(Protocol client, Protocol upstream, const QString &clientModel)
{
    if (client == upstream) {
        switch (client) {
        case Protocol::Chat:
            return std::unique_ptr<Relay>(new ChatRelay(client, upstream, clientModel));
        case Protocol::Responses:
            return std::unique_ptr<Relay>(new ResponsesRelay(client, upstream, clientModel));
        case Protocol::Messages:
            return std::unique_ptr<Relay>(new MessagesRelay(client, upstream, clientModel));
        }
    }
    if (client == Protocol::Chat && upstream == Protocol::Messages)
        return std::make_unique<ChatOverMessages>(clientModel);
    return nullptr; // not translatable yet
}
