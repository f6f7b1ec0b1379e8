// Unit tests for the pure parts of the text-generation gateway (server/llm/): SSE framing, the
// JSON scanner, token pricing, a request's cost bound, the pass-through and translating relays,
// the gateway config and model resolution. No network, no database.

#include "llm/ChatOverMessages.h"
#include "llm/CostBound.h"
#include "llm/GatewayConfig.h"
#include "llm/ModelCatalog.h"
#include "llm/ProviderRegistry.h"
#include "llm/Relay.h"
#include "llm/RequestValidation.h"
#include "llm/SseParser.h"
#include "upstream/JsonScan.h"

#include <limits>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>
#include <stdexcept>

namespace {

QByteArray canon(const QJsonValue &v)
{
    if (v.isObject())
        return QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact);
    if (v.isArray())
        return QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact);
    // Scalars: wrap them so QJsonDocument can print them.
    const QByteArray wrapped = QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact);
    return wrapped.mid(1, wrapped.size() - 2);
}

QJsonObject obj(const QByteArray &json)
{
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        qWarning("not a JSON object (%s): %s", qPrintable(err.errorString()), json.constData());
    return doc.object();
}

// All events of a byte stream, fed in pieces of `step` bytes (0: all at once).
QList<SseEvent> parseAll(const QByteArray &stream, qsizetype step = 0)
{
    SseParser p;
    QList<SseEvent> out;
    SseEvent e;
    if (step <= 0) {
        p.feed(stream);
        while (p.next(&e))
            out.append(e);
        return out;
    }
    for (qsizetype i = 0; i < stream.size(); i += step) {
        p.feed(stream.mid(i, step));
        while (p.next(&e))
            out.append(e);
    }
    return out;
}

// Events as one comparable string: "[event|data|comment]..." with data escaped.
QByteArray describe(const QList<SseEvent> &events)
{
    QByteArray s;
    for (const SseEvent &e : events)
        s += "[" + e.event + "|" + e.data.toPercentEncoding() + "|" + (e.comment ? "c" : "-") + "]";
    return s;
}

// One of the samples: whole, cut short, or with one byte replaced by JSON punctuation, a digit or
// a literal's letter (never the byte after a backslash).
QByteArray mangledSample(QRandomGenerator &rng, const QList<QByteArray> &samples)
{
    QByteArray json = samples[rng.bounded(samples.size())];
    switch (rng.bounded(3)) {
    case 0:
        json.truncate(rng.bounded(json.size() + 1));
        break;
    case 1: {
        const int at = rng.bounded(json.size());
        if (at == 0 || json[at - 1] != '\\')
            json[at] = " {}[]\":,019-tfnu"[rng.bounded(16)];
        break;
    }
    default:
        break;
    }
    return json;
}

QByteArray sliceOf(const QByteArray &json, const JsonScan::Span &s)
{
    if (!s.found())
        return "<not found>";
    return json.mid(s.begin, s.end - s.begin);
}

// Feeds an upstream SSE byte stream to a relay (in small pieces) and returns what the client got.
QByteArray relayStream(Relay &relay, const QByteArray &upstream, qsizetype step = 7)
{
    SseParser parser;
    QByteArray out;
    SseEvent e;
    for (qsizetype i = 0; i < upstream.size(); i += step) {
        parser.feed(upstream.mid(i, step));
        while (!relay.isFinished() && parser.next(&e))
            relay.onEvent(e, &out);
    }
    return out;
}

SseEvent dataEvent(const QByteArray &data, const QByteArray &name = {})
{
    SseEvent e;
    e.event = name;
    e.data = data;
    return e;
}

QString configError(const QByteArray &gatewayJson)
{
    try {
        (void)GatewayConfig::fromJson(obj(gatewayJson));
    } catch (const std::runtime_error &e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

ModelPrice price(qint64 in, qint64 out, qint64 cacheRead, qint64 cacheWrite)
{
    ModelPrice p;
    p.input = in;
    p.output = out;
    p.cacheRead = cacheRead;
    p.cacheWrite = cacheWrite;
    return p;
}

TokenUsage usage(qint64 in, qint64 out, qint64 cacheRead = 0, qint64 cacheWrite = 0)
{
    TokenUsage u;
    u.input = in;
    u.output = out;
    u.cacheRead = cacheRead;
    u.cacheWrite = cacheWrite;
    return u;
}

// A model for the bound's tests: 2 credits per 1M prompt tokens, 8 per 1M output tokens.
ModelEntry boundModel(qint64 maxOutput = 1'000, qint64 window = 50'000)
{
    ModelEntry m;
    m.id = QStringLiteral("bound-model");
    m.price = price(2'000'000'000, 8'000'000'000, 0, 0);
    m.maxOutputTokens = maxOutput;
    m.contextWindow = window;
    return m;
}

const QByteArray kOpenRouterList = R"J({"data":[
  {"id":"vendor/model-a","name":"Model A","pricing":{"prompt":"0.000003","completion":"0.000015",
   "input_cache_read":"0.0000003","input_cache_write":"0.00000375","request":"0"}},
  {"id":"vendor/free","name":"Free","pricing":{"prompt":"0","completion":"0"}},
  {"id":"vendor/variable","name":"Router","pricing":{"prompt":"-1","completion":"-1"}},
  {"id":"vendor/half-variable","pricing":{"prompt":"0.000001","completion":"-1"}},
  {"id":"vendor/numeric","pricing":{"prompt":0.000002,"completion":0.000004}},
  {"id":"vendor/no-pricing"},
  {"name":"no id","pricing":{"prompt":"0.000001"}}
]})J";

} // namespace

class TestLlm : public QObject
{
    Q_OBJECT

private slots:
    // 1. SseParser
    void sse_events_data();
    void sse_events();
    void sse_splitAtEveryBoundary_data();
    void sse_splitAtEveryBoundary();
    void sse_partialAndBuffered();
    void sse_formatRoundTrip_data();
    void sse_formatRoundTrip();

    // 2. JsonScan
    void json_findNested();
    void json_keysInsideStringsNotMatched();
    void json_valueTypes_data();
    void json_valueTypes();
    void json_whitespace();
    void json_broken_data();
    void json_broken();
    void json_replaceString();
    void json_quote_data();
    void json_quote();
    void json_quoteEveryByteRoundTrips();
    void json_isObject_data();
    void json_isObject();
    void json_isObjectAgreesWithQJsonDocument();
    void json_membersAgreeWithFind();

    // 3. TokenUsage::cost
    void cost_data();
    void cost();
    void cost_catalogPrice();
    void cost_saturatesAtExtremes_data();
    void cost_saturatesAtExtremes();

    // The hold: CostBound
    void bound_outputField_data();
    void bound_outputField();
    void bound_aboveTheModelsLimit_data();
    void bound_aboveTheModelsLimit();
    void bound_promptFromBytes();
    void bound_cacheWritePrice();
    void bound_openPrompt_data();
    void bound_openPrompt();
    void bound_overflowIsRefused();
    void bound_exactCost_data();
    void bound_exactCost();
    void bound_chatValidatesN();
    void bound_catalogLimits();

    // 4. pass-through relays
    void chat_prepareKeepsUnknownFields();
    void chat_prepareStreamAddsIncludeUsage();
    void chat_streamRewritesModelAndStripsUsage();
    void chat_streamKeepsUsageWhenAsked();
    void chat_streamUsageWithChoicesNotStripped();
    void chat_streamErrorChunk();
    void chat_estimatedUsage();
    void chat_convertBody();
    void responses_prepareAndStream();
    void responses_failedAndErrorEvent();
    void messages_stream();
    void messages_fullCumulativeUsage();
    void messages_outputNeverReportedIsEstimated();
    void messages_errorEventAndConvertBody();

    // 5. ChatOverMessages
    void com_requestTranslation();
    void com_toolChoice_data();
    void com_toolChoice();
    void com_scalars_data();
    void com_scalars();
    void com_responseFormatWithoutSystem();
    void com_refusesN();
    void com_responseTranslation();
    void com_finishReason_data();
    void com_finishReason();
    void com_toolOnlyAnswerHasNullContent();
    void com_streamTranslation_data();
    void com_streamTranslation();

    // 6. GatewayConfig
    void config_defaults();
    void config_override();
    void config_errors_data();
    void config_errors();
    void config_fractionalMilliseconds_data();
    void config_fractionalMilliseconds();
    void config_roundTrip();
    void config_keysFromEnvironmentStayOutOfTheFile();
    void config_saveTo();
    void config_saveKeepsOtherGatewaySettings();
    void config_saveRefusesNonJson_data();
    void config_saveRefusesNonJson();
    void config_maskKey_data();
    void config_maskKey();

    // 7. ProviderRegistry
    void registry_resolveAuto();
    void registry_resolveWrongEndpoint_data();
    void registry_resolveWrongEndpoint();
    void registry_resolveUnknown();
    void registry_parseCatalog();
    void registry_parseCatalogMalformed();
    void registry_resolveGateway();
    void registry_liveLimits();
    void registry_rejectsBadConfig();
    void registry_pickKeyRoundRobin();
    void registry_restKey();
    void registry_allRested();
    void registry_tried();
};

// --- 1. SseParser ----------------------------------------------------------------------------

void TestLlm::sse_events_data()
{
    QTest::addColumn<QByteArray>("stream");
    QTest::addColumn<QByteArray>("expected");

    QTest::newRow("one") << QByteArray("data: hello\n\n") << QByteArray("[|hello|-]");
    QTest::newRow("no space after colon")
        << QByteArray("data:hello\n\n") << QByteArray("[|hello|-]");
    QTest::newRow("only one space removed")
        << QByteArray("data:  two spaces\n\n") << QByteArray("[|%20two%20spaces|-]");
    QTest::newRow("named") << QByteArray("event: message_start\ndata: {\"a\":1}\n\n")
                           << QByteArray("[message_start|%7B%22a%22%3A1%7D|-]");
    QTest::newRow("crlf") << QByteArray("event: ping\r\ndata: x\r\n\r\ndata: y\r\n\r\n")
                          << QByteArray("[ping|x|-][|y|-]");
    QTest::newRow("multi-line data")
        << QByteArray("data: line1\ndata: line2\ndata:\ndata: line4\n\n")
        << QByteArray("[|line1%0Aline2%0A%0Aline4|-]");
    QTest::newRow("multi-line crlf")
        << QByteArray("data: a\r\ndata: b\r\n\r\n") << QByteArray("[|a%0Ab|-]");
    QTest::newRow("comment only") << QByteArray(": keep-alive\n\ndata: x\n\n")
                                  << QByteArray("[||c][|x|-]");
    QTest::newRow("comment with data is data")
        << QByteArray(": note\ndata: x\n\n") << QByteArray("[|x|-]");
    QTest::newRow("empty blocks skipped")
        << QByteArray("\n\n\n\ndata: a\n\n\n\n\r\n\r\ndata: b\n\n") << QByteArray("[|a|-][|b|-]");
    QTest::newRow("leading blank line") << QByteArray("\ndata: a\n\n") << QByteArray("[|a|-]");
    QTest::newRow("unknown fields only skipped")
        << QByteArray("id: 7\nretry: 100\n\ndata: a\n\n") << QByteArray("[|a|-]");
    QTest::newRow("id with data") << QByteArray("id: 7\ndata: a\n\n") << QByteArray("[|a|-]");
    QTest::newRow("DONE") << QByteArray("data: {\"x\":1}\n\ndata: [DONE]\n\n")
                          << QByteArray("[|%7B%22x%22%3A1%7D|-][|%5BDONE%5D|-]");
    QTest::newRow("colon in value") << QByteArray("data: a: b\n\n") << QByteArray("[|a%3A%20b|-]");
    QTest::newRow("incomplete tail not emitted")
        << QByteArray("data: a\n\ndata: b\n") << QByteArray("[|a|-]");
}

void TestLlm::sse_events()
{
    QFETCH(QByteArray, stream);
    QFETCH(QByteArray, expected);
    QCOMPARE(describe(parseAll(stream)), expected);
}

void TestLlm::sse_splitAtEveryBoundary_data()
{
    QTest::addColumn<QByteArray>("stream");
    QTest::newRow("lf") << QByteArray("event: message_start\ndata: {\"a\":1}\n\n: keep-alive\n\n"
                                      "data: x\ndata: y\n\n\n\ndata: [DONE]\n\n");
    QTest::newRow("crlf") << QByteArray("event: message_start\r\ndata: {\"a\":1}\r\n\r\n"
                                        ": keep-alive\r\n\r\ndata: x\r\ndata: y\r\n\r\n\r\n\r\n"
                                        "data: [DONE]\r\n\r\n");
    QTest::newRow("mixed") << QByteArray("data: a\r\n\ndata: b\n\r\ndata: c\r\ndata: d\n\n");
}

void TestLlm::sse_splitAtEveryBoundary()
{
    QFETCH(QByteArray, stream);
    const QByteArray whole = describe(parseAll(stream));
    QVERIFY(!whole.isEmpty());
    QCOMPARE(describe(parseAll(stream, 1)), whole);
    for (qsizetype cut = 0; cut <= stream.size(); ++cut) {
        SseParser p;
        QList<SseEvent> events;
        SseEvent e;
        p.feed(stream.left(cut));
        while (p.next(&e))
            events.append(e);
        p.feed(stream.mid(cut));
        while (p.next(&e))
            events.append(e);
        QVERIFY2(describe(events) == whole, qPrintable(QStringLiteral("cut at %1").arg(cut)));
    }
}

void TestLlm::sse_partialAndBuffered()
{
    SseParser p;
    SseEvent e;
    QVERIFY(!p.hasPartial());
    p.feed("data: abc");
    QVERIFY(!p.next(&e));
    QVERIFY(p.hasPartial());
    p.feed("\n");
    QVERIFY(!p.next(&e));
    p.feed("\n");
    QVERIFY(p.next(&e));
    QCOMPARE(e.data, QByteArray("abc"));
    QVERIFY(!p.hasPartial());
    QCOMPARE(p.buffered(), qsizetype(0));
    QVERIFY(!p.next(&e));
}

void TestLlm::sse_formatRoundTrip_data()
{
    QTest::addColumn<QByteArray>("event");
    QTest::addColumn<QByteArray>("data");
    QTest::addColumn<QByteArray>("wire");

    QTest::newRow("data only") << QByteArray() << QByteArray("{\"a\":1}")
                               << QByteArray("data: {\"a\":1}\n\n");
    QTest::newRow("named") << QByteArray("message_stop")
                           << QByteArray("{\"type\":\"message_stop\"}")
                           << QByteArray(
                                  "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    QTest::newRow("multi-line") << QByteArray("e") << QByteArray("one\ntwo\n\nfour")
                                << QByteArray(
                                       "event: e\ndata: one\ndata: two\ndata: \ndata: four\n\n");
    QTest::newRow("trailing newline")
        << QByteArray() << QByteArray("x\n") << QByteArray("data: x\ndata: \n\n");
    QTest::newRow("leading space")
        << QByteArray() << QByteArray("  x") << QByteArray("data:   x\n\n");
    QTest::newRow("empty") << QByteArray() << QByteArray() << QByteArray("data: \n\n");
    QTest::newRow("looks like a field") << QByteArray() << QByteArray("event: no\ndata: no")
                                        << QByteArray("data: event: no\ndata: data: no\n\n");
    QTest::newRow("DONE") << QByteArray() << QByteArray("[DONE]") << QByteArray("data: [DONE]\n\n");
}

void TestLlm::sse_formatRoundTrip()
{
    QFETCH(QByteArray, event);
    QFETCH(QByteArray, data);
    QFETCH(QByteArray, wire);
    const QByteArray formatted = SseParser::format(event, data);
    QCOMPARE(formatted, wire);
    for (qsizetype step : {qsizetype(0), qsizetype(1)}) {
        const QList<SseEvent> events = parseAll(formatted + formatted, step);
        QCOMPARE(events.size(), 2);
        for (const SseEvent &e : events) {
            QCOMPARE(e.event, event);
            QCOMPARE(e.data, data);
            QVERIFY(!e.comment);
        }
    }
}

// --- 2. JsonScan -----------------------------------------------------------------------------

void TestLlm::json_isObject_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<bool>("object");
    const auto row = [](const char *name, const QByteArray &json, bool object) {
        QTest::newRow(name) << json << object;
    };
    row("empty object", "{}", true);
    row("spaces around", " \r\n\t{ } \n", true);
    row("answer",
        R"({"id":"c","choices":[{"message":{"content":"hi \"x\" \u00e9\n"}}],)"
        R"("usage":{"prompt_tokens":3,"n":-0.5e+3,"f":1.25E-2},"a":[true,false,null,[]]})",
        true);
    row("utf-8", "{\"k\":\"\xe4\xb8\xad\xf0\x9f\x98\x80\"}", true);
    row("empty", "", false);
    row("spaces only", "   ", false);
    row("array", "[1]", false);
    row("string", "\"x\"", false);
    row("truncated", R"({"choices":[{"message":{"content":"hi)", false);
    row("truncated after value", R"({"a":1)", false);
    row("trailing comma", R"({"a":1,})", false);
    row("two documents", "{}{}", false);
    row("garbage after", "{} x", false);
    row("unquoted key", "{a:1}", false);
    row("single quotes", "{'a':1}", false);
    row("leading zero", R"({"a":01})", false);
    row("bare dot", R"({"a":.5})", false);
    row("dot without digits", R"({"a":1.})", false);
    row("plus sign", R"({"a":+1})", false);
    row("bad literal", R"({"a":tru})", false);
    row("bad escape", R"({"a":"\x41"})", false);
    row("short unicode escape", R"({"a":"\u12"})", false);
    row("raw control character", "{\"a\":\"x\ty\"}", false);
    row("overlong utf-8", "{\"a\":\"\xc0\xaf\"}", false);
    row("surrogate in utf-8", "{\"a\":\"\xed\xa0\x80\"}", false);
    row("cut utf-8", "{\"a\":\"\xe4\xb8\"}", false);
    row("missing colon", R"({"a" 1})", false);
    row("missing value", R"({"a":})", false);
    row("deep", QByteArray(1024, '[').prepend("{\"a\":") + QByteArray(1024, ']') + '}', false);
    row("deep enough", QByteArray(1000, '[').prepend("{\"a\":") + QByteArray(1000, ']') + '}',
        true);
}

void TestLlm::json_isObject()
{
    QFETCH(QByteArray, json);
    QFETCH(bool, object);
    QCOMPARE(JsonScan::isObject(json), object);
}

// Random answers, whole, cut, or with a byte replaced at random: isObject agrees with
// QJsonDocument, outside what QJsonDocument accepts and RFC 8259 does not (invalid escapes,
// ".5", "1.", raw control characters), which these samples and corruptions never make.
void TestLlm::json_isObjectAgreesWithQJsonDocument()
{
    QRandomGenerator rng(20261126);
    const QList<QByteArray> samples = {
        R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Echo: \u4e2d hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":8,"total_tokens":12}})",
        R"({"a":[1,-25,3e2,{"b":null,"c":[true,false]}],"s":"x\/z","e":{}})",
    };
    int checked = 0;
    for (int round = 0; round < 4000; ++round) {
        // Nothing after a '\\', no '\\' or '.', and samples without decimals: no invalid escape
        // or "2." is made, which QJsonDocument would accept.
        const QByteArray json = mangledSample(rng, samples);
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
        const bool qt = error.error == QJsonParseError::NoError && doc.isObject();
        QVERIFY2(JsonScan::isObject(json) == qt, json.constData());
        ++checked;
    }
    QCOMPARE(checked, 4000);
}

// members() and isObject() with keys give, in one pass, what find() gives key by key: on whole
// answers, cut ones, corrupted ones, with a key written twice (the first counts) and with keys
// that are missing or only nested.
void TestLlm::json_membersAgreeWithFind()
{
    QRandomGenerator rng(20261127);
    const QList<QByteArray> samples = {
        R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Echo: 中 hi","model":"inner"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":8,"total_tokens":12}})",
        R"( { "usage" : { "a" : 1 } , "model" : "x\"y" , "model" : "second", "choices" : [ ] } )",
        R"({"error":{"message":"no","type":"t"},"usage":null,"model":7})",
    };
    int whole = 0;
    for (int round = 0; round < 3000; ++round) {
        const QByteArray json = mangledSample(rng, samples);
        const auto keys = {QByteArrayView("model"),   QByteArrayView("usage"),
                           QByteArrayView("choices"), QByteArrayView("error"),
                           QByteArrayView("message"), QByteArrayView("absent")};
        JsonScan::Span walked[6], validated[6];
        JsonScan::members(json, keys, walked);
        const bool object = JsonScan::isObject(json, keys, validated);
        QCOMPARE(object, JsonScan::isObject(json));
        whole += object;
        int n = 0;
        for (QByteArrayView key : keys) {
            const JsonScan::Span one = JsonScan::find(json, {key});
            QVERIFY2(walked[n].begin == one.begin && walked[n].end == one.end, json.constData());
            if (object)
                QVERIFY2(validated[n].begin == one.begin && validated[n].end == one.end,
                         json.constData());
            else
                QVERIFY2(!validated[n].found(), json.constData());
            ++n;
        }
    }
    QVERIFY2(whole > 500, qPrintable(QString::number(whole))); // whole ones were checked too
    const QByteArray twice = samples[1];
    JsonScan::Span s[2];
    QVERIFY(JsonScan::isObject(twice, {"model", "absent"}, s));
    QCOMPARE(sliceOf(twice, s[0]), QByteArray(R"("x\"y")"));
    QVERIFY(!s[1].found());
}

void TestLlm::json_findNested()
{
    const QByteArray j = R"({"id":"x","message":{"model":"m","usage":{"input_tokens":12,)"
                         R"("cache":{"read":3}}},"usage":{"input_tokens":99}})";
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"message", "usage", "input_tokens"})), QByteArray("12"));
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"message", "usage", "cache", "read"})), QByteArray("3"));
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"usage", "input_tokens"})), QByteArray("99"));
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"message", "model"})), QByteArray("\"m\""));
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"message", "usage"})),
             QByteArray(R"({"input_tokens":12,"cache":{"read":3}})"));
    // Missing steps, a step through a non-object, a nested key asked at the top level.
    QVERIFY(!JsonScan::find(j, {"message", "nope"}).found());
    QVERIFY(!JsonScan::find(j, {"id", "x"}).found());
    QVERIFY(!JsonScan::find(j, {"model"}).found());
    QVERIFY(!JsonScan::find(j, {"input_tokens"}).found());
    QVERIFY(!JsonScan::find(j, {"message", "usage", "read"}).found());
    // Duplicate keys: the first one.
    const QByteArray dup = R"({"a":1,"a":2})";
    QCOMPARE(sliceOf(dup, JsonScan::find(dup, {"a"})), QByteArray("1"));
    // Arrays are not descended into.
    const QByteArray arr = R"({"choices":[{"model":"inner"}],"model":"outer"})";
    QCOMPARE(sliceOf(arr, JsonScan::find(arr, {"model"})), QByteArray("\"outer\""));
}

void TestLlm::json_keysInsideStringsNotMatched()
{
    // The text of a message mentions "model": only the real top-level member counts.
    const QByteArray j = R"({"choices":[{"delta":{"content":"say \"model\":\"x\", ok"}}],)"
                         R"("note":"}{\"model\":\"y\"","model":"real"})";
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"model"})), QByteArray("\"real\""));
    // A key that only exists inside a string is not found.
    const QByteArray k = R"({"content":"\"usage\":{\"prompt_tokens\":5}","x":1})";
    QVERIFY(!JsonScan::find(k, {"usage"}).found());
    // Escaped backslash right before a closing quote.
    const QByteArray b = R"({"path":"C:\\dir\\","model":"m"})";
    QCOMPARE(sliceOf(b, JsonScan::find(b, {"model"})), QByteArray("\"m\""));
    // Brackets and braces inside strings in a skipped nested value.
    const QByteArray n = R"({"a":{"s":"]}]}{[","t":["}",{"u":"]"}]},"model":"m2"})";
    QCOMPARE(sliceOf(n, JsonScan::find(n, {"model"})), QByteArray("\"m2\""));
    // A key with an escaped quote in it is compared raw and does not match "model".
    const QByteArray e = R"({"mo\"del":1,"model":2})";
    QCOMPARE(sliceOf(e, JsonScan::find(e, {"model"})), QByteArray("2"));
}

void TestLlm::json_valueTypes_data()
{
    QTest::addColumn<QByteArray>("value");
    QTest::newRow("string") << QByteArray(R"("text")");
    QTest::newRow("empty string") << QByteArray(R"("")");
    QTest::newRow("string with escapes") << QByteArray(R"("a\"b\\c\n\u00e9")");
    QTest::newRow("integer") << QByteArray("42");
    QTest::newRow("negative") << QByteArray("-17");
    QTest::newRow("exponent") << QByteArray("1.5e-7");
    QTest::newRow("big exponent") << QByteArray("-2E+10");
    QTest::newRow("true") << QByteArray("true");
    QTest::newRow("false") << QByteArray("false");
    QTest::newRow("null") << QByteArray("null");
    QTest::newRow("object") << QByteArray(R"({"a":[1,{"b":null}],"c":"}"})");
    QTest::newRow("empty object") << QByteArray("{}");
    QTest::newRow("array") << QByteArray(R"([1,"]",[2,[3]],{"x":"["}])");
    QTest::newRow("empty array") << QByteArray("[]");
}

void TestLlm::json_valueTypes()
{
    QFETCH(QByteArray, value);
    for (const char *tmpl : {R"({"v":%1})", R"({"before":[1,2],"v":%1,"after":"x"})",
                             R"({"before":{"v":0},"v":%1})"}) {
        const QByteArray j = QByteArray(tmpl).replace("%1", value);
        QCOMPARE(sliceOf(j, JsonScan::find(j, {"v"})), value);
        // The member after it is still reachable.
        if (j.contains("after"))
            QCOMPARE(sliceOf(j, JsonScan::find(j, {"after"})), QByteArray("\"x\""));
    }
}

void TestLlm::json_whitespace()
{
    const QByteArray j = " \r\n\t{ \"a\" \n:\t1 ,\r\n \"b\"\t:  [ 1 , 2 ]  , \"c\" : { \"d\" :"
                         " \"e\" } , \"f\":true }  ";
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"a"})), QByteArray("1"));
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"b"})), QByteArray("[ 1 , 2 ]"));
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"c", "d"})), QByteArray("\"e\""));
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"f"})), QByteArray("true"));
    QVERIFY(!JsonScan::find(j, {"g"}).found());
    // Pretty-printed by Qt.
    const QByteArray pretty =
        QJsonDocument(QJsonObject{{"model", "m"}, {"usage", QJsonObject{{"prompt_tokens", 3}}}})
            .toJson(QJsonDocument::Indented);
    QCOMPARE(sliceOf(pretty, JsonScan::find(pretty, {"usage", "prompt_tokens"})), QByteArray("3"));
}

void TestLlm::json_broken_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::newRow("empty") << QByteArray("");
    QTest::newRow("spaces") << QByteArray("   ");
    QTest::newRow("array") << QByteArray(R"([{"model":"m"}])");
    QTest::newRow("string") << QByteArray(R"("model")");
    QTest::newRow("number") << QByteArray("12");
    QTest::newRow("open brace") << QByteArray("{");
    QTest::newRow("truncated key") << QByteArray(R"({"mod)");
    QTest::newRow("truncated after key") << QByteArray(R"({"model")");
    QTest::newRow("truncated after colon") << QByteArray(R"({"model":)");
    QTest::newRow("truncated string value") << QByteArray(R"({"model":"abc)");
    QTest::newRow("missing colon") << QByteArray(R"({"model" "m"})");
    QTest::newRow("missing comma") << QByteArray(R"({"a":1 "model":"m"})");
    QTest::newRow("double comma") << QByteArray(R"({"a":1,,"model":"m"})");
    QTest::newRow("unquoted key") << QByteArray(R"({model:"m"})");
    QTest::newRow("unterminated earlier string")
        << QByteArray(R"({"a":"never closed, "model" : "m"})");
    QTest::newRow("unclosed earlier object") << QByteArray(R"({"a":{"b":1,"model":"m")");
    QTest::newRow("empty value") << QByteArray(R"({"model":})");
    QTest::newRow("empty value before comma") << QByteArray(R"({"model":,"x":1})");
}

void TestLlm::json_broken()
{
    QFETCH(QByteArray, json);
    const JsonScan::Span s = JsonScan::find(json, {"model"});
    QVERIFY2(!s.found(), sliceOf(json, s).constData());
    QByteArray copy = json;
    QVERIFY(!JsonScan::replaceString(copy, {"model"}, "\"x\""));
    QCOMPARE(copy, json);
}

void TestLlm::json_replaceString()
{
    const QByteArray original = R"({"id":"1","usage":{"model":"nested"},)"
                                R"("response":{"model":"inner","x":[1]},"model" : "top","z":0})";
    {
        QByteArray j = original;
        QVERIFY(JsonScan::replaceString(j, {"model"}, "\"client\""));
        QCOMPARE(j,
                 QByteArray(R"({"id":"1","usage":{"model":"nested"},)"
                            R"("response":{"model":"inner","x":[1]},"model" : "client","z":0})"));
    }
    {
        QByteArray j = original;
        QVERIFY(JsonScan::replaceString(j, {"response", "model"}, JsonScan::quote("a\"b")));
        QCOMPARE(j, QByteArray(R"({"id":"1","usage":{"model":"nested"},)"
                               R"("response":{"model":"a\"b","x":[1]},"model" : "top","z":0})"));
        QCOMPARE(obj(j).value("response").toObject().value("model").toString(),
                 QStringLiteral("a\"b"));
    }
    // Not strings: left untouched.
    for (const char *nonString : {R"({"model":null})", R"({"model":42})", R"({"model":true})",
                                  R"({"model":{"name":"m"}})", R"({"model":["m"]})"}) {
        QByteArray j(nonString);
        QVERIFY2(!JsonScan::replaceString(j, {"model"}, "\"x\""), nonString);
        QCOMPARE(j, QByteArray(nonString));
    }
    // Missing: untouched, and a nested same-named key is not a substitute.
    QByteArray j = R"({"message":{"model":"m"}})";
    QVERIFY(!JsonScan::replaceString(j, {"model"}, "\"x\""));
    QCOMPARE(j, QByteArray(R"({"message":{"model":"m"}})"));
    QVERIFY(!JsonScan::replaceString(j, {"response", "model"}, "\"x\""));
    // An empty string value is replaced too.
    QByteArray e = R"({"model":"","a":1})";
    QVERIFY(JsonScan::replaceString(e, {"model"}, "\"long-model-name\""));
    QCOMPARE(e, QByteArray(R"({"model":"long-model-name","a":1})"));
}

void TestLlm::json_quote_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QByteArray>("quoted");
    QTest::newRow("plain") << QByteArray("vendorB-6-luna") << QByteArray("\"vendorB-6-luna\"");
    QTest::newRow("empty") << QByteArray() << QByteArray("\"\"");
    QTest::newRow("quote") << QByteArray("a\"b") << QByteArray(R"("a\"b")");
    QTest::newRow("backslash") << QByteArray("a\\b\\") << QByteArray(R"("a\\b\\")");
    QTest::newRow("newline cr tab") << QByteArray("a\nb\rc\td") << QByteArray(R"("a\nb\rc\td")");
    QTest::newRow("control") << QByteArray("\x01\x1f\b\f", 4)
                             << QByteArray(R"("\u0001\u001f\u0008\u000c")");
    QTest::newRow("nul") << QByteArray("a\0b", 3) << QByteArray(R"("a\u0000b")");
    QTest::newRow("utf8") << QByteArray("h\xc3\xa9llo \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80")
                          << QByteArray(
                                 "\"h\xc3\xa9llo \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80\"");
    QTest::newRow("slash and del") << QByteArray("a/b\x7f") << QByteArray("\"a/b\x7f\"");
}

void TestLlm::json_quote()
{
    QFETCH(QByteArray, text);
    QFETCH(QByteArray, quoted);
    QCOMPARE(JsonScan::quote(text), quoted);
    // Qt parses it back to the same text.
    const QJsonDocument doc = QJsonDocument::fromJson("[" + JsonScan::quote(text) + "]");
    QVERIFY(doc.isArray());
    QCOMPARE(doc.array().at(0).toString().toUtf8(), text);
}

void TestLlm::json_quoteEveryByteRoundTrips()
{
    QByteArray all;
    for (int c = 0; c < 0x80; ++c)
        all.append(char(c));
    const QByteArray q = JsonScan::quote(all);
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson("{\"v\":" + q + "}", &err);
    QCOMPARE(err.error, QJsonParseError::NoError);
    QCOMPARE(doc.object().value("v").toString().toLatin1(), all);
    // And the scanner finds the quoted value whole.
    const QByteArray j = "{\"v\":" + q + ",\"w\":1}";
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"v"})), q);
    QCOMPARE(sliceOf(j, JsonScan::find(j, {"w"})), QByteArray("1"));
}

// --- 3. TokenUsage::cost ---------------------------------------------------------------------

void TestLlm::cost_data()
{
    QTest::addColumn<qint64>("input");
    QTest::addColumn<qint64>("output");
    QTest::addColumn<qint64>("cacheRead");
    QTest::addColumn<qint64>("cacheWrite");
    QTest::addColumn<qint64>("pIn");
    QTest::addColumn<qint64>("pOut");
    QTest::addColumn<qint64>("pRead");
    QTest::addColumn<qint64>("pWrite");
    QTest::addColumn<qint64>("expected");

    const qint64 max = std::numeric_limits<qint64>::max();
    QTest::newRow("zero usage") << 0LL << 0LL << 0LL << 0LL << 5LL << 5LL << 5LL << 5LL << 0LL;
    QTest::newRow("zero price") << 100LL << 100LL << 100LL << 100LL << 0LL << 0LL << 0LL << 0LL
                                << 0LL;
    QTest::newRow("1 token at 1 unit/1M rounds up to 1")
        << 1LL << 0LL << 0LL << 0LL << 1LL << 0LL << 0LL << 0LL << 1LL;
    QTest::newRow("1 output token") << 0LL << 1LL << 0LL << 0LL << 0LL << 1LL << 0LL << 0LL << 1LL;
    QTest::newRow("1 cache read") << 0LL << 0LL << 1LL << 0LL << 0LL << 0LL << 1LL << 0LL << 1LL;
    QTest::newRow("1 cache write") << 0LL << 0LL << 0LL << 1LL << 0LL << 0LL << 0LL << 1LL << 1LL;
    QTest::newRow("exact million")
        << 1'000'000LL << 0LL << 0LL << 0LL << 7LL << 0LL << 0LL << 0LL << 7LL;
    QTest::newRow("one over a million")
        << 1'000'001LL << 0LL << 0LL << 0LL << 1LL << 0LL << 0LL << 0LL << 2LL;
    // 0.4 + 0.6 units: one rounding of the sum (1), not one per side (2).
    QTest::newRow("sum before rounding")
        << 1LL << 1LL << 0LL << 0LL << 400'000LL << 600'000LL << 0LL << 0LL << 1LL;
    QTest::newRow("four sides, one rounding")
        << 1LL << 1LL << 1LL << 1LL << 250'000LL << 250'000LL << 250'000LL << 250'000LL << 1LL;
    QTest::newRow("sum just over")
        << 1LL << 1LL << 0LL << 0LL << 500'000LL << 500'001LL << 0LL << 0LL << 2LL;
    // 1234 input at 0.40 credits/1M = 493600 units; 567 output at 3.20 = 1814400 units.
    QTest::newRow("realistic") << 1234LL << 567LL << 0LL << 0LL << 400'000'000LL << 3'200'000'000LL
                               << 40'000'000LL << 0LL << 2'308'000LL;
    // Huge counts stay exact: 10^12 tokens at 10^9 units/1M = 10^15 units.
    QTest::newRow("huge exact") << 1'000'000'000'000LL << 0LL << 0LL << 0LL << 1'000'000'000LL
                                << 0LL << 0LL << 0LL << 1'000'000'000'000'000LL;
    // max tokens at 1 unit/1M: ceil(9223372036854775807 / 10^6).
    QTest::newRow("max tokens") << max << 0LL << 0LL << 0LL << 1LL << 0LL << 0LL << 0LL
                                << 9'223'372'036'855LL;
    QTest::newRow("product beyond 64 bits")
        << max << 0LL << 0LL << 0LL << 1'000'000LL << 0LL << 0LL << 0LL << max;
    QTest::newRow("saturates") << 1'000'000'000'000'000LL << 1'000'000'000'000'000LL << 0LL << 0LL
                               << 1'000'000'000'000LL << 1'000'000'000'000LL << 0LL << 0LL << max;
}

void TestLlm::cost()
{
    QFETCH(qint64, input);
    QFETCH(qint64, output);
    QFETCH(qint64, cacheRead);
    QFETCH(qint64, cacheWrite);
    QFETCH(qint64, pIn);
    QFETCH(qint64, pOut);
    QFETCH(qint64, pRead);
    QFETCH(qint64, pWrite);
    QFETCH(qint64, expected);
    QCOMPARE(usage(input, output, cacheRead, cacheWrite).cost(price(pIn, pOut, pRead, pWrite)),
             expected);
}

void TestLlm::cost_catalogPrice()
{
    // vendorA-opus-4-8 in the default catalog: 15 / 75 / 1.50 / 18.75 credits per 1M.
    const ModelCatalog catalog = ModelCatalog::builtin();
    const auto opus = catalog.find(QStringLiteral("vendorA-opus-4-8"));
    QVERIFY(opus);
    QCOMPARE(opus->price.input, 15'000'000'000LL);
    QCOMPARE(opus->price.cacheWrite, 18'750'000'000LL);
    // 1000*15e9 + 200*75e9 + 3000*1.5e9 + 7*18.75e9 = 15e12 + 15e12 + 4.5e12 + 131.25e9
    // = 34631250000000 -> / 1e6 = 34631250 exactly.
    QCOMPARE(usage(1000, 200, 3000, 7).cost(opus->price), 34'631'250LL);
    // One token more of cache write: + 18750 units, still exact.
    QCOMPARE(usage(1000, 200, 3000, 8).cost(opus->price), 34'650'000LL);
}

void TestLlm::cost_saturatesAtExtremes_data()
{
    QTest::addColumn<int>("sides");
    QTest::newRow("one side at max") << 1;
    QTest::newRow("two sides at max") << 2;
    QTest::newRow("three sides at max") << 3;
    QTest::newRow("four sides at max") << 4;
}

void TestLlm::cost_saturatesAtExtremes()
{
    // Counters and prices at the 64-bit maximum: each product is ~2^126, so three or four of
    // them overflow even a signed 128-bit sum. The charge must saturate, never wrap to a small
    // or zero amount.
    QFETCH(int, sides);
    const qint64 max = std::numeric_limits<qint64>::max();
    auto at = [&](int side) { return sides > side ? max : 0; };
    QCOMPARE(usage(at(0), at(1), at(2), at(3)).cost(price(at(0), at(1), at(2), at(3))), max);
}

// --- 3b. the hold: CostBound ----------------------------------------------------------------

void TestLlm::bound_outputField_data()
{
    QTest::addColumn<int>("protocol");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<qint64>("relayDefault");
    QTest::addColumn<qint64>("modelMax");
    QTest::addColumn<qint64>("expected");
    const int chat = int(Protocol::Chat), responses = int(Protocol::Responses),
              messages = int(Protocol::Messages);
    QTest::newRow("chat max_tokens")
        << chat << QByteArray(R"({"max_tokens":100})") << 0LL << 1000LL << 100LL;
    QTest::newRow("chat max_completion_tokens first")
        << chat << QByteArray(R"({"max_completion_tokens":50,"max_tokens":100})") << 0LL << 1000LL
        << 50LL;
    QTest::newRow("chat null max_completion_tokens")
        << chat << QByteArray(R"({"max_completion_tokens":null,"max_tokens":70})") << 0LL << 1000LL
        << 70LL;
    QTest::newRow("chat none: the model's limit")
        << chat << QByteArray("{}") << 0LL << 1000LL << 1000LL;
    QTest::newRow("chat n answers")
        << chat << QByteArray(R"({"max_tokens":100,"n":3})") << 0LL << 1000LL << 300LL;
    QTest::newRow("chat n without a bound")
        << chat << QByteArray(R"({"n":2})") << 0LL << 1000LL << 2000LL;
    QTest::newRow("chat at the limit")
        << chat << QByteArray(R"({"max_tokens":1000})") << 0LL << 1000LL << 1000LL;
    QTest::newRow("translated: what the relay sends")
        << chat << QByteArray("{}") << 4096LL << 8000LL << 4096LL;
    QTest::newRow("translated: never above the model's limit")
        << chat << QByteArray("{}") << 4096LL << 1000LL << 1000LL;
    QTest::newRow("translated: the client's bound")
        << chat << QByteArray(R"({"max_tokens":10})") << 4096LL << 8000LL << 10LL;
    QTest::newRow("responses max_output_tokens")
        << responses << QByteArray(R"({"max_output_tokens":70})") << 0LL << 1000LL << 70LL;
    QTest::newRow("responses has no max_tokens")
        << responses << QByteArray(R"({"max_tokens":70})") << 0LL << 1000LL << 1000LL;
    QTest::newRow("responses none") << responses << QByteArray("{}") << 0LL << 1000LL << 1000LL;
    QTest::newRow("messages max_tokens")
        << messages << QByteArray(R"({"max_tokens":30})") << 0LL << 1000LL << 30LL;
    QTest::newRow("messages has no n")
        << messages << QByteArray(R"({"max_tokens":30,"n":4})") << 0LL << 1000LL << 30LL;
}

void TestLlm::bound_outputField()
{
    QFETCH(int, protocol);
    QFETCH(QByteArray, body);
    QFETCH(qint64, relayDefault);
    QFETCH(qint64, modelMax);
    QFETCH(qint64, expected);
    const CostBound::Hold h =
        CostBound::text(Protocol(protocol), obj(body), 0, boundModel(modelMax), relayDefault);
    QVERIFY2(h.ok(), qPrintable(h.message));
    QCOMPARE(h.outputTokens, expected);
    QCOMPARE(h.promptTokens, CostBound::kTemplateTokens);
    // 1024 prompt tokens at 2 credits per 1M (2,048,000 units), 8,000 units an output token.
    QCOMPARE(h.units, 2'048'000 + expected * 8'000);
}

void TestLlm::bound_aboveTheModelsLimit_data()
{
    QTest::addColumn<int>("protocol");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("param");
    QTest::newRow("chat max_tokens")
        << int(Protocol::Chat) << QByteArray(R"({"max_tokens":1001})") << "max_tokens";
    QTest::newRow("chat max_completion_tokens")
        << int(Protocol::Chat) << QByteArray(R"({"max_completion_tokens":5000,"max_tokens":10})")
        << "max_completion_tokens";
    QTest::newRow("responses max_output_tokens")
        << int(Protocol::Responses) << QByteArray(R"({"max_output_tokens":1001})")
        << "max_output_tokens";
    QTest::newRow("messages max_tokens")
        << int(Protocol::Messages) << QByteArray(R"({"max_tokens":2000000000000})") << "max_tokens";
    QTest::newRow("beyond 64 bits")
        << int(Protocol::Messages) << QByteArray(R"({"max_tokens":1e300})") << "max_tokens";
}

void TestLlm::bound_aboveTheModelsLimit()
{
    // A client's bound above what the model generates is refused naming the field, as the
    // providers refuse it (never silently cut, never held as asked).
    QFETCH(int, protocol);
    QFETCH(QByteArray, body);
    QFETCH(QString, param);
    const CostBound::Hold h = CostBound::text(Protocol(protocol), obj(body), 10, boundModel(1000));
    QVERIFY(!h.ok());
    QCOMPARE(h.status, 400);
    QCOMPARE(h.param, param);
    QVERIFY2(h.message.startsWith(param + u':'), qPrintable(h.message));
    QVERIFY2(h.message.contains(QLatin1String("bound-model")), qPrintable(h.message));
    QVERIFY2(h.message.contains(QLatin1String("max_output_tokens 1000")), qPrintable(h.message));
}

void TestLlm::bound_promptFromBytes()
{
    // One token a byte of the body sent upstream, plus the template's allowance.
    const CostBound::Hold h =
        CostBound::text(Protocol::Chat, obj(R"({"max_tokens":100})"), 10'000, boundModel());
    QVERIFY(h.ok());
    QVERIFY(!h.openPrompt);
    QCOMPARE(h.promptTokens, 11'024LL);
    // 11,024 x 2e9 / 1e6 + 100 x 8e9 / 1e6 = 22,048,000 + 800,000.
    QCOMPARE(h.units, 22'848'000LL);
    // A byte more, 2,000 units more: no rounding lost.
    QCOMPARE(
        CostBound::text(Protocol::Chat, obj(R"({"max_tokens":100})"), 10'001, boundModel()).units,
        22'850'000LL);
}

void TestLlm::bound_cacheWritePrice()
{
    // Every prompt token may be billed at the cache-write price when that is the highest
    // (vendorA-opus-4-8: 15 input, 75 output, 1.50 cache read, 18.75 cache write per 1M).
    ModelEntry m = boundModel(128'000);
    m.price = price(15'000'000'000, 75'000'000'000, 1'500'000'000, 18'750'000'000);
    const QJsonObject body = obj(R"({"max_tokens":10})");
    // 976 bytes + 1024 = 2,000 prompt tokens: 2,000 x 18.75e9 / 1e6 + 10 x 75e9 / 1e6.
    QCOMPARE(CostBound::text(Protocol::Messages, body, 976, m).units, 37'500'000 + 750'000);
    m.price.cacheWrite = 0; // no cache writes: the input price
    QCOMPARE(CostBound::text(Protocol::Messages, body, 976, m).units, 30'000'000 + 750'000);
    m.price.cacheRead = 20'000'000'000; // a cache-read price above the input price counts too
    QCOMPARE(CostBound::text(Protocol::Messages, body, 976, m).units, 40'000'000 + 750'000);
}

void TestLlm::bound_openPrompt_data()
{
    QTest::addColumn<int>("protocol");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<bool>("open");
    const int chat = int(Protocol::Chat), responses = int(Protocol::Responses),
              messages = int(Protocol::Messages);
    QTest::newRow("chat text") << chat
                               << QByteArray(R"({"messages":[{"role":"user","content":"hi"}]})")
                               << false;
    QTest::newRow("chat text parts")
        << chat
        << QByteArray(R"({"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]})")
        << false;
    QTest::newRow("chat image_url")
        << chat
        << QByteArray(R"({"messages":[{"role":"user","content":[{"type":"image_url",)"
                      R"("image_url":{"url":"https://x.example/a.png"}}]}]})")
        << true;
    QTest::newRow("chat input_audio")
        << chat
        << QByteArray(R"({"messages":[{"role":"user","content":[{"type":"input_audio",)"
                      R"("input_audio":{"data":"AAAA","format":"wav"}}]}]})")
        << true;
    QTest::newRow("chat file") << chat
                               << QByteArray(R"({"messages":[{"role":"user","content":[{"type":)"
                                             R"("file","file":{"file_id":"file-1"}}]}]})")
                               << true;
    QTest::newRow("chat tool calls and results")
        << chat
        << QByteArray(R"({"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":)"
                      R"("c","type":"function","function":{"name":"f","arguments":"{}"}}]},)"
                      R"({"role":"tool","tool_call_id":"c","content":"x"}],"tools":[{"type":)"
                      R"("function","function":{"name":"f","parameters":{"type":"object"}}}]})")
        << false;
    QTest::newRow("chat provider tool")
        << chat << QByteArray(R"({"messages":[],"tools":[{"type":"web_search"}]})") << true;
    QTest::newRow("chat web search")
        << chat << QByteArray(R"({"messages":[],"web_search_options":{}})") << true;
    QTest::newRow("responses string") << responses << QByteArray(R"({"input":"hi"})") << false;
    QTest::newRow("responses input_text")
        << responses
        << QByteArray(R"({"input":[{"type":"message","role":"user","content":[{"type":)"
                      R"("input_text","text":"hi"}]}],"instructions":"be brief"})")
        << false;
    QTest::newRow("responses input_image")
        << responses
        << QByteArray(R"({"input":[{"role":"user","content":[{"type":"input_image",)"
                      R"("image_url":"data:image/png;base64,AAAA"}]}]})")
        << true;
    QTest::newRow("responses input_file")
        << responses
        << QByteArray(
               R"({"input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]})")
        << true;
    QTest::newRow("responses item_reference")
        << responses << QByteArray(R"({"input":[{"type":"item_reference","id":"msg_1"}]})") << true;
    QTest::newRow("responses previous_response_id")
        << responses << QByteArray(R"({"input":"hi","previous_response_id":"resp_1"})") << true;
    QTest::newRow("responses null previous_response_id")
        << responses << QByteArray(R"({"input":"hi","previous_response_id":null})") << false;
    QTest::newRow("responses conversation")
        << responses << QByteArray(R"({"input":"hi","conversation":"conv_1"})") << true;
    QTest::newRow("responses stored prompt")
        << responses << QByteArray(R"({"prompt":{"id":"pmpt_1"}})") << true;
    QTest::newRow("responses file_search")
        << responses << QByteArray(R"({"input":"hi","tools":[{"type":"file_search"}]})") << true;
    QTest::newRow("messages text")
        << messages << QByteArray(R"({"messages":[{"role":"user","content":"hi"}]})") << false;
    QTest::newRow("messages image")
        << messages
        << QByteArray(R"({"messages":[{"role":"user","content":[{"type":"image","source":)"
                      R"({"type":"base64","media_type":"image/png","data":"AAAA"}}]}]})")
        << true;
    QTest::newRow("messages document")
        << messages
        << QByteArray(R"({"messages":[{"role":"user","content":[{"type":"document","source":)"
                      R"({"type":"url","url":"https://x.example/a.pdf"}}]}]})")
        << true;
    QTest::newRow("messages image in a tool result")
        << messages
        << QByteArray(R"({"messages":[{"role":"user","content":[{"type":"tool_result",)"
                      R"("tool_use_id":"t","content":[{"type":"image","source":{"type":)"
                      R"("url","url":"https://x.example/a.png"}}]}]}]})")
        << true;
    QTest::newRow("messages tool input says nothing")
        << messages
        << QByteArray(R"({"messages":[{"role":"assistant","content":[{"type":"tool_use",)"
                      R"("id":"t","name":"n","input":{"type":"image"}}]}],"tools":[{"name":"n",)"
                      R"("input_schema":{"type":"object"}}]})")
        << false;
    QTest::newRow("messages thinking and cache marks")
        << messages
        << QByteArray(
               R"({"system":[{"type":"text","text":"s","cache_control":{"type":)"
               R"("ephemeral"}}],"messages":[{"role":"assistant","content":[{"type":)"
               R"("thinking","thinking":"t","signature":"x"},{"type":"text","text":"a"}]}]})")
        << false;
    QTest::newRow("messages provider tool")
        << messages
        << QByteArray(R"({"messages":[],"tools":[{"type":"web_search_20250305","name":"w"}]})")
        << true;
    QTest::newRow("messages custom tool")
        << messages << QByteArray(R"({"messages":[],"tools":[{"type":"custom","name":"c"}]})")
        << false;
    QTest::newRow("messages mcp_servers")
        << messages << QByteArray(R"({"messages":[],"mcp_servers":[{"type":"url"}]})") << true;
    QTest::newRow("a part type not known yet")
        << messages
        << QByteArray(R"({"messages":[{"role":"user","content":[{"type":"hologram"}]}]})") << true;
}

void TestLlm::bound_openPrompt()
{
    // Media, stored state and provider tools bound the prompt by the context window (50,000
    // here), since their tokens do not follow from the body's bytes.
    QFETCH(int, protocol);
    QFETCH(QByteArray, body);
    QFETCH(bool, open);
    const QJsonObject b = obj(body);
    QCOMPARE(CostBound::opensPrompt(Protocol(protocol), b), open);
    const CostBound::Hold h = CostBound::text(Protocol(protocol), b, 100, boundModel());
    QVERIFY(h.ok());
    QCOMPARE(h.openPrompt, open);
    QCOMPARE(h.promptTokens, open ? 50'000LL : 1'124LL);
    // Bytes beyond the window still count.
    QCOMPARE(CostBound::text(Protocol(protocol), b, 60'000, boundModel()).promptTokens, 61'024LL);
}

void TestLlm::bound_overflowIsRefused()
{
    // Prices that make the bound exceed 64 bits are refused (402), never wrapped to a small hold.
    const qint64 max = std::numeric_limits<qint64>::max();
    ModelEntry m = boundModel(1'000'000'000);
    m.price = price(max, 0, 0, 0);
    // 1,001,024 prompt tokens x max / 1e6: just above 2^63.
    CostBound::Hold h =
        CostBound::text(Protocol::Messages, obj(R"({"max_tokens":1})"), 1'000'000, m);
    QCOMPARE(h.status, 402);
    QCOMPARE(h.units, 0LL);
    QVERIFY2(h.message.contains(QLatin1String("bound-model")), qPrintable(h.message));
    // Half a million bytes fit.
    h = CostBound::text(Protocol::Messages, obj(R"({"max_tokens":1})"), 500'000, m);
    QVERIFY(h.ok());
    QVERIFY(h.units > max / 2);
    // Both sides at their largest.
    m.price = price(max, max, max, max);
    h = CostBound::text(Protocol::Chat, obj(R"({"n":128})"), 0, m);
    QCOMPARE(h.status, 402);
}

void TestLlm::bound_exactCost_data()
{
    QTest::addColumn<qint64>("prompt");
    QTest::addColumn<qint64>("promptPrice");
    QTest::addColumn<qint64>("output");
    QTest::addColumn<qint64>("outputPrice");
    QTest::addColumn<qint64>("expected"); // -1: refused
    const qint64 max = std::numeric_limits<qint64>::max();
    QTest::newRow("nothing") << 0LL << 5LL << 0LL << 5LL << 0LL;
    QTest::newRow("rounds up") << 1LL << 1LL << 0LL << 0LL << 1LL;
    QTest::newRow("one rounding of the sum") << 1LL << 400'000LL << 1LL << 600'000LL << 1LL;
    QTest::newRow("sum just over") << 1LL << 500'000LL << 1LL << 500'001LL << 2LL;
    QTest::newRow("exact million") << 1'000'000LL << 7LL << 0LL << 0LL << 7LL;
    QTest::newRow("exactly the largest") << max << 1'000'000LL << 0LL << 0LL << max;
    QTest::newRow("one unit over the largest") << max << 1'000'000LL << 1LL << 1LL << -1LL;
    QTest::newRow("both sides at max") << max << max << max << max << -1LL;
    QTest::newRow("negative count") << -1LL << 1LL << 0LL << 0LL << -1LL;
    QTest::newRow("negative price") << 1LL << 1LL << 1LL << -1LL << -1LL;
}

void TestLlm::bound_exactCost()
{
    QFETCH(qint64, prompt);
    QFETCH(qint64, promptPrice);
    QFETCH(qint64, output);
    QFETCH(qint64, outputPrice);
    QFETCH(qint64, expected);
    const auto units = CostBound::cost(prompt, promptPrice, output, outputPrice);
    QCOMPARE(units.value_or(-1), expected);
}

void TestLlm::bound_chatValidatesN()
{
    auto problem = [](const char *n) {
        const auto p = RequestValidation::chat(
            obj(QByteArray(R"({"model":"m","messages":[{"role":"user","content":"x"}],"n":)") + n +
                "}"));
        return p ? p->param : QString();
    };
    QCOMPARE(problem("1"), QString());
    QCOMPARE(problem("128"), QString());
    QCOMPARE(problem("null"), QString());
    QCOMPARE(problem("129"), QStringLiteral("n"));
    QCOMPARE(problem("0"), QStringLiteral("n"));
    QCOMPARE(problem("1.5"), QStringLiteral("n"));
    QCOMPARE(problem("\"2\""), QStringLiteral("n"));
}

void TestLlm::bound_catalogLimits()
{
    // The default catalog states both limits for every model.
    const ModelCatalog builtin = ModelCatalog::builtin();
    for (const ModelEntry &m : builtin.models()) {
        QVERIFY2(m.maxOutputTokens > 0, qPrintable(m.id));
        QVERIFY2(m.contextWindow >= m.maxOutputTokens, qPrintable(m.id));
    }
    QCOMPARE(builtin.find("vendorA-opus-4-8")->maxOutputTokens, 128'000LL);
    QCOMPARE(builtin.find("vendorA-haiku-4-5")->contextWindow, 200'000LL);

    // A config model without them gets the defaults; the defaults and a model's own limits
    // can be set.
    GatewayConfig g = GatewayConfig::fromJson(obj(R"({"models":[
        {"id":"plain","provider":"openai","endpoints":["chat.completions"]},
        {"id":"stated","provider":"openai","endpoints":["chat.completions"],
         "max_output_tokens":777,"context_window":9000},
        {"id":"vendorA-haiku-4-5","provider":"anthropic","endpoints":["messages"],
         "max_output_tokens":100}]})"));
    ModelCatalog c = g.buildCatalog(builtin);
    QCOMPARE(c.find("plain")->maxOutputTokens, GatewayConfig::kDefaultMaxOutputTokens);
    QCOMPARE(c.find("plain")->contextWindow, GatewayConfig::kDefaultContextWindow);
    QCOMPARE(c.find("stated")->maxOutputTokens, 777LL);
    QCOMPARE(c.find("stated")->contextWindow, 9'000LL);
    QCOMPARE(c.find("vendorA-haiku-4-5")->maxOutputTokens, 100LL); // replaced by id
    QCOMPARE(c.find("vendorA-opus-4-8")->maxOutputTokens, 128'000LL);
    g = GatewayConfig::fromJson(obj(R"({"default_max_output_tokens":5000,
        "default_context_window":64000,
        "models":[{"id":"plain","provider":"openai","endpoints":["chat.completions"]}]})"));
    c = g.buildCatalog(builtin);
    QCOMPARE(c.find("plain")->maxOutputTokens, 5'000LL);
    QCOMPARE(c.find("plain")->contextWindow, 64'000LL);
    QCOMPARE(c.find("vendorB-5.4")->maxOutputTokens, 128'000LL); // stated in the catalog

    // Listed by /v1/models, auto with its target's.
    const QJsonArray listed = c.toJson();
    bool sawPlain = false, sawAuto = false;
    for (const QJsonValue &v : listed) {
        const QJsonObject o = v.toObject();
        QVERIFY2(o.value("max_output_tokens").toInteger() > 0,
                 qPrintable(o.value("id").toString()));
        QVERIFY2(o.value("context_window").toInteger() > 0, qPrintable(o.value("id").toString()));
        if (o.value("id").toString() == u"plain") {
            sawPlain = true;
            QCOMPARE(o.value("max_output_tokens").toInteger(), 5'000);
        }
        if (o.value("id").toString() == u"auto") {
            sawAuto = true;
            const auto target = c.find(c.autoModel());
            QCOMPARE(o.value("max_output_tokens").toInteger(), target->maxOutputTokens);
            QCOMPARE(o.value("resolves_to").toString(), c.autoModel());
            QCOMPARE(o.value("endpoints").toArray(), QJsonArray{"chat.completions"});
            QCOMPARE(o.value("owned_by").toString(), QStringLiteral("switchyard"));
        }
    }
    QVERIFY(sawPlain && sawAuto);
}

// --- 4. pass-through relays ------------------------------------------------------------------

void TestLlm::chat_prepareKeepsUnknownFields()
{
    const QJsonObject client = obj(R"J({
        "model":"auto",
        "messages":[{"role":"user","content":"hi"}],
        "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",
                  "properties":{"a":{"type":"integer"}}}}}],
        "tool_choice":"auto",
        "response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}},
        "metadata":{"trace":"abc","n":[1,2,{"deep":null}]},
        "x_invented":{"flag":true,"list":["a",1.5,false]},
        "temperature":0.3,
        "seed":42
    })J");
    std::unique_ptr<Relay> relay =
        Relay::create(Protocol::Chat, Protocol::Chat, QStringLiteral("vendorB-6-luna"));
    QVERIFY(relay);
    QCOMPARE(relay->clientProtocol(), Protocol::Chat);
    QCOMPARE(relay->upstreamProtocol(), Protocol::Chat);
    QVERIFY(relay->prepare(client, QStringLiteral("upstream-luna")).isEmpty());
    QVERIFY(!relay->isStreaming());
    QJsonObject up = obj(relay->upstreamBody());
    QCOMPARE(up.value("model").toString(), QStringLiteral("upstream-luna"));
    QVERIFY(!up.contains("stream_options"));
    QJsonObject expected = client;
    expected.insert("model", QStringLiteral("upstream-luna"));
    QCOMPARE(canon(up), canon(expected));
}

void TestLlm::chat_prepareStreamAddsIncludeUsage()
{
    const QJsonObject base = obj(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)"
                                 R"("stream":true,"x_extra":[1]})");
    {
        auto relay = Relay::create(Protocol::Chat, Protocol::Chat, QStringLiteral("m"));
        QVERIFY(relay->prepare(base, QStringLiteral("up")).isEmpty());
        QVERIFY(relay->isStreaming());
        const QJsonObject up = obj(relay->upstreamBody());
        QCOMPARE(canon(up.value("stream_options")), QByteArray(R"({"include_usage":true})"));
        QJsonObject rest = up;
        rest.remove("stream_options");
        QJsonObject expected = base;
        expected.insert("model", QStringLiteral("up"));
        QCOMPARE(canon(rest), canon(expected));
    }
    {
        // Other stream_options members survive; include_usage false becomes true upstream.
        QJsonObject body = base;
        body.insert("stream_options", obj(R"({"include_usage":false,"other":"kept"})"));
        auto relay = Relay::create(Protocol::Chat, Protocol::Chat, QStringLiteral("m"));
        QVERIFY(relay->prepare(body, QStringLiteral("up")).isEmpty());
        QCOMPARE(canon(obj(relay->upstreamBody()).value("stream_options")),
                 QByteArray(R"({"include_usage":true,"other":"kept"})"));
    }
}

namespace {

const QByteArray kChatStream =
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up-x\","
    "\"system_fingerprint\":\"fp\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
    "\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\n\n"
    ": keep-alive\n\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up-x\","
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"say \\\"model\\\":\\\"x\\\"\"},"
    "\"finish_reason\":null}],\"usage\":null,\"x_custom\":{\"k\":[1,2]}}\n\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up-x\","
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":null}],"
    "\"usage\":null}\n\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up-x\","
    "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"up-x\","
    "\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":20,"
    "\"total_tokens\":120,\"prompt_tokens_details\":{\"cached_tokens\":30}}}\n\n"
    "data: [DONE]\n\n";

} // namespace

void TestLlm::chat_streamRewritesModelAndStripsUsage()
{
    auto relay = Relay::create(Protocol::Chat, Protocol::Chat, QStringLiteral("vendorB-6-luna"));
    QVERIFY(relay
                ->prepare(obj(R"({"model":"vendorB-6-luna","stream":true,)"
                              R"("messages":[{"role":"user","content":"hi"}]})"),
                          QStringLiteral("up-x"))
                .isEmpty());
    const QByteArray out = relayStream(*relay, kChatStream);
    QVERIFY(relay->isFinished());
    QVERIFY(!relay->upstreamFailed());
    QCOMPARE(relay->tail(), QByteArray("data: [DONE]\n\n"));

    const QList<SseEvent> in = parseAll(kChatStream);
    const QList<SseEvent> got = parseAll(out);
    // The keep-alive, the usage-only chunk and [DONE] are not relayed.
    QCOMPARE(got.size(), 4);
    QVERIFY(!out.contains("[DONE]"));
    QVERIFY(!out.contains("prompt_tokens"));
    QVERIFY(!out.contains("keep-alive"));
    int inIndex = 0;
    for (const SseEvent &e : got) {
        while (in.at(inIndex).comment)
            ++inIndex;
        QCOMPARE(e.event, QByteArray());
        QJsonObject g = obj(e.data);
        QCOMPARE(g.value("model").toString(), QStringLiteral("vendorB-6-luna"));
        QJsonObject expected = obj(in.at(inIndex++).data);
        expected.insert("model", QStringLiteral("vendorB-6-luna"));
        QCOMPARE(canon(g), canon(expected));
    }
    // The string in the content is untouched, byte for byte.
    QVERIFY(out.contains(R"("content":"say \"model\":\"x\"")"));

    const TokenUsage &u = relay->usage();
    QCOMPARE(u.input, 70);
    QCOMPARE(u.cacheRead, 30);
    QCOMPARE(u.output, 20);
    QCOMPARE(u.cacheWrite, 0);
    QVERIFY(u.haveInput && u.haveOutput);
    bool estimated = true;
    const TokenUsage f = relay->finalUsage(&estimated);
    QVERIFY(!estimated);
    QCOMPARE(f.input, 70);
    QCOMPARE(f.output, 20);

    // After [DONE] nothing more is relayed.
    QByteArray after;
    relay->onEvent(dataEvent(R"({"model":"up-x","choices":[]})"), &after);
    QVERIFY(after.isEmpty());
}

void TestLlm::chat_streamKeepsUsageWhenAsked()
{
    auto relay = Relay::create(Protocol::Chat, Protocol::Chat, QStringLiteral("client-m"));
    QVERIFY(relay
                ->prepare(obj(R"({"model":"client-m","stream":true,)"
                              R"("stream_options":{"include_usage":true},)"
                              R"("messages":[{"role":"user","content":"hi"}]})"),
                          QStringLiteral("up-x"))
                .isEmpty());
    const QByteArray out = relayStream(*relay, kChatStream, 3);
    const QList<SseEvent> got = parseAll(out);
    QCOMPARE(got.size(), 5);
    const QJsonObject last = obj(got.last().data);
    QCOMPARE(last.value("model").toString(), QStringLiteral("client-m"));
    QCOMPARE(last.value("choices").toArray().size(), 0);
    QCOMPARE(canon(last.value("usage")),
             QByteArray(R"({"completion_tokens":20,"prompt_tokens":100,)"
                        R"("prompt_tokens_details":{"cached_tokens":30},"total_tokens":120})"));
    QCOMPARE(relay->usage().input, 70);
    QCOMPARE(relay->usage().cacheRead, 30);
    QVERIFY(relay->isFinished());
    QCOMPARE(relay->tail(), QByteArray("data: [DONE]\n\n"));
}

void TestLlm::chat_streamUsageWithChoicesNotStripped()
{
    // Some upstreams put usage on the last content chunk: the chunk stays, usage goes null.
    auto relay = Relay::create(Protocol::Chat, Protocol::Chat, QStringLiteral("c"));
    QVERIFY(relay->prepare(obj(R"({"model":"c","stream":true,"messages":[]})"), QStringLiteral("u"))
                .isEmpty());
    QByteArray out;
    relay->onEvent(
        dataEvent(R"({"model":"u","choices":[{"index":0,"delta":{"content":"end"},)"
                  R"("finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":4}})"),
        &out);
    const QList<SseEvent> got = parseAll(out);
    QCOMPARE(got.size(), 1);
    const QJsonObject o = obj(got.first().data);
    QVERIFY(o.value("usage").isNull());
    QCOMPARE(o.value("model").toString(), QStringLiteral("c"));
    QCOMPARE(
        o.value("choices").toArray().at(0).toObject().value("delta").toObject().value("content"),
        QJsonValue("end"));
    QCOMPARE(relay->usage().input, 9);
    QCOMPARE(relay->usage().output, 4);
    // Spaces inside an empty choices array: still the usage-only chunk.
    QByteArray out2;
    relay->onEvent(dataEvent(R"({"model":"u","choices": [ ],"usage":{"prompt_tokens":10,)"
                             R"("completion_tokens":5}})"),
                   &out2);
    QVERIFY(out2.isEmpty());
    QCOMPARE(relay->usage().input, 10);

    // Both edits in one chunk, usage before or after the model, with a client model longer than
    // the upstream's: each lands on its own member, whichever comes first in the text.
    for (const bool usageFirst : {true, false}) {
        auto longer = Relay::create(Protocol::Chat, Protocol::Chat,
                                    QStringLiteral("a-much-longer-client-model-name"));
        QVERIFY(longer
                    ->prepare(obj(R"({"model":"a-much-longer-client-model-name","stream":true,)"
                                  R"("messages":[]})"),
                              QStringLiteral("u"))
                    .isEmpty());
        const QByteArray usage = R"("usage":{"prompt_tokens":7,"completion_tokens":3})";
        const QByteArray choices = R"("choices":[{"index":0,"delta":{"content":"x"}}])";
        const QByteArray chunk = usageFirst
                                     ? "{" + usage + "," + choices + R"(,"model":"u","n":1})"
                                     : R"({"model":"u",)" + choices + "," + usage + R"(,"n":1})";
        QByteArray relayed;
        longer->onEvent(dataEvent(chunk), &relayed);
        const QList<SseEvent> one = parseAll(relayed);
        QCOMPARE(one.size(), 1);
        QJsonParseError error;
        const QJsonObject o = QJsonDocument::fromJson(one.first().data, &error).object();
        QVERIFY2(error.error == QJsonParseError::NoError, one.first().data.constData());
        QVERIFY(o.value("usage").isNull());
        QCOMPARE(o.value("model").toString(), QStringLiteral("a-much-longer-client-model-name"));
        QCOMPARE(o.value("n").toInt(), 1);
        QCOMPARE(o.value("choices").toArray().size(), 1);
        QCOMPARE(longer->usage().input, 7);
        QCOMPARE(longer->usage().output, 3);
    }
}

void TestLlm::chat_streamErrorChunk()
{
    auto relay = Relay::create(Protocol::Chat, Protocol::Chat, QStringLiteral("c"));
    QVERIFY(relay->prepare(obj(R"({"model":"c","stream":true,"messages":[]})"), QStringLiteral("u"))
                .isEmpty());
    QByteArray out;
    relay->onEvent(dataEvent(R"({"model":"u","choices":[{"index":0,"delta":{"content":"a"}}]})"),
                   &out);
    QVERIFY(!relay->upstreamFailed());
    relay->onEvent(dataEvent(R"({"error":{"message":"overloaded","type":"server_error"}})"), &out);
    QVERIFY(relay->upstreamFailed());
    QCOMPARE(relay->streamError(), QStringLiteral("overloaded"));
    QVERIFY(!relay->isFinished());
    // The upstream's error chunk reaches the client once, held back until settlement.
    QCOMPARE(parseAll(out).size(), 1);
    const QList<SseEvent> held = parseAll(relay->heldError());
    QCOMPARE(held.size(), 1);
    QCOMPARE(obj(held.first().data).value("error").toObject().value("message").toString(),
             QStringLiteral("overloaded"));
    // The relay's own error event is an OpenAI-style error chunk.
    const QList<SseEvent> err = parseAll(relay->errorEvent("boom", "upstream_error"));
    QCOMPARE(err.size(), 1);
    QCOMPARE(canon(obj(err.first().data)),
             QByteArray(R"({"error":{"code":null,"message":"boom","param":null,)"
                        R"("type":"upstream_error"}})"));
}

void TestLlm::chat_estimatedUsage()
{
    // No usage from the upstream: input from the prompt size, output one per content delta.
    const QJsonObject body = obj(R"({"model":"c","stream":true,)"
                                 R"("messages":[{"role":"user","content":"hello there"}]})");
    auto relay = Relay::create(Protocol::Chat, Protocol::Chat, QStringLiteral("c"));
    QVERIFY(relay->prepare(body, QStringLiteral("u")).isEmpty());
    QByteArray out;
    relay->onEvent(dataEvent(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})"), &out);
    relay->onEvent(dataEvent(R"({"choices":[{"delta":{"content":"a"}}]})"), &out);
    relay->onEvent(dataEvent(R"({"choices":[{"delta":{"content":"b"}}]})"), &out);
    relay->onEvent(dataEvent(R"({"choices":[{"delta":{"tool_calls":[{"index":0,)"
                             R"("function":{"arguments":"{\"x"}}]}}]})"),
                   &out);
    relay->onEvent(dataEvent("[DONE]"), &out);
    bool estimated = false;
    const TokenUsage u = relay->finalUsage(&estimated);
    QVERIFY(estimated);
    QVERIFY(!u.haveInput && !u.haveOutput);
    QVERIFY(u.input >= 1); // estimated from the prompt (the estimator is tested elsewhere)
    QCOMPARE(u.output, 3);
}

void TestLlm::chat_convertBody()
{
    auto relay = Relay::create(Protocol::Chat, Protocol::Chat, QStringLiteral("client-m"));
    QVERIFY(relay->prepare(obj(R"({"model":"client-m","messages":[]})"), QStringLiteral("u"))
                .isEmpty());
    const QByteArray upstream =
        R"({"id":"x","object":"chat.completion","model":"u","choices":[{"index":0,)"
        R"("message":{"role":"assistant","content":"\"model\":\"u\""},"finish_reason":"stop"}],)"
        R"("usage":{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55,)"
        R"("prompt_tokens_details":{"cached_tokens":50}},"service_tier":"default"})";
    QByteArray client;
    QVERIFY(relay->convertBody(upstream, &client));
    QByteArray expected = upstream;
    expected.replace(R"("model":"u","choices")", R"("model":"client-m","choices")");
    QCOMPARE(client, expected);
    QCOMPARE(relay->usage().input, 0);
    QCOMPARE(relay->usage().cacheRead, 50);
    QCOMPARE(relay->usage().output, 5);
    QByteArray ignored;
    QVERIFY(!relay->convertBody(R"({"id":"x","choices":[)", &ignored));
    QVERIFY(!relay->convertBody(R"({"id":"x"})", &ignored));
}

void TestLlm::responses_prepareAndStream()
{
    const QJsonObject client = obj(R"({"model":"vendorB-5.4","input":"hi","stream":true,)"
                                   R"("reasoning":{"effort":"low"},"x_invented":[1]})");
    auto relay =
        Relay::create(Protocol::Responses, Protocol::Responses, QStringLiteral("vendorB-5.4"));
    QVERIFY(relay);
    QVERIFY(relay->prepare(client, QStringLiteral("up-54")).isEmpty());
    QVERIFY(relay->isStreaming());
    QJsonObject expected = client;
    expected.insert("model", QStringLiteral("up-54"));
    QCOMPARE(canon(obj(relay->upstreamBody())), canon(expected));

    const QByteArray delta = R"({"type":"response.output_text.delta","sequence_number":3,)"
                             R"("item_id":"m1","output_index":0,"content_index":0,)"
                             R"("delta":"the \"model\":\"up-54\" text"})";
    const QByteArray stream =
        "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,"
        "\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"up-54\","
        "\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n"
        // No event: line; the type comes from the data.
        "data: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{"
        "\"id\":\"resp_1\",\"model\":\"up-54\",\"status\":\"in_progress\"}}\n\n"
        "event: response.output_text.delta\ndata: " +
        delta +
        "\n\n"
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":4,"
        "\"response\":{\"id\":\"resp_1\",\"model\":\"up-54\",\"status\":\"completed\","
        "\"usage\":{\"input_tokens\":50,\"input_tokens_details\":{\"cached_tokens\":20},"
        "\"output_tokens\":7,\"output_tokens_details\":{\"reasoning_tokens\":2},"
        "\"total_tokens\":57}}}\n\n";
    const QByteArray out = relayStream(*relay, stream, 5);
    const QList<SseEvent> got = parseAll(out);
    QCOMPARE(got.size(), 3);
    QCOMPARE(got.at(0).event, QByteArray("response.created"));
    QCOMPARE(obj(got.at(0).data).value("response").toObject().value("model").toString(),
             QStringLiteral("vendorB-5.4"));
    QCOMPARE(got.at(1).event, QByteArray());
    QCOMPARE(obj(got.at(1).data).value("response").toObject().value("model").toString(),
             QStringLiteral("vendorB-5.4"));
    QCOMPARE(got.at(2).event, QByteArray("response.output_text.delta"));
    QCOMPARE(got.at(2).data, delta); // untouched, byte for byte
    QVERIFY(!out.contains("response.completed"));

    QVERIFY(relay->isFinished());
    QVERIFY(!relay->upstreamFailed());
    const QList<SseEvent> tail = parseAll(relay->tail());
    QCOMPARE(tail.size(), 1);
    QCOMPARE(tail.first().event, QByteArray("response.completed"));
    const QJsonObject resp = obj(tail.first().data).value("response").toObject();
    QCOMPARE(resp.value("model").toString(), QStringLiteral("vendorB-5.4"));
    QCOMPARE(resp.value("usage").toObject().value("total_tokens").toInt(), 57);
    QCOMPARE(relay->usage().input, 30);
    QCOMPARE(relay->usage().cacheRead, 20);
    QCOMPARE(relay->usage().output, 7);
    bool estimated = true;
    relay->finalUsage(&estimated);
    QVERIFY(!estimated);
    // The error event continues the sequence numbers.
    const QList<SseEvent> err = parseAll(relay->errorEvent("x", "server_error"));
    QCOMPARE(err.first().event, QByteArray("error"));
    QCOMPARE(obj(err.first().data).value("sequence_number").toInt(), 5);
}

void TestLlm::responses_failedAndErrorEvent()
{
    {
        auto relay = Relay::create(Protocol::Responses, Protocol::Responses, QStringLiteral("c"));
        QVERIFY(
            relay->prepare(obj(R"({"model":"c","input":"x","stream":true})"), QStringLiteral("u"))
                .isEmpty());
        QByteArray out;
        relay->onEvent(dataEvent(R"({"type":"response.failed","sequence_number":2,)"
                                 R"("response":{"model":"u","status":"failed","usage":null}})",
                                 "response.failed"),
                       &out);
        QVERIFY(out.isEmpty());
        QVERIFY(relay->isFinished());
        QVERIFY(relay->upstreamFailed());
        QVERIFY(relay->tail().contains("response.failed"));
        QVERIFY(relay->tail().contains(R"("model":"c")"));
    }
    {
        auto relay = Relay::create(Protocol::Responses, Protocol::Responses, QStringLiteral("c"));
        QVERIFY(
            relay->prepare(obj(R"({"model":"c","input":"x","stream":true})"), QStringLiteral("u"))
                .isEmpty());
        QByteArray out;
        relay->onEvent(dataEvent(R"({"type":"error","code":"server_error","message":"boom",)"
                                 R"("sequence_number":1})",
                                 "error"),
                       &out);
        QVERIFY(relay->upstreamFailed());
        QCOMPARE(relay->streamError(), QStringLiteral("boom"));
        QVERIFY(!relay->isFinished());
        QVERIFY(out.isEmpty()); // held back until settlement
        const QList<SseEvent> held = parseAll(relay->heldError());
        QCOMPARE(held.size(), 1);
        QCOMPARE(held.first().event, QByteArray("error"));
        QCOMPARE(obj(held.first().data).value("message").toString(), QStringLiteral("boom"));
    }
}

namespace {

const QByteArray kMessageStart =
    R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",)"
    R"("model":"up-sonnet","content":[],"stop_reason":null,"stop_sequence":null,)"
    R"("usage":{"input_tokens":25,"cache_creation_input_tokens":5,)"
    R"("cache_read_input_tokens":10,"output_tokens":1}}})";

QByteArray messagesEvent(const char *name, const QByteArray &data)
{
    return "event: " + QByteArray(name) + "\ndata: " + data + "\n\n";
}

QByteArray messagesBody(const QByteArray &messageDelta)
{
    QByteArray s =
        messagesEvent("message_start", kMessageStart) +
        messagesEvent("content_block_start", R"({"type":"content_block_start","index":0,)"
                                             R"("content_block":{"type":"text","text":""}})") +
        messagesEvent("ping", R"({"type": "ping"})") +
        messagesEvent("content_block_delta", R"({"type":"content_block_delta","index":0,)"
                                             R"("delta":{"type":"text_delta","text":"Hel"}})") +
        messagesEvent("content_block_delta",
                      R"({"type":"content_block_delta","index":0,)"
                      R"("delta":{"type":"text_delta","text":"lo \"model\":\"x\""}})") +
        messagesEvent("content_block_stop", R"({"type":"content_block_stop","index":0})");
    if (!messageDelta.isEmpty())
        s += messagesEvent("message_delta", messageDelta);
    s += messagesEvent("message_stop", R"({"type":"message_stop"})");
    return s;
}

} // namespace

void TestLlm::messages_stream()
{
    const QJsonObject client =
        obj(R"({"model":"vendorA-sonnet-5","max_tokens":100,"stream":true,"system":"s",)"
            R"("messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled",)"
            R"("budget_tokens":1024},"x_invented":1})");
    auto relay =
        Relay::create(Protocol::Messages, Protocol::Messages, QStringLiteral("vendorA-sonnet-5"));
    QVERIFY(relay);
    QVERIFY(relay->prepare(client, QStringLiteral("up-sonnet")).isEmpty());
    QJsonObject expected = client;
    expected.insert("model", QStringLiteral("up-sonnet"));
    QCOMPARE(canon(obj(relay->upstreamBody())), canon(expected));

    // First only message_start: usage read, output not final yet.
    QByteArray out;
    relay->onEvent(dataEvent(kMessageStart, "message_start"), &out);
    QCOMPARE(relay->usage().input, 25);
    QCOMPARE(relay->usage().cacheWrite, 5);
    QCOMPARE(relay->usage().cacheRead, 10);
    QVERIFY(relay->usage().haveInput);
    QVERIFY(!relay->usage().haveOutput);
    const QList<SseEvent> first = parseAll(out);
    QCOMPARE(first.size(), 1);
    QCOMPARE(first.first().event, QByteArray("message_start"));
    QJsonObject expStart = obj(kMessageStart);
    QJsonObject msg = expStart.value("message").toObject();
    msg.insert("model", QStringLiteral("vendorA-sonnet-5"));
    expStart.insert("message", msg);
    QCOMPARE(canon(obj(first.first().data)), canon(expStart));

    // The rest, with the short message_delta usage form.
    auto relay2 =
        Relay::create(Protocol::Messages, Protocol::Messages, QStringLiteral("vendorA-sonnet-5"));
    QVERIFY(relay2->prepare(client, QStringLiteral("up-sonnet")).isEmpty());
    const QByteArray upstream = messagesBody(
        R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},)"
        R"("usage":{"output_tokens":15}})");
    const QByteArray out2 = relayStream(*relay2, upstream, 11);
    const QList<SseEvent> in = parseAll(upstream);
    const QList<SseEvent> got = parseAll(out2);
    QCOMPARE(got.size(), in.size() - 1); // message_stop is held back
    for (qsizetype i = 1; i < got.size(); ++i) {
        QCOMPARE(got.at(i).event, in.at(i).event);
        QCOMPARE(got.at(i).data, in.at(i).data); // untouched
    }
    QVERIFY(relay2->isFinished());
    QCOMPARE(relay2->tail(),
             QByteArray("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    const TokenUsage &u = relay2->usage();
    QCOMPARE(u.input, 25);
    QCOMPARE(u.cacheWrite, 5);
    QCOMPARE(u.cacheRead, 10);
    QCOMPARE(u.output, 15);
    QVERIFY(u.haveInput && u.haveOutput);
    bool estimated = true;
    const TokenUsage f = relay2->finalUsage(&estimated);
    QVERIFY(!estimated);
    QCOMPARE(f.output, 15);
}

void TestLlm::messages_fullCumulativeUsage()
{
    // message_delta repeating every counter (cumulative): taken once, not added to message_start.
    auto relay = Relay::create(Protocol::Messages, Protocol::Messages, QStringLiteral("c"));
    QVERIFY(relay
                ->prepare(obj(R"({"model":"c","max_tokens":9,"stream":true,"messages":[]})"),
                          QStringLiteral("u"))
                .isEmpty());
    const QByteArray upstream = messagesBody(
        R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},)"
        R"("usage":{"input_tokens":25,"cache_creation_input_tokens":5,)"
        R"("cache_read_input_tokens":10,"output_tokens":40}})");
    relayStream(*relay, upstream);
    QCOMPARE(relay->usage().input, 25);
    QCOMPARE(relay->usage().cacheWrite, 5);
    QCOMPARE(relay->usage().cacheRead, 10);
    QCOMPARE(relay->usage().output, 40);

    // Two message_delta reports: the latest total wins.
    auto relay2 = Relay::create(Protocol::Messages, Protocol::Messages, QStringLiteral("c"));
    QVERIFY(relay2
                ->prepare(obj(R"({"model":"c","max_tokens":9,"stream":true,"messages":[]})"),
                          QStringLiteral("u"))
                .isEmpty());
    QByteArray out;
    relay2->onEvent(dataEvent(kMessageStart, "message_start"), &out);
    relay2->onEvent(dataEvent(R"({"type":"message_delta","delta":{},"usage":{"output_tokens":10}})",
                              "message_delta"),
                    &out);
    relay2->onEvent(dataEvent(R"({"type":"message_delta","delta":{},"usage":{"output_tokens":12}})",
                              "message_delta"),
                    &out);
    QCOMPARE(relay2->usage().output, 12);
    QCOMPARE(relay2->usage().input, 25);
}

void TestLlm::messages_outputNeverReportedIsEstimated()
{
    auto relay = Relay::create(Protocol::Messages, Protocol::Messages, QStringLiteral("c"));
    QVERIFY(relay
                ->prepare(obj(R"({"model":"c","max_tokens":9,"stream":true,"messages":[]})"),
                          QStringLiteral("u"))
                .isEmpty());
    relayStream(*relay, messagesBody({}));
    QVERIFY(relay->isFinished());
    QVERIFY(!relay->usage().haveOutput);
    bool estimated = false;
    const TokenUsage f = relay->finalUsage(&estimated);
    QVERIFY(estimated);
    QCOMPARE(f.input, 25); // reported, not estimated
    QCOMPARE(f.output, 2); // two content_block_delta events
}

void TestLlm::messages_errorEventAndConvertBody()
{
    auto relay = Relay::create(Protocol::Messages, Protocol::Messages, QStringLiteral("client"));
    QVERIFY(relay
                ->prepare(obj(R"({"model":"client","max_tokens":9,"messages":[]})"),
                          QStringLiteral("u"))
                .isEmpty());
    QVERIFY(!relay->isStreaming());
    QByteArray out;
    relay->onEvent(dataEvent(R"({"type":"error","error":{"type":"overloaded_error",)"
                             R"("message":"Overloaded"}})",
                             "error"),
                   &out);
    QVERIFY(relay->upstreamFailed());
    QCOMPARE(relay->streamError(), QStringLiteral("Overloaded"));
    QVERIFY(out.isEmpty()); // held back until settlement
    const QList<SseEvent> held = parseAll(relay->heldError());
    QCOMPARE(held.size(), 1);
    QCOMPARE(held.first().event, QByteArray("error"));
    QCOMPARE(obj(held.first().data).value("error").toObject().value("type").toString(),
             QStringLiteral("overloaded_error"));
    const QList<SseEvent> err = parseAll(relay->errorEvent("m", "api_error"));
    QCOMPARE(err.size(), 1);
    QCOMPARE(err.first().event, QByteArray("error"));
    QCOMPARE(canon(obj(err.first().data)),
             QByteArray(R"({"error":{"message":"m","type":"api_error"},"type":"error"})"));

    auto relay2 = Relay::create(Protocol::Messages, Protocol::Messages, QStringLiteral("client"));
    QVERIFY(relay2
                ->prepare(obj(R"({"model":"client","max_tokens":9,"messages":[]})"),
                          QStringLiteral("u"))
                .isEmpty());
    const QByteArray body =
        R"({"id":"msg_1","type":"message","role":"assistant","model":"u","content":)"
        R"([{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":8,)"
        R"("cache_read_input_tokens":2,"cache_creation_input_tokens":1,"output_tokens":3}})";
    QByteArray client;
    QVERIFY(relay2->convertBody(body, &client));
    QCOMPARE(client, QByteArray(body).replace(R"("model":"u")", R"("model":"client")"));
    QCOMPARE(relay2->usage().input, 8);
    QCOMPARE(relay2->usage().cacheRead, 2);
    QCOMPARE(relay2->usage().cacheWrite, 1);
    QCOMPARE(relay2->usage().output, 3);
    QVERIFY(relay2->usage().haveOutput);
}

// --- 5. ChatOverMessages ---------------------------------------------------------------------

void TestLlm::com_requestTranslation()
{
    const QJsonObject chat = obj(R"J({
        "model":"vendorA-sonnet-5",
        "messages":[
            {"role":"system","content":"You are terse."},
            {"role":"developer","content":[{"type":"text","text":"Use "},{"type":"text","text":"metric."}]},
            {"role":"user","content":"What is the weather?"},
            {"role":"user","content":[
                {"type":"text","text":"And this picture?"},
                {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
                {"type":"image_url","image_url":{"url":"https://example.com/cat.jpg","detail":"low"}}
            ]},
            {"role":"assistant","content":null,"tool_calls":[
                {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"days\":2}"}},
                {"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}
            ]},
            {"role":"tool","tool_call_id":"call_1","content":"sunny"},
            {"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"noon"}]},
            {"role":"assistant","content":"It is sunny at noon."}
        ],
        "tools":[
            {"type":"function","function":{"name":"get_weather","description":"Weather by city",
             "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
            {"type":"function","function":{"name":"get_time"}}
        ],
        "tool_choice":"auto",
        "stop":["END","STOP"],
        "temperature":1.7,
        "top_p":0.9,
        "max_completion_tokens":321,
        "response_format":{"type":"json_object"},
        "stream":true,
        "stream_options":{"include_usage":true}
    })J");
    ChatOverMessages relay(QStringLiteral("vendorA-sonnet-5"));
    QCOMPARE(relay.clientProtocol(), Protocol::Chat);
    QCOMPARE(relay.upstreamProtocol(), Protocol::Messages);
    QCOMPARE(relay.prepare(chat, QStringLiteral("up-sonnet")), QString());
    QVERIFY(relay.isStreaming());
    const QJsonObject up = obj(relay.upstreamBody());

    QCOMPARE(up.value("model").toString(), QStringLiteral("up-sonnet"));
    QCOMPARE(up.value("max_tokens").toInteger(), 321);
    QCOMPARE(up.value("temperature").toDouble(), 1.0);
    QCOMPARE(up.value("top_p").toDouble(), 0.9);
    QCOMPARE(up.value("stream").toBool(), true);
    QVERIFY(!up.contains("stream_options"));
    QVERIFY(!up.contains("response_format"));
    QVERIFY(!up.contains("max_completion_tokens"));
    QCOMPARE(canon(up.value("stop_sequences")), QByteArray(R"(["END","STOP"])"));

    const QString system = up.value("system").toString();
    QVERIFY2(system.startsWith(QStringLiteral("You are terse.\n\nUse metric.")),
             qPrintable(system));
    QVERIFY2(system.contains(QStringLiteral("JSON")), qPrintable(system));

    const QJsonArray messages = up.value("messages").toArray();
    QCOMPARE(messages.size(), 4); // user (merged), assistant, user (tool results), assistant
    const QByteArray expectedMessages = canon(QJsonDocument::fromJson(R"J([
        {"role":"user","content":[
            {"type":"text","text":"What is the weather?"},
            {"type":"text","text":"And this picture?"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
            {"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}}
        ]},
        {"role":"assistant","content":[
            {"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris","days":2}},
            {"type":"tool_use","id":"call_2","name":"get_time","input":{}}
        ]},
        {"role":"user","content":[
            {"type":"tool_result","tool_use_id":"call_1","content":"sunny"},
            {"type":"tool_result","tool_use_id":"call_2","content":"noon"}
        ]},
        {"role":"assistant","content":[{"type":"text","text":"It is sunny at noon."}]}
    ])J")
                                                  .array());
    QCOMPARE(canon(up.value("messages")), expectedMessages);

    QCOMPARE(canon(up.value("tools")), canon(QJsonDocument::fromJson(R"J([
                 {"name":"get_weather","description":"Weather by city","input_schema":
                  {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
                 {"name":"get_time","input_schema":{"type":"object"}}])J")
                                                 .array()));
    QCOMPARE(canon(up.value("tool_choice")), QByteArray(R"({"type":"auto"})"));
}

void TestLlm::com_toolChoice_data()
{
    QTest::addColumn<QByteArray>("members"); // extra members of the chat body
    QTest::addColumn<QByteArray>("expected");
    QTest::newRow("none") << QByteArray(R"("tool_choice":"none")")
                          << QByteArray(R"({"type":"none"})");
    QTest::newRow("auto") << QByteArray(R"("tool_choice":"auto")")
                          << QByteArray(R"({"type":"auto"})");
    QTest::newRow("required") << QByteArray(R"("tool_choice":"required")")
                              << QByteArray(R"({"type":"any"})");
    QTest::newRow("function") << QByteArray(
                                     R"("tool_choice":{"type":"function","function":{"name":"f"}})")
                              << QByteArray(R"({"name":"f","type":"tool"})");
    QTest::newRow("absent") << QByteArray() << QByteArray();
    QTest::newRow("no parallel calls") << QByteArray(R"("parallel_tool_calls":false)")
                                       << QByteArray(R"({"disable_parallel_tool_use":true,)"
                                                     R"("type":"auto"})");
    QTest::newRow("required, no parallel calls")
        << QByteArray(R"("tool_choice":"required","parallel_tool_calls":false)")
        << QByteArray(R"({"disable_parallel_tool_use":true,"type":"any"})");
    QTest::newRow("parallel calls allowed")
        << QByteArray(R"("parallel_tool_calls":true)") << QByteArray();
}

void TestLlm::com_toolChoice()
{
    QFETCH(QByteArray, members);
    QFETCH(QByteArray, expected);
    QByteArray body = R"({"model":"m","messages":[{"role":"user","content":"x"}],)"
                      R"("tools":[{"type":"function","function":{"name":"f","parameters":{}}}])";
    if (!members.isEmpty())
        body += "," + members;
    body += "}";
    ChatOverMessages relay(QStringLiteral("m"));
    QCOMPARE(relay.prepare(obj(body), QStringLiteral("u")), QString());
    const QJsonObject up = obj(relay.upstreamBody());
    if (expected.isEmpty())
        QVERIFY(!up.contains("tool_choice"));
    else
        QCOMPARE(canon(up.value("tool_choice")), expected);
    QVERIFY(!up.contains("parallel_tool_calls"));
    QCOMPARE(canon(up.value("tools")), QByteArray(R"([{"input_schema":{},"name":"f"}])"));
}

void TestLlm::com_scalars_data()
{
    QTest::addColumn<QByteArray>("extra");
    QTest::addColumn<QByteArray>("field");
    QTest::addColumn<QByteArray>("expected"); // canonical JSON, empty: absent

    QTest::newRow("default max_tokens")
        << QByteArray() << QByteArray("max_tokens") << QByteArray("4096");
    QTest::newRow("max_tokens") << QByteArray(R"("max_tokens":123)") << QByteArray("max_tokens")
                                << QByteArray("123");
    QTest::newRow("max_completion_tokens") << QByteArray(R"("max_completion_tokens":77)")
                                           << QByteArray("max_tokens") << QByteArray("77");
    QTest::newRow("max_completion_tokens wins")
        << QByteArray(R"("max_tokens":10,"max_completion_tokens":20)") << QByteArray("max_tokens")
        << QByteArray("20");
    QTest::newRow("temperature kept")
        << QByteArray(R"("temperature":0.3)") << QByteArray("temperature") << QByteArray("0.3");
    QTest::newRow("temperature 2 clamped")
        << QByteArray(R"("temperature":2)") << QByteArray("temperature") << QByteArray("1");
    QTest::newRow("temperature 1.01 clamped")
        << QByteArray(R"("temperature":1.01)") << QByteArray("temperature") << QByteArray("1");
    QTest::newRow("temperature 0")
        << QByteArray(R"("temperature":0)") << QByteArray("temperature") << QByteArray("0");
    QTest::newRow("no temperature") << QByteArray() << QByteArray("temperature") << QByteArray();
    QTest::newRow("stop string") << QByteArray(R"("stop":"###")") << QByteArray("stop_sequences")
                                 << QByteArray(R"(["###"])");
    QTest::newRow("stop array") << QByteArray(R"("stop":["a","b","c","d"])")
                                << QByteArray("stop_sequences")
                                << QByteArray(R"(["a","b","c","d"])");
    QTest::newRow("stop empty array")
        << QByteArray(R"("stop":[])") << QByteArray("stop_sequences") << QByteArray();
    QTest::newRow("stop null") << QByteArray(R"("stop":null)") << QByteArray("stop_sequences")
                               << QByteArray();
    QTest::newRow("not streaming") << QByteArray() << QByteArray("stream") << QByteArray();
    QTest::newRow("streaming") << QByteArray(R"("stream":true)") << QByteArray("stream")
                               << QByteArray("true");
    QTest::newRow("no tools no tool_choice")
        << QByteArray(R"("tool_choice":"auto")") << QByteArray("tool_choice") << QByteArray();
    QTest::newRow("user -> metadata") << QByteArray(R"("user":"u-1")") << QByteArray("metadata")
                                      << QByteArray(R"({"user_id":"u-1"})");
    QTest::newRow("n 1 accepted") << QByteArray(R"("n":1)") << QByteArray("n") << QByteArray();
    // Explicit nulls (RequestValidation lets them through) mean "not given".
    QTest::newRow("max_completion_tokens null -> max_tokens")
        << QByteArray(R"("max_tokens":50,"max_completion_tokens":null)") << QByteArray("max_tokens")
        << QByteArray("50");
    QTest::newRow("temperature null -> absent")
        << QByteArray(R"("temperature":null)") << QByteArray("temperature") << QByteArray();
}

void TestLlm::com_scalars()
{
    QFETCH(QByteArray, extra);
    QFETCH(QByteArray, field);
    QFETCH(QByteArray, expected);
    QByteArray body = R"({"model":"m","messages":[{"role":"user","content":"x"}])";
    if (!extra.isEmpty())
        body += "," + extra;
    body += "}";
    ChatOverMessages relay(QStringLiteral("m"));
    QCOMPARE(relay.prepare(obj(body), QStringLiteral("u")), QString());
    const QJsonObject up = obj(relay.upstreamBody());
    if (expected.isEmpty())
        QVERIFY2(!up.contains(QLatin1String(field)), relay.upstreamBody().constData());
    else
        QCOMPARE(canon(up.value(QLatin1String(field))), expected);
}

void TestLlm::com_responseFormatWithoutSystem()
{
    ChatOverMessages relay(QStringLiteral("m"));
    QCOMPARE(relay.prepare(obj(R"({"model":"m","messages":[{"role":"user","content":"x"}],)"
                               R"("response_format":{"type":"json_object"}})"),
                           QStringLiteral("u")),
             QString());
    const QString system = obj(relay.upstreamBody()).value("system").toString();
    QVERIFY(system.contains(QStringLiteral("JSON object")));
    // Plain text format: no system prompt at all.
    ChatOverMessages plain(QStringLiteral("m"));
    QCOMPARE(plain.prepare(obj(R"({"model":"m","messages":[{"role":"user","content":"x"}],)"
                               R"("response_format":{"type":"text"}})"),
                           QStringLiteral("u")),
             QString());
    QVERIFY(!obj(plain.upstreamBody()).contains("system"));
}

void TestLlm::com_refusesN()
{
    ChatOverMessages relay(QStringLiteral("m"));
    const QString error = relay.prepare(
        obj(R"({"model":"m","n":2,"messages":[{"role":"user","content":"x"}]})"), "u");
    QVERIFY(!error.isEmpty());
    QVERIFY2(error.contains(QLatin1String("n ")), qPrintable(error));
    // An unsupported content part is refused too, naming the message.
    ChatOverMessages relay2(QStringLiteral("m"));
    const QString error2 = relay2.prepare(
        obj(R"({"model":"m","messages":[{"role":"system","content":"s"},{"role":"user",)"
            R"("content":[{"type":"input_audio","input_audio":{"data":"x","format":"wav"}}]}]})"),
        "u");
    QVERIFY2(error2.contains(QLatin1String("messages[1]")), qPrintable(error2));
    QVERIFY2(error2.contains(QLatin1String("input_audio")), qPrintable(error2));
}

void TestLlm::com_responseTranslation()
{
    ChatOverMessages relay(QStringLiteral("vendorA-sonnet-5"));
    QCOMPARE(relay.prepare(obj(R"({"model":"vendorA-sonnet-5","messages":[{"role":"user",)"
                               R"("content":"weather?"}]})"),
                           QStringLiteral("up")),
             QString());
    const QByteArray upstream =
        R"({"id":"msg_01","type":"message","role":"assistant","model":"up","content":[)"
        R"({"type":"text","text":"Let me "},{"type":"thinking","thinking":"hmm","signature":"s"},)"
        R"({"type":"text","text":"check."},)"
        R"({"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris",)"
        R"("nested":{"days":[1,2]},"q":"a\"b"}}],"stop_reason":"tool_use","stop_sequence":null,)"
        R"("usage":{"input_tokens":100,"cache_read_input_tokens":40,)"
        R"("cache_creation_input_tokens":10,"output_tokens":30}})";
    QByteArray client;
    QVERIFY(relay.convertBody(upstream, &client));
    const QJsonObject c = obj(client);
    QCOMPARE(c.value("object").toString(), QStringLiteral("chat.completion"));
    QCOMPARE(c.value("id").toString(), QStringLiteral("chatcmpl-msg_01"));
    QCOMPARE(c.value("model").toString(), QStringLiteral("vendorA-sonnet-5"));
    const QJsonObject choice = c.value("choices").toArray().at(0).toObject();
    QCOMPARE(choice.value("finish_reason").toString(), QStringLiteral("tool_calls"));
    const QJsonObject message = choice.value("message").toObject();
    QCOMPARE(message.value("role").toString(), QStringLiteral("assistant"));
    QCOMPARE(message.value("content").toString(), QStringLiteral("Let me check."));
    const QJsonArray calls = message.value("tool_calls").toArray();
    QCOMPARE(calls.size(), 1);
    const QJsonObject call = calls.at(0).toObject();
    QCOMPARE(call.value("id").toString(), QStringLiteral("toolu_1"));
    QCOMPARE(call.value("type").toString(), QStringLiteral("function"));
    const QJsonObject fn = call.value("function").toObject();
    QCOMPARE(fn.value("name").toString(), QStringLiteral("get_weather"));
    QVERIFY(fn.value("arguments").isString());
    QCOMPARE(canon(obj(fn.value("arguments").toString().toUtf8())),
             canon(obj(R"({"city":"Paris","nested":{"days":[1,2]},"q":"a\"b"})")));
    QCOMPARE(canon(c.value("usage")),
             QByteArray(R"({"completion_tokens":30,"prompt_tokens":150,)"
                        R"("prompt_tokens_details":{"cached_tokens":40},"total_tokens":180})"));
    QCOMPARE(relay.usage().input, 100);
    QCOMPARE(relay.usage().cacheRead, 40);
    QCOMPARE(relay.usage().cacheWrite, 10);
    QCOMPARE(relay.usage().output, 30);
    bool estimated = true;
    relay.finalUsage(&estimated);
    QVERIFY(!estimated);

    QByteArray ignored;
    ChatOverMessages bad(QStringLiteral("m"));
    QVERIFY(!bad.convertBody(R"({"type":"message","content":"not an array"})", &ignored));
    QVERIFY(!bad.convertBody("not json", &ignored));
}

void TestLlm::com_finishReason_data()
{
    QTest::addColumn<QString>("stop");
    QTest::addColumn<QString>("finish");
    QTest::newRow("end_turn") << "end_turn"
                              << "stop";
    QTest::newRow("max_tokens") << "max_tokens"
                                << "length";
    QTest::newRow("tool_use") << "tool_use"
                              << "tool_calls";
    QTest::newRow("stop_sequence") << "stop_sequence"
                                   << "stop";
    QTest::newRow("refusal") << "refusal"
                             << "content_filter";
}

void TestLlm::com_finishReason()
{
    QFETCH(QString, stop);
    QFETCH(QString, finish);
    QCOMPARE(ChatOverMessages::finishReason(stop), finish);
    // Through a whole answer too.
    ChatOverMessages relay(QStringLiteral("m"));
    QVERIFY(relay.prepare(obj(R"({"model":"m","messages":[]})"), "u").isEmpty());
    QByteArray client;
    QVERIFY(relay.convertBody(R"({"id":"x","content":[{"type":"text","text":"t"}],)"
                              R"("stop_reason":")" +
                                  stop.toUtf8() +
                                  R"(","usage":{"input_tokens":1,)"
                                  R"("output_tokens":1}})",
                              &client));
    QCOMPARE(
        obj(client).value("choices").toArray().at(0).toObject().value("finish_reason").toString(),
        finish);
}

void TestLlm::com_toolOnlyAnswerHasNullContent()
{
    ChatOverMessages relay(QStringLiteral("m"));
    QVERIFY(relay.prepare(obj(R"({"model":"m","messages":[]})"), "u").isEmpty());
    QByteArray client;
    QVERIFY(relay.convertBody(R"({"id":"x","content":[{"type":"tool_use","id":"t1","name":"f",)"
                              R"("input":{}}],"stop_reason":"tool_use","usage":{}})",
                              &client));
    const QJsonObject message =
        obj(client).value("choices").toArray().at(0).toObject().value("message").toObject();
    QVERIFY(message.value("content").isNull());
    QCOMPARE(message.value("tool_calls")
                 .toArray()
                 .at(0)
                 .toObject()
                 .value("function")
                 .toObject()
                 .value("arguments")
                 .toString(),
             QStringLiteral("{}"));
}

void TestLlm::com_streamTranslation_data()
{
    QTest::addColumn<bool>("includeUsage");
    QTest::newRow("without usage") << false;
    QTest::newRow("with usage") << true;
}

void TestLlm::com_streamTranslation()
{
    QFETCH(bool, includeUsage);
    QByteArray body = R"({"model":"vendorA-sonnet-5","stream":true,)"
                      R"("messages":[{"role":"user","content":"weather in Paris and Rome?"}])";
    if (includeUsage)
        body += R"(,"stream_options":{"include_usage":true})";
    body += "}";
    ChatOverMessages relay(QStringLiteral("vendorA-sonnet-5"));
    QCOMPARE(relay.prepare(obj(body), QStringLiteral("up")), QString());

    auto ev = [](const char *name, const QByteArray &data) {
        return "event: " + QByteArray(name) + "\r\ndata: " + data + "\r\n\r\n";
    };
    const QByteArray upstream =
        ev("message_start", R"({"type":"message_start","message":{"id":"msg_9","type":"message",)"
                            R"("role":"assistant","model":"up","content":[],"stop_reason":null,)"
                            R"("usage":{"input_tokens":20,"cache_read_input_tokens":5,)"
                            R"("cache_creation_input_tokens":0,"output_tokens":1}}})") +
        ev("content_block_start", R"({"type":"content_block_start","index":0,)"
                                  R"("content_block":{"type":"text","text":""}})") +
        ev("ping", R"({"type":"ping"})") + ": comment\r\n\r\n" +
        ev("content_block_delta", R"({"type":"content_block_delta","index":0,)"
                                  R"("delta":{"type":"text_delta","text":"Checking "}})") +
        ev("content_block_delta", R"({"type":"content_block_delta","index":0,)"
                                  R"("delta":{"type":"text_delta","text":"both \"cities\"."}})") +
        ev("content_block_stop", R"({"type":"content_block_stop","index":0})") +
        ev("content_block_start",
           R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use",)"
           R"("id":"toolu_a","name":"get_weather","input":{}}})") +
        ev("content_block_delta", R"({"type":"content_block_delta","index":1,)"
                                  R"("delta":{"type":"input_json_delta","partial_json":""}})") +
        ev("content_block_delta",
           R"({"type":"content_block_delta","index":1,)"
           R"("delta":{"type":"input_json_delta","partial_json":"{\"ci"}})") +
        ev("content_block_delta",
           R"({"type":"content_block_delta","index":1,)"
           R"("delta":{"type":"input_json_delta","partial_json":"ty\": \"Par"}})") +
        ev("content_block_delta",
           R"({"type":"content_block_delta","index":1,)"
           R"("delta":{"type":"input_json_delta","partial_json":"is\"}"}})") +
        ev("content_block_stop", R"({"type":"content_block_stop","index":1})") +
        ev("content_block_start",
           R"({"type":"content_block_start","index":2,"content_block":{"type":"tool_use",)"
           R"("id":"toolu_b","name":"get_weather","input":{}}})") +
        ev("content_block_delta",
           R"({"type":"content_block_delta","index":2,)"
           R"("delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Rome\"}"}})") +
        ev("content_block_stop", R"({"type":"content_block_stop","index":2})") +
        ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use",)"
                            R"("stop_sequence":null},"usage":{"output_tokens":42}})") +
        ev("message_stop", R"({"type":"message_stop"})");

    const QByteArray out = relayStream(relay, upstream, 13);
    QVERIFY(relay.isFinished());
    QVERIFY(!relay.upstreamFailed());
    QVERIFY(!out.contains("[DONE]"));

    const QList<SseEvent> chunks = parseAll(out);
    QVERIFY(chunks.size() >= 5);
    QString content;
    QHash<int, QJsonObject> calls; // index -> {id, name, arguments}
    QStringList finishReasons;
    bool sawRole = false;
    for (qsizetype i = 0; i < chunks.size(); ++i) {
        const SseEvent &e = chunks.at(i);
        QCOMPARE(e.event, QByteArray());
        const QJsonObject c = obj(e.data);
        QCOMPARE(c.value("object").toString(), QStringLiteral("chat.completion.chunk"));
        QCOMPARE(c.value("id").toString(), QStringLiteral("chatcmpl-msg_9"));
        QCOMPARE(c.value("model").toString(), QStringLiteral("vendorA-sonnet-5"));
        QVERIFY(!c.contains("usage") || c.value("usage").isNull());
        const QJsonArray choices = c.value("choices").toArray();
        QCOMPARE(choices.size(), 1);
        const QJsonObject choice = choices.at(0).toObject();
        QCOMPARE(choice.value("index").toInt(-1), 0);
        const QJsonObject delta = choice.value("delta").toObject();
        if (i == 0) {
            QCOMPARE(delta.value("role").toString(), QStringLiteral("assistant"));
            sawRole = true;
        }
        content += delta.value("content").toString();
        for (const QJsonValue &tc : delta.value("tool_calls").toArray()) {
            const QJsonObject t = tc.toObject();
            QVERIFY(t.contains("index"));
            QJsonObject &acc = calls[t.value("index").toInt()];
            if (t.contains("id"))
                acc.insert("id", t.value("id"));
            const QJsonObject fn = t.value("function").toObject();
            if (fn.contains("name"))
                acc.insert("name", fn.value("name"));
            acc.insert("arguments",
                       acc.value("arguments").toString() + fn.value("arguments").toString());
        }
        if (!choice.value("finish_reason").isNull())
            finishReasons.append(choice.value("finish_reason").toString());
    }
    QVERIFY(sawRole);
    QCOMPARE(content, QStringLiteral("Checking both \"cities\"."));
    QCOMPARE(calls.size(), 2);
    QCOMPARE(calls.value(0).value("id").toString(), QStringLiteral("toolu_a"));
    QCOMPARE(calls.value(0).value("name").toString(), QStringLiteral("get_weather"));
    QCOMPARE(canon(obj(calls.value(0).value("arguments").toString().toUtf8())),
             QByteArray(R"({"city":"Paris"})"));
    QCOMPARE(calls.value(1).value("id").toString(), QStringLiteral("toolu_b"));
    QCOMPARE(calls.value(1).value("arguments").toString(), QStringLiteral(R"({"city":"Rome"})"));
    QCOMPARE(finishReasons, QStringList{QStringLiteral("tool_calls")});
    // The finish_reason chunk is the last one relayed.
    QCOMPARE(obj(chunks.last().data)
                 .value("choices")
                 .toArray()
                 .at(0)
                 .toObject()
                 .value("finish_reason")
                 .toString(),
             QStringLiteral("tool_calls"));

    QCOMPARE(relay.usage().input, 20);
    QCOMPARE(relay.usage().cacheRead, 5);
    QCOMPARE(relay.usage().output, 42);
    QVERIFY(relay.usage().haveOutput);

    const QByteArray tail = relay.tail();
    QVERIFY(tail.endsWith("data: [DONE]\n\n"));
    const QList<SseEvent> tailEvents = parseAll(tail);
    if (!includeUsage) {
        QCOMPARE(tail, QByteArray("data: [DONE]\n\n"));
    } else {
        QCOMPARE(tailEvents.size(), 2);
        const QJsonObject u = obj(tailEvents.at(0).data);
        QCOMPARE(u.value("id").toString(), QStringLiteral("chatcmpl-msg_9"));
        QCOMPARE(u.value("model").toString(), QStringLiteral("vendorA-sonnet-5"));
        QCOMPARE(u.value("choices").toArray().size(), 0);
        QCOMPARE(canon(u.value("usage")),
                 QByteArray(R"({"completion_tokens":42,"prompt_tokens":25,)"
                            R"("prompt_tokens_details":{"cached_tokens":5},"total_tokens":67})"));
        QCOMPARE(tailEvents.at(1).data, QByteArray("[DONE]"));
    }

    // An error event mid-stream becomes an OpenAI-style error chunk.
    ChatOverMessages broken(QStringLiteral("m"));
    QVERIFY(broken.prepare(obj(R"({"model":"m","stream":true,"messages":[]})"), "u").isEmpty());
    QByteArray errOut;
    broken.onEvent(dataEvent(R"({"type":"error","error":{"type":"overloaded_error",)"
                             R"("message":"Overloaded"}})",
                             "error"),
                   &errOut);
    QVERIFY(broken.upstreamFailed());
    QCOMPARE(broken.streamError(), QStringLiteral("Overloaded"));
    QVERIFY(errOut.isEmpty()); // held back until settlement
    const QList<SseEvent> held = parseAll(broken.heldError());
    QCOMPARE(held.size(), 1);
    const QJsonObject err = obj(held.first().data).value("error").toObject();
    QCOMPARE(err.value("message").toString(), QStringLiteral("Overloaded"));
    QCOMPARE(err.value("type").toString(), QStringLiteral("overloaded_error"));
}

// --- 6. GatewayConfig ------------------------------------------------------------------------

void TestLlm::config_defaults()
{
    const GatewayConfig g = GatewayConfig::defaults();
    QStringList names;
    for (const ProviderConfig &p : g.providers)
        names.append(p.name);
    QCOMPARE(names, (QStringList{"openai", "anthropic", "deepseek", "openrouter"}));
    QCOMPARE(g.provider("openai")->type, ProviderType::OpenAI);
    QCOMPARE(g.provider("anthropic")->type, ProviderType::Anthropic);
    QCOMPARE(g.provider("deepseek")->type, ProviderType::Anthropic);
    QCOMPARE(g.provider("openrouter")->type, ProviderType::Catalog);
    for (const ProviderConfig &p : g.providers) {
        QVERIFY(p.keys.isEmpty());
        QVERIFY(p.baseUrl.startsWith(QLatin1String("https://")));
        QVERIFY(!p.baseUrl.endsWith(u'/'));
    }
    QVERIFY(!g.provider("nope"));
    QVERIFY(g.autoModel.isEmpty());
    QVERIFY(g.models.isEmpty());
    // An empty section is the defaults.
    QCOMPARE(canon(GatewayConfig::fromJson({}).toJson()), canon(g.toJson()));
}

void TestLlm::config_override()
{
    qputenv("SY_TST_LLM_KEYS", " env-1 ,, env-2 ");
    const GatewayConfig g = GatewayConfig::fromJson(obj(R"J({
        "auto_model":"vendorB-5.4",
        "keepalive_ms":5000,
        "providers":{
            "openai":{"base_url":"https://proxy.example/v1///","keys":[" sk-a ","sk-b"],
                      "timeouts":{"connect_ms":500,"idle_ms":0},"key_rest_ms":1000},
            "openrouter":{"keys_env":"SY_TST_LLM_KEYS","refresh_minutes":0,
                          "price_overrides":{"vendor/model-a":{"input":"1.5","output":"2"}}},
            "local":{"type":"anthropic","base_url":"http://127.0.0.1:9/v1"}
        },
        "models":[{"id":"my-model","provider":"local","upstream_model":"real-name",
                   "endpoints":["chat.completions","messages"],"pricing":{"input":"0.5"}}]
    })J"));
    qunsetenv("SY_TST_LLM_KEYS");
    QCOMPARE(g.autoModel, QStringLiteral("vendorB-5.4"));
    QCOMPARE(g.keepAliveMs, 5000);
    QCOMPARE(g.providers.size(), 5);
    const ProviderConfig *o = g.provider("openai");
    QVERIFY(o);
    QCOMPARE(o->baseUrl, QStringLiteral("https://proxy.example/v1"));
    QCOMPARE(o->keys, (QStringList{"sk-a", "sk-b"}));
    QCOMPARE(o->connectTimeoutMs, 500);
    QCOMPARE(o->idleTimeoutMs, 0);
    QCOMPARE(o->restMs, 1000);
    const ProviderConfig defaults;
    QCOMPARE(o->totalTimeoutMs, defaults.totalTimeoutMs);
    QCOMPARE(o->messagesTimeoutMs, defaults.messagesTimeoutMs);
    QCOMPARE(o->firstByteTimeoutMs, defaults.firstByteTimeoutMs);
    QCOMPARE(o->type, ProviderType::OpenAI);

    const ProviderConfig *r = g.provider("openrouter");
    QCOMPARE(r->baseUrl, QStringLiteral("https://openrouter.ai/api/v1")); // kept
    QCOMPARE(r->type, ProviderType::Catalog);
    QCOMPARE(r->allKeys(), (QStringList{"env-1", "env-2"}));
    QCOMPARE(r->refreshMinutes, 0);
    QCOMPARE(r->priceOverrides.value("vendor/model-a").input, 1'500'000'000LL);
    QCOMPARE(r->priceOverrides.value("vendor/model-a").output, 2'000'000'000LL);

    // Untouched providers are the defaults.
    QCOMPARE(g.provider("anthropic")->baseUrl, QStringLiteral("https://api.anthropic.com/v1"));
    QVERIFY(g.provider("anthropic")->keys.isEmpty());

    const ProviderConfig *l = g.provider("local");
    QCOMPARE(l->type, ProviderType::Anthropic);
    QCOMPARE(l->baseUrl, QStringLiteral("http://127.0.0.1:9/v1"));
    QCOMPARE(g.models.size(), 1);
    QCOMPARE(g.models.first().upstreamModel, QStringLiteral("real-name"));
    QCOMPARE(g.models.first().price.input, 500'000'000LL);

    // The catalog built from it: the added model and the new auto target.
    const ModelCatalog c = g.buildCatalog(ModelCatalog::builtin());
    QCOMPARE(c.autoModel(), QStringLiteral("vendorB-5.4"));
    QVERIFY(c.find("my-model"));
    QVERIFY(c.find("vendorB-6-luna"));
}

void TestLlm::config_errors_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("field");

    QTest::newRow("providers not object")
        << QByteArray(R"({"providers":[]})") << "gateway.providers";
    QTest::newRow("provider not object")
        << QByteArray(R"({"providers":{"openai":"x"}})") << "gateway.providers.openai";
    QTest::newRow("bad type") << QByteArray(R"({"providers":{"openai":{"type":"grpc"}}})")
                              << "gateway.providers.openai.type";
    QTest::newRow("type not string")
        << QByteArray(R"({"providers":{"openai":{"type":1}}})") << "gateway.providers.openai.type";
    QTest::newRow("ftp url") << QByteArray(R"({"providers":{"openai":{"base_url":"ftp://x/v1"}}})")
                             << "gateway.providers.openai.base_url";
    QTest::newRow("no host") << QByteArray(R"({"providers":{"openai":{"base_url":"https://"}}})")
                             << "gateway.providers.openai.base_url";
    QTest::newRow("not a url") << QByteArray(R"({"providers":{"anthropic":{"base_url":"hello"}}})")
                               << "gateway.providers.anthropic.base_url";
    QTest::newRow("url not string") << QByteArray(R"({"providers":{"openai":{"base_url":5}}})")
                                    << "gateway.providers.openai.base_url";
    QTest::newRow("new provider without url")
        << QByteArray(R"({"providers":{"mine":{"type":"openai"}}})")
        << "gateway.providers.mine.base_url";
    QTest::newRow("keys string") << QByteArray(R"({"providers":{"openai":{"keys":"sk-1"}}})")
                                 << "gateway.providers.openai.keys";
    QTest::newRow("keys object") << QByteArray(R"({"providers":{"openai":{"keys":{"a":"b"}}}})")
                                 << "gateway.providers.openai.keys";
    QTest::newRow("key number") << QByteArray(R"({"providers":{"openai":{"keys":["a",1]}}})")
                                << "gateway.providers.openai.keys";
    QTest::newRow("key empty") << QByteArray(R"({"providers":{"openai":{"keys":["  "]}}})")
                               << "gateway.providers.openai.keys";
    QTest::newRow("negative timeout")
        << QByteArray(R"({"providers":{"openai":{"timeouts":{"idle_ms":-1}}}})")
        << "gateway.providers.openai.timeouts.idle_ms";
    QTest::newRow("string timeout")
        << QByteArray(R"({"providers":{"deepseek":{"timeouts":{"total_ms":"5"}}}})")
        << "gateway.providers.deepseek.timeouts.total_ms";
    QTest::newRow("huge timeout")
        << QByteArray(R"({"providers":{"openai":{"timeouts":{"connect_ms":1e12}}}})")
        << "gateway.providers.openai.timeouts.connect_ms";
    QTest::newRow("negative rest") << QByteArray(R"({"providers":{"openai":{"key_rest_ms":-5}}})")
                                   << "gateway.providers.openai.key_rest_ms";
    QTest::newRow("negative refresh")
        << QByteArray(R"({"providers":{"openrouter":{"refresh_minutes":-1}}})")
        << "gateway.providers.openrouter.refresh_minutes";
    QTest::newRow("negative keepalive")
        << QByteArray(R"({"keepalive_ms":-1})") << "gateway.keepalive_ms";
    QTest::newRow("slash in name")
        << QByteArray(R"({"providers":{"a/b":{"base_url":"https://x.example"}}})") << "'a/b'";
    QTest::newRow("bad price override")
        << QByteArray(R"({"providers":{"openrouter":{"price_overrides":{"m":{"input":"abc"}}}}})")
        << "gateway.providers.openrouter.price_overrides.m.input";
    QTest::newRow("negative price override")
        << QByteArray(R"({"providers":{"openrouter":{"price_overrides":{"m":{"output":"-1"}}}}})")
        << "gateway.providers.openrouter.price_overrides.m.output";
    QTest::newRow("models not array") << QByteArray(R"({"models":{}})") << "gateway.models";
    QTest::newRow("model unknown endpoint")
        << QByteArray(R"({"models":[{"id":"m1","provider":"openai","endpoints":["embeddings"]}]})")
        << "gateway.models: model m1: unknown endpoint 'embeddings'";
    QTest::newRow("model without provider")
        << QByteArray(R"({"models":[{"id":"m1","endpoints":["responses"]}]})")
        << "gateway.models: model m1";
    QTest::newRow("model max_output_tokens zero")
        << QByteArray(R"({"models":[{"id":"m1","provider":"openai","max_output_tokens":0}]})")
        << "model m1: max_output_tokens";
    QTest::newRow("model max_output_tokens fraction")
        << QByteArray(R"({"models":[{"id":"m1","provider":"openai","max_output_tokens":1.5}]})")
        << "model m1: max_output_tokens";
    QTest::newRow("model max_output_tokens string")
        << QByteArray(R"({"models":[{"id":"m1","provider":"openai","max_output_tokens":"9"}]})")
        << "model m1: max_output_tokens";
    QTest::newRow("model max_output_tokens huge")
        << QByteArray(R"({"models":[{"id":"m1","provider":"openai","max_output_tokens":2e9}]})")
        << "model m1: max_output_tokens";
    QTest::newRow("model context_window negative")
        << QByteArray(R"({"models":[{"id":"m1","provider":"openai","context_window":-5}]})")
        << "model m1: context_window";
    QTest::newRow("default_max_output_tokens zero")
        << QByteArray(R"({"default_max_output_tokens":0})") << "gateway.default_max_output_tokens";
    QTest::newRow("default_context_window string")
        << QByteArray(R"({"default_context_window":"big"})") << "gateway.default_context_window";
    QTest::newRow("model bad price")
        << QByteArray(R"({"models":[{"id":"m1","provider":"openai","pricing":{"input":1}}]})")
        << "pricing.input";
}

void TestLlm::config_errors()
{
    QFETCH(QByteArray, json);
    QFETCH(QString, field);
    const QString error = configError(json);
    QVERIFY2(!error.isEmpty(), "no error");
    QVERIFY2(error.contains(field), qPrintable(error));
}

void TestLlm::config_fractionalMilliseconds_data()
{
    QTest::addColumn<QByteArray>("provider");
    QTest::addColumn<QString>("field");
    QTest::newRow("total_ms") << QByteArray(R"({"timeouts":{"total_ms":30000.5}})") << "total_ms";
    QTest::newRow("idle_ms") << QByteArray(R"({"timeouts":{"idle_ms":60000.5}})") << "idle_ms";
    QTest::newRow("key_rest_ms") << QByteArray(R"({"key_rest_ms":1000.5})") << "key_rest_ms";
}

void TestLlm::config_fractionalMilliseconds()
{
    // A number that is not a whole count of milliseconds must be refused (naming the field) or
    // rounded; it must not silently become 0, which switches the timeout off.
    QFETCH(QByteArray, provider);
    QFETCH(QString, field);
    const QByteArray json = R"({"providers":{"openai":)" + provider + "}}";
    const QString error = configError(json);
    if (!error.isEmpty()) {
        QVERIFY2(error.contains(field), qPrintable(error));
        return;
    }
    const ProviderConfig *p = GatewayConfig::fromJson(obj(json)).provider("openai");
    const int value = field == u"total_ms"  ? p->totalTimeoutMs
                      : field == u"idle_ms" ? p->idleTimeoutMs
                                            : p->restMs;
    QVERIFY2(value > 0, qPrintable(QStringLiteral("%1 became %2").arg(field).arg(value)));
}

void TestLlm::config_keysFromEnvironmentStayOutOfTheFile()
{
    // "keys_env ... keeps the secret out of the file": saving the config (what the providers
    // panel does after any edit) must not write those keys into the file.
    qputenv("SY_TST_LLM_SECRET", "sk-env-secret-0123456789");
    const GatewayConfig g = GatewayConfig::fromJson(
        obj(R"({"providers":{"openai":{"keys_env":"SY_TST_LLM_SECRET"}}})"));
    qunsetenv("SY_TST_LLM_SECRET");
    QCOMPARE(g.provider("openai")->allKeys(), QStringList{"sk-env-secret-0123456789"});
    QTemporaryDir dir;
    const QString path = dir.filePath("config.json");
    QCOMPARE(g.saveTo(path), QString());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray written = f.readAll();
    QVERIFY2(!written.contains("sk-env-secret-0123456789"), written.constData());
    QVERIFY(written.contains("SY_TST_LLM_SECRET")); // the variable's name is kept
}

void TestLlm::config_roundTrip()
{
    GatewayConfig g = GatewayConfig::fromJson(obj(R"J({
        "auto_model":"vendorB-5.4",
        "keepalive_ms":1234,
        "providers":{
            "openai":{"base_url":"https://proxy.example/v1","keys":["sk-1","sk-2"],
                      "timeouts":{"connect_ms":1,"first_byte_ms":2,"idle_ms":3,"total_ms":4,
                                  "messages_ms":5},"key_rest_ms":6},
            "openrouter":{"refresh_minutes":7,"keys":["or-1"],
                          "price_overrides":{"vendor/a":{"input":"0.000000001","output":"3",
                                                         "cache_read":"0.1","cache_write":"0.2"}}},
            "extra":{"type":"catalog","base_url":"http://gw.example:8080/api/v1"}
        },
        "default_max_output_tokens":4000,
        "default_context_window":30000,
        "models":[{"id":"my-model","owned_by":"me","provider":"anthropic","upstream_model":"up",
                   "endpoints":["messages"],"pricing":{"input":"1","output":"2.5",
                   "cache_read":"0.000000001","cache_write":"9"},"max_output_tokens":321,
                   "context_window":654}]
    })J"));
    const QJsonObject json = g.toJson();
    const GatewayConfig back = GatewayConfig::fromJson(json);
    QCOMPARE(canon(back.toJson()), canon(json));
    // Field by field, for what toJson might drop.
    QCOMPARE(back.autoModel, g.autoModel);
    QCOMPARE(back.keepAliveMs, 1234);
    QCOMPARE(back.providers.size(), g.providers.size());
    for (const ProviderConfig &p : g.providers) {
        const ProviderConfig *q = back.provider(p.name);
        QVERIFY2(q, qPrintable(p.name));
        QCOMPARE(q->type, p.type);
        QCOMPARE(q->baseUrl, p.baseUrl);
        QCOMPARE(q->keys, p.keys);
        QCOMPARE(q->connectTimeoutMs, p.connectTimeoutMs);
        QCOMPARE(q->firstByteTimeoutMs, p.firstByteTimeoutMs);
        QCOMPARE(q->idleTimeoutMs, p.idleTimeoutMs);
        QCOMPARE(q->totalTimeoutMs, p.totalTimeoutMs);
        QCOMPARE(q->messagesTimeoutMs, p.messagesTimeoutMs);
        QCOMPARE(q->restMs, p.restMs);
        QCOMPARE(q->refreshMinutes, p.refreshMinutes);
        QCOMPARE(q->priceOverrides.keys(), p.priceOverrides.keys());
        for (auto it = p.priceOverrides.begin(); it != p.priceOverrides.end(); ++it) {
            const ModelPrice b = q->priceOverrides.value(it.key());
            QCOMPARE(b.input, it->input);
            QCOMPARE(b.output, it->output);
            QCOMPARE(b.cacheRead, it->cacheRead);
            QCOMPARE(b.cacheWrite, it->cacheWrite);
        }
    }
    QCOMPARE(back.provider("openai")->connectTimeoutMs, 1);
    QCOMPARE(back.provider("openrouter")->priceOverrides.value("vendor/a").input, 1LL);
    QCOMPARE(back.models.size(), 1);
    const ModelEntry &m = back.models.first();
    QCOMPARE(m.id, QStringLiteral("my-model"));
    QCOMPARE(m.ownedBy, QStringLiteral("me"));
    QCOMPARE(m.provider, QStringLiteral("anthropic"));
    QCOMPARE(m.upstreamModel, QStringLiteral("up"));
    QCOMPARE(m.endpoints, QStringList{"messages"});
    QCOMPARE(m.price.input, 1'000'000'000LL);
    QCOMPARE(m.price.output, 2'500'000'000LL);
    QCOMPARE(m.price.cacheRead, 1LL);
    QCOMPARE(m.price.cacheWrite, 9'000'000'000LL);
    QCOMPARE(m.maxOutputTokens, 321LL);
    QCOMPARE(m.contextWindow, 654LL);
    QCOMPARE(back.defaultMaxOutputTokens, 4'000LL);
    QCOMPARE(back.defaultContextWindow, 30'000LL);
}

void TestLlm::config_saveTo()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("config.json");
    const QJsonObject other{{"server", QJsonObject{{"max_connections", 5}}},
                            {"rate_limits", obj(R"({"default":{"chat":60}})")},
                            {"gateway", obj(R"({"keepalive_ms":1})")},
                            {"unknown_section", QJsonArray{1, "two"}}};
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QJsonDocument(other).toJson());
    }
    GatewayConfig g = GatewayConfig::fromJson(
        obj(R"({"providers":{"openai":{"keys":["sk-secret-123456789"]}},"keepalive_ms":777})"));
    QCOMPARE(g.saveTo(path), QString());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject saved = obj(f.readAll());
    QCOMPARE(canon(saved.value("server")), canon(other.value("server")));
    QCOMPARE(canon(saved.value("rate_limits")), canon(other.value("rate_limits")));
    QCOMPARE(canon(saved.value("unknown_section")), canon(other.value("unknown_section")));
    QCOMPARE(canon(saved.value("gateway")), canon(g.toJson()));
    QCOMPARE(GatewayConfig::fromJson(saved.value("gateway").toObject()).keepAliveMs, 777);
    // It holds upstream keys: readable by the owner only.
    const QFileDevice::Permissions perms = QFile::permissions(path);
    QVERIFY(perms & QFileDevice::ReadOwner);
    QVERIFY(!(perms & (QFileDevice::ReadGroup | QFileDevice::ReadOther)));

    // A new file is created.
    const QString fresh = dir.filePath("new.json");
    QCOMPARE(g.saveTo(fresh), QString());
    QFile n(fresh);
    QVERIFY(n.open(QIODevice::ReadOnly));
    const QJsonObject created = obj(n.readAll());
    QCOMPARE(created.keys(), QStringList{"gateway"});
}

void TestLlm::config_saveKeepsOtherGatewaySettings()
{
    // The providers panel saves the section this struct holds; settings of the section it does
    // not hold (min_reservation, read by the family) stay, and what it holds is replaced whole.
    QTemporaryDir dir;
    const QString path = dir.filePath("config.json");
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"gateway":{"min_reservation":"0.5","keepalive_ms":1,"default_context_window":9,
                    "models":[{"id":"old","provider":"openai"}]}})");
    }
    const GatewayConfig g = GatewayConfig::fromJson(obj(R"({"keepalive_ms":777})"));
    QCOMPARE(g.saveTo(path), QString());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject section = obj(f.readAll()).value("gateway").toObject();
    QCOMPARE(section.value("min_reservation").toString(), QStringLiteral("0.5"));
    QCOMPARE(section.value("keepalive_ms").toInt(), 777);
    QVERIFY(!section.contains("models"));
    QVERIFY(!section.contains("default_context_window"));
}

void TestLlm::config_saveRefusesNonJson_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::newRow("text") << QByteArray("server:\n  port: 8080\n");
    QTest::newRow("array") << QByteArray("[1,2]");
    QTest::newRow("truncated") << QByteArray("{\"server\":{");
    QTest::newRow("empty") << QByteArray();
}

void TestLlm::config_saveRefusesNonJson()
{
    QFETCH(QByteArray, content);
    QTemporaryDir dir;
    const QString path = dir.filePath("config.json");
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(content);
    }
    const QString error = GatewayConfig::defaults().saveTo(path);
    QVERIFY(!error.isEmpty());
    QVERIFY2(error.contains(path), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), content);
}

void TestLlm::config_maskKey_data()
{
    QTest::addColumn<int>("length");
    for (int n : {0, 1, 4, 8, 9, 12, 13, 16, 20, 51, 164})
        QTest::addRow("%d", n) << n;
}

void TestLlm::config_maskKey()
{
    QFETCH(int, length);
    QString key;
    for (int i = 0; i < length; ++i)
        key.append(QChar(u'A' + (i % 26)));
    const QString masked = ProviderConfig::maskKey(key);
    int revealed = 0;
    for (QChar c : masked)
        if (c != QChar(0x2022))
            ++revealed;
    QVERIFY2(revealed <= 8, qPrintable(masked));
    QVERIFY(!masked.isEmpty());
    if (length > 0)
        QVERIFY(masked != key);
    if (length >= 16) {
        QCOMPARE(masked.left(4), key.left(4));
        QCOMPARE(masked.right(4), key.right(4));
    }
}

// --- 7. ProviderRegistry ---------------------------------------------------------------------

void TestLlm::registry_resolveAuto()
{
    ProviderRegistry registry(GatewayConfig::defaults(), QString());
    const auto s = registry.snapshot();
    QVERIFY(s);
    const ResolvedModel r = ProviderRegistry::resolve(*s, "auto", "chat.completions");
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QCOMPARE(r.entry.id, QStringLiteral("vendorB-6-luna"));
    QCOMPARE(r.provider.name, QStringLiteral("openai"));
    QCOMPARE(r.entry.price.input, 400'000'000LL);
    for (const char *endpoint : {"responses", "messages"}) {
        const ResolvedModel e = ProviderRegistry::resolve(*s, "auto", endpoint);
        QVERIFY2(!e.error.isEmpty(), endpoint);
        QVERIFY2(e.error.contains(QLatin1String("/v1/chat/completions")), qPrintable(e.error));
        QVERIFY(e.entry.id.isEmpty());
    }
    // A configured auto target.
    GatewayConfig g = GatewayConfig::defaults();
    g.autoModel = QStringLiteral("vendorA-haiku-4-5");
    ProviderRegistry other(g, QString());
    const ResolvedModel h =
        ProviderRegistry::resolve(*other.snapshot(), "auto", "chat.completions");
    QCOMPARE(h.entry.id, QStringLiteral("vendorA-haiku-4-5"));
    QCOMPARE(h.provider.type, ProviderType::Anthropic);
}

void TestLlm::registry_resolveWrongEndpoint_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("endpoint");
    QTest::addColumn<QString>("wrongPath");
    QTest::addColumn<QStringList>("rightPaths");
    QTest::newRow("vendorB on messages")
        << "vendorB-6-luna"
        << "messages"
        << "/v1/messages" << QStringList{"/v1/chat/completions", "/v1/responses"};
    QTest::newRow("vendorA on responses")
        << "vendorA-sonnet-5"
        << "responses"
        << "/v1/responses" << QStringList{"/v1/chat/completions", "/v1/messages"};
    QTest::newRow("vendorC on responses")
        << "vendorC-v4-pro"
        << "responses"
        << "/v1/responses" << QStringList{"/v1/chat/completions", "/v1/messages"};
}

void TestLlm::registry_resolveWrongEndpoint()
{
    QFETCH(QString, model);
    QFETCH(QString, endpoint);
    QFETCH(QString, wrongPath);
    QFETCH(QStringList, rightPaths);
    ProviderRegistry registry(GatewayConfig::defaults(), QString());
    const ResolvedModel r = ProviderRegistry::resolve(*registry.snapshot(), model, endpoint);
    QVERIFY(!r.error.isEmpty());
    QVERIFY2(r.error.contains(model), qPrintable(r.error));
    QVERIFY2(r.error.contains(wrongPath), qPrintable(r.error));
    for (const QString &p : rightPaths)
        QVERIFY2(r.error.contains(p), qPrintable(r.error));
    // And on the right endpoints it resolves.
    const ResolvedModel ok =
        ProviderRegistry::resolve(*registry.snapshot(), model, "chat.completions");
    QVERIFY2(ok.error.isEmpty(), qPrintable(ok.error));
    QCOMPARE(ok.entry.id, model);
}

void TestLlm::registry_resolveUnknown()
{
    ProviderRegistry registry(GatewayConfig::defaults(), QString());
    const auto s = registry.snapshot();
    for (const char *model : {"gpt-nope", "", "AUTO", "vendorb-6-luna", "vendorB-6-luna "}) {
        const ResolvedModel r = ProviderRegistry::resolve(*s, model, "chat.completions");
        QVERIFY2(!r.error.isEmpty(), model);
        QVERIFY2(r.error.contains(QStringLiteral("'%1'").arg(QLatin1String(model))),
                 qPrintable(r.error));
        QVERIFY(r.entry.id.isEmpty());
    }
}

void TestLlm::registry_parseCatalog()
{
    const QHash<QString, CatalogModel> models = ProviderRegistry::parseCatalog(kOpenRouterList);
    QStringList ids = models.keys();
    ids.sort();
    QCOMPARE(ids,
             (QStringList{"vendor/free", "vendor/model-a", "vendor/no-pricing", "vendor/numeric"}));
    const CatalogModel a = models.value("vendor/model-a");
    QCOMPARE(a.name, QStringLiteral("Model A"));
    // $0.000003 per token = 3 credits per 1M tokens = 3 * 10^9 units.
    QCOMPARE(a.price.input, 3'000'000'000LL);
    QCOMPARE(a.price.output, 15'000'000'000LL);
    QCOMPARE(a.price.cacheRead, 300'000'000LL);
    QCOMPARE(a.price.cacheWrite, 3'750'000'000LL);
    QVERIFY(!a.overridden);
    QCOMPARE(models.value("vendor/free").price.input, 0LL);
    QCOMPARE(models.value("vendor/numeric").price.input, 2'000'000'000LL);
    QCOMPARE(models.value("vendor/numeric").price.output, 4'000'000'000LL);
    QCOMPARE(models.value("vendor/numeric").name, QStringLiteral("vendor/numeric"));
    QCOMPARE(models.value("vendor/no-pricing").price.output, 0LL);
    // Smallest representable price: 10^-15 credits per token = 1 unit per 1M tokens.
    const auto tiny = ProviderRegistry::parseCatalog(
        R"({"data":[{"id":"t","pricing":{"prompt":"0.000000000000001"}}]})");
    QCOMPARE(tiny.value("t").price.input, 1LL);
}

void TestLlm::registry_parseCatalogMalformed()
{
    for (const char *bad : {"", "not json", "[]", R"({"data":{}})", R"({"models":[]})"}) {
        bool threw = false;
        try {
            ProviderRegistry::parseCatalog(bad);
        } catch (const std::runtime_error &) {
            threw = true;
        }
        QVERIFY2(threw, bad);
    }
    QVERIFY(ProviderRegistry::parseCatalog(R"({"data":[]})").isEmpty());
}

void TestLlm::registry_resolveGateway()
{
    ProviderRegistry registry(GatewayConfig::defaults(), QString());
    GatewaySnapshot s = *registry.snapshot();
    const QString id = QStringLiteral("gateway/openrouter/vendor/model-a");

    // Not loaded yet.
    ResolvedModel r = ProviderRegistry::resolve(s, id, "chat.completions");
    QVERIFY(!r.error.isEmpty());
    QVERIFY2(r.error.contains(QLatin1String("not been loaded")), qPrintable(r.error));
    QVERIFY2(r.error.contains(id), qPrintable(r.error));

    s.live.insert(QStringLiteral("openrouter"), ProviderRegistry::parseCatalog(kOpenRouterList));
    r = ProviderRegistry::resolve(s, id, "chat.completions");
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QCOMPARE(r.entry.id, id);
    QCOMPARE(r.entry.provider, QStringLiteral("openrouter"));
    QCOMPARE(r.entry.upstreamModel, QStringLiteral("vendor/model-a"));
    QCOMPARE(r.entry.endpoints, QStringList{"chat.completions"});
    QCOMPARE(r.entry.price.input, 3'000'000'000LL);
    QCOMPARE(r.entry.price.output, 15'000'000'000LL);
    QCOMPARE(r.provider.name, QStringLiteral("openrouter"));
    QCOMPARE(r.provider.type, ProviderType::Catalog);
    // 1000 prompt tokens at 3 credits per 1M: 0.003 credits = 3,000,000 units.
    QCOMPARE(usage(1000, 0).cost(r.entry.price), 3'000'000LL);

    // Loaded, but not in it (the variable-price model was skipped).
    r = ProviderRegistry::resolve(s, "gateway/openrouter/vendor/variable", "chat.completions");
    QVERIFY2(r.error.contains(QLatin1String("not in the openrouter catalog")), qPrintable(r.error));
    // Other endpoints, non-catalog providers, malformed IDs.
    r = ProviderRegistry::resolve(s, id, "responses");
    QVERIFY2(r.error.contains(QLatin1String("/v1/chat/completions")), qPrintable(r.error));
    r = ProviderRegistry::resolve(s, id, "messages");
    QVERIFY(!r.error.isEmpty());
    for (const char *bad :
         {"gateway/openai/vendorB-6-luna", "gateway/openrouter/", "gateway/openrouter", "gateway/",
          "gateway//vendor/model-a", "gateway/nope/vendor/model-a"}) {
        r = ProviderRegistry::resolve(s, bad, "chat.completions");
        QVERIFY2(!r.error.isEmpty(), bad);
        QVERIFY2(r.error.contains(QLatin1String(bad)), qPrintable(r.error));
    }
}

void TestLlm::registry_liveLimits()
{
    // A live list's limits (OpenRouter's top_provider.max_completion_tokens and context_length),
    // else the gateway's defaults.
    const QHash<QString, CatalogModel> models = ProviderRegistry::parseCatalog(R"J({"data":[
      {"id":"v/stated","pricing":{"prompt":"0.000001"},"context_length":100000,
       "top_provider":{"context_length":90000,"max_completion_tokens":8192}},
      {"id":"v/top-only","pricing":{"prompt":"0.000001"},
       "top_provider":{"context_length":70000,"max_completion_tokens":null}},
      {"id":"v/bad","pricing":{"prompt":"0.000001"},"context_length":-1,
       "top_provider":{"max_completion_tokens":"lots"}},
      {"id":"v/none","pricing":{"prompt":"0.000001"}}]})J");
    QCOMPARE(models.value("v/stated").maxOutputTokens, 8'192LL);
    QCOMPARE(models.value("v/stated").contextWindow, 100'000LL);
    QCOMPARE(models.value("v/top-only").maxOutputTokens, 0LL);
    QCOMPARE(models.value("v/top-only").contextWindow, 70'000LL);
    QCOMPARE(models.value("v/bad").maxOutputTokens, 0LL);
    QCOMPARE(models.value("v/bad").contextWindow, 0LL);

    GatewayConfig config = GatewayConfig::fromJson(obj(R"({"default_max_output_tokens":1234})"));
    ProviderRegistry registry(config, QString());
    GatewaySnapshot s = *registry.snapshot();
    s.live.insert(QStringLiteral("openrouter"), models);
    auto resolved = [&](const char *id) {
        return ProviderRegistry::resolve(s, QStringLiteral("gateway/openrouter/") + id,
                                         "chat.completions")
            .entry;
    };
    QCOMPARE(resolved("v/stated").maxOutputTokens, 8'192LL);
    QCOMPARE(resolved("v/stated").contextWindow, 100'000LL);
    QCOMPARE(resolved("v/none").maxOutputTokens, 1'234LL);
    QCOMPARE(resolved("v/none").contextWindow, GatewayConfig::kDefaultContextWindow);
    QCOMPARE(resolved("v/top-only").contextWindow, 70'000LL);
}

void TestLlm::registry_rejectsBadConfig()
{
    GatewayConfig g = GatewayConfig::defaults();
    ModelEntry m;
    m.id = QStringLiteral("orphan");
    m.provider = QStringLiteral("nowhere");
    m.endpoints = {QStringLiteral("chat.completions")};
    g.models.append(m);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, ProviderRegistry(g, QString()));
    // A named model on a catalog provider is refused: those are gateway/... IDs.
    GatewayConfig c = GatewayConfig::defaults();
    m.provider = QStringLiteral("openrouter");
    c.models.append(m);
    ProviderRegistry registry(GatewayConfig::defaults(), QString());
    QVERIFY(!registry.apply(c).isEmpty());
    // The failed apply left the previous snapshot.
    QVERIFY(!registry.snapshot()->catalog.find("orphan"));
}

void TestLlm::registry_pickKeyRoundRobin()
{
    ProviderRegistry registry(GatewayConfig::defaults(), QString());
    ProviderConfig p = *registry.config().provider("openai");
    QCOMPARE(registry.pickKey(p, {}), QString()); // no keys
    p.keys = {"k1", "k2", "k3"};
    QStringList order;
    for (int i = 0; i < 7; ++i)
        order.append(registry.pickKey(p, {}));
    QCOMPARE(order, (QStringList{"k1", "k2", "k3", "k1", "k2", "k3", "k1"}));
    // Another provider has its own rotation.
    ProviderConfig q = *registry.config().provider("anthropic");
    q.keys = {"a1", "a2"};
    QCOMPARE(registry.pickKey(q, {}), QStringLiteral("a1"));
    QCOMPARE(registry.pickKey(p, {}), QStringLiteral("k2"));
    QCOMPARE(registry.pickKey(q, {}), QStringLiteral("a2"));
    // A single key is always that key.
    ProviderConfig one = *registry.config().provider("deepseek");
    one.keys = {"only"};
    for (int i = 0; i < 3; ++i)
        QCOMPARE(registry.pickKey(one, {}), QStringLiteral("only"));
}

void TestLlm::registry_restKey()
{
    ProviderRegistry registry(GatewayConfig::defaults(), QString());
    ProviderConfig p = *registry.config().provider("openai");
    p.keys = {"k1", "k2", "k3"};
    p.restMs = 60'000;
    QCOMPARE(registry.pickKey(p, {}), QStringLiteral("k1"));
    registry.restKey(p, "k2");
    QStringList order;
    for (int i = 0; i < 4; ++i)
        order.append(registry.pickKey(p, {}));
    QCOMPARE(order, (QStringList{"k3", "k1", "k3", "k1"}));
    // A zero rest is over at once.
    ProviderConfig z = p;
    z.restMs = 0;
    registry.restKey(z, "k3");
    QStringList after;
    for (int i = 0; i < 2; ++i)
        after.append(registry.pickKey(p, {}));
    QVERIFY2(after.contains("k3") && !after.contains("k2"), qPrintable(after.join(',')));
}

void TestLlm::registry_allRested()
{
    ProviderRegistry registry(GatewayConfig::defaults(), QString());
    ProviderConfig p = *registry.config().provider("openai");
    p.keys = {"k1", "k2", "k3"};
    ProviderConfig longRest = p, shortRest = p, midRest = p;
    longRest.restMs = 90'000;
    shortRest.restMs = 10'000;
    midRest.restMs = 40'000;
    registry.restKey(longRest, "k1");
    registry.restKey(shortRest, "k2");
    registry.restKey(midRest, "k3");
    // Every key rests: the one resting shortest rather than none.
    QCOMPARE(registry.pickKey(p, {}), QStringLiteral("k2"));
    QCOMPARE(registry.pickKey(p, {}), QStringLiteral("k2"));
    // ... among the untried ones.
    QCOMPARE(registry.pickKey(p, {"k2"}), QStringLiteral("k3"));
    QCOMPARE(registry.pickKey(p, {"k2", "k3"}), QStringLiteral("k1"));
    QCOMPARE(registry.pickKey(p, {"k1", "k2", "k3"}), QString());
}

void TestLlm::registry_tried()
{
    ProviderRegistry registry(GatewayConfig::defaults(), QString());
    ProviderConfig p = *registry.config().provider("openai");
    p.keys = {"k1", "k2", "k3"};
    const QString first = registry.pickKey(p, {});
    QCOMPARE(first, QStringLiteral("k1"));
    QStringList tried{first};
    const QString second = registry.pickKey(p, tried);
    QCOMPARE(second, QStringLiteral("k2"));
    tried.append(second);
    QCOMPARE(registry.pickKey(p, tried), QStringLiteral("k3"));
    tried.append(QStringLiteral("k3"));
    QCOMPARE(registry.pickKey(p, tried), QString());
    // Tried keys are skipped wherever the rotation stands.
    for (int i = 0; i < 6; ++i) {
        const QString k = registry.pickKey(p, {"k2"});
        QVERIFY2(k == u"k1" || k == u"k3", qPrintable(k));
    }
}

QTEST_GUILESS_MAIN(TestLlm)
#include "tst_llm.moc"
