#include "ServerSettings.h"

#include "Money.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <stdexcept>

ServerSettings ServerSettings::defaults()
{
    ServerSettings s;
    // Chat completions and decisions (and its alias) share the "chat" bucket.
    s.tiers.insert(QStringLiteral("default"), RateTier{{{QStringLiteral("default"), 600},
                                                        {QStringLiteral("chat"), 60},
                                                        {QStringLiteral("control"), 600}}});
    return s;
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
    intField("max_stream_buffer_bytes", s.maxStreamBuffer);

    s.configPath = path;
    const QJsonValue sync = server.value("sqlite_synchronous");
    if (!sync.isUndefined()) {
        if (sync.toString() != u"full" && sync.toString() != u"normal")
            throw std::runtime_error("config: server.sqlite_synchronous must be \"normal\" or "
                                     "\"full\"");
        s.sqliteFullSync = sync.toString() == u"full";
    }
    const QJsonValue gateway = root.value("gateway");
    if (!gateway.isUndefined() && !gateway.isObject())
        throw std::runtime_error("config: gateway must be an object");
    s.gateway = GatewayConfig::fromJson(gateway.toObject());
    if (gateway.toObject().contains("min_reservation")) {
        const auto units =
            Money::parseCredits(gateway.toObject().value("min_reservation").toString());
        if (!units || *units < 0)
            throw std::runtime_error("config: gateway.min_reservation must be a decimal string of "
                                     "credits, e.g. \"0.001\"");
        s.llmMinimumReservation = *units;
    }

    const QJsonObject address = root.value("address").toObject();
    if (address.contains("price_per_request")) {
        const auto units = Money::parseCredits(address.value("price_per_request").toString());
        if (!units || *units < 0)
            throw std::runtime_error("config: address.price_per_request must be a decimal string "
                                     "of credits, e.g. \"0.0001\"");
        s.addressPricePerRequest = *units;
    }
    if (address.contains("reload_seconds")) {
        const int seconds = address.value("reload_seconds").toInt(-1);
        if (!address.value("reload_seconds").isDouble() || seconds < 0 || seconds > 86'400)
            throw std::runtime_error("config: address.reload_seconds must be 0 (only at start) to "
                                     "86400");
        s.addressReloadMs = seconds * 1000;
    }
    if (address.contains("upstream")) {
        if (!address.value("upstream").isObject())
            throw std::runtime_error("config: address.upstream must be an object");
        s.addressUpstream = AddressUpstreamConfig::fromJson(address.value("upstream").toObject());
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
