#include "ErrorEnvelope.h"

#include "CompactJson.h"

#include <QJsonObject>

namespace {

// {"error":{"message","type","param","code"}}, param and code null when absent.
class OpenAIEnvelope final : public ErrorEnvelopeWriter
{
public:
    OpenAIEnvelope()
        : ErrorEnvelopeWriter({{401, "authentication_error"},
                               {402, "insufficient_credits"},
                               {403, "permission_error"},
                               {429, "rate_limit_exceeded"}},
                              "invalid_request_error", "api_error")
    {
    }
    QByteArray body(const ErrorFields &e) const override
    {
        auto orNull = [](const QString &s) { return s.isEmpty() ? QJsonValue() : QJsonValue(s); };
        return CompactJson::encode(QJsonObject{{"error", QJsonObject{{"message", e.message},
                                                                     {"type", e.type},
                                                                     {"param", orNull(e.param)},
                                                                     {"code", orNull(e.code)}}}});
    }
};

} // namespace

ErrorEnvelopeWriter::ErrorEnvelopeWriter(std::initializer_list<StatusType> types,
                                         const char *clientError, const char *serverError)
    : m_types(types), m_clientError(clientError), m_serverError(serverError)
{
}

QString ErrorEnvelopeWriter::defaultType(int status) const
{
    for (const StatusType &t : m_types)
        if (t.status == status)
            return QString::fromLatin1(t.type);
    return QString::fromLatin1(status >= 500 ? m_serverError : m_clientError);
}

const ErrorEnvelopeWriter &ErrorStyle::writer() const
{
    static const OpenAIEnvelope openAI;
    return m_writer ? *m_writer : openAI;
}

namespace ErrorEnvelope {

QString defaultType(ErrorStyle style, int status)
{
    return style.writer().defaultType(status);
}

QByteArray body(ErrorStyle style, int status, const QString &message, const QString &type,
                const QString &param, const QString &code)
{
    const ErrorEnvelopeWriter &writer = style.writer();
    return writer.body(
        {status, message, type.isEmpty() ? writer.defaultType(status) : type, param, code});
}

} // namespace ErrorEnvelope
