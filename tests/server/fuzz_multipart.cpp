// libFuzzer target for the multipart/form-data parser (server/http/Multipart). Built with clang
// outside the main build by tests/server/fuzz_multipart.sh. The first input byte picks a
// boundary and the limits, the second seeds how the body is split; the rest is the body.
// Besides "no crash, no sanitizer report", it checks, and traps when one fails:
//  1. the body fed in one chunk and in random small chunks gives the same parts and error;
//  2. parseMultipart() agrees with the push parser, and its parts' data are views into the body;
//  3. the parts' data never add up to more than the body, and no part exceeds its limit;
//  4. the whole input read as a Content-Type: a boundary multipartBoundary() accepts is 1 to 70
//     characters RFC 2046 allows.

#include "FuzzRequire.h"
#include "http/Multipart.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

namespace {

const QByteArray kBoundaries[] = {"b", "--", "abc", "aab", "----WebKitFormBoundary7MA4YWxkTrZu0gW"};

MultipartLimits limitsFor(uint8_t selector)
{
    MultipartLimits limits;
    if (selector & 0x80) { // small bounds, to reach the 413 paths
        limits.maxParts = 3;
        limits.maxPartHeaderBytes = 64;
        limits.maxFieldBytes = 8;
        limits.maxFileBytes = 16;
        limits.fileLimits.insert("f", 4);
    }
    return limits;
}

struct Outcome
{
    QByteArray parts; // every part's headers and data, in order
    qint64 dataBytes = 0;
    bool ok = false;
    int status = 0;
    QString message;
    QString param;
};

// Feeds `body` in chunks of sizes drawn from `seed` (0: one chunk).
Outcome run(const QByteArray &body, const QByteArray &boundary, const MultipartLimits &limits,
            uint32_t seed, const QByteArray &input)
{
    Outcome out;
    QByteArray pending;
    qint64 partBytes = 0;
    qint64 partLimit = 0;
    MultipartParser::Callbacks cb;
    cb.begin = [&](const MultipartPart &p) {
        require(!p.name.isEmpty(), "a part has a name", input);
        require(p.data.isEmpty(), "begin() has no data", input);
        pending.clear();
        out.parts += "{" + p.name + "|" + (p.hasFilename ? "F" + p.filename : "-") + "|" +
                     p.contentType + "|";
        partBytes = 0;
        partLimit = p.hasFilename ? limits.fileLimits.value(p.name, limits.maxFileBytes)
                                  : limits.maxFieldBytes;
        return true;
    };
    cb.data = [&](const char *d, qsizetype n) {
        require(n > 0, "data() is never empty", input);
        pending.append(d, n);
        out.dataBytes += n;
        partBytes += n;
        require(partBytes <= partLimit, "a part stays within its limit", input);
        return true;
    };
    cb.end = [&] {
        // Only finished parts are compared: how much of a refused part was handed out
        // depends on the split.
        out.parts += std::exchange(pending, {}) + "}";
        return true;
    };
    MultipartParser parser(boundary, limits, cb);
    bool ok = true;
    uint32_t state = seed;
    for (qsizetype at = 0; ok && at < body.size();) {
        qsizetype n = body.size() - at;
        if (seed) {
            state = state * 1103515245u + 12345u;
            n = qMin<qsizetype>(n, 1 + (state >> 16) % 9);
        }
        ok = parser.feed(body.constData() + at, n);
        at += n;
    }
    out.ok = ok && parser.finish();
    if (!out.ok) {
        out.status = parser.error().status;
        out.message = parser.error().message;
        out.param = parser.error().param;
        require(out.status == 400 || out.status == 413, "an error is a 400 or a 413", input);
        require(!out.message.isEmpty(), "an error has a message", input);
        require(!parser.feed("x", 1), "no feeding after an error", input);
    }
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 4096)
        return 0;
    const QByteArray input(reinterpret_cast<const char *>(data), qsizetype(size));
    const QByteArray &boundary = kBoundaries[(data[0] & 0x7f) % std::size(kBoundaries)];
    const MultipartLimits limits = limitsFor(data[0]);
    const QByteArray body = input.mid(2);

    // 1. One chunk and small chunks agree.
    const Outcome whole = run(body, boundary, limits, 0, input);
    const Outcome split = run(body, boundary, limits, 1u + data[1], input);
    require(whole.ok == split.ok, "split feeding succeeds exactly when whole feeding does", input);
    require(whole.parts == split.parts, "split feeding gives the same parts", input);
    require(whole.status == split.status && whole.message == split.message &&
                whole.param == split.param,
            "split feeding gives the same error", input);

    // 2 and 3. The whole-body convenience agrees, with views into the body.
    const MultipartForm form = parseMultipart(body, boundary, limits);
    require(form.error.has_value() == !whole.ok, "parseMultipart fails when the parser does",
            input);
    if (form.error)
        require(form.error->status == whole.status && form.error->message == whole.message,
                "parseMultipart gives the parser's error", input);
    qint64 total = 0;
    const auto begin = reinterpret_cast<uintptr_t>(body.constData());
    const auto end = begin + uintptr_t(body.size());
    for (const MultipartPart &p : form.parts) {
        total += p.data.size();
        if (!p.data.isEmpty()) {
            const auto at = reinterpret_cast<uintptr_t>(p.data.constData());
            require(at >= begin && at + uintptr_t(p.data.size()) <= end,
                    "a part's data is a view into the body", input);
        }
    }
    require(total <= body.size(), "the parts' data fit in the body", input);
    require(whole.dataBytes <= body.size() && split.dataBytes <= body.size(),
            "the parser hands out no more than the body", input);
    if (!form.error)
        require(total == whole.dataBytes && total == split.dataBytes,
                "parseMultipart hands out the parser's data", input);

    // 4. The input as a Content-Type value.
    QString error;
    if (const auto b = multipartBoundary(input, &error)) {
        require(!b->isEmpty() && b->size() <= 70, "a boundary is 1 to 70 characters", input);
        for (char c : *b)
            require((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c != 0 && std::strchr("'()+_,-./:=? ", c) != nullptr),
                    "a boundary has only RFC 2046 characters", input);
        require(!b->endsWith(' '), "a boundary does not end with a space", input);
    } else {
        require(!error.isEmpty(), "a refused Content-Type has a message", input);
    }
    return 0;
}
