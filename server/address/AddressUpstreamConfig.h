#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QStringList>

// Where the optional upstream address provider is (config `address.upstream`, see
// AddressUpstream.h): {"base_url", "key" or "key_env", "endpoints" (default: all but
// transfer-coord), "timeout_ms" (default 10000)}.
struct AddressUpstreamConfig
{
    QByteArray baseUrl; // empty: no upstream
    QByteArray key;     // sent as Authorization: Bearer
    QStringList endpoints;
    int timeoutMs = 10'000;

    bool enabled() const { return !baseUrl.isEmpty(); }
    // Reads the `address.upstream` object; throws std::runtime_error naming the bad field.
    static AddressUpstreamConfig fromJson(const QJsonObject &json);
};
