#pragma once

#include <QHash>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QTimeZone>

// Rate limits per key tier: requests per minute for each named bucket. A bucket missing from a
// tier falls back to the tier's "default" entry.
struct RateTier
{
    QHash<QString, int> perMinute;
    int limitFor(const QString &bucket) const
    {
        const auto it = perMinute.constFind(bucket);
        return it != perMinute.constEnd() ? *it : perMinute.value(QStringLiteral("default"), 600);
    }
};

// The "alerts" section (server/Alerts.h): when to tell the operator, and where.
struct AlertSettings
{
    QList<qint64> balanceBelow;  // balance_below: credit units; fired when a balance drops below
    QList<int> keyBudgetPercent; // key_budget_percent: fired when a key's spending reaches it
    QString webhookUrl;          // webhook_url: also POSTed there (through the webhook outbox)
    bool any() const { return !balanceBelow.isEmpty() || !keyBudgetPercent.isEmpty(); }
};

// Server-wide settings: HTTP limits, rate-limit tiers, storage. A family's own settings live in
// its config section, parsed by the family.
struct ServerSettings
{
    qint64 maxJsonBody = 1 * 1024 * 1024;    // 1 MiB JSON bodies
    qint64 maxUploadBody = 25 * 1024 * 1024; // 25 MB multipart uploads
    int maxHeaderBytes = 64 * 1024;
    int maxHeaderCount = 100;
    int maxConnections = 4096;
    // Connections one client address may hold (0: no cap); one more is closed at once.
    int maxConnectionsPerClient = 0;
    // Between requests on a keep-alive connection; and while bytes of an answer wait unsent,
    // the longest its client may take none (then it is dropped, a stream as if it had left).
    int idleTimeoutMs = 60'000;
    // A request's head must arrive this fast once it has begun.
    int headerTimeoutMs = 15'000;
    // A body may not stall longer than this, and must arrive at minBodyRate bytes a second on
    // average once this long has passed (0: no rate rule).
    int bodyTimeoutMs = 60'000;
    qint64 minBodyRate = 1024;
    // Bytes all connections may hold at once: read buffers, request bodies, unsent answers.
    // Over it, new requests get 503 and a stream that cannot be buffered is dropped.
    qint64 maxBufferedBytes = qint64(256) << 20;
    int drainTimeoutMs = 10'000;
    int authCacheMs = 2'000;
    // server.shared_state "auto": on PostgreSQL, rate limits and credit holds are kept in the
    // database for every instance on it (SharedState.h); "off": per instance, as on SQLite.
    bool sharedState = true;
    // A call to the shared state not answered this fast counts as failed (SharedState.h).
    int sharedTimeoutMs = 2'000;
    // An instance not seen this long is gone: its holds stop counting.
    int instanceAliveMs = 10'000;
    // How old a balance read may be and still admit a request (CreditGate), and a key's
    // spending in its budget period (KeyBudgets).
    int balanceFreshMs = 1'000;
    // server.budget_time_zone: where a key's budget periods start at 00:00 (an IANA name).
    QTimeZone budgetZone = QTimeZone::utc();
    // server.trusted_proxies: CIDRs of proxies whose X-Forwarded-For names the client (a key's
    // allowed_ips are checked against that client); the peer's own address otherwise.
    QStringList trustedProxies;
    // Unsent bytes of a stream before its client is dropped as not reading.
    qint64 maxStreamBuffer = 16 * 1024 * 1024;
    QHash<QString, RateTier> tiers; // "default" always present after load
    bool sqliteFullSync = false;    // server.sqlite_synchronous: "full" (else "normal")
    // server.metrics_public: GET /metrics without a control token on any address (else only
    // when the server listens on loopback; elsewhere it takes the metrics:read scope).
    bool metricsPublic = false;
    AlertSettings alerts;
    QString configPath; // the file the settings came from (the window saves providers there)
    // The config file's other sections by name (a family's name): each service family
    // parses its own (ServiceFamily::configure); nothing here reads them.
    QJsonObject familySections;

    static ServerSettings defaults();
    // The "alerts" section; throws ConfigError naming a bad field.
    static AlertSettings alertsFrom(const class ConfigFields &alerts);
    // Reads the "server" and "rate_limits" sections of a JSON config file and keeps the others
    // for the families; throws std::runtime_error with a readable message on a malformed file.
    static ServerSettings fromConfigFile(const QString &path);
    const RateTier &tier(const QString &name) const;
    // A bucket's default limit: every tier that does not set the bucket gets perMinute (the
    // server adds each family's ServiceFamily::rateBuckets this way).
    void addBucketDefault(const QString &bucket, int perMinute);
};
