// libFuzzer target for the URL guard's pure part: the host literal normaliser, the IPv4
// reading, the address classifier and check(). Built with clang outside the main build by
// tests/upstream/fuzz_url_guard.sh. Besides "no crash, no sanitizer report", it checks the
// properties the guard relies on, and traps when one fails:
//  1. parseIpv4 reads exactly what glibc's inet_aton reads;
//  2. whenever libcurl's URL parser turns a host into an IPv4 address, parseHost agrees;
//  3. a URL check() accepts is handed to libcurl with the host it checked: libcurl re-parses
//     the canonical URL to the same host and port, with no user info;
//  4. an IPv6 form embedding an IPv4 address is forbidden exactly when that address is.

#include "FuzzRequire.h"
#include "upstream/UrlGuard.h"

#include <arpa/inet.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <curl/curl.h>

using namespace UrlGuard;

namespace {

std::optional<QByteArray> curlHost(const QByteArray &url, QByteArray *port = nullptr,
                                   bool *user = nullptr)
{
    CURLU *u = curl_url();
    std::optional<QByteArray> out;
    if (curl_url_set(u, CURLUPART_URL, url.constData(), CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK) {
        char *v = nullptr;
        if (curl_url_get(u, CURLUPART_HOST, &v, 0) == CURLUE_OK) {
            out = QByteArray(v);
            curl_free(v);
        }
        if (port && curl_url_get(u, CURLUPART_PORT, &v, CURLU_DEFAULT_PORT) == CURLUE_OK) {
            *port = QByteArray(v);
            curl_free(v);
        }
        if (user) {
            *user = curl_url_get(u, CURLUPART_USER, &v, 0) == CURLUE_OK;
            if (*user)
                curl_free(v);
        }
    }
    curl_url_cleanup(u);
    return out;
}

bool plainAscii(const QByteArray &b)
{
    for (char c : b)
        if (quint8(c) <= 0x20 || quint8(c) >= 0x7f)
            return false;
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 300)
        return 0;
    const QByteArray input(reinterpret_cast<const char *>(data), qsizetype(size));
    const QString text = QString::fromUtf8(input);

    // 1. The IPv4 reading against inet_aton (which stops at whitespace, so plain ASCII only).
    if (plainAscii(input)) {
        in_addr in{};
        const bool aton = inet_aton(input.constData(), &in) != 0;
        const std::optional<quint32> ours = parseIpv4(text);
        require(aton == ours.has_value(), "parseIpv4 accepts what inet_aton accepts", input);
        if (aton)
            require(*ours == ntohl(in.s_addr), "parseIpv4 reads inet_aton's value", input);
    }

    // 2. The normaliser against libcurl's own IPv4 normalisation of a URL host.
    const ParsedHost parsed = parseHost(text);
    if (parsed.form == HostForm::Name)
        require(!parsed.canonical.isEmpty() && parsed.canonical == parsed.canonical.toLower(),
                "a name is canonical", input);
    if (plainAscii(input) && !input.contains('/') && !input.contains('?') && !input.contains('#') &&
        !input.contains('@') && !input.contains(':') && !input.contains('\\') &&
        !input.contains('[')) {
        if (const auto host = curlHost("http://" + input + "/")) {
            in_addr in{};
            if (inet_pton(AF_INET, host->constData(), &in) == 1) {
                require(parsed.form == HostForm::IPv4, "curl's IPv4 host is IPv4 to us", input);
                require(parsed.address == QHostAddress(ntohl(in.s_addr)),
                        "curl's IPv4 host is the same address to us", input);
            }
        }
    }

    // 3. check() on the input as a URL, and as the host of one; what it accepts, libcurl
    // reads back unchanged.
    UrlPolicy policy;
    policy.schemes = {QStringLiteral("https"), QStringLiteral("http")};
    for (const QString &url : {text, QStringLiteral("https://") + text + QStringLiteral("/p")}) {
        const Verdict v = check(url, policy);
        if (!v.ok())
            continue;
        QByteArray port;
        bool user = true;
        const auto host = curlHost(v.url.url, &port, &user);
        require(host.has_value(), "the canonical URL parses", input);
        const QByteArray expected =
            v.url.literal && v.url.literal->protocol() == QAbstractSocket::IPv6Protocol
                ? '[' + v.url.host.toLatin1() + ']'
                : v.url.host.toLatin1();
        require(*host == expected, "libcurl reads the checked host", input);
        require(port.toInt() == v.url.port, "libcurl reads the checked port", input);
        require(!user, "no user info reaches libcurl", input);
        if (v.url.literal)
            require(forbiddenReason(*v.url.literal).isEmpty(), "an accepted literal is allowed",
                    input);
        require(v.url.scheme == u"https" || v.url.scheme == u"http", "the scheme is allowed",
                input);
    }

    // 4. Embedded forms are judged on the embedded address.
    if (size >= 4) {
        const quint32 v4 =
            quint32(data[0]) << 24 | quint32(data[1]) << 16 | quint32(data[2]) << 8 | data[3];
        const bool forbidden = !forbiddenReason(QHostAddress(v4)).isEmpty();
        Q_IPV6ADDR mapped{}, nat64{}, sixToFour{};
        mapped.c[10] = mapped.c[11] = 0xff;
        std::memcpy(mapped.c + 12, data, 4);
        nat64.c[1] = 0x64;
        nat64.c[2] = 0xff;
        nat64.c[3] = 0x9b;
        std::memcpy(nat64.c + 12, data, 4);
        sixToFour.c[0] = 0x20;
        sixToFour.c[1] = 0x02;
        std::memcpy(sixToFour.c + 2, data, 4);
        for (const Q_IPV6ADDR &a : {mapped, nat64, sixToFour})
            require(forbiddenReason(QHostAddress(a)).isEmpty() == !forbidden,
                    "an embedded address is judged on the IPv4 inside", input);
    }
    if (size >= 16) {
        Q_IPV6ADDR a{};
        std::memcpy(a.c, data, 16);
        (void)forbiddenReason(QHostAddress(a), {});
        (void)effectiveAddress(QHostAddress(a));
    }
    return 0;
}
