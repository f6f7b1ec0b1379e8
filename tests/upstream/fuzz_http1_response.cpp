// libFuzzer target for server/upstream/Http1Response (tests/upstream/fuzz_http1_response.sh):
// Http1Client parses every plain-HTTP upstream answer with it, and those bytes are untrusted.
// Byte 0 picks the piece size (1 to 16) and whether the request was a HEAD; the rest is the
// answer, closed by the peer after its last byte. Properties: nothing crashes or reads outside
// the input (ASan, UBSan); each Data event points inside the piece just given; the events,
// status, headers, body, keep-alive and error are the same whole and in pieces; a Done or Error
// is final; the body is never longer than the input.
#include "upstream/Http1Response.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace {

struct Outcome
{
    QByteArray events;
    int status = 0;
    HttpHeaders headers;
    QByteArray body;
    bool keepAlive = false;
    QString error;
    bool operator==(const Outcome &) const = default;
};

void require(bool ok)
{
    if (!ok)
        abort();
}

Outcome run(const QByteArray &input, qsizetype piece, bool noBody)
{
    Http1Response r(noBody);
    Outcome out;
    bool over = false;
    const auto take = [&](Http1Response::Event e, const char *from, const char *to) {
        switch (e) {
        case Http1Response::Event::Head:
            out.events += 'H';
            out.status = r.status();
            out.headers = r.headers();
            require(out.status >= 200 && out.status <= 599);
            break;
        case Http1Response::Event::Data:
            // Consecutive pieces are one run: splitting changes only how many there are.
            if (!out.events.endsWith('D'))
                out.events += 'D';
            require(!r.data().isEmpty() && r.data().data() >= from && r.data().end() <= to);
            out.body += r.data().toByteArray();
            break;
        case Http1Response::Event::Done:
            out.events += 'F';
            out.keepAlive = r.keepAlive();
            over = true;
            break;
        case Http1Response::Event::Error:
            out.events += 'E';
            out.error = r.error();
            require(!out.error.isEmpty() && !r.keepAlive());
            over = true;
            break;
        case Http1Response::Event::NeedMore:
            break;
        }
    };
    qsizetype at = 0;
    while (at < input.size() && !over) {
        const qsizetype n = std::min(piece, input.size() - at);
        const char *p = input.constData() + at;
        const char *end = p + n;
        while (!over) {
            const char *before = p;
            const Http1Response::Event e = r.next(p, end);
            require(p >= before && p <= end);
            if (e == Http1Response::Event::NeedMore) {
                require(p == end);
                break;
            }
            take(e, before, end);
        }
        at += n;
    }
    if (!over)
        take(r.eof(), nullptr, nullptr);
    // Final: nothing more comes out.
    const char *p = input.constData();
    const Http1Response::Event again = r.next(p, input.constEnd());
    require(again ==
            (out.events.endsWith('F') ? Http1Response::Event::Done : Http1Response::Event::Error));
    require(out.body.size() <= input.size());
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const qsizetype piece = 1 + (data[0] & 0x0f);
    const bool noBody = data[0] & 0x10;
    const QByteArray input(reinterpret_cast<const char *>(data) + 1, qsizetype(size - 1));
    const Outcome whole = run(input, input.size() + 1, noBody);
    require(run(input, piece, noBody) == whole);
    return 0;
}
