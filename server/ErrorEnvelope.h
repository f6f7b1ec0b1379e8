#pragma once

#include <QByteArray>
#include <QString>

// The error body shapes of the contract: OpenAI-style for /v1 and /api/v1, the messages
// protocol's own for /v1/messages, and the social-data shape of spec section 7.
enum class ErrorStyle
{
    OpenAI,
    Messages,
    Social
};

namespace ErrorEnvelope {

ErrorStyle styleForPath(const QString &path);
// The conventional error type for a status in a style (e.g. 401 -> authentication_error).
QString defaultType(ErrorStyle style, int status);
QByteArray body(ErrorStyle style, int status, const QString &message, const QString &type = {},
                const QString &param = {}, const QString &code = {});

} // namespace ErrorEnvelope
