#include "SocialConfig.h"

#include "Money.h"
#include "upstream/UrlGuard.h"

#include <QJsonArray>
#include <QUrl>
#include <stdexcept>

namespace {

[[noreturn]] void fail(const QString &message)
{
    throw std::runtime_error(("config: social." + message).toStdString());
}

QJsonObject object(const QJsonObject &o, const char *field)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (!v.isUndefined() && !v.isObject())
        fail(QStringLiteral("%1 must be an object").arg(QLatin1String(field)));
    return v.toObject();
}

int whole(const QJsonObject &o, const char *field, int fallback, int lo, int hi,
          const QString &where)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (v.isUndefined())
        return fallback;
    const double d = v.toDouble(-1);
    if (!v.isDouble() || d < lo || d > hi || double(qint64(d)) != d)
        fail(QStringLiteral("%1%2 must be a whole number from %3 to %4")
                 .arg(where, QLatin1String(field))
                 .arg(lo)
                 .arg(hi));
    return int(d);
}

bool flag(const QJsonObject &o, const char *field, bool fallback, const QString &where)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (v.isUndefined())
        return fallback;
    if (!v.isBool())
        fail(QStringLiteral("%1%2 must be true or false").arg(where, QLatin1String(field)));
    return v.toBool();
}

// A platform prefix: one path segment a client can type.
bool validPrefix(const QString &name)
{
    if (name.isEmpty() || name.size() > 64)
        return false;
    for (const QChar c : name)
        if (!(c.isLetterOrNumber() && c.unicode() < 128) && c != u'_' && c != u'-' && c != u'.')
            return false;
    return name != u"." && name != u"..";
}

} // namespace

SocialConfig SocialConfig::defaults()
{
    SocialConfig c;
    c.provider.name = QStringLiteral("tikhub");
    c.provider.baseUrl = QStringLiteral("https://api.tikhub.io");
    c.provider.totalTimeoutMs = kTimeoutMs;
    c.price = Money::kUnitsPerCredit / 100; // USD 0.01 (spec 4.8)
    for (const char *off : {"tikhub", "health", "demo", "ios_shortcut", "temp_mail"})
        c.platforms.insert(QLatin1String(off), SocialPlatformRule{false, {}});
    return c;
}

SocialConfig SocialConfig::fromJson(const QJsonObject &section)
{
    SocialConfig c = defaults();
    QList<SocialProvider> providers{c.provider};
    applyProviderSection(
        providers, section, QStringLiteral("social"),
        [] {
            SocialProvider p;
            p.totalTimeoutMs = kTimeoutMs;
            return p;
        },
        [](SocialProvider &p, const QJsonObject &o, const QString &where) {
            for (const auto &[field, target] : {std::pair{"action_prefix", &p.actionPrefix},
                                                std::pair{"catalog_path", &p.catalogPath}}) {
                const QJsonValue v = o.value(QLatin1String(field));
                if (v.isUndefined())
                    continue;
                const QString s = v.toString();
                if (!v.isString() || !s.startsWith(u'/') || s.contains(u'?') || s.contains(u' '))
                    fail(QStringLiteral("%1.%2 must be a path starting with /")
                             .arg(where.mid(7), QLatin1String(field)));
                *target = s;
            }
            if (!p.actionPrefix.endsWith(u'/'))
                p.actionPrefix += u'/';
        });
    const QJsonValue use = section.value("provider");
    if (!use.isUndefined() && !use.isString())
        fail(QStringLiteral("provider must name one of social.providers"));
    const SocialProvider *chosen = findProvider(providers, use.toString(c.provider.name));
    if (!chosen)
        fail(QStringLiteral("provider names no provider ('%1')").arg(use.toString()));
    c.provider = *chosen;

    const QJsonObject catalog = object(section, "catalog");
    c.refreshHours =
        whole(catalog, "refresh_hours", c.refreshHours, 0, 24 * 365, QStringLiteral("catalog."));
    const QJsonValue file = catalog.value("file");
    if (!file.isUndefined() && !file.isString())
        fail(QStringLiteral("catalog.file must be a path"));
    c.catalogFile = file.toString();

    const QJsonObject platforms = object(section, "platforms");
    QHash<QString, QString> taken; // public name -> upstream
    for (auto it = platforms.begin(); it != platforms.end(); ++it) {
        const QString w = QStringLiteral("platforms.%1.").arg(it.key());
        if (!it.value().isObject())
            fail(QStringLiteral("platforms.%1 must be an object {enabled, name}").arg(it.key()));
        const QJsonObject o = it.value().toObject();
        SocialPlatformRule rule = c.platforms.value(it.key());
        rule.enabled = flag(o, "enabled", true, w);
        const QJsonValue name = o.value("name");
        if (!name.isUndefined()) {
            if (!name.isString() || !validPrefix(name.toString()))
                fail(w + QStringLiteral("name must be one path segment of letters, digits, _, "
                                        "- or ."));
            rule.publicName = name.toString() == it.key() ? QString() : name.toString();
        }
        c.platforms.insert(it.key(), rule);
    }
    for (auto it = c.platforms.cbegin(); it != c.platforms.cend(); ++it) {
        if (!it->enabled)
            continue;
        const QString pub = it->publicName.isEmpty() ? it.key() : it->publicName;
        if (taken.contains(pub))
            fail(QStringLiteral("platforms: %1 and %2 are both published as '%3'")
                     .arg(taken.value(pub), it.key(), pub));
        taken.insert(pub, it.key());
    }

    const QJsonValue price = section.value("price");
    if (!price.isUndefined()) {
        const auto units = Money::parseCredits(price.toString());
        if (!price.isString() || !units || *units < 0)
            fail(QStringLiteral("price must be a decimal string of credits, e.g. \"0.01\""));
        c.price = *units;
    }

    const QJsonObject cache = object(section, "cache");
    const QString cw = QStringLiteral("cache.");
    c.cache.enabled = flag(cache, "enabled", c.cache.enabled, cw);
    c.cache.ttlSeconds = whole(cache, "ttl_s", c.cache.ttlSeconds, 1, 7 * 86400, cw);
    c.cache.billHits = flag(cache, "bill_hits", c.cache.billHits, cw);
    c.cache.maxBytes = qint64(whole(cache, "max_mb", int(c.cache.maxBytes >> 20), 1, 65536, cw))
                       << 20;
    c.cache.maxEntryBytes =
        qint64(whole(cache, "max_entry_kb", int(c.cache.maxEntryBytes >> 10), 1, 1 << 20, cw))
        << 10;
    const QJsonValue ttls = cache.value("platforms");
    if (!ttls.isUndefined() && !ttls.isObject())
        fail(QStringLiteral("cache.platforms must be an object of platform: seconds"));
    const QJsonObject to = ttls.toObject();
    for (auto it = to.begin(); it != to.end(); ++it)
        c.cache.platformTtl.insert(it.key(), whole(to, it.key().toUtf8().constData(), 0, 0,
                                                   7 * 86400, QStringLiteral("cache.platforms.")));

    const QJsonObject extract = object(section, "extract");
    const QJsonValue hosts = extract.value("short_link_hosts");
    if (!hosts.isUndefined() && !hosts.isArray())
        fail(QStringLiteral("extract.short_link_hosts must be an array of host names"));
    for (const QJsonValue &h : hosts.toArray()) {
        // "host" or "host:port" (an IPv6 literal in brackets).
        QString host = h.toString();
        QString port;
        const qsizetype colon = host.lastIndexOf(u':');
        if (colon > 0 && !host.mid(colon).contains(u']')) {
            port = host.mid(colon + 1);
            host.truncate(colon);
        }
        bool portOk = true;
        const int portNumber = port.isEmpty() ? 0 : port.toInt(&portOk);
        const UrlGuard::ParsedHost parsed = UrlGuard::parseHost(host);
        if (!h.isString() || parsed.form == UrlGuard::HostForm::Invalid || !portOk ||
            portNumber < 0 || portNumber > 65535 || (!port.isEmpty() && portNumber == 0))
            fail(QStringLiteral("extract.short_link_hosts holds '%1', which is not a host or "
                                "host:port")
                     .arg(h.toString()));
        const QString canonical = parsed.form == UrlGuard::HostForm::IPv6 && !port.isEmpty()
                                      ? u'[' + parsed.canonical + u']'
                                      : parsed.canonical;
        c.shortLinkHosts.append(port.isEmpty() ? canonical
                                               : canonical + u':' + QString::number(portNumber));
    }
    const QJsonValue fetch = extract.value("fetch");
    if (!fetch.isUndefined() && !fetch.isObject())
        fail(QStringLiteral("extract.fetch must be an object"));
    c.extractFetch = fetch.toObject();
    try {
        UrlPolicy policy = UrlPolicy::download();
        policy.applySettings(c.extractFetch, true);
    } catch (const std::exception &e) {
        fail(QStringLiteral("extract.fetch.") + QString::fromUtf8(e.what()));
    }
    const QJsonValue base = section.value("public_base_url");
    if (!base.isUndefined()) {
        const QUrl url(base.toString());
        if (!base.isString() || !url.isValid() || url.host().isEmpty() || url.hasQuery() ||
            (url.scheme() != u"http" && url.scheme() != u"https"))
            fail(QStringLiteral("public_base_url must be an http or https URL without query, "
                                "e.g. https://switchyard.example.com"));
        c.publicBaseUrl = base.toString();
        while (c.publicBaseUrl.endsWith(u'/'))
            c.publicBaseUrl.chop(1);
    }
    return c;
}

QString SocialConfig::publicName(const QString &upstreamPlatform) const
{
    const auto it = platforms.constFind(upstreamPlatform);
    if (it == platforms.cend())
        return upstreamPlatform;
    if (!it->enabled)
        return {};
    return it->publicName.isEmpty() ? upstreamPlatform : it->publicName;
}

QString SocialConfig::upstreamPlatform(const QString &name, const QStringList &known) const
{
    for (auto it = platforms.cbegin(); it != platforms.cend(); ++it)
        if (it->enabled && it->publicName == name)
            return it.key();
    if (known.contains(name) && publicName(name) == name)
        return name;
    return {};
}

QString SocialConfig::unusableReason() const
{
    return provider.missingSetting(QStringLiteral("social"), QStringLiteral("social-data"));
}
