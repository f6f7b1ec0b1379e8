// The chat evaluator's pure part (server/decisions/ChatEvaluator.h) without a server: the
// questions' labels, the schema and the chat request, the log-probability reading (tokens and
// labels to a distribution) with hostile inputs, the verbalized fallback, the rounding, the
// contract's shapes, and the chat_evaluator config section with its errors.

#include "ChatEvaluator.h"
#include "DecisionRequest.h"
#include "DecisionsConfig.h"
#include "DecisionsFamily.h"

#include <cmath>
#include <iterator>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QTest>

using namespace ChatEvaluator;

namespace {

QJsonObject obj(const char *json)
{
    QJsonParseError e;
    const QJsonDocument d = QJsonDocument::fromJson(json, &e);
    if (!d.isObject())
        qFatal("bad test JSON: %s", qPrintable(e.errorString()));
    return d.object();
}

const char *kBody = R"({
    "model":"vendorB-5.4",
    "state":"The invoice was charged twice.",
    "questions":{
        "holds":{"type":"noul","instructions":"Is the user upset?",
                 "criteria":{"true":"angry or annoyed","false":"calm"}},
        "team":{"type":"choice","instructions":"Which team?",
                "criteria":{"support":"Bugs","billing":"Invoices","sales":null}},
        "urgency":{"type":"score","instructions":"How urgent?",
                   "criteria":["none","low","high"]}}})";

// A token of a logprobs content list.
QJsonObject tok(const QString &text, double logprob, const QList<QPair<QString, double>> &top = {})
{
    QJsonArray alternatives;
    for (const auto &[t, lp] : top)
        alternatives.append(QJsonObject{{"token", t}, {"logprob", lp}});
    return {{"token", text}, {"logprob", logprob}, {"top_logprobs", alternatives}};
}

// The tokens of a JSON text cut at the given boundaries, each token certain unless `alts` says
// otherwise (token index -> alternatives).
QJsonArray tokenize(const QStringList &pieces,
                    const QHash<int, QList<QPair<QString, double>>> &alts = {})
{
    QJsonArray out;
    for (int i = 0; i < pieces.size(); ++i) {
        const auto top = alts.value(i);
        out.append(tok(pieces.at(i), top.isEmpty() ? 0.0 : top.first().second, top));
    }
    return out;
}

QJsonObject completion(const QString &content, const QJsonValue &logprobContent = {},
                       const QString &finish = QStringLiteral("stop"))
{
    QJsonObject choice{{"index", 0},
                       {"message", QJsonObject{{"role", "assistant"}, {"content", content}}},
                       {"finish_reason", finish}};
    choice.insert("logprobs", logprobContent.isUndefined()
                                  ? QJsonValue()
                                  : QJsonValue(QJsonObject{{"content", logprobContent}}));
    return {{"choices", QJsonArray{choice}}};
}

double sum(const QList<double> &p)
{
    double s = 0;
    for (double x : p)
        s += x;
    return s;
}

bool near(double a, double b, double eps = 1e-9)
{
    return std::abs(a - b) <= eps;
}

} // namespace

class TestDecisionChatAnswer : public QObject
{
    Q_OBJECT

private slots:
    void questionsAndLabels()
    {
        const QList<Question> qs = questions(obj(kBody));
        QCOMPARE(qs.size(), 3);
        QCOMPARE(qs[0].id, QStringLiteral("holds"));
        QCOMPARE(qs[0].kind, Kind::Noul);
        QCOMPARE(qs[0].labels, (QStringList{"true", "false"}));
        QCOMPARE(qs[0].descriptions, (QStringList{"angry or annoyed", "calm"}));
        QCOMPARE(qs[1].kind, Kind::Choice);
        QCOMPARE(qs[1].labels, (QStringList{"1", "2", "3"}));
        QCOMPARE(qs[1].options, (QStringList{"billing", "sales", "support"}));
        QCOMPARE(qs[1].descriptions, (QStringList{"Invoices", "", "Bugs"}));
        QCOMPARE(qs[2].kind, Kind::Score);
        QCOMPARE(qs[2].labels, (QStringList{"0", "1", "2"}));
        QCOMPARE(qs[2].descriptions, (QStringList{"none", "low", "high"}));
    }

    void schemaIsStrict()
    {
        const QJsonObject s = answerSchema(questions(obj(kBody)));
        QCOMPARE(s.value("additionalProperties"), QJsonValue(false));
        QCOMPARE(s.value("required").toArray(), (QJsonArray{"holds", "team", "urgency"}));
        const QJsonObject team = s.value("properties").toObject().value("team").toObject();
        QCOMPARE(team.value("required").toArray(), (QJsonArray{"answer", "probabilities"}));
        QCOMPARE(team.value("additionalProperties"), QJsonValue(false));
        const QJsonObject props = team.value("properties").toObject();
        QCOMPARE(props.keys().first(), QStringLiteral("answer")); // written first
        QCOMPARE(props.value("answer").toObject().value("enum").toArray(), (QJsonArray{1, 2, 3}));
        QCOMPARE(props.value("answer").toObject().value("type").toString(),
                 QStringLiteral("integer"));
        const QJsonObject p = props.value("probabilities").toObject();
        QCOMPARE(p.value("required").toArray(), (QJsonArray{"1", "2", "3"}));
        QCOMPARE(p.value("properties").toObject().value("2").toObject(),
                 (QJsonObject{{"type", "number"}, {"minimum", 0}, {"maximum", 1}}));
        const QJsonObject holds = s.value("properties").toObject().value("holds").toObject();
        QCOMPARE(holds.value("properties").toObject().value("answer").toObject(),
                 (QJsonObject{{"type", "boolean"}}));
    }

    void chatRequests()
    {
        const QJsonObject body = obj(kBody);
        const QList<Question> qs = questions(body);
        Ask ask;
        ask.topLogprobs = 7;
        ask.maxOutputTokens = 300;
        QJsonObject chat = chatRequest(body.value("state"), qs, ask);
        QCOMPARE(chat.value("temperature").toDouble(), 0.0);
        QCOMPARE(chat.value("logprobs"), QJsonValue(true));
        QCOMPARE(chat.value("top_logprobs").toInt(), 7);
        QCOMPARE(chat.value("max_completion_tokens").toInt(), 300);
        QVERIFY(!chat.contains("max_tokens") && !chat.contains("model") && !chat.contains("tools"));
        const QJsonObject format = chat.value("response_format").toObject();
        QCOMPARE(format.value("type").toString(), QStringLiteral("json_schema"));
        const QJsonObject js = format.value("json_schema").toObject();
        QCOMPARE(js.value("name").toString(), QStringLiteral("decisions"));
        QCOMPARE(js.value("strict"), QJsonValue(true));
        QCOMPARE(js.value("schema").toObject(), answerSchema(qs));
        const QJsonArray messages = chat.value("messages").toArray();
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[0].toObject().value("content").toString(), systemPrompt());
        const QString user = messages[1].toObject().value("content").toString();
        for (const char *part : {"The invoice was charged twice.", "## Question \"team\"",
                                 "1 = option \"billing\": Invoices", "2 = option \"sales\"\n",
                                 "0 = none", "true = angry or annoyed", "Instructions: How urgent?",
                                 "from 0, the lowest, to 2, the highest"})
            QVERIFY2(user.contains(QLatin1String(part)), part);

        ask.jsonSchema = false;
        ask.maxCompletionTokens = false;
        chat = chatRequest(QJsonObject{{"b", 1}, {"a", "x"}}, qs, ask);
        QVERIFY(!chat.contains("response_format") && !chat.contains("logprobs"));
        QCOMPARE(chat.value("max_tokens").toInt(), 300);
        const QJsonObject fn =
            chat.value("tools").toArray().first().toObject().value("function").toObject();
        QCOMPARE(fn.value("name").toString(), QStringLiteral("answer"));
        QCOMPARE(fn.value("parameters").toObject(), answerSchema(qs));
        QCOMPARE(
            chat.value("tool_choice").toObject(),
            (QJsonObject{{"type", "function"}, {"function", QJsonObject{{"name", "answer"}}}}));
        // An object state is written as compact JSON.
        QVERIFY(chat.value("messages")
                    .toArray()[1]
                    .toObject()
                    .value("content")
                    .toString()
                    .contains("{\"a\":\"x\",\"b\":1}"));
    }

    void readsTokens()
    {
        // bytes win over the token text (a character split across tokens); a token without
        // text makes the list unusable; malformed alternatives are skipped.
        const QJsonArray content{
            QJsonObject{{"token", "bytes:\\xe2"}, {"logprob", -0.5}, {"bytes", QJsonArray{0xe2}}},
            QJsonObject{{"token", "x"},
                        {"logprob", "high"},
                        {"bytes", QJsonArray{300}},
                        {"top_logprobs", QJsonArray{QJsonObject{{"token", "y"}, {"logprob", -1}},
                                                    QJsonObject{{"token", 3}, {"logprob", -1}},
                                                    QJsonObject{{"token", "z"}}, 5}}}};
        const QList<Token> t = tokens(content);
        QCOMPARE(t.size(), 2);
        QCOMPARE(t[0].bytes, QByteArray("\xe2"));
        QCOMPARE(t[0].logprob, -0.5);
        QCOMPARE(t[1].bytes, QByteArray("x")); // 300 is no byte: the token text
        QVERIFY(std::isnan(t[1].logprob));
        QCOMPARE(t[1].top.size(), 1);
        QCOMPARE(t[1].top[0].first, QByteArray("y"));
        QVERIFY(
            tokens(QJsonArray{QJsonObject{{"token", "a"}}, QJsonObject{{"logprob", 0}}}).isEmpty());
        QVERIFY(tokens(QJsonValue("content")).isEmpty());
        QVERIFY(tokens(QJsonValue()).isEmpty());
    }

    void distributionFromAlternatives()
    {
        // {"q":{"answer":2 ...: the value's token "2" with alternatives 1, 2, 3 and junk.
        const QStringList labels{"1", "2", "3"};
        const QList<Token> t = tokens(
            tokenize({"{\"q\":{\"answer\":", "2", ",\"p\":1}}"}, {{1,
                                                                   {{"2", std::log(0.6)},
                                                                    {"1", std::log(0.2)},
                                                                    {" 3", std::log(0.1)},
                                                                    {"\"3\"", std::log(0.05)},
                                                                    {"7", std::log(0.05)},
                                                                    {"2", std::log(0.9)}}}}));
        const auto p = distributionAt(t, 15, 16, labels); // {"q":{"answer": is 15 bytes
        QVERIFY(p);
        // 3 counts twice (" 3" and "\"3\"" are different texts of one label); the repeated "2"
        // once; "7" is no label.
        const double total = 0.2 + 0.6 + 0.15;
        QVERIFY(near(p->at(0), 0.2 / total));
        QVERIFY(near(p->at(1), 0.6 / total));
        QVERIFY(near(p->at(2), 0.15 / total));
        QVERIFY(near(sum(*p), 1));
        // Located by question id.
        const auto q = answerDistribution(t, QStringLiteral("q"), QStringLiteral("2"), labels);
        QVERIFY(q);
        QCOMPARE(*q, *p);
        // The value there is not the answer as parsed: not trusted.
        QVERIFY(!answerDistribution(t, QStringLiteral("q"), QStringLiteral("1"), labels));
        QVERIFY(!answerDistribution(t, QStringLiteral("other"), QStringLiteral("2"), labels));
    }

    void tokenCarryingPunctuation()
    {
        // `":true` is one token; its alternatives `":false` carry the same prefix, `false`
        // without it counts too, and a label absent from the list gets 0.
        const QList<Token> t = tokens(
            tokenize({"{\"ok\":{\"answer", "\":true", "}}"}, {{1,
                                                               {{"\":true", std::log(0.7)},
                                                                {"\":false", std::log(0.2)},
                                                                {" false", std::log(0.1)}}}}));
        const auto p = answerDistribution(t, QStringLiteral("ok"), QStringLiteral("true"),
                                          {QStringLiteral("true"), QStringLiteral("false")});
        QVERIFY(p);
        QVERIFY(near(p->at(0), 0.7));
        QVERIFY(near(p->at(1), 0.3));
        const auto only = distributionAt(tokens(tokenize({"3"}, {{0, {{"3", -0.1}}}})), 0, 1,
                                         {QStringLiteral("1"), QStringLiteral("3")});
        QVERIFY(only);
        QCOMPARE(*only, (QList<double>{0, 1}));
    }

    void distributionRefusals()
    {
        const QStringList labels{"1", "2", "12"};
        // The value "12" spans two tokens: its first token does not say which label.
        const QList<Token> split = tokens(tokenize({"1", "2"}, {{0, {{"1", -0.1}, {"2", -3}}}}));
        QVERIFY(!distributionAt(split, 0, 2, labels));
        // Out of range, empty, reversed.
        QVERIFY(!distributionAt(split, 5, 6, labels));
        QVERIFY(!distributionAt(split, -1, 1, labels));
        QVERIFY(!distributionAt(split, 1, 1, labels));
        QVERIFY(!distributionAt({}, 0, 1, labels));
        // No alternative is a label.
        QVERIFY(!distributionAt(tokens(tokenize({"x"}, {{0, {{"x", -0.1}, {"y", -1}}}})), 0, 1,
                                labels));
        // Every label so improbable that nothing is left.
        QVERIFY(!distributionAt(tokens(tokenize({"1"}, {{0, {{"1", -1e6}, {"2", -1e6}}}})), 0, 1,
                                labels));
        // A positive logprob counts as certain, never as more.
        const auto p = distributionAt(
            tokens(tokenize({"1"}, {{0, {{"1", 50}, {"2", std::log(1.0)}}}})), 0, 1, labels);
        QVERIFY(p);
        QVERIFY(near(p->at(0), 0.5) && near(p->at(1), 0.5));
    }

    void escapedQuestionIds()
    {
        const QString id = QStringLiteral("a\"b\\c d");
        const QString key =
            QString::fromUtf8(QJsonDocument(QJsonObject{{id, 1}}).toJson(QJsonDocument::Compact))
                .section(u':', 0, 0)
                .mid(1);
        const QList<Token> t = tokens(tokenize({"{", key, ":{\"answer\":", "false", "}}"},
                                               {{3, {{"false", -0.2}, {"true", -2}}}}));
        const auto p = answerDistribution(t, id, QStringLiteral("false"),
                                          {QStringLiteral("true"), QStringLiteral("false")});
        QVERIFY(p);
        QVERIFY(p->at(1) > 0.8);
    }

    void verbalizedProbabilities()
    {
        const QStringList labels{"1", "2", "3"};
        auto p = verbalized(QJsonObject{{"1", 0.2}, {"2", 0.6}, {"3", 0.2}}, labels);
        QVERIFY(p && near(p->at(1), 0.6));
        // Clamped to [0, 1], then normalised; missing and non-numbers are 0.
        p = verbalized(QJsonObject{{"1", 7}, {"2", -3}, {"3", "0.5"}, {"4", 1}}, labels);
        QVERIFY(p);
        QCOMPARE(*p, (QList<double>{1, 0, 0}));
        p = verbalized(QJsonObject{{"1", 0.3}, {"2", 0.3}}, labels);
        QVERIFY(p && near(p->at(0), 0.5) && near(p->at(2), 0));
        QVERIFY(!verbalized(QJsonObject{{"1", 0}, {"2", 0}}, labels));
        QVERIFY(!verbalized(QJsonArray{0.5, 0.5}, labels));
        QVERIFY(!verbalized(QJsonValue(), labels));
    }

    void rounding()
    {
        const QList<qint64> thirds = roundDistribution({1, 1, 1});
        QCOMPARE(thirds, (QList<qint64>{3334, 3333, 3333}));
        QCOMPARE(roundDistribution({0.12344, 0.87656}), (QList<qint64>{1234, 8766}));
        QCOMPARE(roundDistribution({0, 0}), (QList<qint64>{10000, 0}));
        QCOMPARE(roundDistribution({-1, 2}), (QList<qint64>{0, 10000}));
        QCOMPARE(roundDistribution({std::nan(""), INFINITY, 1}), (QList<qint64>{0, 0, 10000}));
        QVERIFY(roundDistribution({}).isEmpty());
        QRandomGenerator rng(7);
        for (int i = 0; i < 2000; ++i) {
            QList<double> p(1 + rng.bounded(40));
            for (double &x : p)
                x = rng.bounded(1.0) * (rng.bounded(4) == 0 ? 1e-9 : 1.0);
            const QList<qint64> u = roundDistribution(p);
            qint64 total = 0;
            for (qint64 x : u) {
                QVERIFY(x >= 0);
                total += x;
            }
            QCOMPARE(total, 10000);
        }
    }

    void answersFromLogprobs()
    {
        const QList<Question> qs = questions(obj(kBody));
        const QStringList pieces{"{\"holds\":{\"answer\":",
                                 "true",
                                 ",\"probabilities\":{\"true\":0.5,\"false\":0.5}},"
                                 "\"team\":{\"answer\":",
                                 "3",
                                 ",\"probabilities\":{\"1\":0.1,\"2\":0.1,\"3\":0.8}},"
                                 "\"urgency\":{\"answer\":",
                                 "1",
                                 ",\"probabilities\":{\"0\":0,\"1\":1,\"2\":0}}}"};
        const QJsonArray content = tokenize(
            pieces, {{1, {{"true", std::log(0.9)}, {"false", std::log(0.1)}}},
                     {3, {{"3", std::log(0.5)}, {"1", std::log(0.25)}}},
                     {5, {{"1", std::log(0.5)}, {"2", std::log(0.25)}, {"0", std::log(0.25)}}}});
        const Result r = answers(qs, completion(pieces.join(QString()), content));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        const QJsonObject holds = r.answers.value("holds").toObject();
        QCOMPARE(holds,
                 (QJsonObject{
                     {"type", "noul"}, {"probability", 0.9}, {"probability_source", "logprobs"}}));
        const QJsonObject team = r.answers.value("team").toObject();
        QCOMPARE(team.value("choice").toString(), QStringLiteral("support"));
        QCOMPARE(team.value("probabilities").toObject(),
                 (QJsonObject{{"billing", 0.3333}, {"sales", 0}, {"support", 0.6667}}));
        QCOMPARE(team.value("confidence").toDouble(), 0.6667);
        QCOMPARE(team.value("probability_source").toString(), QStringLiteral("logprobs"));
        const QJsonObject urgency = r.answers.value("urgency").toObject();
        QCOMPARE(urgency.value("probabilities").toArray(), (QJsonArray{0.25, 0.5, 0.25}));
        QCOMPARE(urgency.value("score").toDouble(), 1.0);
        QCOMPARE(urgency.value("legend").toArray(), (QJsonArray{"none", "low", "high"}));
        QCOMPARE(urgency.value("confidence").toDouble(), 0.5);
        QCOMPARE(urgency.value("type").toString(), QStringLiteral("score"));
    }

    void answersVerbalizedAndFallbacks()
    {
        const QList<Question> qs = questions(obj(kBody));
        // No logprobs: the written probabilities; none written: all on the answer.
        const QString text = QStringLiteral(
            "```json\n{\"holds\":{\"answer\":false,\"probabilities\":{\"true\":0.2,\"false\":0.6}},"
            "\"team\":{\"answer\":2,\"probabilities\":{\"1\":0.5,\"2\":0.5,\"3\":0}},"
            "\"urgency\":{\"answer\":2},\"extra\":1}\n```");
        const Result r = answers(qs, completion(text));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QCOMPARE(r.answers.value("holds").toObject().value("probability").toDouble(), 0.25);
        QCOMPARE(r.answers.value("holds").toObject().value("probability_source").toString(),
                 QStringLiteral("verbalized"));
        // A tie goes to the model's own answer.
        QCOMPARE(r.answers.value("team").toObject().value("choice").toString(),
                 QStringLiteral("sales"));
        const QJsonObject urgency = r.answers.value("urgency").toObject();
        QCOMPARE(urgency.value("probabilities").toArray(), (QJsonArray{0, 0, 1}));
        QCOMPARE(urgency.value("score").toDouble(), 2.0);
        QCOMPARE(urgency.value("probability_source").toString(), QStringLiteral("answer"));
        QCOMPARE(r.answers.keys(), (QStringList{"holds", "team", "urgency"}));

        // A messages upstream's forced tool: its arguments, never the logprobs.
        QJsonObject chat = completion(QString(), tokenize({"x"}));
        QJsonObject choice = chat.value("choices").toArray()[0].toObject();
        QJsonObject message = choice.value("message").toObject();
        message.insert("content", QJsonValue());
        message.insert(
            "tool_calls",
            QJsonArray{QJsonObject{
                {"type", "function"},
                {"function",
                 QJsonObject{{"name", "answer"},
                             {"arguments", "{\"holds\":{\"answer\":true,\"probabilities\":{}},"
                                           "\"team\":{\"answer\":\"1\"},\"urgency\":{\"answer\":"
                                           "0.0,\"probabilities\":{\"0\":1}}}"}}}}});
        choice.insert("message", message);
        chat.insert("choices", QJsonArray{choice});
        const Result t = answers(qs, chat);
        QVERIFY2(t.error.isEmpty(), qPrintable(t.error));
        QCOMPARE(t.answers.value("holds").toObject().value("probability").toDouble(), 1.0);
        QCOMPARE(t.answers.value("team").toObject().value("choice").toString(),
                 QStringLiteral("billing"));
        QCOMPARE(t.answers.value("urgency").toObject().value("probability_source").toString(),
                 QStringLiteral("verbalized"));
    }

    void answersThatAreWrong_data()
    {
        QTest::addColumn<QJsonObject>("chat");
        QTest::addColumn<QString>("error");
        const QString ok = QStringLiteral("\"team\":{\"answer\":1},\"urgency\":{\"answer\":0}");
        QTest::newRow("not json") << completion("yes") << "it is not a JSON object";
        QTest::newRow("cut") << completion("{\"holds\":{\"ans", {}, "length")
                             << "it was cut off at the output limit "
                                "(decisions.chat_evaluator.max_output_tokens)";
        QTest::newRow("array") << completion("[1]") << "it is not a JSON object";
        QTest::newRow("missing") << completion("{" + ok + "}")
                                 << "the question \"holds\" has no answer";
        QTest::newRow("not object") << completion("{\"holds\":true," + ok + "}")
                                    << "the answer to \"holds\" is not an object";
        QTest::newRow("noul number") << completion("{\"holds\":{\"answer\":1}," + ok + "}")
                                     << "\"holds\".answer is not true or false";
        QTest::newRow("choice out of range")
            << completion("{\"holds\":{\"answer\":true},\"team\":{\"answer\":4},"
                          "\"urgency\":{\"answer\":0}}")
            << "\"team\".answer is not a label from 1 to 3";
        QTest::newRow("score fraction")
            << completion("{\"holds\":{\"answer\":true},\"team\":{\"answer\":1},"
                          "\"urgency\":{\"answer\":0.5}}")
            << "\"urgency\".answer is not a label from 0 to 2";
        QTest::newRow("empty") << completion("  ")
                               << "choices[0].message has neither content nor a call of the "
                                  "tool 'answer'";
        QTest::newRow("no choices") << QJsonObject{{"choices", QJsonArray{}}}
                                    << "choices[0].message has neither content nor a call of "
                                       "the tool 'answer'";
        QJsonObject refused = completion("{}");
        QJsonObject choice = refused.value("choices").toArray()[0].toObject();
        QJsonObject message = choice.value("message").toObject();
        message.insert("refusal", "I cannot help with that.");
        choice.insert("message", message);
        refused.insert("choices", QJsonArray{choice});
        QTest::newRow("refusal") << refused << "the model refused: I cannot help with that.";
    }

    void answersThatAreWrong()
    {
        QFETCH(QJsonObject, chat);
        QFETCH(QString, error);
        const Result r = answers(questions(obj(kBody)), chat);
        QCOMPARE(r.error, error);
        QVERIFY(r.answers.isEmpty());
    }

    // Any shape where the answer, its logprobs or its alternatives are expected: no crash, and
    // either an error or answers whose distributions sum to exactly 1.
    void hostileShapes()
    {
        const QList<Question> qs = questions(obj(kBody));
        const QJsonValue junk[] = {QJsonValue(),
                                   QJsonValue(true),
                                   QJsonValue(-1e308),
                                   QJsonValue(1e308),
                                   QJsonValue("true"),
                                   QJsonValue(""),
                                   QJsonArray{},
                                   QJsonArray{QJsonObject{}},
                                   QJsonObject{},
                                   QJsonObject{{"token", QJsonArray{}}},
                                   QJsonObject{{"bytes", QJsonArray{-1, 256, 1.5}}}};
        const QString valid = QStringLiteral(
            "{\"holds\":{\"answer\":true,\"probabilities\":{\"true\":1,\"false\":0}},"
            "\"team\":{\"answer\":2,\"probabilities\":{\"1\":0,\"2\":1,\"3\":0}},"
            "\"urgency\":{\"answer\":0,\"probabilities\":{\"0\":1,\"1\":0,\"2\":0}}}");
        QRandomGenerator rng(12345);
        auto pick = [&] { return junk[rng.bounded(int(std::size(junk)))]; };
        for (int round = 0; round < 3000; ++round) {
            // The valid text cut into random tokens, with random alternatives and junk.
            QJsonArray content;
            for (qsizetype at = 0; at < valid.size();) {
                const qsizetype len = 1 + rng.bounded(6);
                QJsonObject t{{"token", valid.mid(at, len)}, {"logprob", -rng.bounded(5.0)}};
                QJsonArray top;
                for (int k = rng.bounded(4); k > 0; --k)
                    top.append(
                        rng.bounded(3) == 0
                            ? pick()
                            : QJsonValue(QJsonObject{
                                  {"token", QString::number(rng.bounded(4))},
                                  {"logprob",
                                   rng.bounded(3) == 0 ? pick() : QJsonValue(-rng.bounded(9.0))}}));
                t.insert("top_logprobs", top);
                if (rng.bounded(10) == 0)
                    t.insert(rng.bounded(2) ? "bytes" : "logprob", pick());
                content.append(rng.bounded(50) == 0 ? pick() : QJsonValue(t));
                at += len;
            }
            QString text = valid;
            if (rng.bounded(4) == 0)
                text.truncate(rng.bounded(int(valid.size())));
            QJsonObject chat = completion(text, rng.bounded(5) == 0 ? pick() : QJsonValue(content));
            if (rng.bounded(8) == 0)
                chat.insert("choices", pick());
            const Result r = answers(qs, chat);
            if (!r.error.isEmpty())
                continue;
            for (const QJsonValue &a : r.answers) {
                const QJsonValue p = a.toObject().value("probabilities");
                double total = 0;
                if (p.isArray())
                    for (const QJsonValue &x : p.toArray())
                        total += x.toDouble();
                else if (p.isObject())
                    for (const QJsonValue &x : p.toObject())
                        total += x.toDouble();
                else
                    total = 1;
                QVERIFY(near(total, 1, 1e-9));
            }
        }
    }

    void config_data()
    {
        QTest::addColumn<QJsonValue>("section");
        QTest::addColumn<QString>("error");
        auto row = [](const char *name, const QJsonValue &v, const char *error) {
            QTest::newRow(name) << v << QString::fromLatin1(error);
        };
        const char *models = "config: decisions.chat_evaluator.models must be a non-empty array of "
                             "gateway model ids (a prefix may end in *); leave it out to allow "
                             "every chat model";
        row("not object", QJsonValue(true), "config: decisions.chat_evaluator must be an object");
        row("enabled", QJsonObject{{"enabled", "yes"}},
            "config: decisions.chat_evaluator.enabled must be true or false");
        row("unknown", QJsonObject{{"enable", true}},
            "config: decisions.chat_evaluator.enable is not a setting (enabled, models, "
            "top_logprobs, max_output_tokens, timeout_ms)");
        row("models empty", QJsonObject{{"models", QJsonArray{}}}, models);
        row("models string", QJsonObject{{"models", "vendorB-5.4"}}, models);
        row("models star inside", QJsonObject{{"models", QJsonArray{"a*b"}}}, models);
        row("models empty id", QJsonObject{{"models", QJsonArray{""}}}, models);
        row("top 0", QJsonObject{{"top_logprobs", 0}},
            "config: decisions.chat_evaluator.top_logprobs must be a whole number from 1 to 20");
        row("top 21", QJsonObject{{"top_logprobs", 21}},
            "config: decisions.chat_evaluator.top_logprobs must be a whole number from 1 to 20");
        row("top fraction", QJsonObject{{"top_logprobs", 2.5}},
            "config: decisions.chat_evaluator.top_logprobs must be a whole number from 1 to 20");
        row("max tokens", QJsonObject{{"max_output_tokens", "100"}},
            "config: decisions.chat_evaluator.max_output_tokens must be a whole number from 1 "
            "to 1000000");
        row("timeout", QJsonObject{{"timeout_ms", 10}},
            "config: decisions.chat_evaluator.timeout_ms must be a whole number from 1000 to "
            "600000");
    }

    void config()
    {
        QFETCH(QJsonValue, section);
        QFETCH(QString, error);
        try {
            DecisionsConfig::fromJson(QJsonObject{{"chat_evaluator", section}});
            QFAIL("no error");
        } catch (const std::runtime_error &e) {
            QCOMPARE(QString::fromUtf8(e.what()), error);
        }
    }

    void configValues()
    {
        const DecisionsConfig d = DecisionsConfig::defaults();
        QVERIFY(!d.chatEvaluator.enabled);
        QCOMPARE(d.chatEvaluator.topLogprobs, 20);
        QCOMPARE(d.chatEvaluator.timeoutMs, 60000);
        // (Not a raw string: moc reads the slash-star in one as a comment.)
        const DecisionsConfig c = DecisionsConfig::fromJson(QJsonObject{
            {"chat_evaluator",
             QJsonObject{{"enabled", true},
                         {"models", QJsonArray{"vendorB-5.4", "gateway/openrouter/*", "auto"}},
                         {"top_logprobs", 5},
                         {"max_output_tokens", 900},
                         {"timeout_ms", 1500}}}});
        const ChatEvaluatorConfig &e = c.chatEvaluator;
        QVERIFY(e.enabled);
        QCOMPARE(e.topLogprobs, 5);
        QCOMPARE(e.maxOutputTokens, 900);
        QCOMPARE(e.timeoutMs, 1500);
        QVERIFY(e.allows("vendorB-5.4", "vendorB-5.4"));
        QVERIFY(e.allows("gateway/openrouter/x/y", "gateway/openrouter/x/y"));
        QVERIFY(e.allows("auto", "vendorB-6-luna")); // as asked
        QVERIFY(!e.allows("vendorB-6-luna", "vendorB-6-luna"));
        QVERIFY(!e.allows("gateway/other/x", "gateway/other/x"));
        QVERIFY(ChatEvaluatorConfig().allows("anything", "anything"));
        // The bounds keep their own messages.
        try {
            DecisionsConfig::fromJson(obj(R"({"bounds":{"max_options":0}})"));
            QFAIL("no error");
        } catch (const std::runtime_error &err) {
            QCOMPARE(QString::fromUtf8(err.what()),
                     QStringLiteral("config: decisions.bounds.max_options must be a whole number "
                                    "from 1 to 1000"));
        }
    }

    // Enabled without the text gateway in the families: refused at link time.
    void linkNeedsTheGateway()
    {
        DecisionsFamily family;
        family.configure(obj(R"({"chat_evaluator":{"enabled":true}})"), ServerSettings::defaults());
        try {
            family.link({&family});
            QFAIL("no error");
        } catch (const std::runtime_error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).startsWith(
                         "config: decisions.chat_evaluator.enabled needs the text gateway"),
                     e.what());
        }
        DecisionsFamily off;
        off.link({&off}); // disabled: nothing needed
    }
};

QTEST_GUILESS_MAIN(TestDecisionChatAnswer)
#include "tst_decision_chat_answer.moc"
