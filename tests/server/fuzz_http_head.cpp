// libFuzzer target for the HTTP/1.x request head parser (server/http/HttpHead), which reads
// every client's bytes. Built with clang outside the main build by tests/server/fuzz_http_head.sh.
// The first input byte picks the header-line limit; the rest is the head. Besides "no crash, no
// sanitizer report", it checks, and traps when one fails:
//  1. a refusal is 400, 431 or 505 with a message;
//  2. an accepted head has a token for its method, a target that is an absolute path (its
//     decoded path without control characters), HTTP/1.0 or 1.1, field names that are lower-case
//     tokens, values without surrounding whitespace, and no more fields than lines;
//  3. an accepted head written out again in canonical form (CRLF, "name: value") is accepted
//     with the same method, target, path, query, version and fields.

#include "FuzzRequire.h"
#include "http/HttpHead.h"

#include <cstdint>
#include <cstdio>

namespace {

bool isLowerToken(const QByteArray &s)
{
    return HttpHead::isToken(s) && s == s.toLower();
}

QByteArray canonical(const HttpRequest &r)
{
    QByteArray out = r.method + ' ' + r.target + " HTTP/1." + QByteArray::number(r.versionMinor);
    for (const auto &[name, value] : r.headers)
        out += "\r\n" + name + ": " + value;
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const int maxLines = data[0] < 200 ? data[0] % 16 : 100;
    const QByteArray input(reinterpret_cast<const char *>(data) + 1, qsizetype(size) - 1);

    HttpRequest request;
    HttpHead::Error error;
    if (!HttpHead::parse(input, maxLines, &request, &error)) {
        require(error.status == 400 || error.status == 431 || error.status == 505,
                "a refusal is 400, 431 or 505", input);
        require(!error.message.isEmpty(), "a refusal says why", input);
        return 0;
    }
    require(HttpHead::isToken(request.method), "the method is a token", input);
    require(request.target.startsWith('/') && request.path.startsWith(u'/'),
            "the target is an absolute path", input);
    for (const QChar c : std::as_const(request.path))
        require(c.unicode() >= 0x20 && c.unicode() != 0x7f, "the path holds no control character",
                input);
    require(request.versionMinor == 0 || request.versionMinor == 1, "HTTP/1.0 or 1.1", input);
    require(request.headers.size() <= input.count('\n') && input.count('\n') <= maxLines,
            "no more fields than lines, no more lines than allowed", input);
    for (const auto &[name, value] : request.headers) {
        require(isLowerToken(name), "field names are lower-case tokens", input);
        require(value == value.trimmed(), "values are trimmed", input);
    }

    const QByteArray again = canonical(request);
    HttpRequest second;
    require(HttpHead::parse(again, maxLines, &second, &error), "the canonical form is accepted",
            input);
    require(second.method == request.method && second.target == request.target &&
                second.path == request.path && second.query == request.query &&
                second.versionMinor == request.versionMinor && second.headers == request.headers,
            "the canonical form reads the same", input);
    return 0;
}
