#include "RequestValidation.h"

#include <QJsonArray>
#include <QStringList>

namespace RequestValidation {

namespace {

RequestError problem(const QString &param, const QString &message)
{
    return {400, QStringLiteral("%1: %2").arg(param, message), param};
}

std::optional<RequestError> model(const QJsonObject &b)
{
    const QJsonValue m = b.value("model");
    if (m.isUndefined() || m.isNull())
        return problem(QStringLiteral("model"), QStringLiteral("required"));
    if (!m.isString() || m.toString().isEmpty())
        return problem(QStringLiteral("model"), QStringLiteral("must be a non-empty string"));
    return std::nullopt;
}

std::optional<RequestError> boolean(const QJsonObject &b, const char *name)
{
    const QJsonValue v = b.value(QLatin1String(name));
    if (!v.isUndefined() && !v.isNull() && !v.isBool())
        return problem(QLatin1String(name), QStringLiteral("must be a boolean"));
    return std::nullopt;
}

std::optional<RequestError> number(const QJsonObject &b, const char *name, double lo, double hi)
{
    const QJsonValue v = b.value(QLatin1String(name));
    if (v.isUndefined() || v.isNull())
        return std::nullopt;
    if (!v.isDouble())
        return problem(QLatin1String(name), QStringLiteral("must be a number"));
    if (v.toDouble() < lo || v.toDouble() > hi)
        return problem(
            QLatin1String(name),
            QStringLiteral("must be between %1 and %2, got %3").arg(lo).arg(hi).arg(v.toDouble()));
    return std::nullopt;
}

std::optional<RequestError> positiveInt(const QJsonObject &b, const char *name, bool required)
{
    const QJsonValue v = b.value(QLatin1String(name));
    if (v.isUndefined() || v.isNull()) {
        if (required)
            return problem(QLatin1String(name), QStringLiteral("required"));
        return std::nullopt;
    }
    const double d = v.toDouble();
    if (!v.isDouble() || d != double(qint64(d)))
        return problem(QLatin1String(name), QStringLiteral("must be an integer"));
    if (d < 1)
        return problem(QLatin1String(name), QStringLiteral("must be at least 1"));
    return std::nullopt;
}

std::optional<RequestError> array(const QJsonObject &b, const char *name)
{
    const QJsonValue v = b.value(QLatin1String(name));
    if (!v.isUndefined() && !v.isNull() && !v.isArray())
        return problem(QLatin1String(name), QStringLiteral("must be an array"));
    return std::nullopt;
}

// messages: a non-empty array of objects whose role is in `roles` and whose content has an
// accepted shape.
std::optional<RequestError> turns(const QJsonObject &b, const QStringList &roles,
                                  bool contentRequired)
{
    const QJsonValue v = b.value("messages");
    if (v.isUndefined() || v.isNull())
        return problem(QStringLiteral("messages"), QStringLiteral("required"));
    if (!v.isArray())
        return problem(QStringLiteral("messages"), QStringLiteral("must be an array"));
    const QJsonArray a = v.toArray();
    if (a.isEmpty())
        return problem(QStringLiteral("messages"),
                       QStringLiteral("must contain at least one message"));
    for (qsizetype i = 0; i < a.size(); ++i) {
        const QString at = QStringLiteral("messages[%1]").arg(i);
        if (!a.at(i).isObject())
            return problem(at, QStringLiteral("must be an object with role and content"));
        const QJsonObject m = a.at(i).toObject();
        const QJsonValue role = m.value("role");
        if (!role.isString() || !roles.contains(role.toString()))
            return problem(
                at + QStringLiteral(".role"),
                QStringLiteral("must be one of %1").arg(roles.join(QStringLiteral(", "))));
        const QJsonValue content = m.value("content");
        const bool nullable =
            !contentRequired || (role.toString() == u"assistant" &&
                                 (m.contains("tool_calls") || m.contains("function_call")));
        if ((content.isUndefined() || content.isNull()) && nullable)
            continue;
        if (!content.isString() && !content.isArray())
            return problem(at + QStringLiteral(".content"),
                           QStringLiteral("must be a string or an array of content parts"));
        for (const QJsonValue &part : content.toArray())
            if (!part.isObject() || !part.toObject().value("type").isString())
                return problem(at + QStringLiteral(".content"),
                               QStringLiteral("each content part must be an object with a type"));
    }
    return std::nullopt;
}

} // namespace

std::optional<RequestError> chat(const QJsonObject &b)
{
    if (auto p = model(b))
        return p;
    if (auto p =
            turns(b,
                  {QStringLiteral("system"), QStringLiteral("developer"), QStringLiteral("user"),
                   QStringLiteral("assistant"), QStringLiteral("tool")},
                  true))
        return p;
    if (auto p = boolean(b, "stream"))
        return p;
    if (auto p = number(b, "temperature", 0, 2))
        return p;
    if (auto p = number(b, "top_p", 0, 1))
        return p;
    if (auto p = positiveInt(b, "max_tokens", false))
        return p;
    if (auto p = positiveInt(b, "max_completion_tokens", false))
        return p;
    if (auto p = positiveInt(b, "n", false))
        return p;
    if (b.value("n").toDouble() > kMaxChoices)
        return problem(QStringLiteral("n"), QStringLiteral("must be at most %1").arg(kMaxChoices));
    const QJsonValue stop = b.value("stop");
    if (!stop.isUndefined() && !stop.isNull()) {
        if (stop.isArray()) {
            if (stop.toArray().size() > 4)
                return problem(
                    QStringLiteral("stop"),
                    QStringLiteral("at most 4 stop sequences, got %1").arg(stop.toArray().size()));
            for (const QJsonValue &s : stop.toArray())
                if (!s.isString())
                    return problem(QStringLiteral("stop"),
                                   QStringLiteral("stop sequences must be strings"));
        } else if (!stop.isString()) {
            return problem(QStringLiteral("stop"),
                           QStringLiteral("must be a string or an array of up to 4 strings"));
        }
    }
    if (auto p = array(b, "tools"))
        return p;
    const QJsonValue choice = b.value("tool_choice");
    if (choice.isString() && !QStringList{"none", "auto", "required"}.contains(choice.toString()))
        return problem(
            QStringLiteral("tool_choice"),
            QStringLiteral("must be none, auto, required or an object naming a function"));
    if (!choice.isUndefined() && !choice.isNull() && !choice.isString() && !choice.isObject())
        return problem(QStringLiteral("tool_choice"),
                       QStringLiteral("must be a string or an object"));
    const QJsonValue format = b.value("response_format");
    if (!format.isUndefined() && !format.isNull() &&
        (!format.isObject() || !format.toObject().value("type").isString()))
        return problem(QStringLiteral("response_format"),
                       QStringLiteral("must be an object with a type, e.g. {\"type\": "
                                      "\"json_object\"}"));
    const QJsonValue options = b.value("stream_options");
    if (!options.isUndefined() && !options.isNull() && !options.isObject())
        return problem(QStringLiteral("stream_options"), QStringLiteral("must be an object"));
    return std::nullopt;
}

std::optional<RequestError> responses(const QJsonObject &b)
{
    if (auto p = model(b))
        return p;
    const QJsonValue input = b.value("input");
    if (input.isUndefined() || input.isNull())
        return problem(QStringLiteral("input"), QStringLiteral("required"));
    if (!input.isString() && !input.isArray())
        return problem(QStringLiteral("input"),
                       QStringLiteral("must be a string or an array of input items"));
    if (input.isArray())
        for (const QJsonValue &item : input.toArray())
            if (!item.isObject())
                return problem(QStringLiteral("input"),
                               QStringLiteral("each input item must be an object"));
    if (auto p = boolean(b, "stream"))
        return p;
    if (auto p = number(b, "temperature", 0, 2))
        return p;
    if (auto p = number(b, "top_p", 0, 1))
        return p;
    if (auto p = positiveInt(b, "max_output_tokens", false))
        return p;
    return array(b, "tools");
}

std::optional<RequestError> messages(const QJsonObject &b)
{
    if (auto p = model(b))
        return p;
    if (auto p = positiveInt(b, "max_tokens", true))
        return p;
    if (auto p = turns(b, {QStringLiteral("user"), QStringLiteral("assistant")}, true))
        return p;
    const QJsonValue system = b.value("system");
    if (!system.isUndefined() && !system.isNull() && !system.isString() && !system.isArray())
        return problem(QStringLiteral("system"),
                       QStringLiteral("must be a string or an array of text blocks"));
    if (auto p = boolean(b, "stream"))
        return p;
    if (auto p = number(b, "temperature", 0, 1))
        return p;
    if (auto p = number(b, "top_p", 0, 1))
        return p;
    if (auto p = array(b, "tools"))
        return p;
    if (auto p = array(b, "stop_sequences"))
        return p;
    const QJsonValue choice = b.value("tool_choice");
    if (!choice.isUndefined() && !choice.isNull()) {
        const QString type = choice.toObject().value("type").toString();
        if (!choice.isObject() || !QStringList{"auto", "any", "tool", "none"}.contains(type))
            return problem(QStringLiteral("tool_choice"),
                           QStringLiteral("must be an object with type auto, any, tool or none"));
        if (type == u"tool" && !choice.toObject().value("name").isString())
            return problem(QStringLiteral("tool_choice.name"),
                           QStringLiteral("required when type is tool"));
    }
    const QJsonValue thinking = b.value("thinking");
    if (!thinking.isUndefined() && !thinking.isNull()) {
        const QJsonObject t = thinking.toObject();
        const QString type = t.value("type").toString();
        if (!thinking.isObject() || type.isEmpty())
            return problem(QStringLiteral("thinking"),
                           QStringLiteral("must be an object such as {\"type\": \"enabled\", "
                                          "\"budget_tokens\": 1024}"));
        if (type == u"enabled")
            if (auto p = positiveInt(t, "budget_tokens", true)) {
                p->param = QStringLiteral("thinking.budget_tokens");
                p->message = QStringLiteral("thinking.") + p->message;
                return p;
            }
    }
    const QJsonValue metadata = b.value("metadata");
    if (!metadata.isUndefined() && !metadata.isNull() && !metadata.isObject())
        return problem(QStringLiteral("metadata"), QStringLiteral("must be an object"));
    return std::nullopt;
}

} // namespace RequestValidation
