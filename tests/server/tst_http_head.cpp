// HttpHead::parse, the request head parser, on heads as clients send them and on each refusal.
// tst_http drives it through a server; fuzz_http_head checks its properties on random input.
#include "http/HttpHead.h"

#include <QTest>

class TestHttpHead : public QObject
{
    Q_OBJECT

private slots:
    void aCurlRequest()
    {
        HttpRequest r;
        HttpHead::Error e;
        QVERIFY(HttpHead::parse("POST /v1/a%20b%2Fc?model=x&n=%31 HTTP/1.1\r\n"
                                "Host: 127.0.0.1:8080\r\n"
                                "Authorization:   Bearer sk-abc \t\r\n"
                                "X-Empty:\r\n"
                                "x-api-key: second",
                                100, &r, &e));
        QCOMPARE(r.method, QByteArray("POST"));
        QCOMPARE(r.target, QByteArray("/v1/a%20b%2Fc?model=x&n=%31"));
        QCOMPARE(r.path, QStringLiteral("/v1/a b/c"));
        QCOMPARE(r.query.queryItemValue("model"), QStringLiteral("x"));
        QCOMPARE(r.query.queryItemValue("n", QUrl::FullyDecoded), QStringLiteral("1"));
        QCOMPARE(r.versionMinor, 1);
        const QList<QPair<QByteArray, QByteArray>> expected = {{"host", "127.0.0.1:8080"},
                                                               {"authorization", "Bearer sk-abc"},
                                                               {"x-empty", ""},
                                                               {"x-api-key", "second"}};
        QCOMPARE(r.headers, expected);
    }

    void bareLineFeedsAndHttp10()
    {
        HttpRequest r;
        HttpHead::Error e;
        QVERIFY(HttpHead::parse("GET / HTTP/1.0\nConnection: keep-alive\n\nA: b", 3, &r, &e));
        QCOMPARE(r.versionMinor, 0);
        QCOMPARE(r.path, QStringLiteral("/"));
        QVERIFY(r.query.isEmpty());
        QCOMPARE(r.header("connection"), QByteArray("keep-alive"));
        QCOMPARE(r.header("a"), QByteArray("b")); // a blank line among the fields is skipped
    }

    void refusals_data()
    {
        QTest::addColumn<QByteArray>("head");
        QTest::addColumn<int>("maxLines");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("message");
        const QString line = QStringLiteral("Malformed HTTP request line.");
        const QString field = QStringLiteral("Malformed header field.");
        QTest::newRow("empty") << QByteArray() << 10 << 400 << line;
        QTest::newRow("two spaces") << QByteArray("GET  / HTTP/1.1") << 10 << 400 << line;
        QTest::newRow("no version") << QByteArray("GET /") << 10 << 400 << line;
        QTest::newRow("four parts") << QByteArray("GET / x HTTP/1.1") << 10 << 400 << line;
        QTest::newRow("method not a token") << QByteArray("G(T / HTTP/1.1") << 10 << 400 << line;
        QTest::newRow("HTTP/2.0") << QByteArray("GET / HTTP/2.0") << 10 << 505
                                  << QStringLiteral("Only HTTP/1.0 and HTTP/1.1 are supported.");
        QTest::newRow("lower-case version")
            << QByteArray("GET / http/1.1") << 10 << 505
            << QStringLiteral("Only HTTP/1.0 and HTTP/1.1 are supported.");
        QTest::newRow("absolute URL")
            << QByteArray("GET http://x/ HTTP/1.1") << 10 << 400
            << QStringLiteral("The request target must be an absolute path.");
        const QString control = QStringLiteral("The request path may not hold control characters.");
        QTest::newRow("NUL in the path")
            << QByteArray("GET /v1/a%00b HTTP/1.1") << 10 << 400 << control;
        QTest::newRow("escape in the path")
            << QByteArray("GET /%1b[31m HTTP/1.1") << 10 << 400 << control;
        QTest::newRow("raw control byte")
            << QByteArray("GET /a\x01 HTTP/1.1") << 10 << 400 << control;
        QTest::newRow("DEL in the path") << QByteArray("GET /%7F HTTP/1.1") << 10 << 400 << control;
        QTest::newRow("folded") << QByteArray("GET / HTTP/1.1\r\nA: 1\r\n  more") << 10 << 400
                                << QStringLiteral("Folded header lines are not accepted.");
        QTest::newRow("no colon") << QByteArray("GET / HTTP/1.1\r\nA 1") << 10 << 400 << field;
        QTest::newRow("empty name") << QByteArray("GET / HTTP/1.1\r\n: 1") << 10 << 400 << field;
        QTest::newRow("space in name")
            << QByteArray("GET / HTTP/1.1\r\nBad Name: 1") << 10 << 400 << field;
        QTest::newRow("over the line limit")
            << QByteArray("GET / HTTP/1.1\r\nA: 1\r\nB: 2") << 1 << 431
            << QStringLiteral("Too many header fields (at most 1).");
    }
    void refusals()
    {
        QFETCH(QByteArray, head);
        QFETCH(int, maxLines);
        QFETCH(int, status);
        QFETCH(QString, message);
        HttpRequest r;
        HttpHead::Error e;
        QVERIFY(!HttpHead::parse(head, maxLines, &r, &e));
        QCOMPARE(e.status, status);
        QCOMPARE(e.message, message);
    }

    void atTheLineLimit()
    {
        HttpRequest r;
        HttpHead::Error e;
        QVERIFY(HttpHead::parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2", 2, &r, &e));
        QCOMPARE(r.headers.size(), 2);
    }
};

QTEST_GUILESS_MAIN(TestHttpHead)
#include "tst_http_head.moc"
