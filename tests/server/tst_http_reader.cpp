#include "http/HttpRequestReader.h"

#include <limits>
#include <QTest>

namespace {

using Event = HttpRequestReader::Event;
using State = HttpRequestReader::State;

// Feeds bytes as the connection reads them (never more than readBudget() at once) until the
// reader wants more than there is or stops asking: the event it stopped on.
Event feed(HttpRequestReader &reader, QByteArray &bytes)
{
    for (;;) {
        const Event event = reader.next();
        if (event != Event::NeedBytes || bytes.isEmpty())
            return event;
        const qint64 n = qMin<qint64>(reader.readBudget(), bytes.size());
        memcpy(reader.prepareRead(n), bytes.constData(), size_t(n));
        reader.commitRead(n);
        bytes.remove(0, n);
    }
}

} // namespace

// The request side of a connection without its socket (server/http/HttpRequestReader): what it
// reads when, what it holds, and its checked arithmetic. tst_http covers it through the server,
// fuzz_http_connection with arbitrary byte streams.
class TestHttpReader : public QObject
{
    Q_OBJECT
private slots:
    // Nothing is read in the head step or while a request is handled; a head is read in steps,
    // a body exactly to its end: pipelined bytes wait in the socket, not in the reader.
    void readsAreBoundedByTheState()
    {
        HttpRequestReader reader(HttpLimits{});
        QCOMPARE(reader.readBudget(), HttpRequestReader::kReadStep);
        QByteArray bytes = "POST /a HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" +
                           QByteArray(100000, 'b') + "GET /next HTTP/1.1\r\n\r\n" +
                           QByteArray(200000, 'p');
        QCOMPARE(feed(reader, bytes), Event::Head);
        QCOMPARE(reader.readBudget(), 0);
        QVERIFY(reader.buffered() <= HttpRequestReader::kReadStep);
        const HttpRequest head = reader.takeHead();
        QCOMPARE(head.bodyLength, qint64(100000));
        QVERIFY(reader.admit(1'000'000));
        QCOMPARE(feed(reader, bytes), Event::Complete);
        QCOMPARE(reader.readBudget(), 0);
        QCOMPARE(reader.takeBody(), QByteArray(100000, 'b'));
        QVERIFY(bytes.size() > 200000); // the next request is still unread
        reader.finish();
        QCOMPARE(feed(reader, bytes), Event::Head);
        QCOMPARE(reader.takeHead().target, QByteArray("/next"));
    }

    // Chunk sizes never overflow: any number of digits, sizes near or past the largest integer
    // and sums past the limit are 413 with nothing held; a line that is not a size is 400.
    void chunkSizesAreChecked_data()
    {
        QTest::addColumn<qint64>("limit");
        QTest::addColumn<QByteArray>("chunks");
        QTest::addColumn<int>("status");
        const qint64 max = std::numeric_limits<qint64>::max();
        QTest::newRow("many digits") << qint64(1000) << "1" + QByteArray(200, '0') + "\r\n" << 413;
        QTest::newRow("2^64 - 1") << max << QByteArray("ffffffffffffffff\r\n") << 413;
        QTest::newRow("2^64") << max << QByteArray("10000000000000000\r\n") << 413;
        QTest::newRow("int64 max + 1") << max << QByteArray("8000000000000000\r\n") << 413;
        QTest::newRow("sum past int64 max")
            << max << QByteArray("2\r\nab\r\n7ffffffffffffffe\r\n") << 413;
        QTest::newRow("sum past the limit")
            << qint64(10) << QByteArray("8\r\n12345678\r\n3\r\n") << 413;
        QTest::newRow("negative") << max << QByteArray("-1\r\n") << 400;
        QTest::newRow("prefix") << max << QByteArray("0x10\r\n") << 400;
        QTest::newRow("long line") << max << "1;" + QByteArray(1100, 'e') + "\r\n" << 400;
        QTest::newRow("bad chunk end") << max << QByteArray("2\r\nabXY") << 400;
    }
    void chunkSizesAreChecked()
    {
        QFETCH(qint64, limit);
        QFETCH(QByteArray, chunks);
        QFETCH(int, status);
        HttpRequestReader reader(HttpLimits{});
        QByteArray bytes = "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks;
        QCOMPARE(feed(reader, bytes), Event::Head);
        QCOMPARE(reader.takeHead().bodyLength, qint64(-1));
        QVERIFY(reader.admit(limit));
        QCOMPARE(feed(reader, bytes), Event::Failed);
        QCOMPARE(reader.failStatus(), status);
        QCOMPARE(reader.state(), State::Closed);
        QCOMPARE(reader.buffered(), 0);
        QCOMPARE(reader.bodyHeld(), 0);
    }

    // The server's budget: a Content-Length body it cannot take is refused at admission, a
    // chunk before any of it is read (503); what fits is read.
    void budgetIsAskedFirst()
    {
        HttpBufferBudget budget;
        budget.cap = 1000;
        budget.held = 900;
        HttpRequestReader reader(HttpLimits{}, &budget);
        QByteArray bytes = "POST /a HTTP/1.1\r\nContent-Length: 200\r\n\r\n";
        QCOMPARE(feed(reader, bytes), Event::Head);
        reader.takeHead();
        QVERIFY(!reader.admit(1'000'000));
        QCOMPARE(reader.failStatus(), 503);

        HttpRequestReader chunked(HttpLimits{}, &budget);
        bytes = "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n32\r\n" +
                QByteArray(50, 'x') + "\r\nc8\r\n";
        QCOMPARE(feed(chunked, bytes), Event::Head);
        chunked.takeHead();
        QVERIFY(chunked.admit(1'000'000));
        QCOMPARE(feed(chunked, bytes), Event::Failed);
        QCOMPARE(chunked.failStatus(), 503);
    }

    // The head step's outcomes: answered without its body, a request that has one closes the
    // connection, one without goes on; 100 Continue is due only when asked for, admitted and
    // none of the body has come.
    void headStepOutcomes()
    {
        HttpRequestReader reader(HttpLimits{});
        QByteArray bytes = "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n"
                           "Expect: 100-continue\r\n\r\n";
        QCOMPARE(feed(reader, bytes), Event::Head);
        QVERIFY(!reader.hasBody());
        reader.takeHead();
        reader.finish(); // refused at its head, no body: on to the next
        QCOMPARE(feed(reader, bytes), Event::Head);
        QVERIFY(reader.hasBody());
        reader.takeHead();
        QVERIFY(reader.admit(10));
        QVERIFY(reader.wantsContinue());
        bytes = "abc";
        QCOMPARE(feed(reader, bytes), Event::Complete);
        QCOMPARE(reader.takeBody(), QByteArray("abc"));

        HttpRequestReader refused(HttpLimits{});
        bytes = "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n";
        QCOMPARE(feed(refused, bytes), Event::Head);
        refused.takeHead();
        refused.finish(); // refused at its head with a body: closed, the body never read
        QCOMPARE(refused.state(), State::Closed);
        QCOMPARE(refused.readBudget(), 0);

        HttpRequestReader arrived(HttpLimits{});
        bytes = "POST /b HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc";
        QCOMPARE(feed(arrived, bytes), Event::Head);
        arrived.takeHead();
        QVERIFY(arrived.admit(10));
        QVERIFY(!arrived.wantsContinue()); // the body is already here
    }
};

QTEST_GUILESS_MAIN(TestHttpReader)
#include "tst_http_reader.moc"
