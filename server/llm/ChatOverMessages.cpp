#include "ChatOverMessages.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>

namespace {

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

// Chat content (a string or an array of parts) as the text it carries.
QString textOf(const QJsonValue &content)
{
    if (content.isString())
        return content.toString();
    QString text;
    for (const QJsonValue &part : content.toArray())
        if (part.toObject().value("type").toString() == u"text")
            text += part.toObject().value("text").toString();
    return text;
}

// A chat image_url part as a messages image block.
QJsonObject imageBlock(const QJsonObject &part)
{
    const QString url = part.value("image_url")
                            .toObject()
                            .value("url")
                            .toString(part.value("image_url").toString());
    if (url.startsWith(QLatin1String("data:"))) {
        const qsizetype semi = url.indexOf(u';');
        const qsizetype comma = url.indexOf(u',');
        if (semi > 5 && comma > semi)
            return {{"type", "image"},
                    {"source", QJsonObject{{"type", "base64"},
                                           {"media_type", url.mid(5, semi - 5)},
                                           {"data", url.mid(comma + 1)}}}};
    }
    return {{"type", "image"}, {"source", QJsonObject{{"type", "url"}, {"url", url}}}};
}

} // namespace

ChatOverMessages::ChatOverMessages(const QString &clientModel)
    : Relay(Protocol::Chat, Protocol::Messages, clientModel)
{
    m_created = QDateTime::currentSecsSinceEpoch();
}

QString ChatOverMessages::finishReason(const QString &stopReason)
{
    if (stopReason == u"max_tokens")
        return QStringLiteral("length");
    if (stopReason == u"tool_use")
        return QStringLiteral("tool_calls");
    if (stopReason == u"refusal")
        return QStringLiteral("content_filter");
    return QStringLiteral("stop"); // end_turn, stop_sequence, pause_turn
}

QString ChatOverMessages::prepare(const QJsonObject &chat, const QString &upstreamModel)
{
    QJsonObject out{{"model", upstreamModel}};
    // An explicit null is the same as leaving a parameter out.
    const QJsonValue maxTokens = chat.value("max_completion_tokens").isDouble()
                                     ? chat.value("max_completion_tokens")
                                     : chat.value("max_tokens");
    out.insert("max_tokens", maxTokens.isDouble() ? maxTokens.toInteger() : kDefaultMaxTokens);
    if (chat.value("n").toInt(1) != 1)
        return QStringLiteral("n other than 1 is not supported for this model");

    QStringList system;
    QJsonArray messages;
    auto append = [&messages](const QString &role, const QJsonArray &blocks) {
        if (blocks.isEmpty())
            return;
        // Consecutive turns of one role become one turn (tool results after a tool call).
        if (!messages.isEmpty() && messages.last().toObject().value("role").toString() == role) {
            QJsonObject last = messages.last().toObject();
            QJsonArray content = last.value("content").toArray();
            for (const QJsonValue &b : blocks)
                content.append(b);
            last.insert("content", content);
            messages[messages.size() - 1] = last;
            return;
        }
        messages.append(QJsonObject{{"role", role}, {"content", blocks}});
    };
    const QJsonArray in = chat.value("messages").toArray();
    for (qsizetype i = 0; i < in.size(); ++i) {
        const QJsonObject m = in.at(i).toObject();
        const QString role = m.value("role").toString();
        const QJsonValue content = m.value("content");
        if (role == u"system" || role == u"developer") {
            system.append(textOf(content));
        } else if (role == u"user") {
            QJsonArray blocks;
            if (content.isString()) {
                blocks.append(QJsonObject{{"type", "text"}, {"text", content.toString()}});
            } else {
                for (const QJsonValue &p : content.toArray()) {
                    const QJsonObject part = p.toObject();
                    const QString type = part.value("type").toString();
                    if (type == u"text")
                        blocks.append(QJsonObject{{"type", "text"}, {"text", part.value("text")}});
                    else if (type == u"image_url")
                        blocks.append(imageBlock(part));
                    else
                        return QStringLiteral("messages[%1].content: parts of type '%2' are not "
                                              "supported for this model")
                            .arg(i)
                            .arg(type);
                }
            }
            append(QStringLiteral("user"), blocks);
        } else if (role == u"assistant") {
            QJsonArray blocks;
            const QString text = textOf(content);
            if (!text.isEmpty())
                blocks.append(QJsonObject{{"type", "text"}, {"text", text}});
            for (const QJsonValue &c : m.value("tool_calls").toArray()) {
                const QJsonObject call = c.toObject();
                const QJsonObject fn = call.value("function").toObject();
                const QJsonDocument args =
                    QJsonDocument::fromJson(fn.value("arguments").toString().toUtf8());
                blocks.append(
                    QJsonObject{{"type", "tool_use"},
                                {"id", call.value("id")},
                                {"name", fn.value("name")},
                                {"input", args.isObject() ? args.object() : QJsonObject{}}});
            }
            append(QStringLiteral("assistant"), blocks);
        } else if (role == u"tool") {
            append(QStringLiteral("user"),
                   QJsonArray{QJsonObject{{"type", "tool_result"},
                                          {"tool_use_id", m.value("tool_call_id")},
                                          {"content", textOf(content)}}});
        }
    }
    out.insert("messages", messages);

    const QJsonObject format = chat.value("response_format").toObject();
    const QString formatType = format.value("type").toString();
    if (formatType == u"json_object") {
        system.append(QStringLiteral("Respond with a single valid JSON object and nothing else."));
    } else if (formatType == u"json_schema") {
        const QJsonObject schema =
            format.value("json_schema").toObject().value("schema").toObject();
        system.append(QStringLiteral("Respond with a single valid JSON value matching this JSON "
                                     "schema, and nothing else: %1")
                          .arg(QString::fromUtf8(compact(schema))));
    }
    if (!system.isEmpty())
        out.insert("system", system.join(QStringLiteral("\n\n")));

    if (chat.value("temperature").isDouble()) // chat allows 0 to 2, messages 0 to 1
        out.insert("temperature", qMin(chat.value("temperature").toDouble(), 1.0));
    if (chat.value("top_p").isDouble())
        out.insert("top_p", chat.value("top_p"));
    const QJsonValue stop = chat.value("stop");
    if (stop.isString())
        out.insert("stop_sequences", QJsonArray{stop});
    else if (stop.isArray() && !stop.toArray().isEmpty())
        out.insert("stop_sequences", stop);

    QJsonArray tools;
    for (const QJsonValue &t : chat.value("tools").toArray()) {
        const QJsonObject fn = t.toObject().value("function").toObject();
        QJsonObject tool{{"name", fn.value("name")},
                         {"input_schema", fn.contains("parameters")
                                              ? fn.value("parameters")
                                              : QJsonObject{{"type", "object"}}}};
        if (fn.contains("description"))
            tool.insert("description", fn.value("description"));
        tools.append(tool);
    }
    if (!tools.isEmpty())
        out.insert("tools", tools);
    const QJsonValue choice = chat.value("tool_choice");
    QJsonObject toolChoice;
    if (choice.isString()) {
        const QString c = choice.toString();
        toolChoice.insert("type", c == u"required" ? QStringLiteral("any") : c);
    } else if (choice.isObject()) {
        toolChoice = {{"type", "tool"},
                      {"name", choice.toObject().value("function").toObject().value("name")}};
    }
    if (chat.value("parallel_tool_calls").isBool() && !chat.value("parallel_tool_calls").toBool()) {
        if (toolChoice.isEmpty())
            toolChoice.insert("type", "auto");
        toolChoice.insert("disable_parallel_tool_use", true);
    }
    if (!toolChoice.isEmpty() && !tools.isEmpty())
        out.insert("tool_choice", toolChoice);
    if (chat.value("user").isString())
        out.insert("metadata", QJsonObject{{"user_id", chat.value("user")}});

    m_stream = chat.value("stream").toBool();
    if (m_stream) {
        out.insert("stream", true);
        m_clientWantsUsage =
            chat.value("stream_options").toObject().value("include_usage").toBool();
    }
    m_upstreamBody = compact(out);
    m_promptTokens = estimatePromptTokens(in);
    return {};
}

QJsonObject ChatOverMessages::chatUsage() const
{
    const qint64 prompt = m_usage.input + m_usage.cacheRead + m_usage.cacheWrite;
    return {{"prompt_tokens", prompt},
            {"completion_tokens", m_usage.output},
            {"total_tokens", prompt + m_usage.output},
            {"prompt_tokens_details", QJsonObject{{"cached_tokens", m_usage.cacheRead}}}};
}

bool ChatOverMessages::convertBody(const QByteArray &upstream, QByteArray *client)
{
    const QJsonObject msg = QJsonDocument::fromJson(upstream).object();
    if (!msg.value("content").isArray())
        return false;
    mergeMessagesUsage(msg.value("usage").toObject(), true);
    QString text;
    QJsonArray toolCalls;
    for (const QJsonValue &b : msg.value("content").toArray()) {
        const QJsonObject block = b.toObject();
        const QString type = block.value("type").toString();
        if (type == u"text") {
            text += block.value("text").toString();
        } else if (type == u"tool_use") {
            toolCalls.append(QJsonObject{
                {"id", block.value("id")},
                {"type", "function"},
                {"function", QJsonObject{{"name", block.value("name")},
                                         {"arguments", QString::fromUtf8(compact(
                                                           block.value("input").toObject()))}}}});
        }
    }
    QJsonObject message{
        {"role", "assistant"},
        {"content", text.isEmpty() && !toolCalls.isEmpty() ? QJsonValue() : QJsonValue(text)}};
    if (!toolCalls.isEmpty())
        message.insert("tool_calls", toolCalls);
    message.insert("refusal", QJsonValue::Null);
    const QJsonObject choice{{"index", 0},
                             {"message", message},
                             {"finish_reason", finishReason(msg.value("stop_reason").toString())},
                             {"logprobs", QJsonValue::Null}};
    *client = compact({{"id", QStringLiteral("chatcmpl-") + msg.value("id").toString()},
                       {"object", "chat.completion"},
                       {"created", m_created},
                       {"model", m_clientModel},
                       {"choices", QJsonArray{choice}},
                       {"usage", chatUsage()}});
    return true;
}

QByteArray ChatOverMessages::chunk(const QJsonObject &delta, const QJsonValue &finishReason) const
{
    const QJsonObject choice{{"index", 0},
                             {"delta", delta},
                             {"finish_reason", finishReason},
                             {"logprobs", QJsonValue::Null}};
    return SseParser::format({}, compact({{"id", m_id},
                                          {"object", "chat.completion.chunk"},
                                          {"created", m_created},
                                          {"model", m_clientModel},
                                          {"choices", QJsonArray{choice}}}));
}

void ChatOverMessages::onEvent(const SseEvent &event, QByteArray *out)
{
    if (event.comment || m_finished)
        return;
    const QByteArray &type = event.event;
    const QJsonObject data = QJsonDocument::fromJson(event.data).object();
    if (type == "message_start") {
        const QJsonObject msg = data.value("message").toObject();
        m_id = QStringLiteral("chatcmpl-") + msg.value("id").toString();
        mergeMessagesUsage(msg.value("usage").toObject(), false);
        out->append(chunk({{"role", "assistant"}, {"content", ""}}, QJsonValue::Null));
    } else if (type == "content_block_start") {
        const QJsonObject block = data.value("content_block").toObject();
        const QString blockType = block.value("type").toString();
        if (blockType == u"tool_use") {
            const int index = m_toolCount++;
            m_toolIndexByBlock.insert(data.value("index").toInt(), index);
            out->append(chunk(
                {{"tool_calls",
                  QJsonArray{QJsonObject{{"index", index},
                                         {"id", block.value("id")},
                                         {"type", "function"},
                                         {"function", QJsonObject{{"name", block.value("name")},
                                                                  {"arguments", ""}}}}}}},
                QJsonValue::Null));
        } else if (blockType == u"text" && !block.value("text").toString().isEmpty()) {
            out->append(chunk({{"content", block.value("text")}}, QJsonValue::Null));
        }
    } else if (type == "content_block_delta") {
        const QJsonObject delta = data.value("delta").toObject();
        const QString deltaType = delta.value("type").toString();
        if (deltaType == u"text_delta") {
            noteDelta();
            out->append(chunk({{"content", delta.value("text")}}, QJsonValue::Null));
        } else if (deltaType == u"input_json_delta") {
            noteDelta();
            const int index = m_toolIndexByBlock.value(data.value("index").toInt());
            out->append(chunk(
                {{"tool_calls",
                  QJsonArray{QJsonObject{
                      {"index", index},
                      {"function", QJsonObject{{"arguments", delta.value("partial_json")}}}}}}},
                QJsonValue::Null));
        }
    } else if (type == "message_delta") {
        mergeMessagesUsage(data.value("usage").toObject(), true);
        const QString stop = data.value("delta").toObject().value("stop_reason").toString();
        if (!stop.isEmpty())
            out->append(chunk(QJsonObject{}, finishReason(stop)));
    } else if (type == "message_stop") {
        m_finished = true;
    } else if (type == "error") {
        const QJsonObject e = data.value("error").toObject();
        const QString message = e.value("message").toString(QStringLiteral("upstream error"));
        holdError(message,
                  errorEvent(message, e.value("type").toString(QStringLiteral("api_error"))));
    }
}

QByteArray ChatOverMessages::tail() const
{
    QByteArray out;
    if (m_clientWantsUsage)
        out = SseParser::format({}, compact({{"id", m_id},
                                             {"object", "chat.completion.chunk"},
                                             {"created", m_created},
                                             {"model", m_clientModel},
                                             {"choices", QJsonArray{}},
                                             {"usage", chatUsage()}}));
    out.append("data: [DONE]\n\n");
    return out;
}

QByteArray ChatOverMessages::errorEvent(const QString &message, const QString &type) const
{
    return SseParser::format({}, compact({{"error", QJsonObject{{"message", message},
                                                                {"type", type},
                                                                {"param", QJsonValue::Null},
                                                                {"code", QJsonValue::Null}}}}));
}
