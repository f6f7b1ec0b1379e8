#include "MessagesEnvelope.h"

#include "CompactJson.h"

#include <QJsonObject>

namespace {

class MessagesEnvelope final : public ErrorEnvelopeWriter
{
public:
    MessagesEnvelope()
        : ErrorEnvelopeWriter({{401, "authentication_error"},
                               {402, "billing_error"},
                               {403, "permission_error"},
                               {404, "not_found_error"},
                               {413, "request_too_large"},
                               {429, "rate_limit_error"},
                               {503, "overloaded_error"}},
                              "invalid_request_error", "api_error")
    {
    }
    QByteArray body(const ErrorFields &e) const override
    {
        return CompactJson::encode(QJsonObject{
            {"type", "error"}, {"error", QJsonObject{{"type", e.type}, {"message", e.message}}}});
    }
    void addHeaders(const QByteArray &requestId, HttpHeaders *headers) const override
    {
        headers->append({QByteArrayLiteral("request-id"), requestId});
    }
};

} // namespace

ErrorStyle messagesErrorStyle()
{
    static const MessagesEnvelope envelope;
    return ErrorStyle(envelope);
}
