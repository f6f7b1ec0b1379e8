#include "http/Multipart.h"

#include <QElapsedTimer>
#include <QRandomGenerator>
#include <QTest>
#include <utility>

namespace {

const QByteArray kBoundary = "----sy7MA4YWxkTrZu0gW";

QByteArray field(const QByteArray &name, const QByteArray &value,
                 const QByteArray &boundary = kBoundary)
{
    return "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" +
           value + "\r\n";
}

QByteArray file(const QByteArray &name, const QByteArray &filename, const QByteArray &type,
                const QByteArray &value, const QByteArray &boundary = kBoundary)
{
    return "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name +
           "\"; filename=\"" + filename + "\"\r\nContent-Type: " + type + "\r\n\r\n" + value +
           "\r\n";
}

QByteArray closing(const QByteArray &boundary = kBoundary)
{
    return "--" + boundary + "--\r\n";
}

// Everything the parser reported, in one comparable string.
QByteArray describe(const QList<MultipartPart> &parts, const std::optional<MultipartError> &e)
{
    QByteArray out;
    for (const MultipartPart &p : parts)
        out += "[" + p.name + "|" + (p.hasFilename ? "F:" + p.filename : "-") + "|" +
               p.contentType + "|" + p.data.toHex() + "]";
    if (e)
        out += "error " + QByteArray::number(e->status) + " " + e->message.toUtf8() + " " +
               e->param.toUtf8();
    return out;
}

// Feeds `body` through MultipartParser in the chunk sizes `nextSize` gives. A part's data is
// kept only once end() comes: how much of a refused part was handed out depends on the split.
QByteArray parseChunked(const QByteArray &body, const std::function<qsizetype()> &nextSize,
                        const MultipartLimits &limits = {}, const QByteArray &b = kBoundary)
{
    QList<MultipartPart> parts;
    QByteArray pending;
    MultipartParser::Callbacks cb;
    bool inPart = false;
    cb.begin = [&](const MultipartPart &p) {
        if (inPart)
            return false;
        inPart = true;
        parts.append(p);
        return p.data.isEmpty();
    };
    cb.data = [&](const char *d, qsizetype n) {
        if (!inPart || n <= 0)
            return false;
        pending.append(d, n);
        return true;
    };
    cb.end = [&] {
        parts.back().data = std::exchange(pending, {});
        inPart = !inPart;
        return !inPart;
    };
    MultipartParser parser(b, limits, cb);
    bool ok = true;
    for (qsizetype at = 0; ok && at < body.size();) {
        const qsizetype n = qMin(nextSize(), body.size() - at);
        ok = parser.feed(body.constData() + at, n);
        at += n;
    }
    ok = ok && parser.finish();
    std::optional<MultipartError> error;
    if (!ok)
        error = parser.error();
    return describe(parts, error);
}

QByteArray parseWhole(const QByteArray &body, const MultipartLimits &limits = {},
                      const QByteArray &b = kBoundary)
{
    const MultipartForm form = parseMultipart(body, b, limits);
    return describe(form.parts, form.error);
}

// Checks that every way of splitting `body` gives what parsing it whole gives.
void checkSplits(const QByteArray &body, const MultipartLimits &limits = {},
                 const QByteArray &b = kBoundary)
{
    const QByteArray whole = parseWhole(body, limits, b);
    for (qsizetype size = 1; size <= 17; ++size)
        QCOMPARE(parseChunked(
                     body, [size] { return size; }, limits, b),
                 whole);
    QRandomGenerator rng(42);
    for (int round = 0; round < 50; ++round)
        QCOMPARE(parseChunked(
                     body, [&rng] { return qsizetype(rng.bounded(1, 40)); }, limits, b),
                 whole);
}

bool inside(const QByteArray &view, const QByteArray &body)
{
    const auto p = reinterpret_cast<quintptr>(view.constData());
    const auto b = reinterpret_cast<quintptr>(body.constData());
    return p >= b && p + quintptr(view.size()) <= b + quintptr(body.size());
}

} // namespace

class TestMultipart : public QObject
{
    Q_OBJECT

private slots:
    void simpleForm()
    {
        const QByteArray body = field("model", "tts-1") + field("voice", "alloy") +
                                file("file", "a.wav", "audio/wav", "RIFF\0\1\2WAVE"_qba) +
                                closing();
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY(!form.error);
        QCOMPARE(form.parts.size(), 3);
        QCOMPARE(form.part("model")->data, QByteArray("tts-1"));
        QVERIFY(!form.part("model")->hasFilename);
        QCOMPARE(form.part("voice")->data, QByteArray("alloy"));
        const MultipartPart *f = form.part("file");
        QVERIFY(f);
        QVERIFY(f->hasFilename);
        QCOMPARE(f->filename, QByteArray("a.wav"));
        QCOMPARE(f->contentType, QByteArray("audio/wav"));
        QCOMPARE(f->data, "RIFF\0\1\2WAVE"_qba);
        QVERIFY(inside(f->data, body));
        QCOMPARE(form.part("absent"), nullptr);
        checkSplits(body);
    }

    void chunkSizesAgree()
    {
        QByteArray body = "preamble\r\n" + field("a", "1") + field("b", "") +
                          file("c", "c.bin", "application/octet-stream", "\r\n\r\n--\r\n-") +
                          field("d", "\r\n--" + kBoundary.left(10) + "x") + closing() + "epi";
        checkSplits(body);
        QVERIFY(!parseMultipart(body, kBoundary, {}).error);
    }

    void preambleAndEpilogue()
    {
        const QByteArray body = "This is a preamble.\r\n--not the boundary\r\n" + field("a", "x") +
                                closing() + "This is the epilogue.\r\n" + field("b", "y");
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY(!form.error);
        QCOMPARE(form.parts.size(), 1);
        QCOMPARE(form.part("a")->data, QByteArray("x"));
        checkSplits(body);
        // The first delimiter after a preamble ending in CRLF, and one without a preamble.
        QVERIFY(!parseMultipart("\r\n" + field("a", "x") + closing(), kBoundary, {}).error);
        QVERIFY(!parseMultipart(field("a", "x") + closing(), kBoundary, {}).error);
    }

    void boundaryInsideData_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::newRow("not at line start") << "x--" + kBoundary + " y";
        QTest::newRow("after CRLF without dashes") << "\r\n" + kBoundary + "\r\n";
        QTest::newRow("one dash") << "a\r\n-" + kBoundary;
        QTest::newRow("LF only") << "a\n--" + kBoundary + "\n";
        QTest::newRow("near prefix") << "a\r\n--" + kBoundary.chopped(1);
        QTest::newRow("near prefix, wrong last") << "a\r\n--" + kBoundary.chopped(1) + "Q";
        QTest::newRow("repeated CR") << QByteArray("\r\r\r\n\r\n\r\n-\r\n--\r\n");
        QTest::newRow("ends in CR") << QByteArray("abc\r");
        QTest::newRow("ends in CRLF-") << QByteArray("abc\r\n-");
        QTest::newRow("self-overlapping") << "\r\n--\r\n--" + kBoundary.left(3) + "\r\n";
    }
    void boundaryInsideData()
    {
        QFETCH(QByteArray, value);
        const QByteArray body = field("a", value) + file("f", "f", "x/y", value) + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY2(!form.error, qPrintable(form.error ? form.error->message : QString()));
        QCOMPARE(form.parts.size(), 2);
        QCOMPARE(form.parts[0].data, value);
        QCOMPARE(form.parts[1].data, value);
        checkSplits(body);
    }

    void selfSimilarBoundary()
    {
        // A boundary whose prefix repeats makes the matcher fall back part-way.
        const QByteArray b = "aab";
        const QByteArray value = "\r\n--aa\r\n--aaa\r\n--a\r\n--\r\n--aac";
        const QByteArray body = field("v", value, b) + closing(b);
        const MultipartForm form = parseMultipart(body, b, {});
        QVERIFY(!form.error);
        QCOMPARE(form.part("v")->data, value);
        checkSplits(body, {}, b);
    }

    void contentType_data()
    {
        QTest::addColumn<QByteArray>("header");
        QTest::addColumn<QByteArray>("boundary"); // empty: an error is expected
        QTest::newRow("plain") << QByteArray("multipart/form-data; boundary=abc")
                               << QByteArray("abc");
        QTest::newRow("case and spaces")
            << QByteArray("  Multipart/Form-Data ;charset=utf-8;  BOUNDARY = abc  ")
            << QByteArray("abc");
        QTest::newRow("quoted") << QByteArray("multipart/form-data; boundary=\"a b:c?\"")
                                << QByteArray("a b:c?");
        QTest::newRow("quoted with escape")
            << QByteArray("multipart/form-data; boundary=\"a\\\\b\"") << QByteArray();
        QTest::newRow("70 chars") << "multipart/form-data; boundary=" + QByteArray(70, 'x')
                                  << QByteArray(70, 'x');
        QTest::newRow("71 chars") << "multipart/form-data; boundary=" + QByteArray(71, 'x')
                                  << QByteArray();
        QTest::newRow("missing") << QByteArray("multipart/form-data") << QByteArray();
        QTest::newRow("missing, other params")
            << QByteArray("multipart/form-data; charset=utf-8") << QByteArray();
        QTest::newRow("empty") << QByteArray("multipart/form-data; boundary=") << QByteArray();
        QTest::newRow("empty quoted")
            << QByteArray("multipart/form-data; boundary=\"\"") << QByteArray();
        QTest::newRow("not form-data")
            << QByteArray("multipart/mixed; boundary=abc") << QByteArray();
        QTest::newRow("json") << QByteArray("application/json") << QByteArray();
        QTest::newRow("empty header") << QByteArray() << QByteArray();
        QTest::newRow("bad char @")
            << QByteArray("multipart/form-data; boundary=a@b") << QByteArray();
        QTest::newRow("bad char non-ASCII")
            << QByteArray("multipart/form-data; boundary=\"a\xc3\xa9\"") << QByteArray();
        QTest::newRow("trailing space in quotes")
            << QByteArray("multipart/form-data; boundary=\"abc \"") << QByteArray();
        QTest::newRow("unterminated quote")
            << QByteArray("multipart/form-data; boundary=\"abc") << QByteArray();
        QTest::newRow("two boundaries")
            << QByteArray("multipart/form-data; boundary=a; boundary=b") << QByteArray();
    }
    void contentType()
    {
        QFETCH(QByteArray, header);
        QFETCH(QByteArray, boundary);
        QString error = QStringLiteral("unset");
        const std::optional<QByteArray> got = multipartBoundary(header, &error);
        if (boundary.isEmpty()) {
            QVERIFY(!got);
            QVERIFY(!error.isEmpty());
            QVERIFY(error != u"unset");
        } else {
            QVERIFY2(got, qPrintable(error));
            QCOMPARE(*got, boundary);
            QVERIFY(error.isEmpty());
        }
        QCOMPARE(multipartBoundary(header, nullptr).has_value(), !boundary.isEmpty());
    }

    void truncatedEverywhere()
    {
        const QByteArray body = "pre\r\n" + field("a", "one") +
                                file("f", "f.txt", "text/plain", "two\r\n") + closing() + "epi";
        const qsizetype complete = body.indexOf(closing()) + 2 + kBoundary.size() + 2;
        for (qsizetype n = 0; n <= body.size(); ++n) {
            const QByteArray prefix = body.left(n);
            const MultipartForm form = parseMultipart(prefix, kBoundary, {});
            if (n >= complete) {
                QVERIFY2(!form.error, qPrintable(QString::number(n)));
                QCOMPARE(form.parts.size(), 2);
            } else {
                QVERIFY2(form.error, qPrintable(QString::number(n)));
                QCOMPARE(form.error->status, 400);
                QVERIFY(form.error->message.contains(u"truncated"));
            }
            QCOMPARE(parseChunked(prefix, [] { return 1; }), parseWhole(prefix));
            QCOMPARE(parseChunked(prefix, [] { return 3; }), parseWhole(prefix));
        }
    }

    void malformedBoundaryLine()
    {
        for (const QByteArray &bad : {"--" + kBoundary + "X\r\n", "--" + kBoundary + "-x",
                                      "--" + kBoundary + " \rx", "--" + kBoundary + "\n"}) {
            const MultipartForm form =
                parseMultipart(bad + field("a", "b") + closing(), kBoundary, {});
            QVERIFY(form.error);
            QCOMPARE(form.error->status, 400);
        }
        // Transport padding after a boundary is allowed.
        const QByteArray padded = "--" + kBoundary + " \t \r\nContent-Disposition: form-data; " +
                                  "name=a\r\n\r\nv\r\n--" + kBoundary + "-- \r\n";
        const MultipartForm form = parseMultipart(padded, kBoundary, {});
        QVERIFY(!form.error);
        QCOMPARE(form.part("a")->data, QByteArray("v"));
        checkSplits(padded);
    }

    void hugePartHeader()
    {
        MultipartLimits limits;
        const QByteArray body =
            "--" + kBoundary +
            "\r\nContent-Disposition: form-data; name=\"a\"\r\nX-Pad: " + QByteArray(100'000, 'p') +
            "\r\n\r\nv\r\n" + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, limits);
        QVERIFY(form.error);
        QCOMPARE(form.error->status, 413);
        QVERIFY(form.error->message.contains(QString::number(limits.maxPartHeaderBytes)));
        // A header block that never ends is refused once over the bound, not buffered.
        QCOMPARE(parseChunked(body.left(50'000), [] { return 7; }), parseWhole(body));
    }

    void manyTinyParts()
    {
        QByteArray body;
        for (int i = 0; i < 10'000; ++i)
            body += field("p", QByteArray::number(i));
        body += closing();
        MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY(form.error);
        QCOMPARE(form.error->status, 413);
        QVERIFY(form.error->message.contains(u"64"));
        QVERIFY(form.parts.size() <= 64);

        MultipartLimits limits;
        limits.maxParts = 20'000;
        QElapsedTimer timer;
        timer.start();
        form = parseMultipart(body, kBoundary, limits);
        QVERIFY(!form.error);
        QCOMPARE(form.parts.size(), 10'000);
        QCOMPARE(form.count("p"), 10'000);
        QCOMPARE(form.parts[9'999].data, QByteArray("9999"));
        QCOMPARE(parseChunked(
                     body, [] { return 1; }, limits),
                 parseWhole(body, limits));
        QVERIFY2(timer.elapsed() < 5'000, qPrintable(QString::number(timer.elapsed())));
    }

    void repeatedField()
    {
        const QByteArray body =
            field("tag", "a") + field("x", "1") + field("tag", "b") + field("tag", "c") + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY(!form.error);
        QCOMPARE(form.count("tag"), 3);
        QCOMPARE(form.part("tag")->data, QByteArray("a"));
        QStringList order;
        for (const MultipartPart &p : form.parts)
            order << QString::fromUtf8(p.name + "=" + p.data);
        QCOMPARE(order, QStringList({"tag=a", "x=1", "tag=b", "tag=c"}));
    }

    void filenamesKeptAsSent()
    {
        // Backslashes are kept (browsers do not escape them); \" is an escaped quote.
        const QByteArray body = file("a", "../../etc/passwd", "text/plain", "1") +
                                file("b", "C:\\x\\y.wav", "audio/wav", "2") +
                                file("c", "say \\\"hi\\\".txt", "text/plain", "3") + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY(!form.error);
        QCOMPARE(form.part("a")->filename, QByteArray("../../etc/passwd"));
        QCOMPARE(form.part("b")->filename, QByteArray("C:\\x\\y.wav"));
        QCOMPARE(form.part("c")->filename, QByteArray("say \"hi\".txt"));
        QCOMPARE(form.part("a")->name, QByteArray("a"));
        checkSplits(body);
    }

    void dispositionParameters()
    {
        const QByteArray body =
            "--" + kBoundary +
            "\r\ncontent-disposition:FORM-DATA;NAME=\"q\\\"n; x\";filename*=UTF-8''r%C3%A9.txt"
            "\r\nCONTENT-TYPE:  text/plain; charset=utf-8 \r\n\r\nv\r\n" +
            "--" + kBoundary +
            "\r\nContent-Disposition: form-data; name=t; filename=\"a.txt\"; "
            "filename*=UTF-8''b.txt\r\n\r\nw\r\n" +
            "--" + kBoundary +
            "\r\nContent-Disposition: form-data;\r\n name=\"folded\"\r\n\r\nz\r\n" + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY2(!form.error, qPrintable(form.error ? form.error->message : QString()));
        QCOMPARE(form.parts.size(), 3);
        QCOMPARE(form.parts[0].name, QByteArray("q\"n; x"));
        QVERIFY(form.parts[0].hasFilename);
        QCOMPARE(form.parts[0].filename, QByteArray("r\xc3\xa9.txt"));
        QCOMPARE(form.parts[0].contentType, QByteArray("text/plain; charset=utf-8"));
        QCOMPARE(form.parts[1].filename, QByteArray("a.txt")); // filename wins over filename*
        QCOMPARE(form.parts[2].name, QByteArray("folded"));
        checkSplits(body);
    }

    void missingName_data()
    {
        QTest::addColumn<QByteArray>("headers");
        QTest::newRow("no disposition") << QByteArray("Content-Type: text/plain\r\n");
        QTest::newRow("no name") << QByteArray("Content-Disposition: form-data\r\n");
        QTest::newRow("filename only")
            << QByteArray("Content-Disposition: form-data; filename=\"a\"\r\n");
        QTest::newRow("empty name") << QByteArray("Content-Disposition: form-data; name=\"\"\r\n");
        QTest::newRow("attachment")
            << QByteArray("Content-Disposition: attachment; name=\"a\"\r\n");
        QTest::newRow("two names")
            << QByteArray("Content-Disposition: form-data; name=a; name=b\r\n");
        QTest::newRow("not a field") << QByteArray("garbage\r\n");
    }
    void missingName()
    {
        QFETCH(QByteArray, headers);
        const QByteArray body = "--" + kBoundary + "\r\n" + headers + "\r\nv\r\n" + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY(form.error);
        QCOMPARE(form.error->status, 400);
        QVERIFY(form.parts.isEmpty());
    }

    void fileOverLimit()
    {
        MultipartLimits limits;
        limits.fileLimits.insert("file", 100);
        const QByteArray at = file("file", "a.bin", "x/y", QByteArray(100, 'a')) + closing();
        QVERIFY(!parseMultipart(at, kBoundary, limits).error);
        const QByteArray over = file("file", "a.bin", "x/y", QByteArray(101, 'a')) + closing();
        const MultipartForm form = parseMultipart(over, kBoundary, limits);
        QVERIFY(form.error);
        QCOMPARE(form.error->status, 413);
        QCOMPARE(form.error->param, QStringLiteral("file"));
        QCOMPARE(form.error->message,
                 QStringLiteral("The file field 'file' is larger than the limit of 100 bytes."));
        checkSplits(over, limits);
        // Other file fields fall back to maxFileBytes, and the size is spelled out.
        limits.maxFileBytes = 2 * 1024 * 1024;
        const QByteArray other =
            file("other", "b.bin", "x/y", QByteArray(2 * 1024 * 1024 + 1, 'b')) + closing();
        const MultipartForm o = parseMultipart(other, kBoundary, limits);
        QVERIFY(o.error);
        QCOMPARE(o.error->message, QStringLiteral("The file field 'other' is larger than the "
                                                  "limit of 2097152 bytes (2 MiB)."));
        QCOMPARE(o.error->param, QStringLiteral("other"));
    }

    void fieldOverLimit()
    {
        MultipartLimits limits;
        limits.maxFieldBytes = 1024;
        const QByteArray body = field("prompt", QByteArray(1025, 'x')) + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, limits);
        QVERIFY(form.error);
        QCOMPARE(form.error->status, 413);
        QCOMPARE(form.error->param, QStringLiteral("prompt"));
        QCOMPARE(form.error->message, QStringLiteral("The field 'prompt' is larger than the "
                                                     "limit of 1024 bytes (1 KiB)."));
        // The file limit does not apply to a text field, nor the field limit to a file.
        limits.maxFileBytes = 10;
        QVERIFY(
            !parseMultipart(field("prompt", QByteArray(1024, 'x')) + closing(), kBoundary, limits)
                 .error);
        QVERIFY(!parseMultipart(file("f", "f", "x/y", QByteArray(10, 'x')) + closing(), kBoundary,
                                limits)
                     .error);
        checkSplits(body, limits);
    }

    void zeroLengthFile()
    {
        const QByteArray body =
            file("file", "empty.wav", "audio/wav", "") + field("a", "") + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY(!form.error);
        QCOMPARE(form.parts.size(), 2);
        QVERIFY(form.part("file")->hasFilename);
        QVERIFY(form.part("file")->data.isEmpty());
        QVERIFY(form.part("a")->data.isEmpty());
        checkSplits(body);
    }

    void crlfHandling()
    {
        // A part with no header fields: its empty header block is one CRLF; it has no name.
        for (const QByteArray &rest : {QByteArray("\r\n\r\nv\r\n"), QByteArray("\r\n\r\n\r\n")}) {
            const QByteArray body = "--" + kBoundary + rest + closing();
            const MultipartForm form = parseMultipart(body, kBoundary, {});
            QVERIFY(form.error);
            QCOMPARE(form.error->status, 400);
            QVERIFY(form.error->message.contains(u"no name"));
            checkSplits(body);
        }
        // Data that is itself CRLFs keeps them; only the CRLF before a delimiter is dropped.
        const QByteArray body = field("a", "\r\n") + field("b", "\r\n\r\n") + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY(!form.error);
        QCOMPARE(form.part("a")->data, QByteArray("\r\n"));
        QCOMPARE(form.part("b")->data, QByteArray("\r\n\r\n"));
    }

    void nonAsciiNames()
    {
        const QByteArray name = "\xe5\x90\x8d\xe5\x89\x8d";                      // 名前
        const QByteArray filename = "r\xc3\xa9sum\xc3\xa9 \xf0\x9f\x8e\xb5.mp3"; // résumé 🎵
        const QByteArray body =
            field(name, "v") + file("f", filename, "audio/mpeg", "d") + closing();
        const MultipartForm form = parseMultipart(body, kBoundary, {});
        QVERIFY(!form.error);
        QCOMPARE(form.parts[0].name, name);
        QCOMPARE(form.part("f")->filename, filename);
        checkSplits(body);
        // A limit message names the field as text.
        MultipartLimits limits;
        limits.maxFieldBytes = 0;
        const MultipartForm over = parseMultipart(body, kBoundary, limits);
        QVERIFY(over.error);
        QCOMPARE(over.error->param, QString::fromUtf8(name));
    }

    void callbackRefuses()
    {
        const QByteArray body = file("file", "a.exe", "application/x-msdownload", "MZ") + closing();
        MultipartParser *self = nullptr;
        MultipartParser::Callbacks cb;
        cb.begin = [&self](const MultipartPart &p) {
            if (p.contentType.startsWith("application/x-msdownload")) {
                self->fail(415, QStringLiteral("Unsupported file type."),
                           QString::fromUtf8(p.name));
                return false;
            }
            return true;
        };
        MultipartParser parser(kBoundary, {}, cb);
        self = &parser;
        QVERIFY(!parser.feed(body.constData(), body.size()));
        QCOMPARE(parser.error().status, 415);
        QCOMPARE(parser.error().param, QStringLiteral("file"));
        QVERIFY(!parser.feed("x", 1));
        QVERIFY(!parser.finish());
        QCOMPARE(parser.error().status, 415);

        // Refusing without fail(): a generic 400.
        MultipartParser::Callbacks refuse;
        refuse.data = [](const char *, qsizetype) { return false; };
        MultipartParser p2(kBoundary, {}, refuse);
        QVERIFY(!p2.feed(body.constData(), body.size()));
        QCOMPARE(p2.error().status, 400);
    }

    void largeFileZeroCopy()
    {
        const qsizetype size = 25 * 1024 * 1024;
        QByteArray payload(size, Qt::Uninitialized);
        QRandomGenerator rng(7);
        rng.fillRange(reinterpret_cast<quint32 *>(payload.data()), size / 4);
        const QByteArray body =
            field("model", "whisper-1") + file("file", "big.wav", "audio/wav", payload) + closing();
        MultipartLimits limits;
        limits.fileLimits.insert("file", 26'214'400);

        QElapsedTimer timer;
        timer.start();
        const MultipartForm form = parseMultipart(body, kBoundary, limits);
        QVERIFY(!form.error);
        const MultipartPart *f = form.part("file");
        QVERIFY(f);
        QCOMPARE(f->data.size(), size);
        QVERIFY(inside(f->data, body));
        QVERIFY(f->data == payload);
        QVERIFY(inside(form.part("model")->data, body));
        qInfo("whole body: %lld ms", qint64(timer.restart()));

        // Chunked: 64 KiB and 1-byte feeds, counting what comes out, no copies kept.
        for (qsizetype chunk : {qsizetype(64 * 1024), qsizetype(1)}) {
            qint64 bytes = 0;
            quint32 sum = 0;
            MultipartParser::Callbacks cb;
            cb.data = [&](const char *d, qsizetype n) {
                bytes += n;
                sum = sum * 31 + quint8(d[n - 1]);
                return true;
            };
            MultipartParser parser(kBoundary, limits, cb);
            for (qsizetype at = 0; at < body.size(); at += chunk)
                QVERIFY(parser.feed(body.constData() + at, qMin(chunk, body.size() - at)));
            QVERIFY(parser.finish());
            QCOMPARE(bytes, qint64(size + 9));
            qInfo("%lld-byte chunks: %lld ms", qint64(chunk), qint64(timer.restart()));
        }

        // One byte over the route's file limit is refused.
        const QByteArray over = file("file", "big.wav", "audio/wav", payload + "x") + closing();
        const MultipartForm refused = parseMultipart(over, kBoundary, limits);
        QVERIFY(refused.error);
        QCOMPARE(refused.error->status, 413);
        QCOMPARE(refused.error->message,
                 QStringLiteral("The file field 'file' is larger than the limit of 26214400 "
                                "bytes (25 MiB)."));
    }

    void worstCaseInputIsLinear()
    {
        // Data made of near-delimiters makes a naive search rescan; this must stay linear.
        QByteArray value;
        const QByteArray near = "\r\n--" + kBoundary.chopped(1);
        while (value.size() < 4 * 1024 * 1024)
            value += near;
        MultipartLimits limits;
        limits.maxFieldBytes = value.size();
        const QByteArray body = field("a", value) + closing();
        QElapsedTimer timer;
        timer.start();
        const MultipartForm form = parseMultipart(body, kBoundary, limits);
        QVERIFY(!form.error);
        QCOMPARE(form.part("a")->data.size(), value.size());
        QCOMPARE(parseChunked(
                     body, [] { return 5; }, limits),
                 parseWhole(body, limits));
        QVERIFY2(timer.elapsed() < 10'000, qPrintable(QString::number(timer.elapsed())));
    }
};

QTEST_GUILESS_MAIN(TestMultipart)
#include "tst_multipart.moc"
