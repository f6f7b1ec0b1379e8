#include "UrlGuard.h"

#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <cstring>
#include <curl/curl.h>
#include <memory>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QUrl>
#include <stdexcept>

namespace UrlGuard {

namespace {

constexpr qsizetype kMaxUrlLength = 8192;
constexpr qsizetype kMaxHostLength = 253;

using Bytes = std::array<quint8, 16>;

struct Range
{
    Bytes net;
    int prefix;
    const char *what;
};

Bytes bytesOf(const QHostAddress &a)
{
    Bytes b{};
    if (a.protocol() == QAbstractSocket::IPv4Protocol) {
        const quint32 v = a.toIPv4Address();
        b = {quint8(v >> 24), quint8(v >> 16), quint8(v >> 8), quint8(v)};
    } else {
        const Q_IPV6ADDR v = a.toIPv6Address();
        std::memcpy(b.data(), v.c, 16);
    }
    return b;
}

bool prefixMatches(const Bytes &a, const Bytes &net, int prefix)
{
    int i = 0;
    for (; prefix >= 8; prefix -= 8, ++i)
        if (a[i] != net[i])
            return false;
    if (prefix == 0)
        return true;
    const quint8 mask = quint8(0xff << (8 - prefix));
    return (a[i] & mask) == (net[i] & mask);
}

constexpr Bytes v4(quint8 a, quint8 b, quint8 c, quint8 d)
{
    return {a, b, c, d};
}

Bytes v6(const char *text)
{
    Bytes b{};
    inet_pton(AF_INET6, text, b.data());
    return b;
}

// Most specific first: the first match names the reason.
const std::array kV4Ranges = {
    Range{v4(0, 0, 0, 0), 32, "an unspecified address"},
    Range{v4(169, 254, 169, 254), 32, "a cloud metadata address"},
    Range{v4(255, 255, 255, 255), 32, "the broadcast address"},
    Range{v4(0, 0, 0, 0), 8, "a 'this network' address"},
    Range{v4(10, 0, 0, 0), 8, "a private address"},
    Range{v4(100, 64, 0, 0), 10, "a shared (carrier-grade NAT) address"},
    Range{v4(127, 0, 0, 0), 8, "a loopback address"},
    Range{v4(169, 254, 0, 0), 16, "a link-local address"},
    Range{v4(172, 16, 0, 0), 12, "a private address"},
    Range{v4(192, 0, 0, 0), 24, "an IETF protocol assignments address"},
    Range{v4(192, 0, 2, 0), 24, "a documentation address"},
    Range{v4(192, 168, 0, 0), 16, "a private address"},
    Range{v4(198, 18, 0, 0), 15, "a benchmarking address"},
    Range{v4(198, 51, 100, 0), 24, "a documentation address"},
    Range{v4(203, 0, 113, 0), 24, "a documentation address"},
    Range{v4(224, 0, 0, 0), 4, "a multicast address"},
    Range{v4(240, 0, 0, 0), 4, "a reserved address"},
};

const std::array<Range, 12> &v6Ranges()
{
    static const std::array<Range, 12> ranges = {
        Range{v6("::"), 128, "an unspecified address"},
        Range{v6("::1"), 128, "a loopback address"},
        // ::a.b.c.d, deprecated since 2006; some stacks still route it as IPv4.
        Range{v6("::"), 96, "an IPv4-compatible address (deprecated)"},
        Range{v6("64:ff9b:1::"), 48, "a local-use NAT64 address"},
        Range{v6("100::"), 64, "a discard-only address"},
        Range{v6("2001:db8::"), 32, "a documentation address"},
        Range{v6("2001::"), 32, "a Teredo address"}, // tunnels to an obfuscated IPv4 address
        Range{v6("fd00:ec2::254"), 128, "a cloud metadata address"},
        Range{v6("fc00::"), 7, "a private (unique local) address"},
        Range{v6("fe80::"), 10, "a link-local address"},
        Range{v6("fec0::"), 10, "a site-local address (deprecated)"},
        Range{v6("ff00::"), 8, "a multicast address"},
    };
    return ranges;
}

// Addresses no broad exception should open: credentials live behind the metadata addresses,
// and dialling 0.0.0.0 or :: reaches this host.
bool exactOnly(const QHostAddress &eff)
{
    static const QList<QHostAddress> addresses = {
        QHostAddress(QStringLiteral("169.254.169.254")), QHostAddress(QStringLiteral("0.0.0.0")),
        QHostAddress(QStringLiteral("fd00:ec2::254")), QHostAddress(QStringLiteral("::"))};
    return addresses.contains(eff);
}

const char *classify(const QHostAddress &eff)
{
    const Bytes b = bytesOf(eff);
    if (eff.protocol() == QAbstractSocket::IPv4Protocol) {
        for (const Range &r : kV4Ranges)
            if (prefixMatches(b, r.net, r.prefix))
                return r.what;
        return nullptr;
    }
    for (const Range &r : v6Ranges())
        if (prefixMatches(b, r.net, r.prefix))
            return r.what;
    return nullptr;
}

// Which embedding form an IPv6 address uses, if any, and the IPv4 address inside.
const char *embedding(const QHostAddress &address, quint32 *v4addr)
{
    if (address.protocol() != QAbstractSocket::IPv6Protocol)
        return nullptr;
    const Bytes b = bytesOf(address);
    auto at = [&](int i) {
        return quint32(b[i]) << 24 | quint32(b[i + 1]) << 16 | quint32(b[i + 2]) << 8 | b[i + 3];
    };
    auto zero = [&](int from, int to) {
        for (int i = from; i < to; ++i)
            if (b[i])
                return false;
        return true;
    };
    if (zero(0, 10) && b[10] == 0xff && b[11] == 0xff) {
        *v4addr = at(12);
        return "IPv4-mapped";
    }
    if (zero(0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0) {
        *v4addr = at(12);
        return "IPv4-translated";
    }
    if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12)) {
        *v4addr = at(12);
        return "NAT64";
    }
    if (b[0] == 0x20 && b[1] == 0x02) {
        *v4addr = at(2);
        return "6to4";
    }
    return nullptr;
}

bool isHexDigit(QChar c)
{
    return (c >= u'0' && c <= u'9') || (c >= u'a' && c <= u'f') || (c >= u'A' && c <= u'F');
}

// The URL standard's "ends in a number": the last label (after one trailing dot) is all
// digits, or 0x followed by hex digits.
bool endsInNumber(QStringView host)
{
    if (host.endsWith(u'.'))
        host.chop(1);
    const qsizetype dot = host.lastIndexOf(u'.');
    const QStringView last = dot < 0 ? host : host.mid(dot + 1);
    if (last.isEmpty())
        return false;
    if (last.startsWith(u"0x", Qt::CaseInsensitive)) {
        for (QChar c : last.mid(2))
            if (!isHexDigit(c))
                return false;
        return true;
    }
    for (QChar c : last)
        if (c < u'0' || c > u'9')
            return false;
    return true;
}

bool validLabelChar(QChar c)
{
    return (c >= u'a' && c <= u'z') || (c >= u'0' && c <= u'9') || c == u'-' || c == u'_';
}

struct CurlUrlFree
{
    void operator()(CURLU *u) const { curl_url_cleanup(u); }
};
using CurlUrl = std::unique_ptr<CURLU, CurlUrlFree>;

// One part of a parsed URL, or nothing when absent.
std::optional<QByteArray> part(CURLU *u, CURLUPart which, unsigned flags = 0)
{
    char *value = nullptr;
    if (curl_url_get(u, which, &value, flags) != CURLUE_OK || !value)
        return std::nullopt;
    QByteArray out(value);
    curl_free(value);
    return out;
}

QString schemeRequirement(const QStringList &schemes)
{
    return schemes.join(QStringLiteral(" or ")) + QStringLiteral(" is required");
}

} // namespace

bool Cidr::contains(const QHostAddress &address) const
{
    if (address.protocol() != network.protocol())
        return false;
    return prefixMatches(bytesOf(address), bytesOf(network), prefix);
}

QString Cidr::toString() const
{
    return network.toString() + u'/' + QString::number(prefix);
}

std::optional<Cidr> Cidr::parse(const QString &text, QString *error)
{
    const auto fail = [&](const QString &why) -> std::optional<Cidr> {
        *error = QStringLiteral("\"%1\" is not a CIDR: %2").arg(text, why);
        return std::nullopt;
    };
    const qsizetype slash = text.indexOf(u'/');
    const QString addr = slash < 0 ? text : text.left(slash);
    Cidr cidr;
    if (addr.contains(u':')) {
        Bytes b{};
        if (inet_pton(AF_INET6, addr.toLatin1().constData(), b.data()) != 1)
            return fail(QStringLiteral("not an IPv6 address"));
        cidr.network = QHostAddress(b.data());
        cidr.prefix = 128;
        quint32 inner = 0;
        if (embedding(cidr.network, &inner)) // exceptions match the embedded address
            return fail(QStringLiteral("an IPv6 form of IPv4 addresses; write the IPv4 CIDR"));
    } else {
        // Dotted quad only: "10.1" means 10.0.0.1 to inet_aton, not what an operator meant.
        const QStringList parts = addr.split(u'.');
        bool good = parts.size() == 4;
        for (const QString &p : parts) {
            bool ok = false;
            const int v = p.toInt(&ok);
            if (!ok || p.isEmpty() || p.size() > 3 || v > 255 || (p.size() > 1 && p[0] == u'0') ||
                !std::all_of(p.begin(), p.end(), [](QChar c) { return c.isDigit(); }))
                good = false;
        }
        if (!good)
            return fail(QStringLiteral("not a dotted-quad IPv4 address"));
        cidr.network = QHostAddress(addr);
        cidr.prefix = 32;
    }
    if (slash >= 0) {
        const QString p = text.mid(slash + 1);
        bool ok = false;
        const int prefix = p.toInt(&ok);
        if (!ok || p.isEmpty() ||
            !std::all_of(p.begin(), p.end(), [](QChar c) { return c >= u'0' && c <= u'9'; }) ||
            prefix > cidr.prefix)
            return fail(QStringLiteral("the prefix must be 0 to %1").arg(cidr.prefix));
        cidr.prefix = prefix;
    }
    const Bytes b = bytesOf(cidr.network);
    Bytes masked{};
    for (int i = 0, left = cidr.prefix; i < 16 && left > 0; ++i, left -= 8)
        masked[i] = b[i] & quint8(left >= 8 ? 0xff : 0xff << (8 - left));
    if (masked != b) {
        Cidr fixed = cidr;
        fixed.network = cidr.network.protocol() == QAbstractSocket::IPv4Protocol
                            ? QHostAddress(quint32(masked[0]) << 24 | quint32(masked[1]) << 16 |
                                           quint32(masked[2]) << 8 | masked[3])
                            : QHostAddress(masked.data());
        return fail(QStringLiteral("host bits are set (did you mean %1?)").arg(fixed.toString()));
    }
    return cidr;
}

std::optional<quint32> parseIpv4(QStringView text)
{
    std::array<quint64, 4> parts{};
    int n = 0;
    qsizetype i = 0;
    const qsizetype len = text.size();
    while (true) {
        if (n == 4)
            return std::nullopt;
        if (i >= len || text[i] < u'0' || text[i] > u'9') // no sign, no space, no empty part
            return std::nullopt;
        int base = 10;
        if (text[i] == u'0') {
            base = 8;
            ++i;
            if (i < len && (text[i] == u'x' || text[i] == u'X')) {
                base = 16;
                ++i;
                if (i >= len || !isHexDigit(text[i])) // "0x" alone is not a number to strtoul
                    return std::nullopt;
            }
        }
        quint64 value = 0;
        for (; i < len && text[i] != u'.'; ++i) {
            const char16_t c = text[i].unicode();
            int d;
            if (c >= u'0' && c <= u'9')
                d = c - u'0';
            else if (c >= u'a' && c <= u'f')
                d = c - u'a' + 10;
            else if (c >= u'A' && c <= u'F')
                d = c - u'A' + 10;
            else
                return std::nullopt;
            if (d >= base)
                return std::nullopt;
            value = value * base + d;
            if (value > 0xffffffffULL)
                return std::nullopt;
        }
        parts[n++] = value;
        if (i >= len)
            break;
        ++i; // the dot; a trailing dot fails at the top of the loop
    }
    for (int k = 0; k < n - 1; ++k)
        if (parts[k] > 0xff)
            return std::nullopt;
    const int lastBits = 32 - 8 * (n - 1);
    if (lastBits < 32 && parts[n - 1] >= (quint64(1) << lastBits))
        return std::nullopt;
    quint32 v = 0;
    for (int k = 0; k < n - 1; ++k)
        v |= quint32(parts[k]) << (24 - 8 * k);
    return v | quint32(parts[n - 1]);
}

ParsedHost parseHost(QStringView host)
{
    ParsedHost out;
    const auto invalid = [&](const QString &why) {
        out.form = HostForm::Invalid;
        out.error = why;
        return out;
    };
    if (host.isEmpty())
        return invalid(QStringLiteral("the host is empty"));
    if (host.size() > kMaxUrlLength)
        return invalid(QStringLiteral("the host is too long"));
    if (host.startsWith(u'[')) {
        if (!host.endsWith(u']'))
            return invalid(QStringLiteral("the IPv6 address is not closed by ]"));
        QStringView inner = host.mid(1, host.size() - 2);
        const qsizetype pct = inner.indexOf(u'%');
        if (pct >= 0) {
            QStringView zone = inner.mid(pct + 1);
            if (zone.startsWith(u"25"))
                zone = zone.mid(2);
            if (zone.isEmpty() || !std::all_of(zone.begin(), zone.end(), [](QChar c) {
                    return (c.unicode() < 0x80 && c.isLetterOrNumber()) || c == u'-' || c == u'.' ||
                           c == u'_' || c == u'~';
                }))
                return invalid(QStringLiteral("the IPv6 zone id is not valid"));
            out.zone = zone.toString();
            inner = inner.left(pct);
        }
        Bytes b{};
        const bool ascii =
            std::all_of(inner.begin(), inner.end(), [](QChar c) { return c.unicode() < 0x80; });
        if (!ascii || !inner.contains(u':') ||
            inet_pton(AF_INET6, inner.toLatin1().constData(), b.data()) != 1)
            return invalid(QStringLiteral("the IPv6 address is not valid"));
        out.form = HostForm::IPv6;
        out.address = QHostAddress(b.data());
        out.canonical = out.address.toString();
        return out;
    }
    QString name = host.toString();
    if (name.contains(u'%')) {
        const QByteArray raw = QByteArray::fromPercentEncoding(name.toUtf8());
        name = QString::fromUtf8(raw);
        if (name.contains(u'%') || name.toUtf8() != raw) // "%25" or invalid UTF-8
            return invalid(QStringLiteral("the host name is not valid"));
    }
    for (QChar c : std::as_const(name))
        if (c.unicode() <= 0x20 || c == u'\x7f' || QStringView(u"/?#@[]\\:").contains(c))
            return invalid(QStringLiteral("the host name is not valid"));
    // IDNA first: it maps full-width digits and dots, so "１２７.０.０.１" is 127.0.0.1.
    QString ace = QString::fromLatin1(QUrl::toAce(name)).toLower();
    // IDNA refuses a label over 63 characters, which an IPv4 literal may have ("000…0127" is
    // 87.0.0.1 to libcurl): what can only be an IPv4 literal goes on to that reading.
    if (ace.isEmpty() && std::all_of(name.cbegin(), name.cend(), [](QChar c) {
            return c == u'.' || c == u'x' || c == u'X' || isHexDigit(c);
        }))
        ace = name.toLower();
    if (ace.isEmpty())
        return invalid(QStringLiteral("the host name is not valid"));
    if (endsInNumber(ace)) {
        QStringView v = ace;
        if (v.endsWith(u'.'))
            v.chop(1);
        const std::optional<quint32> a = parseIpv4(v);
        if (!a)
            return invalid(QStringLiteral("the host is not a valid IPv4 address"));
        out.form = HostForm::IPv4;
        out.address = QHostAddress(*a);
        out.canonical = out.address.toString();
        return out;
    }
    if (ace.endsWith(u'.'))
        ace.chop(1);
    if (ace.isEmpty() || ace.size() > kMaxHostLength)
        return invalid(QStringLiteral("the host name is not valid"));
    for (QStringView label : QStringView(ace).split(u'.'))
        if (label.isEmpty() || label.size() > 63 ||
            !std::all_of(label.begin(), label.end(), validLabelChar))
            return invalid(QStringLiteral("the host name is not valid"));
    out.form = HostForm::Name;
    out.canonical = ace;
    return out;
}

QHostAddress effectiveAddress(const QHostAddress &address)
{
    quint32 inner = 0;
    if (embedding(address, &inner))
        return QHostAddress(inner);
    if (address.protocol() == QAbstractSocket::IPv4Protocol)
        return QHostAddress(address.toIPv4Address());
    return QHostAddress(address.toIPv6Address());
}

QString forbiddenReason(const QHostAddress &address, const QList<Cidr> &allow)
{
    if (address.protocol() != QAbstractSocket::IPv4Protocol &&
        address.protocol() != QAbstractSocket::IPv6Protocol)
        return QStringLiteral("not an IP address");
    quint32 inner = 0;
    const char *form = embedding(address, &inner);
    const QHostAddress eff = effectiveAddress(address);
    const char *what = classify(eff);
    if (!what)
        return {};
    const bool exact = exactOnly(eff);
    const int full = eff.protocol() == QAbstractSocket::IPv4Protocol ? 32 : 128;
    for (const Cidr &c : allow)
        if (c.contains(eff) && (!exact || c.prefix == full))
            return {};
    QString reason = QString::fromLatin1(what);
    if (form)
        reason += QStringLiteral(" (%1 IPv6)").arg(QLatin1String(form));
    return reason;
}

Verdict check(const QString &url, const UrlPolicy &policy)
{
    Verdict v;
    const auto refuse = [&](const QString &why) {
        v.error = why;
        return v;
    };
    if (url.size() > kMaxUrlLength)
        return refuse(QStringLiteral("the URL is longer than %1 characters").arg(kMaxUrlLength));
    const QByteArray utf8 = url.toUtf8();
    // A NUL would end the text libcurl reads; whitespace and controls are never part of a URL.
    for (char c : utf8)
        if (quint8(c) <= 0x20 || c == 0x7f)
            return refuse(QStringLiteral("the URL contains spaces or control characters"));
    CurlUrl u(curl_url());
    const CURLUcode rc = curl_url_set(u.get(), CURLUPART_URL, utf8.constData(),
                                      CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE);
    if (rc != CURLUE_OK)
        return refuse(
            QStringLiteral("the URL is not valid (%1)").arg(QLatin1String(curl_url_strerror(rc))));
    const QString scheme =
        QString::fromLatin1(part(u.get(), CURLUPART_SCHEME).value_or("")).toLower();
    if (!policy.schemes.contains(scheme))
        return refuse(schemeRequirement(policy.schemes));
    if (part(u.get(), CURLUPART_USER) || part(u.get(), CURLUPART_PASSWORD) ||
        part(u.get(), CURLUPART_OPTIONS))
        return refuse(QStringLiteral("user info is not allowed"));
    const std::optional<QByteArray> rawHost = part(u.get(), CURLUPART_HOST);
    if (!rawHost || rawHost->isEmpty())
        return refuse(QStringLiteral("the URL has no host"));
    const ParsedHost host = parseHost(QString::fromUtf8(*rawHost));
    if (host.form == HostForm::Invalid)
        return refuse(host.error);
    const int port = part(u.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT).value_or("0").toInt();
    if (port <= 0 || port > 65535)
        return refuse(QStringLiteral("port %1 is not valid").arg(port));
    if (!policy.ports.isEmpty() && !policy.ports.contains(quint16(port)))
        return refuse(QStringLiteral("port %1 is not allowed").arg(port));
    if (host.form != HostForm::Name) {
        const QString why = forbiddenReason(host.address, policy.allowCidrs);
        if (!why.isEmpty())
            return refuse(QStringLiteral("the host is %1 (%2)").arg(why, host.canonical));
        v.url.literal = host.address;
    }
    if (!host.zone.isEmpty() || part(u.get(), CURLUPART_ZONEID))
        return refuse(QStringLiteral("an IPv6 zone id is not allowed"));

    // Hand libcurl the host exactly as checked and resolved.
    const QByteArray canonicalHost = host.form == HostForm::IPv6
                                         ? '[' + host.canonical.toLatin1() + ']'
                                         : host.canonical.toLatin1();
    curl_url_set(u.get(), CURLUPART_HOST, canonicalHost.constData(), 0);
    curl_url_set(u.get(), CURLUPART_FRAGMENT, nullptr, 0);
    v.url.url = part(u.get(), CURLUPART_URL).value_or(QByteArray());
    if (v.url.url.isEmpty())
        return refuse(QStringLiteral("the URL is not valid"));
    v.url.scheme = scheme;
    v.url.host = host.canonical;
    v.url.port = quint16(port);
    return v;
}

QString checkResolved(const QList<QHostAddress> &addresses, const UrlPolicy &policy,
                      QHostAddress *refused)
{
    if (addresses.isEmpty())
        return QStringLiteral("resolves to no address");
    for (const QHostAddress &a : addresses) {
        const QString why = forbiddenReason(a, policy.allowCidrs);
        if (!why.isEmpty()) {
            if (refused)
                *refused = a;
            return QStringLiteral("resolves to ") + why;
        }
    }
    return {};
}

std::optional<QByteArray> resolveRedirect(const QByteArray &base, const QByteArray &location)
{
    if (location.trimmed().isEmpty() || location.contains('\0'))
        return std::nullopt;
    CurlUrl u(curl_url());
    if (curl_url_set(u.get(), CURLUPART_URL, base.constData(), CURLU_NON_SUPPORT_SCHEME) !=
        CURLUE_OK)
        return std::nullopt;
    // The flags libcurl's own redirect following uses.
    if (curl_url_set(u.get(), CURLUPART_URL, location.trimmed().constData(),
                     CURLU_NON_SUPPORT_SCHEME | CURLU_URLENCODE | CURLU_ALLOW_SPACE) != CURLUE_OK)
        return std::nullopt;
    return part(u.get(), CURLUPART_URL);
}

} // namespace UrlGuard

// ---- UrlPolicy -------------------------------------------------------------------------------

UrlPolicy UrlPolicy::download(const QJsonObject &settings)
{
    UrlPolicy p;
    p.maxRedirects = 3;
    p.maxBytes = 25 * 1024 * 1024;
    p.totalTimeoutMs = 120'000;
    p.connectTimeoutMs = 10'000;
    p.applySettings(settings, true);
    return p;
}

UrlPolicy UrlPolicy::callback(const QJsonObject &settings)
{
    UrlPolicy p;
    p.maxRedirects = 0;
    p.maxBytes = 64 * 1024;
    p.errorBodyBytes = 2 * 1024;
    p.totalTimeoutMs = 10'000;
    p.connectTimeoutMs = 10'000;
    p.applySettings(settings, false);
    return p;
}

void UrlPolicy::applySettings(const QJsonObject &settings, bool httpAllowed)
{
    const auto fail = [](const QString &field, const QString &why) {
        throw std::runtime_error((field + QStringLiteral(": ") + why).toStdString());
    };
    static const QStringList known = {QStringLiteral("allow_http"), QStringLiteral("allow_cidrs"),
                                      QStringLiteral("ports"), QStringLiteral("ca_file")};
    for (auto it = settings.begin(); it != settings.end(); ++it)
        if (!known.contains(it.key()))
            fail(it.key(), QStringLiteral("not a fetch setting (%1)").arg(known.join(u", ")));

    if (settings.contains(u"allow_http")) {
        const QJsonValue v = settings.value(u"allow_http");
        if (!v.isBool())
            fail(QStringLiteral("allow_http"), QStringLiteral("must be true or false"));
        if (v.toBool() && !httpAllowed)
            fail(QStringLiteral("allow_http"), QStringLiteral("this use requires https"));
        schemes = {QStringLiteral("https")};
        if (v.toBool())
            schemes.append(QStringLiteral("http"));
    }
    if (settings.contains(u"allow_cidrs")) {
        const QJsonValue v = settings.value(u"allow_cidrs");
        if (!v.isArray())
            fail(QStringLiteral("allow_cidrs"), QStringLiteral("must be an array of CIDRs"));
        QList<UrlGuard::Cidr> cidrs;
        const QJsonArray a = v.toArray();
        for (qsizetype i = 0; i < a.size(); ++i) {
            const QString field = QStringLiteral("allow_cidrs[%1]").arg(i);
            if (!a[i].isString())
                fail(field, QStringLiteral("must be a string such as \"10.1.0.0/16\""));
            QString error;
            const std::optional<UrlGuard::Cidr> c = UrlGuard::Cidr::parse(a[i].toString(), &error);
            if (!c)
                fail(field, error);
            cidrs.append(*c);
        }
        allowCidrs = cidrs;
    }
    if (settings.contains(u"ports")) {
        const QJsonValue v = settings.value(u"ports");
        if (!v.isArray())
            fail(QStringLiteral("ports"), QStringLiteral("must be an array of port numbers"));
        QList<quint16> list;
        const QJsonArray a = v.toArray();
        for (qsizetype i = 0; i < a.size(); ++i) {
            const double d = a[i].toDouble(-1);
            if (!a[i].isDouble() || d != double(qint64(d)) || d < 1 || d > 65535)
                fail(QStringLiteral("ports[%1]").arg(i),
                     QStringLiteral("must be a port number from 1 to 65535"));
            list.append(quint16(d));
        }
        ports = list;
    }
    if (settings.contains(u"ca_file")) {
        const QJsonValue v = settings.value(u"ca_file");
        const QString field = QStringLiteral("ca_file");
        if (!v.isString() || v.toString().isEmpty())
            fail(field, QStringLiteral("must be the path of a PEM file of CA certificates"));
        const QString path = v.toString();
        const QFileInfo info(path);
        QFile file(path);
        if (!info.exists())
            fail(field, QStringLiteral("\"%1\" does not exist").arg(path));
        if (!info.isFile())
            fail(field, QStringLiteral("\"%1\" is not a file").arg(path));
        if (!file.open(QIODevice::ReadOnly))
            fail(field,
                 QStringLiteral("\"%1\" is not readable (%2)").arg(path, file.errorString()));
        // A bundle holds at least one PEM certificate; anything else would fail every https
        // fetch later with a TLS error, far from this setting.
        if (!file.readAll().contains("-----BEGIN CERTIFICATE-----"))
            fail(field, QStringLiteral("\"%1\" holds no PEM certificate").arg(path));
        caFile = info.absoluteFilePath();
    }
}
