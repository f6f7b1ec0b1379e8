// Http1Response (server/upstream): the parser of upstream answers that Http1Client reads. Every
// case is fed whole, in pieces of 1, 2, 3 and 7 bytes, and must come out the same.
#include "upstream/Http1Response.h"

#include <QTest>

namespace {

// Events with each run of D made one: how a body is split is the input's business.
QByteArray runs(QByteArray events)
{
    while (events.contains("DD"))
        events.replace("DD", "D");
    return events;
}

struct Parsed
{
    QByteArray events; // H (head), D (data), F (done), E (error), as they came
    int status = 0;
    HttpHeaders headers;
    QByteArray body;
    bool keepAlive = false;
    QString error;
    qsizetype leftover = 0; // bytes after the response ended

    bool operator==(const Parsed &o) const
    {
        return status == o.status && headers == o.headers && body == o.body &&
               keepAlive == o.keepAlive && error == o.error && leftover == o.leftover &&
               runs(events) == runs(o.events);
    }
};

// Feeds input in pieces of `piece` bytes (0: whole); eof: the peer closes after the last one.
Parsed parse(const QByteArray &input, qsizetype piece, bool eof, bool noBody = false)
{
    Http1Response r(noBody);
    Parsed out;
    qsizetype at = 0;
    bool over = false;
    const auto take = [&](Http1Response::Event e) {
        switch (e) {
        case Http1Response::Event::Head:
            out.events += 'H';
            out.status = r.status();
            out.headers = r.headers();
            break;
        case Http1Response::Event::Data:
            out.events += 'D';
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
            over = true;
            break;
        case Http1Response::Event::NeedMore:
            break;
        }
    };
    while (at < input.size() && !over) {
        const qsizetype n = piece > 0 ? std::min(piece, input.size() - at) : input.size() - at;
        const char *p = input.constData() + at;
        const char *end = p + n;
        while (!over) {
            const Http1Response::Event e = r.next(p, end);
            if (e == Http1Response::Event::NeedMore)
                break;
            take(e);
        }
        out.leftover = end - p;
        at += n;
    }
    out.leftover += input.size() - at;
    if (!over && eof)
        take(r.eof());
    return out;
}

} // namespace

class TestHttp1Response : public QObject
{
    Q_OBJECT
private slots:
    void cases_data();
    void cases();
    void headLimit();
    void chunkSizeLimits();
    void foldedValue();
    void bodyPointsIntoInput();
    void eofCases();
};

void TestHttp1Response::cases_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<bool>("noBody");
    QTest::addColumn<bool>("eof");
    QTest::addColumn<QByteArray>("events"); // with runs of D made one
    QTest::addColumn<int>("status");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<bool>("keepAlive");
    QTest::addColumn<QString>("error");
    QTest::addColumn<int>("leftover");

    const auto row = [](const char *name, const QByteArray &in, bool noBody, bool eof,
                        const QByteArray &events, int status, const QByteArray &body,
                        bool keepAlive, const QString &error = {}, int leftover = 0) {
        QTest::newRow(name) << in << noBody << eof << events << status << body << keepAlive << error
                            << leftover;
    };
    row("content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  v \r\n\r\nhello", false,
        false, "HDF", 200, "hello", true);
    row("empty body", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, false, "HF", 200, "",
        true);
    row("bytes after the body are left", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabHTTP",
        false, false, "HDF", 200, "ab", true, {}, 4);
    row("repeated equal lengths", "HTTP/1.1 201 Created\r\nContent-Length: 2, 2\r\n\r\nab", false,
        false, "HDF", 201, "ab", true);
    row("two lengths that differ",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab", false, false, "E", 0,
        "", false, "the upstream's Content-Length is not valid", 2);
    row("length not a number", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, false, "E",
        0, "", false, "the upstream's Content-Length is not valid");
    row("chunked",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
        "7;ext=1\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n",
        false, false, "HDF", 200, "hello, world", true);
    row("chunked, bare LF",
        "HTTP/1.1 200 OK\nTransfer-Encoding: gzip, Chunked\n\na\n0123456789\n0\n\n", false, false,
        "HDF", 200, "0123456789", true);
    row("chunked, upper-case hex",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n"
        "0123456789\r\n0\r\n\r\n",
        false, false, "HDF", 200, "0123456789", true);
    row("chunked beats a length, and the connection goes",
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: "
        "chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
        false, false, "HDF", 200, "x", false);
    row("chunk data not followed by CRLF",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "1\r\nxy\r\n",
        false, false, "HDE", 200, "x", false, "a chunk does not end with CRLF", 2);
    row("chunk size not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false,
        false, "HE", 200, "", false, "a chunk-size line is not valid");
    row("chunk size too large",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "1000000000000000\r\n",
        false, false, "HE", 200, "", false, "a chunk size is too large");
    row("until close", "HTTP/1.1 200 OK\r\n\r\nall of it", false, true, "HDF", 200, "all of it",
        false);
    row("another coding reads until close", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz",
        false, true, "HDF", 200, "zz", false);
    row("HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", false, false, "HDF", 200, "x",
        false);
    row("Connection: close",
        "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 1"
        "\r\n\r\nx",
        false, false, "HDF", 200, "x", false);
    row("interim heads are skipped",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n"
        "Link: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
        false, false, "HDF", 200, "x", true);
    row("101 is refused", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", false, false,
        "E", 0, "", false, "the upstream switched protocols (101)");
    row("204 has no body", "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", false, false,
        "HF", 204, "", true);
    row("304 has no body", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", false,
        false, "HF", 304, "", true);
    row("a HEAD answer has no body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", true, false,
        "HF", 200, "", true);
    row("no reason phrase", "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", false, false, "HF", 404,
        "", true);
    row("not HTTP", "SSH-2.0-OpenSSH_9.2\r\n\r\n", false, false, "E", 0, "", false,
        "the upstream's answer is not an HTTP/1.x response");
    row("HTTP/2 preface", "HTTP/2 200\r\n\r\n", false, false, "E", 0, "", false,
        "the upstream's answer is not an HTTP/1.x response");
    row("status out of range", "HTTP/1.1 700 Odd\r\n\r\n", false, false, "E", 0, "", false,
        "the upstream's status code 700 is not valid");
    row("status not digits", "HTTP/1.1 2x0 OK\r\n\r\n", false, false, "E", 0, "", false,
        "the upstream's status code is not valid");
    row("folded header", "HTTP/1.1 200 OK\r\nA: 1\r\n  2\r\nContent-Length: 0\r\n\r\n", false,
        false, "HF", 200, "", true);
    row("folded first line", "HTTP/1.1 200 OK\r\n A: 1\r\n\r\n", false, false, "E", 0, "", false,
        "the upstream's head folds its first line");
    row("chunk size with leading zeros",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "00000000000000000001\r\nx\r\n0\r\n\r\n",
        false, false, "HDF", 200, "x", true);
    row("line without colon", "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", false, false, "E", 0, "",
        false, "the upstream's head has a line that is not a header");
    row("space in a name", "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", false, false, "E", 0, "",
        false, "the upstream's head has a header name that is not valid");
    row("CR in a value", "HTTP/1.1 200 OK\r\nA: x\ry\r\n\r\n", false, false, "E", 0, "", false,
        "the upstream's head has a header value with a CR or NUL");
    row("nothing at all", "", false, true, "E", 0, "", false,
        "the upstream closed the connection without an answer");
    row("cut in the head", "HTTP/1.1 200 OK\r\nContent-", false, true, "E", 0, "", false,
        "the connection closed inside the response head");
    row("cut in the body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", false, true, "HDE",
        200, "abc", false, "the connection closed with 7 bytes of the body missing");
    row("cut in a chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", false,
        true, "HDE", 200, "ab", false, "the connection closed inside the chunked body");
}

void TestHttp1Response::cases()
{
    QFETCH(QByteArray, input);
    QFETCH(bool, noBody);
    QFETCH(bool, eof);
    QFETCH(QByteArray, events);
    QFETCH(int, status);
    QFETCH(QByteArray, body);
    QFETCH(bool, keepAlive);
    QFETCH(QString, error);
    QFETCH(int, leftover);

    const Parsed whole = parse(input, 0, eof, noBody);
    QCOMPARE(runs(whole.events), events);
    QCOMPARE(whole.status, status);
    QCOMPARE(whole.body, body);
    QCOMPARE(whole.keepAlive, keepAlive);
    QCOMPARE(whole.error, error);
    QCOMPARE(whole.leftover, qsizetype(leftover));
    for (qsizetype piece : {1, 2, 3, 7}) {
        const Parsed split = parse(input, piece, eof, noBody);
        QVERIFY2(split == whole, qPrintable(QStringLiteral("pieces of %1").arg(piece)));
    }
}

void TestHttp1Response::headLimit()
{
    // A head of exactly the limit parses; one byte more is refused, however it arrives.
    const QByteArray start = "HTTP/1.1 200 OK\r\nX: ";
    const QByteArray tail = "\r\nContent-Length: 0\r\n\r\n";
    QByteArray fits =
        start + QByteArray(Http1Response::kMaxHead - start.size() - tail.size(), 'a') + tail;
    QCOMPARE(fits.size(), Http1Response::kMaxHead);
    QCOMPARE(parse(fits, 0, false).events, QByteArray("HF"));
    QCOMPARE(parse(fits, 4096, false).events, QByteArray("HF"));
    QByteArray over = fits;
    over.insert(start.size(), 'a');
    for (qsizetype piece : {0, 4096}) {
        const Parsed p = parse(over, piece, false);
        QCOMPARE(p.events, QByteArray("E"));
        QCOMPARE(p.error, QStringLiteral("the response head is larger than 102400 bytes"));
    }
    // Endless trailers are bounded the same way.
    const QByteArray trailers = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" +
                                QByteArray(Http1Response::kMaxHead + 10, 'x');
    QCOMPARE(parse(trailers, 0, false).error,
             QStringLiteral("the trailers are larger than 102400 bytes"));
}

void TestHttp1Response::chunkSizeLimits()
{
    // Chunk extensions may run long, but not without end.
    const QByteArray head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    const QByteArray ok = head + "1;" + QByteArray(4000, 'e') + "\r\nx\r\n0\r\n\r\n";
    QCOMPARE(parse(ok, 0, false).body, QByteArray("x"));
    const QByteArray endless = head + "1;" + QByteArray(5000, 'e');
    QCOMPARE(parse(endless, 100, false).error,
             QStringLiteral("a chunk-size line is longer than 4096 bytes"));
    // Fifteen hex digits is the most a size may have.
    const Parsed big = parse(head + "fffffffffffffff\r\nabc", 0, true);
    QCOMPARE(big.body, QByteArray("abc"));
    QCOMPARE(big.error, QStringLiteral("the connection closed inside the chunked body"));
}

void TestHttp1Response::foldedValue()
{
    // An obs-fold becomes one space, as RFC 9112 has a recipient of a response do.
    const Parsed p = parse("HTTP/1.1 200 OK\r\nX-A: one\r\n\t two \r\nX-B: b\r\n\r\n", 0, true);
    QCOMPARE(p.headers, HttpHeaders({{"x-a", "one two"}, {"x-b", "b"}}));
}

void TestHttp1Response::bodyPointsIntoInput()
{
    const QByteArray in = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
    Http1Response r;
    const char *p = in.constData();
    QCOMPARE(r.next(p, in.constEnd()), Http1Response::Event::Head);
    QCOMPARE(r.next(p, in.constEnd()), Http1Response::Event::Data);
    QCOMPARE(r.data().data(), in.constData() + in.size() - 3);
    QCOMPARE(r.next(p, in.constEnd()), Http1Response::Event::Done);
    QCOMPARE(p, in.constEnd());
    QVERIFY(r.started());
}

void TestHttp1Response::eofCases()
{
    // A body that ends exactly at the close is complete; the connection is never reused.
    Http1Response r;
    const QByteArray in = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    const char *p = in.constData();
    QCOMPARE(r.next(p, in.constEnd()), Http1Response::Event::Head);
    QCOMPARE(r.eof(), Http1Response::Event::Done);
    Http1Response fresh;
    QVERIFY(!fresh.started());
    QCOMPARE(fresh.eof(), Http1Response::Event::Error);
    QCOMPARE(fresh.next(p, p), Http1Response::Event::Error); // nothing after an error
}

QTEST_APPLESS_MAIN(TestHttp1Response)
#include "tst_http1_response.moc"
