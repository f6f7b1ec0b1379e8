#include "ServerSettings.h"

#include <cmath>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <stdexcept>

ServerSettings ServerSettings::defaults()
{
    ServerSettings s;
    // The core's buckets; the families add theirs (addBucketDefault).
    s.tiers.insert(QStringLiteral("default"),
                   RateTier{{{QStringLiteral("default"), 600}, {QStringLiteral("control"), 600}}});
    return s;
}

void ServerSettings::addBucketDefault(const QString &bucket, int perMinute)
{
    for (RateTier &t : tiers)
        if (!t.perMinute.contains(bucket))
            t.perMinute.insert(bucket, perMinute);
}

const RateTier &ServerSettings::tier(const QString &name) const
{
    const auto it = tiers.constFind(name);
    return it != tiers.constEnd() ? *it : *tiers.constFind(QStringLiteral("default"));
}

ServerSettings ServerSettings::fromConfigFile(const QString &path)
{
    ServerSettings s = defaults();
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw std::runtime_error(
            ("cannot read config file " + path + ": " + f.errorString()).toStdString());
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        throw std::runtime_error(
            QStringLiteral("config file %1 is not a JSON object (%2 at byte %3)")
                .arg(path, err.errorString())
                .arg(err.offset)
                .toStdString());
    const QJsonObject root = doc.object();
    const QJsonObject server = root.value("server").toObject();
    auto intField = [&](const char *name, auto &target) {
        const QJsonValue v = server.value(QLatin1String(name));
        if (v.isUndefined())
            return;
        if (!v.isDouble() || v.toDouble() <= 0)
            throw std::runtime_error(std::string("config: server.") + name +
                                     " must be a positive number");
        target = static_cast<std::remove_reference_t<decltype(target)>>(v.toDouble());
    };
    intField("max_json_body_bytes", s.maxJsonBody);
    intField("max_upload_body_bytes", s.maxUploadBody);
    intField("max_connections", s.maxConnections);
    intField("idle_timeout_ms", s.idleTimeoutMs);
    intField("drain_timeout_ms", s.drainTimeoutMs);
    intField("auth_cache_ms", s.authCacheMs);
    intField("balance_fresh_ms", s.balanceFreshMs);
    intField("max_stream_buffer_bytes", s.maxStreamBuffer);
    intField("header_timeout_ms", s.headerTimeoutMs);
    intField("body_timeout_ms", s.bodyTimeoutMs);
    intField("max_buffered_bytes", s.maxBufferedBytes);
    // 0 switches these off.
    auto countField = [&](const char *name, auto &target) {
        const QJsonValue v = server.value(QLatin1String(name));
        if (v.isUndefined())
            return;
        if (!v.isDouble() || v.toDouble() < 0 || v.toDouble() != std::floor(v.toDouble()))
            throw std::runtime_error(std::string("config: server.") + name +
                                     " must be a whole number, 0 or more (0: off)");
        target = static_cast<std::remove_reference_t<decltype(target)>>(v.toDouble());
    };
    countField("max_connections_per_client", s.maxConnectionsPerClient);
    countField("min_body_rate", s.minBodyRate);

    s.configPath = path;
    const QJsonValue sync = server.value("sqlite_synchronous");
    if (!sync.isUndefined()) {
        if (sync.toString() != u"full" && sync.toString() != u"normal")
            throw std::runtime_error("config: server.sqlite_synchronous must be \"normal\" or "
                                     "\"full\"");
        s.sqliteFullSync = sync.toString() == u"full";
    }
    intField("shared_state_timeout_ms", s.sharedTimeoutMs);
    intField("instance_alive_ms", s.instanceAliveMs);
    const QJsonValue shared = server.value("shared_state");
    if (!shared.isUndefined()) {
        if (shared.toString() != u"auto" && shared.toString() != u"off")
            throw std::runtime_error("config: server.shared_state must be \"auto\" (shared "
                                     "with PostgreSQL) or \"off\" (per instance)");
        s.sharedState = shared.toString() == u"auto";
    }
    const QJsonValue metricsPublic = server.value("metrics_public");
    if (!metricsPublic.isUndefined()) {
        if (!metricsPublic.isBool())
            throw std::runtime_error("config: server.metrics_public must be true or false");
        s.metricsPublic = metricsPublic.toBool();
    }
    for (auto it = root.begin(); it != root.end(); ++it) {
        if (it.key() == u"server" || it.key() == u"rate_limits")
            continue;
        if (!it.value().isObject())
            throw std::runtime_error("config: " + it.key().toStdString() + " must be an object");
        s.familySections.insert(it.key(), it.value());
    }

    const QJsonObject limits = root.value("rate_limits").toObject();
    for (auto t = limits.begin(); t != limits.end(); ++t) {
        if (!t.value().isObject())
            throw std::runtime_error("config: rate_limits." + t.key().toStdString() +
                                     " must be an object of bucket: requests per minute");
        RateTier tier = s.tiers.value(t.key(), s.tiers.value(QStringLiteral("default")));
        const QJsonObject buckets = t.value().toObject();
        for (auto b = buckets.begin(); b != buckets.end(); ++b) {
            if (!b.value().isDouble() || b.value().toDouble() < 0)
                throw std::runtime_error("config: rate_limits." + t.key().toStdString() + "." +
                                         b.key().toStdString() +
                                         " must be a number of requests per minute (0: unlimited)");
            tier.perMinute.insert(b.key(), b.value().toInt());
        }
        s.tiers.insert(t.key(), tier);
    }
    return s;
}
