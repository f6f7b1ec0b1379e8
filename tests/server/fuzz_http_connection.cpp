// libFuzzer target for the request side of an HTTP/1.1 connection (server/http/
// HttpRequestReader), the state machine HttpConnection runs over every client's bytes: pipelined
// requests, Content-Length and chunked bodies, the head step's admissions and refusals. Built
// with clang outside the main build by tests/server/fuzz_http_connection.sh.
//
// Input: byte 0 picks the head limits, byte 1 the body limit (small, or near the largest
// integer), byte 2 the server's buffer budget, byte 3 seeds the head step's decisions; the rest
// is the byte stream a client sends. The stream is fed twice, as the connection would read it:
// once in the largest reads allowed, once in reads of sizes the seed picks, each request
// admitted or refused at its head alike, answered once whole. Besides "no crash, no sanitizer
// report", it checks, and traps when one fails:
//  1. no read is larger than readBudget(), which is positive whenever bytes are asked for and 0
//     while a request is in its head step or handled;
//  2. the reader never holds more than its bound: buffered bytes within one head (or a chunk
//     line, or a trailer) and the body within its limit; a Content-Length body is whole;
//  3. a refusal is 400, 413, 431, 503 or 505 with a message, and 503 only with a budget;
//  4. both feedings give the same requests (method, target, body, keep-alive) and the same end:
//     how the bytes were split never changes what was read.

#include "FuzzRequire.h"
#include "http/HttpRequestReader.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

namespace {

// A small deterministic generator (xorshift), so that both feedings decide alike.
struct Random
{
    quint32 state;
    quint32 next()
    {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        return state;
    }
};

struct Outcome
{
    QList<QByteArray> requests; // one line per request read (or refused at its head)
    int failStatus = 0;
    bool operator==(const Outcome &) const = default;
};

using Event = HttpRequestReader::Event;
using State = HttpRequestReader::State;

Outcome feed(const QByteArray &stream, const HttpLimits &limits, qint64 bodyLimit,
             const HttpBufferBudget *budget, quint32 seed, bool largestReads)
{
    HttpRequestReader reader(limits, budget);
    Random decide{seed | 1};
    Random split{seed * 2654435761u | 1};
    Outcome out;
    qint64 at = 0;
    const qint64 bound =
        std::max({reader.headCapacity(), qint64(HttpRequestReader::kMaxChunkLine) + 2,
                  qint64(limits.maxHeaderBytes) + 2});
    HttpRequest head;
    for (int steps = 0; steps < 1'000'000; ++steps) {
        require(reader.buffered() <= bound, "the reader holds at most one head", stream);
        require(reader.bodyReceived() <= bodyLimit, "a body stays within its limit", stream);
        const Event event = reader.next();
        switch (event) {
        case Event::NeedBytes: {
            const qint64 budgetNow = reader.readBudget();
            require(budgetNow > 0, "bytes asked for can be read", stream);
            if (at == stream.size())
                return out; // the client stops sending: the connection waits
            qint64 n = qMin(budgetNow, stream.size() - at);
            if (!largestReads)
                n = 1 + qint64(split.next() % quint64(n));
            char *into = reader.prepareRead(n);
            memcpy(into, stream.constData() + at, size_t(n));
            reader.commitRead(n);
            at += n;
            break;
        }
        case Event::Head: {
            require(reader.readBudget() == 0, "nothing is read in the head step", stream);
            head = reader.takeHead();
            const quint32 d = decide.next() % 8;
            if (d == 0) { // refused at its head: the body is never read
                out.requests.append("refused " + head.method + ' ' + head.target);
                if (reader.hasBody())
                    return out; // the connection closes
                reader.finish();
                break;
            }
            // Admitted, now or (the same to the reader) after the database answered.
            if (!reader.admit(bodyLimit)) {
                out.requests.append("not admitted " + head.method + ' ' + head.target);
                break; // Failed follows: next() says Wait, failStatus() is set
            }
            reader.wantsContinue();
            break;
        }
        case Event::Complete: {
            require(reader.readBudget() == 0, "nothing is read while a request is handled", stream);
            const QByteArray body = reader.takeBody();
            require(head.bodyLength < 0 || body.size() == head.bodyLength,
                    "a Content-Length body arrives whole", stream);
            require(body.size() <= bodyLimit, "a body is within its limit", stream);
            out.requests.append(head.method + ' ' + head.target + ' ' +
                                QByteArray::number(body.size()) + ' ' + body.left(64).toHex() +
                                (reader.keepAlive() ? " keep-alive" : " close"));
            if (!reader.keepAlive())
                return out;
            reader.finish();
            break;
        }
        case Event::Failed:
        case Event::Wait: {
            const int status = reader.failStatus();
            require(reader.state() == State::Closed && reader.readBudget() == 0, "a refusal closes",
                    stream);
            require(status == 400 || status == 413 || status == 431 || status == 505 ||
                        (status == 503 && budget),
                    "a refusal is 400, 413, 431, 503 (with a budget) or 505", stream);
            require(!reader.failMessage().isEmpty(), "a refusal says why", stream);
            require(reader.buffered() == 0 && reader.bodyHeld() == 0,
                    "a refusal lets go of what was read", stream);
            out.failStatus = status;
            return out;
        }
        }
    }
    require(false, "the reader makes progress", stream);
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    HttpLimits limits;
    limits.maxHeaderBytes = 64 + (data[0] & 0x3f) * 16; // 64 to 1072 bytes
    limits.maxHeaderCount = 1 + (data[0] >> 6) * 8;
    // Small limits, and limits near the largest integer (sizes that would overflow a sum).
    // A Content-Length body is reserved whole once admitted: with a limit that large, the
    // budget is what bounds it, as in the server (a handler without a budget, such as the test
    // fake upstream, keeps a real limit).
    const bool huge = data[1] >= 0xf0;
    const qint64 bodyLimit =
        huge ? std::numeric_limits<qint64>::max() - (data[1] & 0x0f) : qint64(data[1]) * 37;
    HttpBufferBudget budget;
    budget.cap = qint64(data[2]) * 1024;
    budget.held = qint64(data[2] & 0x0f) * 512;
    const HttpBufferBudget *withBudget = huge || data[2] >= 0x10 ? &budget : nullptr;
    const quint32 seed = data[3] * 0x01000193u + quint32(size);
    const QByteArray stream(reinterpret_cast<const char *>(data) + 4, qsizetype(size) - 4);

    const Outcome largest = feed(stream, limits, bodyLimit, withBudget, seed, true);
    const Outcome split = feed(stream, limits, bodyLimit, withBudget, seed, false);
    require(largest == split, "how the bytes are split changes nothing", stream);
    return 0;
}
