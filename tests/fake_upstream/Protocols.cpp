#include "Protocols.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QtEndian>

#include <algorithm>
#include <cmath>

namespace {

constexpr const char *kFingerprint = "fp_fake0001";

QString partsText(const QJsonValue &content)
{
    if (content.isString())
        return content.toString();
    QStringList texts;
    for (const QJsonValue &part : content.toArray()) {
        const QJsonValue text = part.toObject().value(QLatin1String("text"));
        if (text.isString() && !text.toString().isEmpty())
            texts << text.toString();
    }
    return texts.join(QLatin1Char(' '));
}

// The messages of a request, as [role, content] objects, in order.
QJsonArray conversation(Protocol protocol, const QJsonObject &request)
{
    if (protocol != Protocol::Responses)
        return request.value(QLatin1String("messages")).toArray();
    const QJsonValue input = request.value(QLatin1String("input"));
    if (input.isString())
        return QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                      {QStringLiteral("content"), input}}};
    return input.toArray();
}

bool isUserMessage(Protocol protocol, const QJsonObject &message)
{
    if (message.value(QLatin1String("role")).toString() != QLatin1String("user"))
        return false;
    if (protocol == Protocol::Responses) {
        const QString type = message.value(QLatin1String("type")).toString();
        return type.isEmpty() || type == QLatin1String("message");
    }
    return true;
}

// The conversation ends with a user message that asks something (not a tool result).
bool endsWithUserText(Protocol protocol, const QJsonObject &request, QString *text)
{
    const QJsonArray messages = conversation(protocol, request);
    if (messages.isEmpty())
        return false;
    const QJsonObject last = messages.last().toObject();
    if (!isUserMessage(protocol, last))
        return false;
    const QJsonValue content = last.value(QLatin1String("content"));
    if (protocol == Protocol::Messages && content.isArray()) {
        for (const QJsonValue &block : content.toArray())
            if (block.toObject().value(QLatin1String("type")).toString() ==
                QLatin1String("tool_result"))
                return false;
    }
    *text = partsText(content);
    return true;
}

qint64 countTextIn(const QJsonValue &value)
{
    qint64 words = 0;
    if (value.isObject()) {
        const QJsonObject object = value.toObject();
        for (auto it = object.begin(); it != object.end(); ++it) {
            if (it->isString()) {
                if (it.key() == QLatin1String("content") || it.key() == QLatin1String("text"))
                    words += countWords(it->toString());
            } else {
                words += countTextIn(*it);
            }
        }
    } else if (value.isArray()) {
        for (const QJsonValue &item : value.toArray())
            words += countTextIn(item);
    }
    return words;
}

QJsonArray requestTools(const QJsonObject &request)
{
    return request.value(QLatin1String("tools")).toArray();
}

// The tool named `wanted` (empty: the first tool with a name), and the schema of its arguments.
bool findTool(Protocol protocol, const QJsonObject &request, const QString &wanted, QString *name,
              QJsonObject *schema)
{
    for (const QJsonValue &value : requestTools(request)) {
        QJsonObject tool = value.toObject();
        if (protocol == Protocol::Chat)
            tool = tool.value(QLatin1String("function")).toObject();
        const QString toolName = tool.value(QLatin1String("name")).toString();
        if (toolName.isEmpty() || (!wanted.isEmpty() && toolName != wanted))
            continue;
        *name = toolName;
        *schema = tool.value(protocol == Protocol::Messages ? QLatin1String("input_schema")
                                                            : QLatin1String("parameters"))
                      .toObject();
        return true;
    }
    return false;
}

// The tool a request forces: messages {"type":"tool","name"}, chat
// {"type":"function","function":{"name"}}; empty when none is forced.
QString forcedTool(Protocol protocol, const QJsonObject &request)
{
    const QJsonObject choice = request.value(QLatin1String("tool_choice")).toObject();
    const QString type = choice.value(QLatin1String("type")).toString();
    if (protocol == Protocol::Messages && type == QLatin1String("tool"))
        return choice.value(QLatin1String("name")).toString();
    if (protocol == Protocol::Chat && type == QLatin1String("function"))
        return choice.value(QLatin1String("function"))
            .toObject()
            .value(QLatin1String("name"))
            .toString();
    return {};
}

// The schema of a json_schema answer format (chat response_format, responses text.format);
// false when the request asks for no such format or its schema is empty.
bool answerSchema(Protocol protocol, const QJsonObject &request, QJsonObject *schema)
{
    QJsonObject format;
    if (protocol == Protocol::Chat) {
        format = request.value(QLatin1String("response_format")).toObject();
        *schema = format.value(QLatin1String("json_schema"))
                      .toObject()
                      .value(QLatin1String("schema"))
                      .toObject();
    } else if (protocol == Protocol::Responses) {
        format = request.value(QLatin1String("text"))
                     .toObject()
                     .value(QLatin1String("format"))
                     .toObject();
        *schema = format.value(QLatin1String("schema")).toObject();
    }
    return format.value(QLatin1String("type")).toString() == QLatin1String("json_schema") &&
           !schema->isEmpty();
}

// --------------------------------------------------------------- JSON schema instances

constexpr double kCertain = -0.000001; // the logprob of a piece with no alternative
constexpr int kMaxSchemaDepth = 32;
constexpr qsizetype kMaxSchemaPieces = 100000;

double sixDecimals(double x)
{
    return std::round(x * 1e6) / 1e6;
}

quint64 draw(const QString &seed, const QString &path)
{
    QCryptographicHash hash(QCryptographicHash::Sha256);
    hash.addData(seed.toUtf8());
    hash.addData(QByteArrayView("\0", 1));
    hash.addData(path.toUtf8());
    return qFromBigEndian<quint64>(hash.result().constData());
}

QString jsonText(const QJsonValue &value)
{
    return QString::fromUtf8(Json::fromQt(value).toJson());
}

// A number without trailing zeros: 0.25, 1, -3.5.
QString decimal(double value, int decimals)
{
    QString text = QString::number(value, 'f', decimals);
    if (text.contains(QLatin1Char('.'))) {
        while (text.endsWith(QLatin1Char('0')))
            text.chop(1);
        if (text.endsWith(QLatin1Char('.')))
            text.chop(1);
    }
    return text == QLatin1String("-0") ? QStringLiteral("0") : text;
}

class SchemaWriter
{
public:
    explicit SchemaWriter(QString seed) : m_seed(std::move(seed)) {}

    SchemaInstance out;

    void value(const QJsonObject &schema, const QString &path, int depth)
    {
        if (depth > kMaxSchemaDepth || out.pieces.size() > kMaxSchemaPieces)
            return piece(QStringLiteral("null"));
        if (schema.contains(QLatin1String("const")))
            return piece(jsonText(schema.value(QLatin1String("const"))));
        const QJsonArray values = schema.value(QLatin1String("enum")).toArray();
        if (!values.isEmpty()) {
            QStringList texts;
            for (const QJsonValue &v : values)
                texts << jsonText(v);
            return choose(texts, path);
        }
        for (const char *branches : {"anyOf", "oneOf"}) {
            const QJsonArray list = schema.value(QLatin1String(branches)).toArray();
            if (!list.isEmpty())
                return value(list.first().toObject(), path, depth + 1);
        }
        const QString type = typeOf(schema);
        if (type == QLatin1String("object"))
            return object(schema, path, depth);
        if (type == QLatin1String("array"))
            return array(schema, path, depth);
        if (type == QLatin1String("boolean"))
            return choose({QStringLiteral("true"), QStringLiteral("false")}, path);
        if (type == QLatin1String("integer"))
            return integer(schema, path);
        if (type == QLatin1String("number"))
            return number(schema, path);
        if (type == QLatin1String("null"))
            return piece(QStringLiteral("null"));
        piece(QString::fromUtf8(Json(QStringLiteral("text-%1").arg(draw(m_seed, path) % 0x10000000,
                                                                   7, 16, QLatin1Char('0')))
                                    .toJson()));
    }

private:
    void piece(const QString &text)
    {
        out.pieces << text;
        out.logprobs << PieceLogprobs{kCertain, {{text, kCertain}}};
    }

    // One of the alternatives, as one piece that has them all as its top alternatives.
    void choose(const QStringList &alternatives, const QString &path)
    {
        const qsizetype n = alternatives.size();
        const qsizetype chosen = qsizetype(draw(m_seed, path) % quint64(n));
        QList<double> weights(n, 0.0);
        double highest = 0;
        for (qsizetype i = 0; i < n; ++i) {
            if (i == chosen)
                continue;
            weights[i] = 1 + double(draw(m_seed, path + QStringLiteral("#%1").arg(i)) % 64);
            highest = qMax(highest, weights[i]);
        }
        weights[chosen] =
            highest + 1 + double(draw(m_seed, path + QStringLiteral("#%1").arg(chosen)) % 64);
        double sum = 0;
        for (double w : weights)
            sum += w;
        PieceLogprobs lp;
        for (qsizetype i = 0; i < n; ++i)
            lp.top << qMakePair(alternatives.at(i), sixDecimals(std::log(weights.at(i) / sum)));
        std::stable_sort(lp.top.begin(), lp.top.end(),
                         [](const auto &a, const auto &b) { return a.second > b.second; });
        lp.logprob = sixDecimals(std::log(weights.at(chosen) / sum));
        out.pieces << alternatives.at(chosen);
        out.logprobs << lp;
    }

    static QString typeOf(const QJsonObject &schema)
    {
        const QJsonValue type = schema.value(QLatin1String("type"));
        if (type.isString())
            return type.toString();
        if (type.isArray()) {
            for (const QJsonValue &t : type.toArray())
                if (t.toString() != QLatin1String("null"))
                    return t.toString();
            return QStringLiteral("null");
        }
        if (schema.contains(QLatin1String("properties")) ||
            schema.contains(QLatin1String("required")) ||
            schema.contains(QLatin1String("additionalProperties")))
            return QStringLiteral("object");
        if (schema.contains(QLatin1String("items")))
            return QStringLiteral("array");
        return QStringLiteral("string");
    }

    void object(const QJsonObject &schema, const QString &path, int depth)
    {
        const QJsonObject properties = schema.value(QLatin1String("properties")).toObject();
        QStringList names = properties.keys();
        for (const QJsonValue &r : schema.value(QLatin1String("required")).toArray())
            if (r.isString() && !names.contains(r.toString()))
                names << r.toString();
        piece(QStringLiteral("{"));
        for (qsizetype i = 0; i < names.size(); ++i) {
            if (i > 0)
                piece(QStringLiteral(","));
            piece(QString::fromUtf8(Json(names.at(i)).toJson()));
            piece(QStringLiteral(":"));
            value(properties.value(names.at(i)).toObject(), path + QLatin1Char('/') + names.at(i),
                  depth + 1);
        }
        piece(QStringLiteral("}"));
    }

    void array(const QJsonObject &schema, const QString &path, int depth)
    {
        const int lo = qBound(0, schema.value(QLatin1String("minItems")).toInt(1), 8);
        const int hi = qBound(lo, schema.value(QLatin1String("maxItems")).toInt(qMax(lo, 3)), 8);
        const int count =
            lo + int(draw(m_seed, path + QStringLiteral("#n")) % quint64(hi - lo + 1));
        const QJsonObject items = schema.value(QLatin1String("items")).toObject();
        piece(QStringLiteral("["));
        for (int i = 0; i < count; ++i) {
            if (i > 0)
                piece(QStringLiteral(","));
            value(items, path + QStringLiteral("/%1").arg(i), depth + 1);
        }
        piece(QStringLiteral("]"));
    }

    // [lo, hi] from minimum/exclusiveMinimum and maximum/exclusiveMaximum; `span` when only one
    // side is given, [0, span] when neither is.
    static std::pair<double, double> range(const QJsonObject &schema, double span, double step)
    {
        const QJsonValue min = schema.value(QLatin1String("minimum"));
        const QJsonValue max = schema.value(QLatin1String("maximum"));
        const QJsonValue xmin = schema.value(QLatin1String("exclusiveMinimum"));
        const QJsonValue xmax = schema.value(QLatin1String("exclusiveMaximum"));
        const bool hasLo = min.isDouble() || xmin.isDouble();
        const bool hasHi = max.isDouble() || xmax.isDouble();
        double lo = min.isDouble() ? min.toDouble() : xmin.toDouble() + step;
        double hi = max.isDouble() ? max.toDouble() : xmax.toDouble() - step;
        if (!hasLo)
            lo = hasHi ? hi - span : 0;
        if (!hasHi)
            hi = lo + span;
        // Bounded so that the arithmetic below stays exact.
        lo = qBound(-1e15, lo, 1e15);
        hi = qBound(lo, hi, 1e15);
        return {lo, hi};
    }

    void integer(const QJsonObject &schema, const QString &path)
    {
        const auto [lo, hi] = range(schema, 100, 1);
        const double first = std::ceil(lo);
        const double count = std::floor(hi) - first + 1;
        const double offset = count >= 1 ? double(draw(m_seed, path) % quint64(count)) : 0.0;
        piece(decimal(first + offset, 0));
    }

    void number(const QJsonObject &schema, const QString &path)
    {
        const auto [lo, hi] = range(schema, 1, 0.0001);
        const double v = lo + (hi - lo) * double(draw(m_seed, path) % 10001) / 10000.0;
        piece(decimal(qBound(lo, v, hi), 4));
    }

    QString m_seed;
};

QString argumentKey(const QJsonObject &schema)
{
    const QJsonValue required = schema.value(QLatin1String("required")).toArray().first();
    if (required.isString())
        return required.toString();
    const QJsonObject properties = schema.value(QLatin1String("properties")).toObject();
    if (!properties.isEmpty())
        return properties.begin().key();
    return QStringLiteral("input");
}

bool jsonMode(Protocol protocol, const QJsonObject &request)
{
    QString type;
    if (protocol == Protocol::Chat)
        type = request.value(QLatin1String("response_format"))
                   .toObject()
                   .value(QLatin1String("type"))
                   .toString();
    else if (protocol == Protocol::Responses)
        type = request.value(QLatin1String("text"))
                   .toObject()
                   .value(QLatin1String("format"))
                   .toObject()
                   .value(QLatin1String("type"))
                   .toString();
    return type == QLatin1String("json_object") || type == QLatin1String("json_schema");
}

qint64 maxOutputTokens(Protocol protocol, const QJsonObject &request)
{
    QJsonValue v;
    if (protocol == Protocol::Chat) {
        v = request.value(QLatin1String("max_completion_tokens"));
        if (!v.isDouble())
            v = request.value(QLatin1String("max_tokens"));
    } else if (protocol == Protocol::Responses) {
        v = request.value(QLatin1String("max_output_tokens"));
    } else {
        v = request.value(QLatin1String("max_tokens"));
    }
    return v.isDouble() ? qint64(v.toDouble()) : 0;
}

QByteArray cutJson(const QByteArray &event)
{
    const qsizetype start = event.indexOf("data: ");
    if (start < 0)
        return event.left(event.size() / 2);
    const qsizetype from = start + 6;
    const QByteArray json = event.mid(from, event.size() - from - 2);
    return event.left(from) + json.left(json.size() / 2) + "\n\n";
}

// ---------------------------------------------------------------- chat completions

class ChatWriter : public ProtocolWriter
{
public:
    explicit ChatWriter(Generation g)
        : ProtocolWriter(std::move(g)), m_id(fakeId("chatcmpl-", m_gen.seq)),
          m_callId(fakeId("call_", m_gen.seq))
    {
    }

    QByteArray body() override
    {
        Json message = Json::object().add("role", "assistant");
        if (m_gen.toolCall) {
            message.add("content", nullptr);
            message.add("tool_calls",
                        Json::array().push(
                            Json::object()
                                .add("id", m_callId)
                                .add("type", "function")
                                .add("function", Json::object()
                                                     .add("name", m_gen.toolName)
                                                     .add("arguments", m_gen.toolArguments))));
        } else {
            message.add("content", m_gen.text);
        }
        message.add("refusal", nullptr).add("annotations", Json::array());
        return Json::object()
            .add("id", m_id)
            .add("object", "chat.completion")
            .add("created", m_gen.created)
            .add("model", m_gen.model)
            .add("choices", Json::array().push(Json::object()
                                                   .add("index", 0)
                                                   .add("message", std::move(message))
                                                   .add("logprobs", logprobs(0, pieceCount()))
                                                   .add("finish_reason", finishReason())))
            .add("usage", usage())
            .add("service_tier", "default")
            .add("system_fingerprint", kFingerprint)
            .toJson();
    }

    QList<QByteArray> preamble() override
    {
        Json delta = Json::object().add("role", "assistant");
        if (m_gen.toolCall) {
            delta.add("content", nullptr);
            delta.add(
                "tool_calls",
                Json::array().push(
                    Json::object()
                        .add("index", 0)
                        .add("id", m_callId)
                        .add("type", "function")
                        .add("function",
                             Json::object().add("name", m_gen.toolName).add("arguments", ""))));
        } else {
            delta.add("content", "");
        }
        delta.add("refusal", nullptr);
        return {chunk(std::move(delta), nullptr)};
    }

    QByteArray piece(int index) override
    {
        const QString &text = m_gen.pieces.at(index);
        if (!m_gen.toolCall)
            return chunk(Json::object().add("content", text), nullptr, logprobs(index, index + 1));
        return chunk(
            Json::object().add(
                "tool_calls",
                Json::array().push(Json::object()
                                       .add("index", 0)
                                       .add("function", Json::object().add("arguments", text)))),
            nullptr);
    }

    QList<QByteArray> epilogue() override
    {
        QList<QByteArray> events{chunk(Json::object(), finishReason())};
        if (m_gen.includeUsage)
            events << sse(envelope().add("choices", Json::array()).add("usage", usage()).toJson());
        events << sse("[DONE]");
        return events;
    }

    QByteArray errorEvent(const QString &message) override
    {
        return sse(Json::object()
                       .add("error", Json::object()
                                         .add("message", message)
                                         .add("type", "server_error")
                                         .add("param", nullptr)
                                         .add("code", nullptr))
                       .toJson());
    }

private:
    const char *finishReason() const
    {
        return m_gen.toolCall ? "tool_calls" : m_gen.truncated ? "length" : "stop";
    }

    Json envelope() const
    {
        return Json::object()
            .add("id", m_id)
            .add("object", "chat.completion.chunk")
            .add("created", m_gen.created)
            .add("model", m_gen.model)
            .add("service_tier", "default")
            .add("system_fingerprint", kFingerprint);
    }

    int pieceCount() const { return int(m_gen.pieces.size()); }

    // choices[0].logprobs of pieces [from, to): OpenAI's {"content": [...], "refusal": null};
    // null when the request did not ask for them or the answer is a tool call.
    Json logprobs(int from, int to) const
    {
        if (!m_gen.logprobs || m_gen.toolCall)
            return nullptr;
        auto entry = [](const QString &token, double logprob) {
            Json bytes = Json::array();
            for (char c : token.toUtf8())
                bytes.push(int(static_cast<unsigned char>(c)));
            return Json::object()
                .add("token", token)
                .add("logprob", Json::raw(QByteArray::number(logprob, 'f', 6)))
                .add("bytes", std::move(bytes));
        };
        Json content = Json::array();
        for (int i = from; i < to; ++i) {
            const PieceLogprobs lp = m_gen.pieceLogprobs.value(i);
            Json top = Json::array();
            for (const auto &[token, logprob] : lp.top.mid(0, m_gen.topLogprobs))
                top.push(entry(token, logprob));
            content.push(entry(m_gen.pieces.at(i), lp.logprob).add("top_logprobs", std::move(top)));
        }
        return Json::object().add("content", std::move(content)).add("refusal", nullptr);
    }

    QByteArray chunk(Json delta, Json finish, Json logprobs = nullptr) const
    {
        Json j = envelope().add("choices",
                                Json::array().push(Json::object()
                                                       .add("index", 0)
                                                       .add("delta", std::move(delta))
                                                       .add("logprobs", std::move(logprobs))
                                                       .add("finish_reason", std::move(finish))));
        if (m_gen.includeUsage)
            j.add("usage", nullptr);
        return sse(j.toJson());
    }

    Json usage() const
    {
        const qint64 prompt = m_gen.inputTokens + m_gen.cacheRead;
        return Json::object()
            .add("prompt_tokens", prompt)
            .add("completion_tokens", m_gen.outputTokens())
            .add("total_tokens", prompt + m_gen.outputTokens())
            .add("prompt_tokens_details",
                 Json::object().add("cached_tokens", m_gen.cacheRead).add("audio_tokens", 0))
            .add("completion_tokens_details", Json::object()
                                                  .add("reasoning_tokens", 0)
                                                  .add("audio_tokens", 0)
                                                  .add("accepted_prediction_tokens", 0)
                                                  .add("rejected_prediction_tokens", 0));
    }

    QByteArray m_id;
    QByteArray m_callId;
};

// ---------------------------------------------------------------- responses

class ResponsesWriter : public ProtocolWriter
{
public:
    explicit ResponsesWriter(Generation g)
        : ProtocolWriter(std::move(g)), m_id(fakeId("resp_", m_gen.seq)),
          m_itemId(fakeId(m_gen.toolCall ? "fc_" : "msg_", m_gen.seq)),
          m_callId(fakeId("call_", m_gen.seq))
    {
    }

    QByteArray body() override { return response(finalStatus(), true).toJson(); }

    QList<QByteArray> preamble() override
    {
        QList<QByteArray> events;
        events << event("response.created",
                        Json::object().add("response", response("in_progress", false)));
        events << event("response.in_progress",
                        Json::object().add("response", response("in_progress", false)));
        events << event("response.output_item.added",
                        Json::object().add("output_index", 0).add("item", item(false)));
        if (!m_gen.toolCall)
            events << event("response.content_part.added", Json::object()
                                                               .add("item_id", m_itemId)
                                                               .add("output_index", 0)
                                                               .add("content_index", 0)
                                                               .add("part", part(QString())));
        return events;
    }

    QByteArray piece(int index) override
    {
        const QString &text = m_gen.pieces.at(index);
        if (m_gen.toolCall)
            return event(
                "response.function_call_arguments.delta",
                Json::object().add("item_id", m_itemId).add("output_index", 0).add("delta", text));
        return event("response.output_text.delta", Json::object()
                                                       .add("item_id", m_itemId)
                                                       .add("output_index", 0)
                                                       .add("content_index", 0)
                                                       .add("delta", text)
                                                       .add("logprobs", Json::array()));
    }

    QList<QByteArray> epilogue() override
    {
        QList<QByteArray> events;
        if (m_gen.toolCall) {
            events << event("response.function_call_arguments.done",
                            Json::object()
                                .add("item_id", m_itemId)
                                .add("output_index", 0)
                                .add("name", m_gen.toolName)
                                .add("arguments", m_gen.toolArguments));
        } else {
            events << event("response.output_text.done", Json::object()
                                                             .add("item_id", m_itemId)
                                                             .add("output_index", 0)
                                                             .add("content_index", 0)
                                                             .add("text", m_gen.text)
                                                             .add("logprobs", Json::array()));
            events << event("response.content_part.done", Json::object()
                                                              .add("item_id", m_itemId)
                                                              .add("output_index", 0)
                                                              .add("content_index", 0)
                                                              .add("part", part(m_gen.text)));
        }
        events << event("response.output_item.done",
                        Json::object().add("output_index", 0).add("item", item(true)));
        const char *status = finalStatus();
        events << event(m_gen.truncated ? "response.incomplete" : "response.completed",
                        Json::object().add("response", response(status, true)));
        return events;
    }

    QByteArray errorEvent(const QString &message) override
    {
        return event("error", Json::object()
                                  .add("code", "server_error")
                                  .add("message", message)
                                  .add("param", nullptr));
    }

private:
    // Event payloads: {"type", "sequence_number", ...fields}.
    QByteArray event(const char *type, Json fields)
    {
        return sse(type, Json::object()
                             .add("type", type)
                             .add("sequence_number", m_sequence++)
                             .extend(std::move(fields))
                             .toJson());
    }

    const char *finalStatus() const { return m_gen.truncated ? "incomplete" : "completed"; }

    Json part(const QString &text) const
    {
        return Json::object()
            .add("type", "output_text")
            .add("annotations", Json::array())
            .add("logprobs", Json::array())
            .add("text", text);
    }

    Json item(bool done) const
    {
        const char *status = !done ? "in_progress" : m_gen.truncated ? "incomplete" : "completed";
        if (m_gen.toolCall)
            return Json::object()
                .add("id", m_itemId)
                .add("type", "function_call")
                .add("status", status)
                .add("arguments", done ? m_gen.toolArguments : QString())
                .add("call_id", m_callId)
                .add("name", m_gen.toolName);
        Json content = Json::array();
        if (done)
            content.push(part(m_gen.text));
        return Json::object()
            .add("id", m_itemId)
            .add("type", "message")
            .add("status", status)
            .add("content", std::move(content))
            .add("role", "assistant");
    }

    Json echo(const char *key, Json fallback) const
    {
        const QJsonValue v = m_gen.request.value(QLatin1String(key));
        return v.isUndefined() ? std::move(fallback) : Json::fromQt(v);
    }

    Json response(const char *status, bool done) const
    {
        Json output = Json::array();
        if (done)
            output.push(item(true));
        Json incomplete = nullptr;
        if (done && m_gen.truncated)
            incomplete = Json::object().add("reason", "max_output_tokens");
        Json usage = nullptr;
        if (done) {
            const qint64 input = m_gen.inputTokens + m_gen.cacheRead;
            usage = Json::object()
                        .add("input_tokens", input)
                        .add("input_tokens_details",
                             Json::object().add("cached_tokens", m_gen.cacheRead))
                        .add("output_tokens", m_gen.outputTokens())
                        .add("output_tokens_details", Json::object().add("reasoning_tokens", 0))
                        .add("total_tokens", input + m_gen.outputTokens());
        }
        return Json::object()
            .add("id", m_id)
            .add("object", "response")
            .add("created_at", m_gen.created)
            .add("status", status)
            .add("background", false)
            .add("error", nullptr)
            .add("incomplete_details", std::move(incomplete))
            .add("instructions", echo("instructions", nullptr))
            .add("max_output_tokens", echo("max_output_tokens", nullptr))
            .add("model", m_gen.model)
            .add("output", std::move(output))
            .add("parallel_tool_calls", echo("parallel_tool_calls", true))
            .add("previous_response_id", echo("previous_response_id", nullptr))
            .add("reasoning", Json::object().add("effort", nullptr).add("summary", nullptr))
            .add("service_tier", "default")
            .add("store", echo("store", true))
            .add("temperature", echo("temperature", Json::raw("1.0")))
            .add("text",
                 echo("text", Json::object().add("format", Json::object().add("type", "text"))))
            .add("tool_choice", echo("tool_choice", "auto"))
            .add("tools", echo("tools", Json::array()))
            .add("top_p", echo("top_p", Json::raw("1.0")))
            .add("truncation", echo("truncation", "disabled"))
            .add("usage", std::move(usage))
            .add("user", echo("user", nullptr))
            .add("metadata", echo("metadata", Json::object()));
    }

    QByteArray m_id;
    QByteArray m_itemId;
    QByteArray m_callId;
    qint64 m_sequence = 0;
};

// ---------------------------------------------------------------- messages

class MessagesWriter : public ProtocolWriter
{
public:
    explicit MessagesWriter(Generation g)
        : ProtocolWriter(std::move(g)), m_id(fakeId("msg_01", m_gen.seq)),
          m_toolId(fakeId("toolu_01", m_gen.seq))
    {
    }

    QByteArray body() override
    {
        Json block;
        if (m_gen.toolCall)
            block = Json::object()
                        .add("type", "tool_use")
                        .add("id", m_toolId)
                        .add("name", m_gen.toolName)
                        .add("input", Json::fromQt(m_gen.toolInput));
        else
            block = Json::object().add("type", "text").add("text", m_gen.text);
        return message(Json::array().push(std::move(block)), stopReason(), m_gen.outputTokens())
            .toJson();
    }

    QList<QByteArray> preamble() override
    {
        Json block;
        if (m_gen.toolCall)
            block = Json::object()
                        .add("type", "tool_use")
                        .add("id", m_toolId)
                        .add("name", m_gen.toolName)
                        .add("input", Json::object());
        else
            block = Json::object().add("type", "text").add("text", "");
        return {
            sse("message_start", Json::object()
                                     .add("type", "message_start")
                                     .add("message", message(Json::array(), nullptr, 1))
                                     .toJson()),
            sse("content_block_start", Json::object()
                                           .add("type", "content_block_start")
                                           .add("index", 0)
                                           .add("content_block", std::move(block))
                                           .toJson()),
            sse("ping", Json::object().add("type", "ping").toJson()),
        };
    }

    QByteArray piece(int index) override
    {
        const QString &text = m_gen.pieces.at(index);
        Json delta = m_gen.toolCall
                         ? Json::object().add("type", "input_json_delta").add("partial_json", text)
                         : Json::object().add("type", "text_delta").add("text", text);
        return sse("content_block_delta", Json::object()
                                              .add("type", "content_block_delta")
                                              .add("index", 0)
                                              .add("delta", std::move(delta))
                                              .toJson());
    }

    QList<QByteArray> epilogue() override
    {
        Json usage = Json::object();
        if (m_gen.fullDeltaUsage)
            usage.add("input_tokens", m_gen.inputTokens)
                .add("cache_creation_input_tokens", m_gen.cacheWrite)
                .add("cache_read_input_tokens", m_gen.cacheRead);
        usage.add("output_tokens", m_gen.outputTokens());
        return {
            sse("content_block_stop",
                Json::object().add("type", "content_block_stop").add("index", 0).toJson()),
            sse("message_delta", Json::object()
                                     .add("type", "message_delta")
                                     .add("delta", Json::object()
                                                       .add("stop_reason", stopReason())
                                                       .add("stop_sequence", nullptr))
                                     .add("usage", std::move(usage))
                                     .toJson()),
            sse("message_stop", Json::object().add("type", "message_stop").toJson()),
        };
    }

    QByteArray errorEvent(const QString &message) override
    {
        return sse("error",
                   Json::object()
                       .add("type", "error")
                       .add("error",
                            Json::object().add("type", "overloaded_error").add("message", message))
                       .toJson());
    }

private:
    const char *stopReason() const
    {
        return m_gen.toolCall ? "tool_use" : m_gen.truncated ? "max_tokens" : "end_turn";
    }

    Json message(Json content, Json stopReason, qint64 outputTokens) const
    {
        return Json::object()
            .add("id", m_id)
            .add("type", "message")
            .add("role", "assistant")
            .add("model", m_gen.model)
            .add("content", std::move(content))
            .add("stop_reason", std::move(stopReason))
            .add("stop_sequence", nullptr)
            .add("usage", Json::object()
                              .add("input_tokens", m_gen.inputTokens)
                              .add("cache_creation_input_tokens", m_gen.cacheWrite)
                              .add("cache_read_input_tokens", m_gen.cacheRead)
                              .add("output_tokens", outputTokens));
    }

    QByteArray m_id;
    QByteArray m_toolId;
};

} // namespace

QString lastUserText(Protocol protocol, const QJsonObject &request)
{
    const QJsonArray messages = conversation(protocol, request);
    for (auto it = messages.end(); it != messages.begin();) {
        --it;
        const QJsonObject message = it->toObject();
        if (!isUserMessage(protocol, message))
            continue;
        const QString text = partsText(message.value(QLatin1String("content")));
        if (!text.isEmpty())
            return text;
    }
    return {};
}

qint64 countWords(const QString &text)
{
    qint64 words = 0;
    bool inWord = false;
    for (QChar c : text) {
        const bool space = c.isSpace();
        if (!space && !inWord)
            ++words;
        inWord = !space;
    }
    return words;
}

qint64 promptTokens(Protocol protocol, const QJsonObject &request)
{
    qint64 tokens = 0;
    for (const QJsonValue &message : conversation(protocol, request))
        tokens += 3 + countTextIn(message);
    const QJsonValue system = request.value(
        protocol == Protocol::Responses ? QLatin1String("instructions") : QLatin1String("system"));
    if (protocol != Protocol::Chat && !system.isUndefined() && !system.isNull())
        tokens += 3 + (system.isString() ? countWords(system.toString()) : countTextIn(system));
    return tokens;
}

QStringList splitPieces(const QString &text, int n)
{
    QList<uint> codePoints = text.toUcs4();
    while (codePoints.size() < n)
        codePoints.append(' ');
    QStringList pieces;
    pieces.reserve(n);
    const qsizetype length = codePoints.size();
    for (int i = 0; i < n; ++i) {
        const qsizetype from = length * i / n;
        const qsizetype to = length * (i + 1) / n;
        pieces << QString::fromUcs4(
            reinterpret_cast<const char32_t *>(codePoints.constData()) + from, to - from);
    }
    return pieces;
}

Generation makeGeneration(Protocol protocol, const QJsonObject &request,
                          const GenerationOptions &options, quint64 seq, qint64 created,
                          bool forceTool)
{
    Generation g;
    g.protocol = protocol;
    g.seq = seq;
    g.created = created;
    g.model = request.value(QLatin1String("model")).toString();
    g.request = request;
    g.includeUsage = request.value(QLatin1String("stream_options"))
                         .toObject()
                         .value(QLatin1String("include_usage"))
                         .toBool();
    g.inputTokens = promptTokens(protocol, request);
    g.cacheRead = options.cacheRead;
    g.cacheWrite = protocol == Protocol::Messages ? options.cacheWrite : 0;
    g.fullDeltaUsage = options.fullDeltaUsage;
    const int n = qMax(1, options.chunks);
    const QString userText = lastUserText(protocol, request);

    g.logprobs = protocol == Protocol::Chat && request.value(QLatin1String("logprobs")).toBool();
    g.topLogprobs = qBound(0, request.value(QLatin1String("top_logprobs")).toInt(0), 20);

    QJsonObject schema;
    // A forced tool is called with an instance of its schema, as the real services do.
    if (const QString forced = forcedTool(protocol, request);
        !forced.isEmpty() && options.tool != 0 &&
        findTool(protocol, request, forced, &g.toolName, &schema)) {
        g.toolCall = true;
        g.pieces = schemaInstance(schema, userText).pieces;
        g.toolArguments = g.pieces.join(QString());
        g.toolInput = QJsonDocument::fromJson(g.toolArguments.toUtf8()).object();
        g.text = g.toolArguments;
        return g;
    }
    QString asked;
    const bool userAsks = endsWithUserText(protocol, request, &asked);
    const bool hasTool = findTool(protocol, request, {}, &g.toolName, &schema);
    if (options.tool == 1 || forceTool)
        g.toolCall = true;
    else if (options.tool == -1)
        g.toolCall =
            hasTool && userAsks && asked.contains(QLatin1String("weather"), Qt::CaseInsensitive);
    if (g.toolCall) {
        if (!hasTool)
            g.toolName = QStringLiteral("fake_tool");
        const QByteArray arguments =
            Json::object().add(argumentKey(schema).toUtf8().constData(), userText).toJson();
        g.pieces = splitPieces(QString::fromUtf8(arguments), n);
        g.toolArguments = g.pieces.join(QString());
        g.toolInput = QJsonDocument::fromJson(arguments).object();
        g.text = g.toolArguments;
        return g;
    }

    QString text;
    if (options.text) {
        text = *options.text;
    } else if (answerSchema(protocol, request, &schema)) {
        SchemaInstance instance = schemaInstance(schema, userText);
        g.pieces = std::move(instance.pieces);
        g.pieceLogprobs = std::move(instance.logprobs);
    } else if (jsonMode(protocol, request)) {
        text = QString::fromUtf8(Json::object().add("echo", userText).toJson());
    } else {
        text = QStringLiteral("Echo: ") + userText;
    }
    if (g.pieces.isEmpty()) {
        g.pieces = splitPieces(text, n);
        for (const QString &piece : std::as_const(g.pieces))
            g.pieceLogprobs << PieceLogprobs{kCertain, {{piece, kCertain}}};
    }
    const qint64 limit = maxOutputTokens(protocol, request);
    if (limit > 0 && limit < g.pieces.size() && !options.ignoreMaxTokens) {
        g.pieces = g.pieces.mid(0, limit);
        g.pieceLogprobs = g.pieceLogprobs.mid(0, limit);
        g.truncated = true;
    }
    g.text = g.pieces.join(QString());
    return g;
}

SchemaInstance schemaInstance(const QJsonObject &schema, const QString &seed)
{
    SchemaWriter writer(seed);
    writer.value(schema, QString(), 0);
    return std::move(writer.out);
}

QByteArray fakeId(const char *prefix, quint64 seq)
{
    return QByteArray(prefix) + "fake" + QByteArray::number(seq).rightJustified(20, '0');
}

QByteArray errorBody(Protocol protocol, int status, const QString &message,
                     const QByteArray &requestId, const QByteArray &param, const QByteArray &code)
{
    if (protocol == Protocol::Messages) {
        const char *type = "invalid_request_error";
        switch (status) {
        case 401:
            type = "authentication_error";
            break;
        case 402:
            type = "billing_error";
            break;
        case 403:
            type = "permission_error";
            break;
        case 404:
            type = "not_found_error";
            break;
        case 413:
            type = "request_too_large";
            break;
        case 429:
            type = "rate_limit_error";
            break;
        case 529:
            type = "overloaded_error";
            break;
        default:
            if (status >= 500)
                type = "api_error";
        }
        return Json::object()
            .add("type", "error")
            .add("error", Json::object().add("type", type).add("message", message))
            .add("request_id", requestId)
            .toJson();
    }
    const char *type = status == 429   ? "requests"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    QByteArray errorCode = code;
    if (errorCode.isEmpty() && status == 429)
        errorCode = "rate_limit_exceeded";
    return Json::object()
        .add("error", Json::object()
                          .add("message", message)
                          .add("type", type)
                          .add("param", param.isEmpty() ? Json() : Json(param))
                          .add("code", errorCode.isEmpty() ? Json() : Json(errorCode)))
        .toJson();
}

std::unique_ptr<ProtocolWriter> ProtocolWriter::create(Generation generation)
{
    switch (generation.protocol) {
    case Protocol::Chat:
        return std::make_unique<ChatWriter>(std::move(generation));
    case Protocol::Responses:
        return std::make_unique<ResponsesWriter>(std::move(generation));
    case Protocol::Messages:
        return std::make_unique<MessagesWriter>(std::move(generation));
    }
    return nullptr;
}

QByteArray ProtocolWriter::brokenPiece(int index)
{
    return cutJson(piece(index));
}

QByteArray ProtocolWriter::sse(const QByteArray &data)
{
    return "data: " + data + "\n\n";
}

QByteArray ProtocolWriter::sse(const char *event, const QByteArray &data)
{
    return QByteArray("event: ") + event + "\ndata: " + data + "\n\n";
}
