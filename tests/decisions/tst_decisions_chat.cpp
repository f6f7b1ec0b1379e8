// The chat evaluator over HTTP (server/decisions/README.md, "Chat evaluator"): decisions asked
// of the gateway's chat models through the fake upstream. The three answer shapes from the
// log-probabilities the fake gives (compared with what its top_logprobs imply, read by
// replaying the very request the server sent), from the probabilities a model wrote (no
// logprobs, and a messages provider's forced tool), catalog ids, auto and gateway/ models,
// billing exactly as the gateway bills that chat call, 402 before any upstream call, upstream
// failures and wrong answers unbilled, the option off, the allow-list and the shared chat
// bucket.

#include "DecisionsTestSupport.h"
#include "FakeUpstreamProcess.h"
#include "llm/GatewayFamily.h"
#include "llm/ProviderRegistry.h"
#include "llm/Relay.h"
#include "Money.h"

#include <cmath>
#include <QAtomicInt>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

using namespace DecisionsTest;

namespace {

const QString kOpenAiKey = QStringLiteral("sk-upstream-openai-SECRET-0123456789");
const QString kAnthropicKey = QStringLiteral("sk-ant-upstream-SECRET-9876543210");

// The fake upstream, logging every request it gets.
struct Fake
{
    Fake() { running = process.start({QStringLiteral("--log"), dir.filePath("fake.log")}); }
    QTemporaryDir dir;
    FakeUpstreamProcess process;
    bool running = false;

    int requests() const
    {
        return HttpClient(process.port()).get("/fake/stats").json().value("requests").toInt();
    }
    // The last request the fake got on a path, as logged: {path, headers, body (raw text)}.
    QJsonObject lastRequest(const QString &path) const
    {
        QFile f(dir.filePath("fake.log"));
        QJsonObject last;
        if (f.open(QIODevice::ReadOnly))
            for (const QByteArray &line : f.readAll().split('\n'))
                if (const QJsonObject o = QJsonDocument::fromJson(line).object();
                    o.value("path").toString() == path)
                    last = o;
        return last;
    }
    // What the fake answers to the same body again (its answers are deterministic).
    QJsonObject replay(const QString &path, const QJsonObject &logged) const
    {
        QList<QPair<QByteArray, QByteArray>> headers{{"Content-Type", "application/json"},
                                                     {"Authorization", "Bearer replay"}};
        if (path.endsWith(u"/messages"))
            headers.append(qMakePair(QByteArray("anthropic-version"), QByteArray("2023-06-01")));
        return HttpClient(process.port())
            .request("POST", path.toUtf8(), headers, logged.value("body").toString().toUtf8())
            .json();
    }
};

// A chat completions upstream that answers every request with one canned answer, on a thread
// of its own (the test thread blocks in its HTTP client): for answers the fake does not give.
class CannedUpstream
{
public:
    explicit CannedUpstream(const QJsonObject &answer)
    {
        const QByteArray body = QJsonDocument(answer).toJson(QJsonDocument::Compact);
        m_response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                     QByteArray::number(body.size()) + "\r\n\r\n" + body;
        m_server.moveToThread(&m_thread);
        m_thread.start();
        QMetaObject::invokeMethod(
            &m_server,
            [this] {
                m_server.listen(QHostAddress::LocalHost, 0);
                QObject::connect(&m_server, &QTcpServer::newConnection, &m_server, [this] {
                    while (QTcpSocket *c = m_server.nextPendingConnection())
                        QObject::connect(c, &QTcpSocket::readyRead, c, [this, c] {
                            if (c->readAll().contains("\r\n\r\n")) {
                                m_requests.ref();
                                c->write(m_response);
                            }
                        });
                });
            },
            Qt::BlockingQueuedConnection);
    }
    ~CannedUpstream()
    {
        QMetaObject::invokeMethod(
            &m_server, [this] { m_server.close(); }, Qt::BlockingQueuedConnection);
        m_thread.quit();
        m_thread.wait();
    }
    QString base() const
    {
        return QStringLiteral("http://127.0.0.1:%1/v1").arg(m_server.serverPort());
    }
    int requests() const { return m_requests.loadRelaxed(); }

private:
    QThread m_thread;
    QTcpServer m_server;
    QByteArray m_response;
    QAtomicInt m_requests;
};

// What a test varies: the decisions family's chat_evaluator section (empty: none), the openai
// provider's URL (empty: the fake), the chat bucket, the credit granted (Rig).
struct Options
{
    QJsonObject evaluator{{"enabled", true}};
    QString openaiBase{};
    int chatPerMinute = 600;
    qint64 credit = Money::kUnitsPerCredit;
};

// The gateway on the fake (openai, anthropic and the openrouter catalog) and the decisions
// family's chat evaluator.
ServerSettings settingsFor(const Fake &fake, const Options &o = {})
{
    const QJsonObject providers{
        {"openai",
         QJsonObject{{"base_url", o.openaiBase.isEmpty() ? fake.process.base() : o.openaiBase},
                     {"keys", QJsonArray{kOpenAiKey, kOpenAiKey + "-2"}}}},
        {"anthropic",
         QJsonObject{{"base_url", fake.process.base()}, {"keys", QJsonArray{kAnthropicKey}}}},
        {"openrouter", QJsonObject{{"base_url", fake.process.base("/api/v1")},
                                   {"keys", QJsonArray{"sk-or-upstream"}},
                                   {"refresh_minutes", 0}}}};
    ServerSettings s = ServerSettings::defaults();
    s.tiers[QStringLiteral("default")].perMinute[QStringLiteral("chat")] = o.chatPerMinute;
    s.familySections.insert("gateway", QJsonObject{{"providers", providers}});
    if (!o.evaluator.isEmpty())
        s.familySections.insert("decisions", QJsonObject{{"chat_evaluator", o.evaluator}});
    return s;
}

// The fake, a server on SQLite routed to it, an API key with o.credit units.
struct Rig
{
    explicit Rig(const Options &o = {}) : f(QStringLiteral("sqlite"), settingsFor(fake, o))
    {
        if (ready()) {
            key = f.createKey();
            if (o.credit > 0)
                f.grant(o.credit);
        }
    }
    bool ready() const { return fake.running && f.ready(); }

    Fake fake;
    ServerFixture f;
    QByteArray key;
};

QJsonObject request(const QString &model, const QString &state)
{
    return {{"model", model},
            {"state", state},
            {"questions",
             QJsonObject{
                 {"polite",
                  QJsonObject{{"type", "noul"},
                              {"instructions", "Is the writer polite?"},
                              {"criteria", QJsonObject{{"true", "courteous"}, {"false", "rude"}}}}},
                 {"team", QJsonObject{{"type", "choice"},
                                      {"instructions", "Which team should answer?"},
                                      {"criteria", QJsonObject{{"billing", "invoices"},
                                                               {"sales", QJsonValue()},
                                                               {"support", "bugs"}}}}},
                 {"urgency",
                  QJsonObject{{"type", "score"},
                              {"instructions", "How urgent is it?"},
                              {"criteria", QJsonArray{"none", "low", "high", "critical"}}}}}}};
}

// The labels of the request's questions (ChatEvaluator's: options in id order).
const QHash<QString, QStringList> kLabels{
    {"polite", {"true", "false"}}, {"team", {"1", "2", "3"}}, {"urgency", {"0", "1", "2", "3"}}};
const QStringList kOptions{"billing", "sales", "support"};

ModelPrice catalogPrice(ServerFixture &f, const QString &id)
{
    return f.services().family<GatewayFamily>()->registry().snapshot()->catalog.find(id)->price;
}

// The distribution the fake's log-probabilities imply for a question: at the value token of
// its "answer" (the fake writes `"<id>"`, `:`, `{`, `"answer"`, `:`, value), exp(logprob) of
// each alternative that is a label, normalised.
QList<double> impliedByLogprobs(const QJsonObject &completion, const QString &id)
{
    const QJsonArray content = completion.value("choices")
                                   .toArray()
                                   .first()
                                   .toObject()
                                   .value("logprobs")
                                   .toObject()
                                   .value("content")
                                   .toArray();
    const QStringList labels = kLabels.value(id);
    QList<double> p(labels.size(), 0.0);
    for (qsizetype i = 0; i + 5 < content.size(); ++i) {
        if (content[i].toObject().value("token").toString() != u'"' + id + u'"')
            continue;
        for (const QJsonValue &alt : content[i + 5].toObject().value("top_logprobs").toArray()) {
            const qsizetype at = labels.indexOf(alt.toObject().value("token").toString());
            if (at >= 0)
                p[at] += std::exp(alt.toObject().value("logprob").toDouble());
        }
    }
    double total = 0;
    for (double x : p)
        total += x;
    for (double &x : p)
        x /= total;
    return p;
}

// The probabilities of an answer in label order.
QList<double> probabilitiesOf(const QJsonObject &answer)
{
    if (answer.value("type").toString() == u"noul") {
        const double yes = answer.value("probability").toDouble();
        return {yes, 1 - yes};
    }
    const QJsonValue p = answer.value("probabilities");
    QList<double> out;
    if (p.isArray())
        for (const QJsonValue &x : p.toArray())
            out.append(x.toDouble());
    else
        for (const QString &option : kOptions)
            out.append(p.toObject().value(option).toDouble());
    return out;
}

// Shapes and internal consistency: 4-decimal probabilities summing to exactly 1, the choice
// and confidence the most probable, the score weighted.
void checkShapes(const QJsonObject &answers, const QString &source)
{
    QCOMPARE(answers.keys(), (QStringList{"polite", "team", "urgency"}));
    for (const QString &id : answers.keys()) {
        const QJsonObject a = answers.value(id).toObject();
        QCOMPARE(a.value("probability_source").toString(), source);
        const QList<double> p = probabilitiesOf(a);
        qint64 units = 0;
        double top = 0;
        for (double x : p) {
            QVERIFY(x >= 0 && x <= 1);
            QVERIFY(std::abs(x * 10000 - std::round(x * 10000)) < 1e-6);
            units += qRound64(x * 10000);
            top = qMax(top, x);
        }
        QCOMPARE(units, 10000);
        if (id == u"polite")
            continue;
        QCOMPARE(a.value("confidence").toDouble(), top);
        if (id == u"team") {
            QCOMPARE(a.value("probabilities").toObject().keys(), kOptions);
            QCOMPARE(
                a.value("probabilities").toObject().value(a.value("choice").toString()).toDouble(),
                top);
        } else {
            double score = 0;
            for (qsizetype i = 0; i < p.size(); ++i)
                score += double(i) * p.at(i);
            QVERIFY(std::abs(a.value("score").toDouble() - score) < 1e-9);
            QCOMPARE(a.value("legend").toArray(), (QJsonArray{"none", "low", "high", "critical"}));
        }
    }
}

void checkClose(const QList<double> &got, const QList<double> &expected)
{
    QCOMPARE(got.size(), expected.size());
    for (qsizetype i = 0; i < got.size(); ++i)
        QVERIFY2(
            std::abs(got.at(i) - expected.at(i)) <= 0.0001 + 1e-9,
            qPrintable(QStringLiteral("%1: %2 vs %3").arg(i).arg(got.at(i)).arg(expected.at(i))));
}

} // namespace

class TestDecisionsChat : public QObject
{
    Q_OBJECT

private slots:
    void overChatWithLogprobs_data() { backends(); }
    void overChatWithLogprobs()
    {
        Fake fake;
        QVERIFY(fake.running);
        SY_START_SERVER(f, settingsFor(fake));
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const qint64 before = balance(f);
        const HttpReply r = post(
            f, "/v1/decisions",
            request("vendorB-5.4", "Your invoice was charged twice, sorry! [fake cache-read=3]"),
            key);
        QVERIFY2(r.status == 200, r.body.constData());
        const QJsonObject body = r.json();
        QVERIFY(body.value("id").toString().startsWith("dec-"));
        QCOMPARE(body.value("object").toString(), QStringLiteral("decision"));
        QCOMPARE(body.value("model").toString(), QStringLiteral("vendorB-5.4")); // as served
        const QJsonObject answers = body.value("answers").toObject();
        checkShapes(answers, QStringLiteral("logprobs"));

        // What the server asked for.
        const QJsonObject logged = fake.lastRequest("/v1/chat/completions");
        QVERIFY(logged.value("headers")
                    .toObject()
                    .value("authorization")
                    .toString()
                    .endsWith(kOpenAiKey.right(4)));
        const QJsonObject sent =
            QJsonDocument::fromJson(logged.value("body").toString().toUtf8()).object();
        QCOMPARE(sent.value("model").toString(), QStringLiteral("vendorB-5.4"));
        QCOMPARE(sent.value("logprobs"), QJsonValue(true));
        QCOMPARE(sent.value("top_logprobs").toInt(), 20);
        QCOMPARE(sent.value("temperature").toDouble(), 0.0);
        QCOMPARE(sent.value("max_completion_tokens").toInt(), 4096);
        QVERIFY(!sent.contains("stream"));
        const QJsonObject format = sent.value("response_format").toObject();
        QCOMPARE(format.value("type").toString(), QStringLiteral("json_schema"));
        QCOMPARE(format.value("json_schema").toObject().value("strict"), QJsonValue(true));

        // The probabilities are the ones the fake's top_logprobs imply.
        const QJsonObject completion = fake.replay("/v1/chat/completions", logged);
        for (const QString &id : kLabels.keys())
            checkClose(probabilitiesOf(answers.value(id).toObject()),
                       impliedByLogprobs(completion, id));

        // Billed as the gateway bills that chat call: its usage at the model's prices.
        const QJsonObject usage = completion.value("usage").toObject();
        const qint64 prompt = usage.value("prompt_tokens").toInteger();
        const qint64 output = usage.value("completion_tokens").toInteger();
        QCOMPARE(usage.value("prompt_tokens_details").toObject().value("cached_tokens").toInt(), 3);
        const TokenUsage chatUsage{prompt - 3, output, 3, 0, true, true};
        const qint64 cost = chatUsage.cost(catalogPrice(f, "vendorB-5.4"));
        QVERIFY(cost > 0);
        QCOMPARE(before - balance(f), cost);
        QCOMPARE(reportedCost(r.body), cost);
        QCOMPARE(body.value("usage").toObject().value("input_tokens").toInteger(), prompt);
        QCOMPARE(body.value("usage").toObject().value("output_tokens").toInteger(), output);
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].model, QStringLiteral("vendorB-5.4"));
        QCOMPARE(records[0].endpoint, QStringLiteral("/v1/decisions"));
        QCOMPARE(records[0].inputTokens, prompt - 3);
        QCOMPARE(records[0].cacheReadTokens, 3);
        QCOMPARE(records[0].outputTokens, output);
        QCOMPARE(records[0].cost, cost);
        QVERIFY(!records[0].estimated);
    }

    // A chat upstream that gives no log-probabilities: the probabilities the model wrote.
    void verbalizedWithoutLogprobs()
    {
        const QString content = QStringLiteral(
            "{\"polite\":{\"answer\":false,\"probabilities\":{\"true\":0.1,\"false\":0.3}},"
            "\"team\":{\"answer\":3,\"probabilities\":{\"1\":0.2,\"2\":1.7,\"3\":0.5}},"
            "\"urgency\":{\"answer\":1,\"probabilities\":{\"0\":0.1,\"1\":0.6,\"2\":0.2,"
            "\"3\":0.1}}}");
        CannedUpstream canned(QJsonObject{
            {"id", "chatcmpl-canned"},
            {"object", "chat.completion"},
            {"model", "vendorB-5.4-2026-01-01"},
            {"choices", QJsonArray{QJsonObject{
                            {"index", 0},
                            {"message", QJsonObject{{"role", "assistant"}, {"content", content}}},
                            {"logprobs", QJsonValue()},
                            {"finish_reason", "stop"}}}},
            {"usage", QJsonObject{{"prompt_tokens", 1000}, {"completion_tokens", 80}}}});
        Rig rig({.openaiBase = canned.base()});
        QVERIFY(rig.ready());
        auto &[fake, f, key] = rig;
        const qint64 before = balance(f);
        const HttpReply r = post(f, "/api/alpha/decisions", request("vendorB-5.4", "hi"), key);
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(canned.requests(), 1);
        const QJsonObject body = r.json();
        QCOMPARE(body.value("model").toString(), QStringLiteral("vendorB-5.4-2026-01-01"));
        const QJsonObject answers = body.value("answers").toObject();
        checkShapes(answers, QStringLiteral("verbalized"));
        QCOMPARE(answers.value("polite").toObject().value("probability").toDouble(), 0.25);
        // 1.7 counts as 1: {0.2, 1, 0.5} / 1.7.
        QCOMPARE(answers.value("team").toObject().value("choice").toString(),
                 QStringLiteral("sales"));
        checkClose(probabilitiesOf(answers.value("team").toObject()),
                   {0.2 / 1.7, 1 / 1.7, 0.5 / 1.7});
        QCOMPARE(answers.value("urgency").toObject().value("score").toDouble(), 1.3);
        const qint64 cost =
            TokenUsage{1000, 80, 0, 0, true, true}.cost(catalogPrice(f, "vendorB-5.4"));
        QCOMPARE(before - balance(f), cost);
        QCOMPARE(reportedCost(r.body), cost);
    }

    // A messages provider: the same prompt with the forced tool "answer", no logprobs.
    void anthropicForcedTool()
    {
        Rig rig;
        QVERIFY(rig.ready());
        auto &[fake, f, key] = rig;
        const qint64 before = balance(f);
        const HttpReply r = post(
            f, "/v1/decisions",
            request("vendorA-haiku-4-5", "Thanks a lot! [fake cache-read=2 cache-write=4]"), key);
        QVERIFY2(r.status == 200, r.body.constData());
        const QJsonObject answers = r.json().value("answers").toObject();
        checkShapes(answers, QStringLiteral("verbalized"));

        const QJsonObject logged = fake.lastRequest("/v1/messages");
        const QJsonObject headers = logged.value("headers").toObject();
        QCOMPARE(headers.value("anthropic-version").toString(), QStringLiteral("2023-06-01"));
        QVERIFY(headers.value("x-api-key").toString().endsWith(kAnthropicKey.right(4)));
        const QJsonObject sent =
            QJsonDocument::fromJson(logged.value("body").toString().toUtf8()).object();
        QCOMPARE(sent.value("tool_choice").toObject(),
                 (QJsonObject{{"type", "tool"}, {"name", "answer"}}));
        const QJsonObject tool = sent.value("tools").toArray().first().toObject();
        QCOMPARE(tool.value("name").toString(), QStringLiteral("answer"));
        QCOMPARE(tool.value("input_schema").toObject().value("required").toArray(),
                 (QJsonArray{"polite", "team", "urgency"}));
        QCOMPARE(sent.value("max_tokens").toInt(), 4096);
        QVERIFY(sent.value("system").toString().startsWith("You are an evaluator."));

        // The probabilities the tool input carries, clamped and normalised.
        const QJsonObject message = fake.replay("/v1/messages", logged);
        const QJsonObject input =
            message.value("content").toArray().first().toObject().value("input").toObject();
        for (const QString &id : kLabels.keys()) {
            const QJsonObject written =
                input.value(id).toObject().value("probabilities").toObject();
            QList<double> expected;
            double total = 0;
            for (const QString &label : kLabels.value(id)) {
                expected.append(qBound(0.0, written.value(label).toDouble(), 1.0));
                total += expected.last();
            }
            for (double &x : expected)
                x /= total;
            checkClose(probabilitiesOf(answers.value(id).toObject()), expected);
        }
        const QJsonObject usage = message.value("usage").toObject();
        const TokenUsage chatUsage{usage.value("input_tokens").toInteger(),
                                   usage.value("output_tokens").toInteger(),
                                   usage.value("cache_read_input_tokens").toInteger(),
                                   usage.value("cache_creation_input_tokens").toInteger(),
                                   true,
                                   true};
        QCOMPARE(chatUsage.cacheWrite, 4);
        const qint64 cost = chatUsage.cost(catalogPrice(f, "vendorA-haiku-4-5"));
        QCOMPARE(before - balance(f), cost);
        QCOMPARE(reportedCost(r.body), cost);
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].cacheWriteTokens, 4);
        QCOMPARE(records[0].cacheReadTokens, 2);
    }

    // `auto` and gateway/{provider}/{model} resolve as on chat completions; the usage record
    // names the model as asked, the price is the resolved model's.
    void autoAndGatewayModels()
    {
        Rig rig;
        QVERIFY(rig.ready());
        auto &[fake, f, key] = rig;
        ProviderRegistry &registry = f.services().family<GatewayFamily>()->registry();

        qint64 before = balance(f);
        HttpReply r = post(f, "/v1/decisions", request("auto", "auto please"), key);
        QVERIFY2(r.status == 200, r.body.constData());
        checkShapes(r.json().value("answers").toObject(), QStringLiteral("logprobs"));
        const QString target = registry.snapshot()->catalog.autoModel();
        QJsonObject logged = fake.lastRequest("/v1/chat/completions");
        QCOMPARE(QJsonDocument::fromJson(logged.value("body").toString().toUtf8())
                     .object()
                     .value("model")
                     .toString(),
                 registry.snapshot()->catalog.find(target)->upstreamModel);
        QJsonObject usage = fake.replay("/v1/chat/completions", logged).value("usage").toObject();
        qint64 cost = TokenUsage{usage.value("prompt_tokens").toInteger(),
                                 usage.value("completion_tokens").toInteger(),
                                 0,
                                 0,
                                 true,
                                 true}
                          .cost(catalogPrice(f, target));
        QCOMPARE(before - balance(f), cost);
        QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].model, QStringLiteral("auto"));

        // A live catalog model: priced from the upstream's list, max_tokens for OpenRouter.
        QSignalSpy refreshed(&registry, &ProviderRegistry::catalogRefreshed);
        registry.refreshCatalog(QStringLiteral("openrouter"));
        QVERIFY(refreshed.wait(5000));
        const auto live = registry.snapshot()->live.value(QStringLiteral("openrouter"));
        QVERIFY(live.contains("fakeai/echo-large"));
        const QString id = QStringLiteral("gateway/openrouter/fakeai/echo-large");
        before = balance(f);
        r = post(f, "/v1/decisions", request(id, "catalog"), key);
        QVERIFY2(r.status == 200, r.body.constData());
        checkShapes(r.json().value("answers").toObject(), QStringLiteral("logprobs"));
        logged = fake.lastRequest("/api/v1/chat/completions");
        const QJsonObject sent =
            QJsonDocument::fromJson(logged.value("body").toString().toUtf8()).object();
        QCOMPARE(sent.value("model").toString(), QStringLiteral("fakeai/echo-large"));
        QCOMPARE(sent.value("max_tokens").toInt(), 4096);
        QVERIFY(!sent.contains("max_completion_tokens"));
        usage = fake.replay("/api/v1/chat/completions", logged).value("usage").toObject();
        cost = TokenUsage{usage.value("prompt_tokens").toInteger(),
                          usage.value("completion_tokens").toInteger(),
                          0,
                          0,
                          true,
                          true}
                   .cost(live.value("fakeai/echo-large").price);
        QVERIFY(cost > 0);
        QCOMPARE(before - balance(f), cost);
        records = waitUsage(f, 2);
        QCOMPARE(records.size(), 2);
        QVERIFY(records[0].model == id || records[1].model == id);
    }

    void refusedBeforeTheUpstream()
    {
        Rig rig({.credit = 0});
        QVERIFY(rig.ready());
        auto &[fake, f, key] = rig;
        // No credit, then less than the gateway's minimum reservation (0.001).
        QCOMPARE(post(f, "/v1/decisions", request("vendorB-5.4", "x"), key).status, 402);
        f.grant(1000);
        QCOMPARE(post(f, "/v1/decisions", request("vendorB-5.4", "x"), key).status, 402);
        // The request is validated as for a decisions model.
        QJsonObject bad = request("vendorB-5.4", "x");
        bad.insert("state", "");
        const HttpReply r = post(f, "/v1/decisions", bad, key);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value("error").toObject().value("param").toString(),
                 QStringLiteral("state"));
        QCOMPARE(fake.requests(), 0);
        QCOMPARE(balance(f), 1000);
    }

    // The call holds its worst case as the gateway bounds a chat request: the output bound it
    // asks for (max_output_tokens 4,096 at vendorB-5.4's 10 credits per 1M) and the prompt
    // built from the state (a token a byte of the body sent upstream, plus 1,024, at 1.25 per
    // 1M). The output part and the allowance alone fall short by the prompt's bytes: a 402
    // before the upstream.
    void holdsTheCallsWorstCase()
    {
        Rig rig({.credit = 0});
        QVERIFY(rig.ready());
        auto &[fake, f, key] = rig;
        const qint64 withoutPrompt = 4096LL * 10'000 + 1024LL * 1'250;
        f.grant(withoutPrompt);
        const QJsonObject body = request("vendorB-5.4", QString(2000, u'x'));
        QCOMPARE(post(f, "/v1/decisions", body, key).status, 402);
        QCOMPARE(fake.requests(), 0);
        // The prompt (state, questions, instructions and schema) is under 20 KB.
        f.grant(20'000LL * 1'250);
        const HttpReply r = post(f, "/v1/decisions", body, key);
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(fake.requests(), 1);
        QVERIFY(balance(f) > 0);
    }

    void upstreamFailures_data()
    {
        QTest::addColumn<QString>("backend");
        QTest::addColumn<QString>("directive");
        QTest::addColumn<int>("status");
        for (const char *backend : {"sqlite", "postgres"}) {
            const QString b = QLatin1String(backend);
            QTest::addRow("%s 429", backend) << b << "[fake fault=429:7]" << 429;
            QTest::addRow("%s 500", backend) << b << "[fake fault=500 echo-key=1]" << 502;
            QTest::addRow("%s timeout", backend) << b << "[fake delay-ms=3000]" << 504;
        }
    }

    void upstreamFailures()
    {
        QFETCH(QString, directive);
        QFETCH(int, status);
        Fake fake;
        QVERIFY(fake.running);
        SY_START_SERVER(
            f, settingsFor(fake, {.evaluator = {{"enabled", true}, {"timeout_ms", 1000}}}));
        const QByteArray key = f.createKey();
        f.grant(Money::kUnitsPerCredit);
        const HttpReply r =
            post(f, "/v1/decisions", request("vendorB-5.4", "state " + directive), key);
        QCOMPARE(r.status, status);
        QCOMPARE(r.json().value("error").toObject().value("type").toString(),
                 status == 429 ? QStringLiteral("rate_limit_exceeded")
                               : QStringLiteral("upstream_error"));
        QVERIFY(!r.body.contains("SECRET"));
        if (status == 429)
            QCOMPARE(r.header("retry-after"), QByteArray("7"));
        QCOMPARE(balance(f), Money::kUnitsPerCredit);
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].cost, 0);
        QCOMPARE(records[0].status, status);
        QCOMPARE(records[0].model, QStringLiteral("vendorB-5.4"));
    }

    void answerNotTheExpectedJson_data()
    {
        QTest::addColumn<QString>("state");
        QTest::addColumn<QString>("what");
        QTest::newRow("cut at the output limit") << "x"
                                                 << "cut off at the output limit";
        QTest::newRow("another tool called") << "x [fake tool=1]"
                                             << "neither content nor a call of the tool 'answer'";
    }

    void answerNotTheExpectedJson()
    {
        QFETCH(QString, state);
        QFETCH(QString, what);
        Rig rig({.evaluator = {{"enabled", true}, {"max_output_tokens", 5}}});
        QVERIFY(rig.ready());
        auto &[fake, f, key] = rig;
        const HttpReply r = post(f, "/v1/decisions", request("vendorB-5.4", state), key);
        QCOMPARE(r.status, 502);
        const QJsonObject error = r.json().value("error").toObject();
        QCOMPARE(error.value("code").toString(), QStringLiteral("upstream_invalid_answer"));
        QVERIFY2(error.value("message").toString().contains(what),
                 qPrintable(error.value("message").toString()));
        QCOMPARE(fake.requests(), 1);
        // The upstream charged; the client is not (a failed request), the tokens are recorded.
        QCOMPARE(balance(f), Money::kUnitsPerCredit);
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].cost, 0);
        QVERIFY(records[0].outputTokens > 0);
    }

    void optionOff()
    {
        Rig rig({.evaluator = {}});
        QVERIFY(rig.ready());
        auto &[fake, f, key] = rig;
        HttpReply r = post(f, "/v1/decisions", request("vendorB-5.4", "x"), key);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value("error").toObject().value("code").toString(),
                 QStringLiteral("model_not_found"));
        QVERIFY(!r.errorMessage().contains("chat model"));
        QCOMPARE(fake.requests(), 0);
    }

    void unknownAndNotAllowed()
    {
        Rig rig({.evaluator = {{"enabled", true},
                               {"models", QJsonArray{"vendorB-5.4", "gateway/openrouter/*"}}}});
        QVERIFY(rig.ready());
        auto &[fake, f, key] = rig;
        HttpReply r = post(f, "/v1/decisions", request("no-such-model", "x"), key);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value("error").toObject().value("code").toString(),
                 QStringLiteral("model_not_found"));
        QCOMPARE(r.json().value("error").toObject().value("param").toString(),
                 QStringLiteral("model"));
        QVERIFY2(r.errorMessage().contains("Nor is it a chat model of the gateway"),
                 qPrintable(r.errorMessage()));
        for (const char *model : {"vendorB-5-nano", "auto", "vendorA-haiku-4-5"}) {
            r = post(f, "/v1/decisions", request(model, "x"), key);
            QCOMPARE(r.status, 400);
            QVERIFY2(r.errorMessage().contains("is not one this server evaluates decisions with"),
                     qPrintable(r.errorMessage()));
        }
        QCOMPARE(fake.requests(), 0);
        QCOMPARE(post(f, "/v1/decisions", request("vendorB-5.4", "x"), key).status, 200);
        // A decisions model is still a decisions model (its provider has no key here).
        QCOMPARE(post(f, "/v1/decisions", request("vendorD/evaluator-1.13", "x"), key).status, 503);
    }

    // Chat completions and both decisions paths take from one bucket.
    void sharesTheChatBucket()
    {
        Rig rig({.chatPerMinute = 2});
        QVERIFY(rig.ready());
        auto &[fake, f, key] = rig;
        const QByteArray chat =
            QJsonDocument(QJsonObject{{"model", "vendorB-5.4"},
                                      {"max_tokens", 64}, // held within the credit granted
                                      {"messages", QJsonArray{QJsonObject{{"role", "user"},
                                                                          {"content", "hi"}}}}})
                .toJson(QJsonDocument::Compact);
        QCOMPARE(f.client().postJson("/v1/chat/completions", chat, key).status, 200);
        QCOMPARE(post(f, "/v1/decisions", request("vendorB-5.4", "a"), key).status, 200);
        QCOMPARE(post(f, "/api/alpha/decisions", request("vendorB-5.4", "b"), key).status, 429);
        QCOMPARE(f.client().postJson("/v1/chat/completions", chat, key).status, 429);
    }
};

QTEST_GUILESS_MAIN(TestDecisionsChat)
#include "tst_decisions_chat.moc"
