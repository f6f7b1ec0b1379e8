// EnvelopeScanner (server/social/engine/EnvelopeScanner.h): the top-level "code" of an answer fed
// in pieces. Every case is fed whole, a byte at a time, and split at every point (in two and in
// three pieces); a property check compares the scanner with QJsonDocument on generated documents
// fed at random splits; a 20 MB answer measures the speed.

#include "EnvelopeScanner.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTest>

using State = EnvelopeScanner::State;

Q_DECLARE_METATYPE(EnvelopeScanner::State)

namespace {

struct Result
{
    State state;
    std::optional<qint64> code;
    bool success;
    bool operator==(const Result &o) const
    {
        return state == o.state && code == o.code && success == o.success;
    }
};

QString describe(const Result &r)
{
    const char *s = r.state == State::Found      ? "Found"
                    : r.state == State::NotFound ? "NotFound"
                                                 : "Pending";
    return QStringLiteral("%1 %2 %3")
        .arg(QLatin1String(s), r.code ? QString::number(*r.code) : QStringLiteral("-"),
             r.success ? QStringLiteral("success") : QString());
}

// Feeds `doc` cut at `cuts` (ascending offsets).
Result scan(const QByteArray &doc, const QList<qsizetype> &cuts = {})
{
    EnvelopeScanner s;
    qsizetype from = 0;
    for (qsizetype cut : cuts) {
        s.feed(QByteArrayView(doc.constData() + from, cut - from));
        from = cut;
    }
    s.feed(QByteArrayView(doc.constData() + from, doc.size() - from));
    return {s.state(), s.code(), s.success()};
}

Result byteByByte(const QByteArray &doc)
{
    EnvelopeScanner s;
    for (qsizetype i = 0; i < doc.size(); ++i)
        s.feed(QByteArrayView(doc.constData() + i, 1));
    return {s.state(), s.code(), s.success()};
}

// Whole, byte by byte, at every split in two, and (for short documents) in three.
void checkAllSplits(const QByteArray &doc, const Result &expected)
{
    const Result whole = scan(doc);
    QVERIFY2(whole == expected, qPrintable(describe(whole)));
    QVERIFY2(byteByByte(doc) == expected, qPrintable(describe(byteByByte(doc))));
    for (qsizetype i = 0; i <= doc.size(); ++i) {
        const Result r = scan(doc, {i});
        QVERIFY2(r == expected,
                 qPrintable(QStringLiteral("split at %1: %2").arg(i).arg(describe(r))));
        if (doc.size() > 80)
            continue;
        for (qsizetype j = i; j <= doc.size(); ++j) {
            const Result r3 = scan(doc, {i, j});
            QVERIFY2(
                r3 == expected,
                qPrintable(QStringLiteral("split at %1, %2: %3").arg(i).arg(j).arg(describe(r3))));
        }
    }
}

// --- The generator of the property check: valid JSON with known top-level members. ---

class Gen
{
public:
    explicit Gen(quint32 seed) : m_rng(seed) {}

    int below(int n) { return int(m_rng.bounded(n)); }
    bool chance(int percent) { return below(100) < percent; }

    // A JSON string literal of `text` (Latin-1 or UTF-8 as given), escaped in random ways.
    QByteArray stringLiteral(const QString &text)
    {
        QByteArray out = "\"";
        for (QChar ch : text) {
            const ushort u = ch.unicode();
            if (u == '"' || u == '\\') {
                out += '\\';
                out += char(u);
            } else if (u < 0x20 || ch.isSurrogate() || chance(8)) {
                out += QStringLiteral("\\u%1").arg(u, 4, 16, QLatin1Char('0')).toLatin1();
            } else if (u == '/' && chance(50)) {
                out += "\\/";
            } else {
                out += QString(ch).toUtf8();
            }
        }
        return out + '"';
    }

    QString randomText()
    {
        static const QStringList pieces = {QStringLiteral("code"), QStringLiteral("\"code\":200"),
                                           QStringLiteral("a\\b"), QStringLiteral("中文"),
                                           QStringLiteral("é"),    QStringLiteral("\n\t"),
                                           QStringLiteral("/"),    QStringLiteral("{\"code\":0}"),
                                           QStringLiteral("😀"),    QStringLiteral("x"),
                                           QString(QChar(0x1)),    QStringLiteral("\"")};
        QString s;
        for (int n = below(4); n > 0; --n)
            s += pieces.at(below(int(pieces.size())));
        return s;
    }

    // A JSON number token of many shapes (valid JSON only).
    QByteArray number()
    {
        static const char *const fixed[] = {"0",
                                            "-0",
                                            "200",
                                            "200.0",
                                            "2e2",
                                            "2E+2",
                                            "-1",
                                            "0.5",
                                            "1e-3",
                                            "404",
                                            "9223372036854775807",
                                            "-9223372036854775808",
                                            "9223372036854775808",
                                            "-9223372036854775809",
                                            "18446744073709551616",
                                            "123456789012345678901234567890",
                                            "-0.0",
                                            "1.5e30"};
        if (chance(50))
            return fixed[below(int(std::size(fixed)))];
        const qint64 v = qint64(m_rng.generate64() >> (1 + below(63)));
        return QByteArray::number(chance(30) ? -v : v);
    }

    QByteArray value(int depth)
    {
        const int kind = depth > 4 ? below(4) : below(7);
        switch (kind) {
        case 0:
            return number();
        case 1:
            return stringLiteral(randomText());
        case 2:
            return chance(50) ? "true" : chance(50) ? "false" : "null";
        case 3:
            return "[]";
        case 4: {
            QByteArray out = "[";
            for (int n = below(4); n > 0; --n)
                out += value(depth + 1) + (n > 1 ? "," : "");
            return out + "]";
        }
        default: {
            QByteArray out = "{";
            for (int n = below(4); n > 0; --n)
                out += stringLiteral(chance(30) ? QStringLiteral("code") : randomText()) + ':' +
                       value(depth + 1) + (n > 1 ? "," : "");
            return out + "}";
        }
        }
    }

    QByteArray space()
    {
        return chance(70) ? QByteArray() : QByteArray(" \n\t\r").left(below(4) + 1);
    }

    // A top-level object with at most one member "code" (its raw value in *codeToken).
    QByteArray document(QByteArray *codeToken)
    {
        codeToken->clear();
        QByteArray out = chance(10) ? "\xEF\xBB\xBF" : "";
        out += space() + '{';
        const int members = below(6);
        bool first = true;
        for (int i = 0; i < members; ++i) {
            QString name = randomText();
            if (chance(40) && codeToken->isEmpty())
                name = QStringLiteral("code");
            if (name == u"code" && !codeToken->isEmpty())
                continue;
            QByteArray v = name == u"code" && chance(70) ? number() : value(1);
            if (name == u"code")
                *codeToken = v;
            out += (first ? "" : ",") + space() + stringLiteral(name) + space() + ':' + space() +
                   v + space();
            first = false;
        }
        return out + '}' + space();
    }

    QRandomGenerator m_rng;
};

} // namespace

class TestEnvelopeScanner : public QObject
{
    Q_OBJECT

private slots:
    void cases_data()
    {
        QTest::addColumn<QByteArray>("doc");
        QTest::addColumn<State>("state");
        QTest::addColumn<qint64>("code"); // when Found

        const auto found = [](const char *name, const QByteArray &doc, qint64 code) {
            QTest::newRow(name) << doc << State::Found << code;
        };
        const auto notFound = [](const char *name, const QByteArray &doc) {
            QTest::newRow(name) << doc << State::NotFound << qint64(0);
        };
        const auto pending = [](const char *name, const QByteArray &doc) {
            QTest::newRow(name) << doc << State::Pending << qint64(0);
        };

        // Plain envelopes.
        found("200", R"({"code":200,"data":{"a":1}})", 200);
        found("0", R"({"code":0})", 0);
        found("404", R"({"code":404,"message":"no"})", 404);
        found("negative", R"({"code":-1})", -1);
        found("code last", R"({"router":"/x","data":[1,{"b":null}],"code":200})", 200);
        found("whitespace", " \t\r\n{ \"code\" \n:\t200 , \"data\" : { } } \n\r\t", 200);
        found("every value kind",
              R"({"a":true,"b":false,"c":null,"d":-1.5e-3,"e":[],"f":{},"g":"",)"
              R"("code":200,"h":[[],{},[1,"x"]]})",
              200);
        found("utf-8 around", "{\"名字\":\"中文 é 😀 \xEF\xBF\xBF\",\"code\":200}", 200);
        found("DEL and high code points", "{\"a\":\"\x7F\xF4\x8F\xBF\xBF\",\"code\":0}", 0);

        // "code" elsewhere than as the top-level member.
        notFound("nested only", R"({"data":{"code":200}})");
        found("nested then top", R"({"data":{"code":200,"x":[{"code":0}]},"code":500})", 500);
        notFound("as a value", "{\"msg\":\"code\",\"x\":\"\\\"code\\\":200\"}");
        found("as text then member", "{\"x\":\"{\\\"code\\\":200}\",\"code\":3}", 3);
        notFound("in an array at the top", R"({"list":["code",200]})");
        notFound("name with a quote", "{\"a\\\"code\":200}");
        notFound("name ends with code", R"({"xcode":200})");
        notFound("name starts with code", R"({"codes":200})");
        notFound("name with a space", R"({"code ":200})");
        notFound("prefix of code", R"({"cod":200})");
        notFound("upper case", R"({"Code":200})");
        notFound("escaped backslash in the name", R"({"c\\ode":200})");
        found("backslash before the closing quote", "{\"a\":\"x\\\\\",\"code\":0}", 0);
        found("escaped quote then member", "{\"a\":\"\\\"\",\"code\":0}", 0);
        found("escaped slash elsewhere", R"({"a\/b":"\/","code":200})", 200);
        notFound("escaped slash in the name", R"({"co\/de":200})");

        // Unicode escapes in the name: JSON semantics, "\u0063ode" is "code".
        found("\\u0063ode", R"({"\u0063ode":200})", 200);
        found("all escaped", R"({"\u0063\u006F\u0064\u0065":0})", 0);
        found("upper-case hex", R"({"c\u006Fde":7})", 7);
        notFound("\\u0043ode is Code", R"({"\u0043ode":200})");
        notFound("\\u0000 after", R"({"code\u0000":200})");
        notFound("non-ASCII escape", R"({"\u0163ode":200})");
        notFound("short escape", R"({"\u063ode":200})");

        // Numbers.
        found("-0", R"({"code":-0})", 0);
        notFound("200.0", R"({"code":200.0})");
        notFound("2e2", R"({"code":2e2})");
        notFound("2E+2", R"({"code":2E+2})");
        notFound("0e0", R"({"code":0e0})");
        notFound("0200 (not JSON)", R"({"code":0200})");
        notFound("-01 (not JSON)", R"({"code":-01})");
        notFound("+200 (not JSON)", R"({"code":+200})");
        notFound("- alone", R"({"code":-})");
        notFound(".5", R"({"code":.5})");
        notFound("200. (not JSON)", R"({"code":200.})");
        found("int64 max", R"({"code":9223372036854775807})", std::numeric_limits<qint64>::max());
        found("int64 min", R"({"code":-9223372036854775808})", std::numeric_limits<qint64>::min());
        notFound("int64 max + 1", R"({"code":9223372036854775808})");
        notFound("int64 min - 1", R"({"code":-9223372036854775809})");
        notFound("20 digits", R"({"code":18446744073709551616})");
        notFound("200 followed by a letter", R"({"code":200x})");
        notFound("leading zeros elsewhere", R"({"code":200,"a":00})");
        notFound("bad fraction elsewhere", R"({"code":200,"a":1.})");
        notFound("bad exponent elsewhere", R"({"code":200,"a":1e+})");
        // JSON has no range; QJsonDocument refuses what a double cannot hold, the scanner does not.
        found("beyond double's range elsewhere", R"({"code":200,"a":-1e400,"b":1e-400})", 200);

        // Other types of "code".
        notFound("string code", R"({"code":"200"})");
        notFound("true code", R"({"code":true})");
        notFound("null code", R"({"code":null})");
        notFound("object code", R"({"code":{"value":200}})");
        notFound("array code", R"({"code":[200]})");

        // Duplicates: the first "code" decides.
        found("duplicate, first wins", R"({"code":200,"code":500})", 200);
        found("duplicate, first not success", R"({"code":500,"code":200})", 500);
        notFound("duplicate, first a string", R"({"code":"x","code":200})");
        found("duplicate via escape", R"({"code":1,"\u0063ode":200})", 1);
        found("duplicate of another type", R"({"code":0,"code":"x"})", 0);

        // Top-level values other than an object.
        notFound("top-level array", R"([{"code":200}])");
        notFound("top-level number", "200");
        notFound("top-level string", R"("code")");
        notFound("top-level null", "null");

        // The BOM.
        found("BOM", "\xEF\xBB\xBF{\"code\":200}", 200);
        found("BOM then whitespace", "\xEF\xBB\xBF \n{\"code\":200}", 200);
        notFound("whitespace then BOM", " \xEF\xBB\xBF{\"code\":200}");
        notFound("two BOMs", "\xEF\xBB\xBF\xEF\xBB\xBF{\"code\":200}");
        notFound("half a BOM", "\xEF\xBB{\"code\":200}");
        notFound("BOM at the end", "{\"code\":200}\xEF\xBB\xBF");

        // The end of the answer.
        pending("empty", "");
        pending("whitespace only", " \n");
        pending("BOM only", "\xEF\xBB\xBF");
        pending("number not ended", R"({"code":200)");
        pending("number not ended, spaces", R"({"code":200  )");
        pending("name only", R"({"code")");
        pending("open without code", R"({"data":{"a":[1,2)");
        found("open after code", R"({"code":200,"data":{"a":)", 200);
        notFound("closed without code", R"({"data":1})");
        notFound("empty object", "{}");
        notFound("garbage after", R"({"code":200}x)");
        notFound("second document", R"({"code":200}{})");
        notFound("NUL after", QByteArray("{\"code\":200}\0", 13));
        found("whitespace after", "{\"code\":200}\r\n \t", 200);

        // Malformed JSON after a Found code is not success.
        notFound("trailing comma in array", R"({"code":200,"data":[1,]})");
        notFound("trailing comma in object", R"({"code":200,"data":1,})");
        notFound("missing colon", R"({"code":200,"data" 1})");
        notFound("missing comma", R"({"code":200 "data":1})");
        notFound("wrong close", R"({"code":200,"data":[1}})");
        notFound("close too many", R"({"code":200,"data":[1]]})");
        notFound("bad literal", R"({"code":200,"data":tru})");
        notFound("literal case", R"({"code":200,"data":True})");
        notFound("bad escape", R"({"code":200,"data":"\x"})");
        notFound("bad unicode escape", R"({"code":200,"data":"\u12G4"})");
        notFound("raw control character", "{\"code\":200,\"data\":\"a\x01\"}");
        notFound("raw newline", "{\"code\":200,\"data\":\"a\nb\"}");
        notFound("single quotes", R"({"code":200,'data':1})");
        notFound("comment", "{\"code\":200 /* x */}");
        notFound("bare name", R"({code:200})");
        notFound("form feed is no whitespace", "{\"code\":200,\f\"a\":1}");
        notFound("comma first", R"({,"code":200})");

        // UTF-8 as QJsonDocument checks it.
        notFound("overlong", "{\"code\":200,\"a\":\"\xC0\x80\"}");
        notFound("surrogate", "{\"code\":200,\"a\":\"\xED\xA0\x80\"}");
        notFound("above U+10FFFF", "{\"code\":200,\"a\":\"\xF4\x90\x80\x80\"}");
        notFound("lone continuation", "{\"code\":200,\"a\":\"\x80\"}");
        notFound("truncated sequence", "{\"code\":200,\"a\":\"\xE4\xB8\"}");
        notFound("overlong 3 bytes", "{\"code\":200,\"a\":\"\xE0\x9F\xBF\"}");
        notFound("overlong 4 bytes", "{\"code\":200,\"a\":\"\xF0\x8F\xBF\xBF\"}");
        notFound("F5", "{\"code\":200,\"a\":\"\xF5\x80\x80\x80\"}");
        notFound("byte outside a string", "{\"code\":200,\xC3\xA9:1}");
        found("noncharacter", "{\"code\":200,\"a\":\"\xEF\xBF\xBE\"}", 200);
        found("escaped lone surrogate", R"({"code":200,"a":"\ud800"})", 200);

        // Nesting: QJsonDocument's limit of 1024 containers.
        found("depth 1024",
              "{\"code\":200,\"a\":" + QByteArray(1023, '[') + QByteArray(1023, ']') + "}", 200);
        notFound("depth 1025",
                 "{\"code\":200,\"a\":" + QByteArray(1024, '[') + QByteArray(1024, ']') + "}");
    }

    void cases()
    {
        QFETCH(QByteArray, doc);
        QFETCH(State, state);
        QFETCH(qint64, code);
        const Result expected{state,
                              state == State::Found ? std::optional<qint64>(code) : std::nullopt,
                              state == State::Found && (code == 200 || code == 0)};
        checkAllSplits(doc, expected);
    }

    // The scanner agrees with QJsonDocument wherever the document is valid JSON: its answer is
    // exactly QJsonDocument's value of the top-level "code", when that is an integer literal that
    // fits in 64 bits, and where QJsonDocument refuses a document, it is never success.
    void agreesWithQJsonDocument()
    {
        // SCANNER_SEED=<n> repeats a run.
        const quint32 seed = qEnvironmentVariableIsSet("SCANNER_SEED")
                                 ? qgetenv("SCANNER_SEED").toUInt()
                                 : QRandomGenerator::global()->generate();
        qInfo("seed %u (SCANNER_SEED)", seed);
        Gen gen(seed);
        int found = 0, notFound = 0;
        for (int i = 0; i < 5000; ++i) {
            QByteArray token;
            const QByteArray doc = gen.document(&token);
            QJsonParseError error;
            const QJsonDocument parsed = QJsonDocument::fromJson(doc, &error);
            QVERIFY2(parsed.isObject(), doc.constData());
            const QJsonValue qtCode = parsed.object().value(u"code");
            Result expected{State::NotFound, std::nullopt, false};
            bool ok = false;
            const qint64 asInt = token.toLongLong(&ok); // integer syntax, 64 bits
            if (!qtCode.isUndefined() && ok && !token.contains('.') && !token.contains('e') &&
                !token.contains('E')) {
                QCOMPARE(qtCode.toVariant().typeId(), QMetaType::LongLong);
                QCOMPARE(qtCode.toInteger(), asInt);
                expected = {State::Found, qtCode.toInteger(),
                            qtCode.toInteger() == 200 || qtCode.toInteger() == 0};
            }
            (expected.state == State::Found ? found : notFound)++;

            // Random cuts, a few pieces of any size.
            QList<qsizetype> cuts;
            for (int n = gen.below(6); n > 0; --n)
                cuts.append(gen.below(int(doc.size()) + 1));
            std::sort(cuts.begin(), cuts.end());
            const Result r = scan(doc, cuts);
            QVERIFY2(r == expected,
                     qPrintable(QStringLiteral("%1\n%2, expected %3")
                                    .arg(QString::fromUtf8(doc), describe(r), describe(expected))));

            // Broken copies: where QJsonDocument refuses one, it is no success. (The generator's
            // numbers stay far enough from double's range that one more byte cannot leave it.)
            QByteArray broken = doc;
            const int at = gen.below(int(doc.size()));
            if (gen.chance(50))
                broken.remove(at, 1);
            else
                broken.insert(at, "\",}]:\\{[0x\x01\xC3-."[gen.below(14)]);
            // (An answer that merely has not ended yet may be Found, the relay knows an answer
            // cut short by its connection: QJsonDocument then reports an error at its end.)
            const Result b = scan(broken, {gen.below(int(broken.size()) + 1)});
            QJsonParseError brokenError;
            if (QJsonDocument::fromJson(broken, &brokenError).isNull() &&
                brokenError.offset < broken.size() - 6)
                QVERIFY2(!b.success, broken.constData());
        }
        QVERIFY(found > 500 && notFound > 500);
        qInfo("%d documents with an integer code, %d without", found, notFound);
    }

    // The hot path: a 20 MB answer (the upstream's catalog repeated inside data) in 16 KiB pieces.
    void twentyMegabytes()
    {
        QFile f(QStringLiteral(SOCIAL_OPENAPI));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray sample = f.readAll();
        QByteArray body = R"({"code":200,"router":"/api/v1/x","data":{"items":[)";
        while (body.size() < 20 * 1000 * 1000)
            body += sample + ',';
        body += R"("end"]}})";
        const int chunk = 16 * 1024;
        QElapsedTimer timer;
        timer.start();
        EnvelopeScanner s;
        for (qsizetype i = 0; i < body.size(); i += chunk)
            s.feed(QByteArrayView(body.constData() + i, qMin<qsizetype>(chunk, body.size() - i)));
        const double ms = timer.nsecsElapsed() / 1e6;
        QVERIFY(s.success());
        qInfo("%.1f MB in %.1f ms: %.0f MB/s", body.size() / 1e6, ms, body.size() / 1e3 / ms);
        body.chop(1);
        EnvelopeScanner open;
        open.feed(body);
        QCOMPARE(open.state(), State::Found); // the top-level object has not ended yet
    }

    // The nesting limit is QJsonDocument's, so nothing QJsonDocument refuses for depth is Found.
    void depthLimitIsQJsonDocuments()
    {
        const auto nested = [](int containers) {
            return "{\"code\":200,\"a\":" + QByteArray(containers - 1, '[') +
                   QByteArray(containers - 1, ']') + "}";
        };
        QVERIFY(!QJsonDocument::fromJson(nested(1024)).isNull());
        QVERIFY(QJsonDocument::fromJson(nested(1025)).isNull());
        QVERIFY(scan(nested(1024)).success);
        QCOMPARE(scan(nested(1025)).state, State::NotFound);
    }

    void boundedState() { QVERIFY(sizeof(EnvelopeScanner) <= 256); }
};

QTEST_GUILESS_MAIN(TestEnvelopeScanner)
#include "tst_envelope_scanner.moc"
