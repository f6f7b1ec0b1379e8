#pragma once

#include <optional>
#include <QByteArray>
#include <QHostAddress>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

// The URL guard: every fetch of a user-supplied URL (an audio file_uri, an image task's
// callbackUrl) is checked here first. This header is the pure, synchronous part: the policy,
// the address classifier, the host literal normaliser and the checks that need no DNS.
// GuardedFetch.h adds resolution, pinning, redirects and the transfer itself.

namespace UrlGuard {

// An operator's network exception, "10.1.0.0/16" or "::1/128".
struct Cidr
{
    QHostAddress network;
    int prefix = 0;

    bool contains(const QHostAddress &address) const;
    QString toString() const;
    // Strict: a full address (dotted quad for IPv4), a prefix in range and no host bits set.
    // A bare address is a /32 or /128. On failure returns nothing and sets *error.
    static std::optional<Cidr> parse(const QString &text, QString *error);
};

} // namespace UrlGuard

// What one use of the guard allows. The limits bound every fetch; allowCidrs are the operator's
// exceptions to the forbidden ranges (an intranet deployment), empty by default.
struct UrlPolicy
{
    QStringList schemes = {QStringLiteral("https")}; // lower case; only http and https can work
    QList<quint16> ports;                            // empty: any port
    QList<UrlGuard::Cidr> allowCidrs;
    int maxRedirects = 0; // 0: a redirect is the final answer, not followed
    qint64 maxBytes = 1 << 20;
    int totalTimeoutMs = 30'000; // resolution, every hop and the whole body
    int connectTimeoutMs = 10'000;
    // A non-2xx final answer's body is read up to this many bytes and handed to onData (the
    // webhook delivery log keeps it), then the fetch ends with FetchError::Http; 0: not read.
    qint64 errorBodyBytes = 0;
    // The operator's private CA for intranet receivers and downloads (and what tests use for
    // a certificate they made): a PEM bundle that verifies https peers *instead of* the
    // system's CAs, so a public host verifies only if the bundle holds its CA too. Empty: the
    // system's CAs.
    QString caFile;

    // file_uri downloads: https (http only when allowed), up to 3 redirects, 25 MiB, 120 s.
    static UrlPolicy download(const QJsonObject &settings = {});
    // callbackUrl deliveries: https only, no redirects, 64 KiB of answer (2 KiB of an error
    // answer), 10 s (the contract's receiver timeout).
    static UrlPolicy callback(const QJsonObject &settings = {});

    // Applies an operator's settings, the JSON object a family's config section holds under
    // "fetch": {"allow_http": bool, "allow_cidrs": ["10.1.0.0/16", ...], "ports": [443, ...],
    // "ca_file": "/etc/switchyard/intranet-ca.pem"}. Every key is optional; an unknown key or a
    // bad value throws std::runtime_error naming the field ("allow_cidrs[1]: ...", "ca_file:
    // ..."; a ca_file must be a readable file holding at least one PEM certificate).
    // httpAllowed false refuses allow_http: true.
    void applySettings(const QJsonObject &settings, bool httpAllowed);
};

namespace UrlGuard {

// The forms a URL's host can take once normalised.
enum class HostForm
{
    Name,
    IPv4,
    IPv6,
    Invalid
};

struct ParsedHost
{
    HostForm form = HostForm::Invalid;
    QString canonical;    // lower-case ASCII name (IDNA) without a trailing dot, or address text
    QHostAddress address; // IPv4 and IPv6
    QString zone;         // an IPv6 zone id, if the host had one
    QString error;        // Invalid: why
};

// Normalises a URL host the way libcurl and the C resolver read it, so that no spelling of an
// address escapes the check: an IPv4 literal has 1 to 4 dot-separated parts, each decimal,
// octal (leading 0) or hex (0x), the last filling the remaining bytes (2130706433, 0177.0.0.1,
// 0x7f.1, 127.1 are all 127.0.0.1); an IPv6 literal is bracketed and may carry a zone (%25eth0
// or %eth0). A name is percent-decoded, mapped to ASCII (IDNA; full-width digits become
// digits) and lower-cased, one trailing dot dropped. A host whose last label is a number (as
// the URL standard defines it) must be a valid IPv4 literal, else it is Invalid: resolvers
// disagree on such names.
ParsedHost parseHost(QStringView host);

// The IPv4 reading alone, as inet_aton and libcurl do it (no whitespace, no sign, values
// range-checked), or nothing.
std::optional<quint32> parseIpv4(QStringView text);

// Why an address may not be dialled ("a loopback address", "a private address", ...), or an
// empty string when it may. IPv6 forms that embed an IPv4 address (::ffff:0:0/96 mapped,
// ::ffff:0:0:0/96 translated, 64:ff9b::/96 NAT64, 2002::/16 6to4) are judged on the embedded
// address, and so are the operator's exceptions. An exception opens the cloud metadata
// addresses, 0.0.0.0 and :: only when it names exactly that address.
QString forbiddenReason(const QHostAddress &address, const QList<Cidr> &allow = {});

// The address an embedded form reaches (the IPv4 inside ::ffff:a.b.c.d and the like), else
// the address itself, without a scope id.
QHostAddress effectiveAddress(const QHostAddress &address);

// A URL that passed check(): what libcurl is handed and what must be resolved.
struct GuardedUrl
{
    QByteArray url; // canonical: the normalised host, no user info, no fragment
    QString scheme; // lower case
    QString host;   // ParsedHost::canonical
    quint16 port = 0;
    std::optional<QHostAddress> literal; // the host is an address: nothing to resolve
};

struct Verdict
{
    GuardedUrl url;
    QString error; // empty when accepted; else the reason, for "<field>: <reason>"
    bool ok() const { return error.isEmpty(); }
};

// Everything that can be known without DNS: a valid absolute URL, its scheme in the policy,
// no user info, a port in the policy (never 0), a valid host, and a literal address allowed.
// The URL is parsed by libcurl's own parser, the one the transfer uses, so the two cannot
// disagree about the host. Messages: "https is required", "user info is not allowed",
// "port 22 is not allowed", "the host is a loopback address (127.0.0.1)", ...
Verdict check(const QString &url, const UrlPolicy &policy);

// After resolution: every address must be allowed, or the URL is refused ("resolves to a
// private address"). The message never names the address: it would tell a user what an
// internal name resolves to; *refused (when given) receives it, for the operator's log.
// Empty when all are allowed; "resolves to no address" for none.
QString checkResolved(const QList<QHostAddress> &addresses, const UrlPolicy &policy,
                      QHostAddress *refused = nullptr);

// A redirect's Location resolved against the URL that answered it (relative references,
// spaces and 8-bit bytes encoded as libcurl does when it follows), or nothing when invalid.
std::optional<QByteArray> resolveRedirect(const QByteArray &base, const QByteArray &location);

} // namespace UrlGuard
