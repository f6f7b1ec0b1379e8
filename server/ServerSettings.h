#pragma once

#include "address/AddressUpstreamConfig.h"
#include "llm/GatewayConfig.h"

#include <QHash>
#include <QString>
#include <QStringList>

// Rate limits per key tier: requests per minute for each named bucket. A bucket missing from a
// tier falls back to the tier's "default" entry.
struct RateTier
{
    QHash<QString, int> perMinute;
    int limitFor(const QString &bucket) const
    {
        return perMinute.value(bucket, perMinute.value(QStringLiteral("default"), 600));
    }
};

struct ServerSettings
{
    qint64 maxJsonBody = 1 * 1024 * 1024;    // 1 MiB JSON bodies
    qint64 maxUploadBody = 25 * 1024 * 1024; // 25 MB multipart uploads
    int maxHeaderBytes = 64 * 1024;
    int maxHeaderCount = 100;
    int maxConnections = 4096;
    int idleTimeoutMs = 60'000;
    int drainTimeoutMs = 10'000;
    int authCacheMs = 2'000;
    qint64 maxStreamBuffer = 16 * 1024 * 1024; // unsent bytes of a stream before its client is
                                               // dropped as not reading        // a revocation on
                                               // another instance is seen within this time
    QHash<QString, RateTier> tiers;            // "default" always present after load
    GatewayConfig gateway = GatewayConfig::defaults();
    // Credits charged for each successful /v1/address/* request (address.price_per_request).
    qint64 addressPricePerRequest = 100'000; // 0.0001 credits
    AddressUpstreamConfig addressUpstream;   // address.upstream; disabled by default
    // How often a server looks for zip codes and POIs imported by another process
    // (address.reload_seconds; 0 = only at start).
    int addressReloadMs = 30'000;
    // Credits a text-generation request must find available before its upstream call.
    qint64 llmMinimumReservation = 1'000'000; // 0.001 credits
    bool sqliteFullSync = false;              // server.sqlite_synchronous: "full" (else "normal")
    QString configPath; // the file the settings came from (the window saves providers there)

    static ServerSettings defaults();
    // Reads the "server" and "rate_limits" sections of a JSON config file; throws
    // std::runtime_error with a readable message on a malformed file.
    static ServerSettings fromConfigFile(const QString &path);
    const RateTier &tier(const QString &name) const;
};
