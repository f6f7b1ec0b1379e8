#include "ServerSettings.h"

#include "ConfigFields.h"
#include "KeyRules.h"
#include "Money.h"

#include <algorithm>
#include <QFile>
#include <QJsonArray>
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

AlertSettings ServerSettings::alertsFrom(const ConfigFields &alerts)
{
    AlertSettings a;
    alerts.onlyKnown({QStringLiteral("balance_below"), QStringLiteral("key_budget_percent"),
                      QStringLiteral("webhook_url")});
    const QString example = QStringLiteral("a decimal string of credits such as \"5\"");
    const QJsonValue below = alerts.value(QStringLiteral("balance_below"));
    if (below.isArray()) {
        const QJsonArray list = below.toArray();
        for (qsizetype i = 0; i < list.size(); ++i) {
            const auto units = list[i].isString() ? Money::parseCredits(list[i].toString())
                                                  : std::optional<qint64>();
            if (!units || *units <= 0)
                alerts.fail(QStringLiteral("balance_below"),
                            QStringLiteral("must be credits above 0 or an array of them (%1)")
                                .arg(example));
            a.balanceBelow.append(*units);
        }
    } else if (alerts.has(QStringLiteral("balance_below"))) {
        a.balanceBelow.append(
            alerts.credits(QStringLiteral("balance_below"), 0, example, {.lo = 1}));
    }
    const QJsonValue percents = alerts.value(QStringLiteral("key_budget_percent"));
    if (alerts.has(QStringLiteral("key_budget_percent"))) {
        const QJsonArray list = percents.isArray() ? percents.toArray() : QJsonArray{percents};
        for (const QJsonValue &v : list) {
            const double p = v.toDouble(-1);
            if (!v.isDouble() || p != double(int(p)) || p < 1 || p > 1000)
                alerts.fail(QStringLiteral("key_budget_percent"),
                            QStringLiteral("must be whole percents from 1 to 1000, such as "
                                           "[80, 100]"));
            a.keyBudgetPercent.append(int(p));
        }
    }
    std::sort(a.balanceBelow.begin(), a.balanceBelow.end());
    std::sort(a.keyBudgetPercent.begin(), a.keyBudgetPercent.end());
    a.webhookUrl = alerts.httpUrl(QStringLiteral("webhook_url"), {});
    return a;
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
    const ConfigFields root(doc.object());
    const ConfigFields server = root.section(QStringLiteral("server"));
    // Sizes and timeouts: above zero.
    const auto positive = [&](const char *field, auto &target) {
        target = server.whole(QLatin1String(field), target, {.lo = 1});
    };
    positive("max_json_body_bytes", s.maxJsonBody);
    positive("max_upload_body_bytes", s.maxUploadBody);
    positive("max_connections", s.maxConnections);
    positive("idle_timeout_ms", s.idleTimeoutMs);
    positive("drain_timeout_ms", s.drainTimeoutMs);
    positive("auth_cache_ms", s.authCacheMs);
    positive("balance_fresh_ms", s.balanceFreshMs);
    positive("max_stream_buffer_bytes", s.maxStreamBuffer);
    positive("header_timeout_ms", s.headerTimeoutMs);
    positive("body_timeout_ms", s.bodyTimeoutMs);
    positive("max_buffered_bytes", s.maxBufferedBytes);
    positive("shared_state_timeout_ms", s.sharedTimeoutMs);
    positive("instance_alive_ms", s.instanceAliveMs);
    // 0 switches these off.
    const WholeRange orOff{.lo = 0, .note = QStringLiteral("0: off")};
    s.maxConnectionsPerClient = server.whole(QStringLiteral("max_connections_per_client"),
                                             s.maxConnectionsPerClient, orOff);
    s.minBodyRate = server.whole(QStringLiteral("min_body_rate"), s.minBodyRate, orOff);

    s.configPath = path;
    s.sqliteFullSync = server.choice(QStringLiteral("sqlite_synchronous"), s.sqliteFullSync,
                                     {{"normal", false}, {"full", true}});
    s.sharedState = server.choice(
        QStringLiteral("shared_state"), s.sharedState, {{"auto", true}, {"off", false}},
        QStringLiteral("auto: shared with PostgreSQL; off: per instance"));
    s.metricsPublic = server.flag(QStringLiteral("metrics_public"), s.metricsPublic);
    const QString zone = server.string(QStringLiteral("budget_time_zone"), QStringLiteral("UTC"),
                                       QStringLiteral("an IANA time zone name"));
    s.budgetZone = zone == u"UTC" ? QTimeZone::utc() : QTimeZone(zone.toUtf8());
    if (!s.budgetZone.isValid())
        server.fail(QStringLiteral("budget_time_zone"),
                    QStringLiteral("must be an IANA time zone name (\"UTC\", "
                                   "\"Asia/Shanghai\"); '%1' is not one")
                        .arg(zone));
    s.trustedProxies = server.strings(QStringLiteral("trusted_proxies"), {},
                                      QStringLiteral("an array of addresses or CIDRs"));
    for (const QString &cidr : s.trustedProxies)
        if (!KeyRules::validCidr(cidr))
            server.fail(QStringLiteral("trusted_proxies"),
                        QStringLiteral("must be an array of addresses or CIDRs; '%1' is not one")
                            .arg(cidr));
    s.alerts = alertsFrom(root.section(QStringLiteral("alerts")));
    for (const QString &key : root.json().keys()) {
        if (key == u"server" || key == u"rate_limits" || key == u"alerts")
            continue;
        s.familySections.insert(key, root.section(key).json());
    }

    for (const ConfigFields &t :
         root.members(QStringLiteral("rate_limits"), QStringLiteral("an object of tier: buckets"),
                      QStringLiteral("an object of bucket: requests per "
                                     "minute"))) {
        RateTier tier = s.tiers.value(t.name(), s.tiers.value(QStringLiteral("default")));
        for (const QString &bucket : t.json().keys())
            tier.perMinute.insert(
                bucket, t.whole(bucket, 0,
                                {0, WholeRange::kNoLimit, QStringLiteral("requests per minute"),
                                 QStringLiteral("0: unlimited")}));
        s.tiers.insert(t.name(), tier);
    }
    return s;
}
