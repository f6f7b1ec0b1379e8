#pragma once

#include "upstream/UpstreamProvider.h"

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

// The social-data upstream (TikHub-style): GET {base_url}/api/v1/{action}?{query}, the key as
// Authorization: Bearer, its catalog at {base_url}{catalog_path}.
struct SocialProvider : UpstreamProvider
{
    QString actionPrefix = QStringLiteral("/api/v1/"); // where the catalog's actions live
    QString catalogPath = QStringLiteral("/openapi.json");
};

// What the operator says about one upstream platform.
struct SocialPlatformRule
{
    bool enabled = true;
    QString publicName; // empty: the upstream's name
};

// The optional response cache (off by default).
struct SocialCacheConfig
{
    bool enabled = false;
    int ttlSeconds = 300;             // unless the platform has its own
    QHash<QString, int> platformTtl;  // upstream platform -> seconds (0: not cached)
    bool billHits = true;             // a hit costs the price like a relayed answer
    qint64 maxBytes = 64LL << 20;     // every entry together
    qint64 maxEntryBytes = 1LL << 20; // a larger answer is relayed, not kept
};

// The "social" section of the config file (server/social/README.md, "Configuration"). Every
// field is optional:
//   providers  {name: {base_url, keys, keys_env, timeouts, key_rest_ms, action_prefix
//              (/api/v1/), catalog_path (/openapi.json)}}: `tikhub` (https://api.tikhub.io, no
//              key, a 60 s total timeout) exists unless replaced;
//   provider   the one used ("tikhub");
//   catalog    {refresh_hours (24; 0: only on demand and at start), file (a local copy used
//               when neither the database nor the upstream has one)};
//   platforms  {upstream name: {enabled, name}}: disable a platform or publish it under another
//              prefix; tikhub, health, demo, ios_shortcut and temp_mail are disabled unless
//              enabled here (the upstream's own account, test and utility actions);
//   price      "0.01" credits (USD) per successful request;
//   cache      {enabled, ttl_s, platforms {name: ttl_s}, bill_hits, max_mb, max_entry_kb};
//   extract    {short_link_hosts [...], fetch {allow_http, allow_cidrs, ports, ca_file}};
//   public_base_url  the server URL /openapi.json gives clients (behind a proxy).
struct SocialConfig
{
    SocialProvider provider;
    int refreshHours = 24;
    QString catalogFile;
    QHash<QString, SocialPlatformRule> platforms; // by upstream name
    qint64 price = 0;                             // credit units
    SocialCacheConfig cache;
    QStringList shortLinkHosts;
    QJsonObject extractFetch;
    QString publicBaseUrl; // the server URL /openapi.json names; empty: from the Host header

    static constexpr int kTimeoutMs = 60'000;
    static SocialConfig defaults();
    // Parses the section on top of defaults(); throws std::runtime_error("config:
    // social.<field> ...").
    static SocialConfig fromJson(const QJsonObject &section);

    // The public name of an upstream platform, or empty when it is disabled.
    QString publicName(const QString &upstreamPlatform) const;
    // The upstream platform a public prefix names, or empty when none does.
    QString upstreamPlatform(const QString &publicName, const QStringList &known) const;
    // Empty when the provider can serve; else what to configure.
    QString unusableReason() const;
};
