#pragma once

#include <QByteArray>
#include <QString>

// The error body shapes of the contract: OpenAI-style for /v1 and /api/v1, the messages
// protocol's own for /v1/messages, and the social-data shape of spec section 7. Which one a
// request gets is a property of its route (RouteSpec::errorStyle), or of the path prefix a
// family declares for paths no route claims (ServiceFamily::errorPrefixes).
enum class ErrorStyle
{
    OpenAI,
    Messages,
    Social
};

namespace ErrorEnvelope {

// The conventional error type for a status in a style (e.g. 401 -> authentication_error).
QString defaultType(ErrorStyle style, int status);
QByteArray body(ErrorStyle style, int status, const QString &message, const QString &type = {},
                const QString &param = {}, const QString &code = {});

} // namespace ErrorEnvelope
