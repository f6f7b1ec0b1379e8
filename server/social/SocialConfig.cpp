#include "SocialConfig.h"

#include "Money.h"
#include "upstream/UrlGuard.h"

SocialConfig SocialConfig::defaults()
{
    SocialConfig c;
    c.provider.name = QStringLiteral("tikhub");
    c.provider.baseUrl = QStringLiteral("https://api.tikhub.io");
    c.provider.totalTimeoutMs = kTimeoutMs;
    c.price = Money::kUnitsPerCredit / 100; // USD 0.01 a call
    for (const char *off : {"tikhub", "health", "demo", "ios_shortcut", "temp_mail"})
        c.platforms.insert(QLatin1String(off), SocialPlatformRule{false, {}});
    return c;
}

namespace {

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

// "host" or "host:port" (an IPv6 literal in brackets), canonical; empty when it is neither.
QString shortLinkHost(const QString &text)
{
    QString host = text;
    QString port;
    const qsizetype colon = host.lastIndexOf(u':');
    if (colon > 0 && !host.mid(colon).contains(u']')) {
        port = host.mid(colon + 1);
        host.truncate(colon);
    }
    bool portOk = true;
    const int portNumber = port.isEmpty() ? 0 : port.toInt(&portOk);
    const UrlGuard::ParsedHost parsed = UrlGuard::parseHost(host);
    if (parsed.form == UrlGuard::HostForm::Invalid || !portOk || portNumber < 0 ||
        portNumber > 65535 || (!port.isEmpty() && portNumber == 0))
        return {};
    const QString canonical = parsed.form == UrlGuard::HostForm::IPv6 && !port.isEmpty()
                                  ? u'[' + parsed.canonical + u']'
                                  : parsed.canonical;
    return port.isEmpty() ? canonical : canonical + u':' + QString::number(portNumber);
}

void parsePlatforms(SocialConfig &c, const ConfigFields &section)
{
    for (const ConfigFields &o :
         section.members(QStringLiteral("platforms"), QStringLiteral("an object"),
                         QStringLiteral("an object {enabled, name}"))) {
        SocialPlatformRule rule = c.platforms.value(o.name());
        rule.enabled = o.flag(QStringLiteral("enabled"), true);
        if (o.has(QStringLiteral("name"))) {
            const QString name = o.string(QStringLiteral("name"), {});
            if (!validPrefix(name))
                o.fail(QStringLiteral("name"), QStringLiteral("must be one path segment of "
                                                              "letters, digits, _, - or ."));
            rule.publicName = name == o.name() ? QString() : name;
        }
        c.platforms.insert(o.name(), rule);
    }
    QHash<QString, QString> taken; // public name -> upstream
    for (auto it = c.platforms.cbegin(); it != c.platforms.cend(); ++it) {
        if (!it->enabled)
            continue;
        const QString pub = it->publicName.isEmpty() ? it.key() : it->publicName;
        if (taken.contains(pub))
            section.fail(QStringLiteral("platforms"),
                         QStringLiteral("publish both %1 and %2 as '%3'")
                             .arg(taken.value(pub), it.key(), pub));
        taken.insert(pub, it.key());
    }
}

void parseCache(SocialCacheConfig &cache, const ConfigFields &o)
{
    cache.enabled = o.flag(QStringLiteral("enabled"), cache.enabled);
    cache.ttlSeconds = o.whole(QStringLiteral("ttl_s"), cache.ttlSeconds, {1, 7 * 86400});
    cache.billHits = o.flag(QStringLiteral("bill_hits"), cache.billHits);
    cache.maxBytes = o.whole(QStringLiteral("max_mb"), cache.maxBytes >> 20, {1, 65536}) << 20;
    cache.maxEntryBytes =
        o.whole(QStringLiteral("max_entry_kb"), cache.maxEntryBytes >> 10, {1, 1 << 20}) << 10;
    const ConfigFields ttls =
        o.section(QStringLiteral("platforms"), QStringLiteral("an object of platform: seconds"));
    for (const QString &platform : ttls.json().keys())
        cache.platformTtl.insert(platform, ttls.whole(platform, 0, {0, 7 * 86400}));
}

} // namespace

SocialConfig SocialConfig::fromJson(const QJsonObject &json)
{
    const ConfigFields section(json, QStringLiteral("social"));
    SocialConfig c = defaults();
    QList<SocialProvider> providers{c.provider};
    applyProviderSection(
        providers, section,
        [] {
            SocialProvider p;
            p.totalTimeoutMs = kTimeoutMs;
            return p;
        },
        [](SocialProvider &p, const ConfigFields &o) {
            p.actionPrefix = o.urlPath(QStringLiteral("action_prefix"), p.actionPrefix);
            p.catalogPath = o.urlPath(QStringLiteral("catalog_path"), p.catalogPath);
            if (!p.actionPrefix.endsWith(u'/'))
                p.actionPrefix += u'/';
        });
    const QString use = section.string(QStringLiteral("provider"), c.provider.name,
                                       QStringLiteral("the name of one of social.providers"));
    const SocialProvider *chosen = findProvider(providers, use);
    if (!chosen)
        section.fail(QStringLiteral("provider"),
                     QStringLiteral("names no provider ('%1')").arg(use));
    c.provider = *chosen;

    const ConfigFields catalog = section.section(QStringLiteral("catalog"));
    c.refreshHours = catalog.whole(QStringLiteral("refresh_hours"), c.refreshHours, {0, 24 * 365});
    c.catalogFile = catalog.string(QStringLiteral("file"), c.catalogFile, QStringLiteral("a path"));

    parsePlatforms(c, section);
    c.price = section.credits(QStringLiteral("price"), c.price, QStringLiteral("0.01"));
    parseCache(c.cache, section.section(QStringLiteral("cache")));

    const ConfigFields extract = section.section(QStringLiteral("extract"));
    for (const QString &h : extract.strings(QStringLiteral("short_link_hosts"), {},
                                            QStringLiteral("an array of host names"))) {
        const QString host = shortLinkHost(h);
        if (host.isEmpty())
            extract.fail(QStringLiteral("short_link_hosts"),
                         QStringLiteral("holds '%1', which is not a host or host:port").arg(h));
        c.shortLinkHosts.append(host);
    }
    c.extractFetch = extract.section(QStringLiteral("fetch")).json();
    (void)urlPolicyField(extract, QStringLiteral("fetch"), UrlPolicy::download(), true);
    c.publicBaseUrl = section.httpUrl(QStringLiteral("public_base_url"), c.publicBaseUrl, true);
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
