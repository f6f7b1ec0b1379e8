#include "ErrorEnvelope.h"

#include "CompactJson.h"

#include <QJsonObject>

namespace ErrorEnvelope {

QString defaultType(ErrorStyle style, int status)
{
    if (style == ErrorStyle::Social)
        return status >= 500 ? QStringLiteral("server_error")
                             : QStringLiteral("invalid_request_error");
    const bool messages = style == ErrorStyle::Messages;
    switch (status) {
    case 401:
        return QStringLiteral("authentication_error");
    case 402:
        return messages ? QStringLiteral("billing_error") : QStringLiteral("insufficient_credits");
    case 403:
        return QStringLiteral("permission_error");
    case 404:
        return messages ? QStringLiteral("not_found_error")
                        : QStringLiteral("invalid_request_error");
    case 413:
        return messages ? QStringLiteral("request_too_large")
                        : QStringLiteral("invalid_request_error");
    case 429:
        return messages ? QStringLiteral("rate_limit_error")
                        : QStringLiteral("rate_limit_exceeded");
    case 503:
        return messages ? QStringLiteral("overloaded_error") : QStringLiteral("api_error");
    default:
        if (status >= 500)
            return QStringLiteral("api_error");
        return QStringLiteral("invalid_request_error");
    }
}

QByteArray body(ErrorStyle style, int status, const QString &message, const QString &type,
                const QString &param, const QString &code)
{
    const QString t = type.isEmpty() ? defaultType(style, status) : type;
    QJsonObject error{{"message", message}, {"type", t}};
    QJsonObject root;
    switch (style) {
    case ErrorStyle::Messages:
        root = QJsonObject{{"type", "error"},
                           {"error", QJsonObject{{"type", t}, {"message", message}}}};
        break;
    case ErrorStyle::Social:
        root = QJsonObject{{"error", error}};
        break;
    case ErrorStyle::OpenAI:
        error.insert("param", param.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(param));
        error.insert("code", code.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(code));
        root = QJsonObject{{"error", error}};
        break;
    }
    return CompactJson::encode(root);
}

} // namespace ErrorEnvelope
