#pragma once

#include <QByteArray>
#include <QString>

// How an upstream provider takes its key: OpenAI-style servers (and most others) read
// "Authorization: Bearer KEY", the messages protocol reads "x-api-key: KEY".
enum class ProviderAuth
{
    Bearer,
    XApiKey
};

// The header line carrying key ("Name: value"), or nothing for an empty key (a keyless local
// upstream).
inline QByteArray authHeader(ProviderAuth auth, const QString &key)
{
    if (key.isEmpty())
        return {};
    return (auth == ProviderAuth::XApiKey ? QByteArrayLiteral("x-api-key: ")
                                          : QByteArrayLiteral("Authorization: Bearer ")) +
           key.toUtf8();
}
