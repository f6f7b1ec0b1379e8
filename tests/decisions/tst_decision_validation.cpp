// The decisions family's pure parts: the request checks (server/decisions/DecisionRequest.h),
// every failure naming the path of the bad value; the config section and its errors; the
// exact cost of an upstream's usage.

#include "DecisionRequest.h"
#include "DecisionsConfig.h"

#include <limits>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

class TestDecisionValidation : public QObject
{
    Q_OBJECT

private slots:
    void accepts_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::newRow("every type")
            << QByteArray("{\"model\":\"~vendorD/evaluator-latest\",\"state\":\"a reply\","
                          "\"questions\":{\"polite\":{\"type\":\"noul\",\"instructions\":\"Is it "
                          "polite?\",\"criteria\":{\"true\":\"yes\",\"false\":\"no\"}},"
                          "\"tone\":{\"type\":\"choice\",\"instructions\":\"Tone?\",\"criteria\":"
                          "{\"warm\":\"warm\",\"cold\":null}},\"q\":{\"type\":\"score\","
                          "\"instructions\":\"Quality\",\"criteria\":[\"bad\",\"ok\",\"good\"]}}}");
        QTest::newRow("object state")
            << QByteArray("{\"model\":\"m\",\"state\":{\"messages\":[1]},\"questions\":{\"a\":"
                          "{\"type\":\"noul\",\"instructions\":\"x\"}}}");
        QTest::newRow("array state")
            << QByteArray("{\"model\":\"m\",\"state\":[1,2],\"questions\":{\"a\":{\"type\":"
                          "\"noul\",\"instructions\":\"x\",\"criteria\":null}},\"extra\":1}");
    }

    void accepts()
    {
        QFETCH(QByteArray, json);
        RequestError error;
        const auto r =
            DecisionRequests::validate(QJsonDocument::fromJson(json).object(), {}, &error);
        QVERIFY2(r, qPrintable(error.param + QStringLiteral(": ") + error.message));
    }

    void refuses_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("path");
        const QByteArray ok = "\"model\":\"m\",\"state\":\"s\"";
        const auto with = [&](const QByteArray &questions) {
            return "{" + ok + ",\"questions\":" + questions + "}";
        };
        QTest::newRow("no model") << QByteArray("{\"state\":\"s\",\"questions\":{}}") << "model";
        QTest::newRow("model number")
            << QByteArray("{\"model\":1,\"state\":\"s\",\"questions\":{}}") << "model";
        QTest::newRow("no state") << QByteArray("{\"model\":\"m\",\"questions\":{}}") << "state";
        QTest::newRow("state number")
            << QByteArray("{\"model\":\"m\",\"state\":3,\"questions\":{}}") << "state";
        QTest::newRow("state empty")
            << QByteArray("{\"model\":\"m\",\"state\":\"\",\"questions\":{}}") << "state";
        QTest::newRow("no questions") << QByteArray("{" + ok + "}") << "questions";
        QTest::newRow("questions empty") << with("{}") << "questions";
        QTest::newRow("questions array") << with("[]") << "questions";
        QTest::newRow("question string") << with("{\"q1\":\"x\"}") << "questions.q1";
        QTest::newRow("no type") << with("{\"q1\":{\"instructions\":\"x\"}}")
                                 << "questions.q1.type";
        QTest::newRow("bad type") << with("{\"q1\":{\"type\":\"yesno\",\"instructions\":\"x\"}}")
                                  << "questions.q1.type";
        QTest::newRow("no instructions")
            << with("{\"q1\":{\"type\":\"noul\"}}") << "questions.q1.instructions";
        QTest::newRow("blank instructions")
            << with("{\"q1\":{\"type\":\"noul\",\"instructions\":\" \"}}")
            << "questions.q1.instructions";
        QTest::newRow("choice without criteria")
            << with("{\"q1\":{\"type\":\"choice\",\"instructions\":\"x\"}}")
            << "questions.q1.criteria";
        QTest::newRow("choice array")
            << with("{\"q1\":{\"type\":\"choice\",\"instructions\":\"x\",\"criteria\":[\"a\","
                    "\"b\"]}}")
            << "questions.q1.criteria";
        QTest::newRow("choice one option")
            << with("{\"q1\":{\"type\":\"choice\",\"instructions\":\"x\",\"criteria\":{\"a\":"
                    "\"a\"}}}")
            << "questions.q1.criteria";
        QTest::newRow("choice number")
            << with("{\"q1\":{\"type\":\"choice\",\"instructions\":\"x\",\"criteria\":{\"a\":"
                    "\"a\",\"b\":2}}}")
            << "questions.q1.criteria.b";
        QTest::newRow("score object")
            << with("{\"q1\":{\"type\":\"score\",\"instructions\":\"x\",\"criteria\":{\"a\":"
                    "\"a\"}}}")
            << "questions.q1.criteria";
        QTest::newRow("score one")
            << with("{\"q1\":{\"type\":\"score\",\"instructions\":\"x\",\"criteria\":[\"a\"]}}")
            << "questions.q1.criteria";
        QTest::newRow("score null item")
            << with("{\"q1\":{\"type\":\"score\",\"instructions\":\"x\",\"criteria\":[\"a\","
                    "null]}}")
            << "questions.q1.criteria[1]";
        QTest::newRow("noul other key")
            << with("{\"q1\":{\"type\":\"noul\",\"instructions\":\"x\",\"criteria\":{\"maybe\":"
                    "\"m\"}}}")
            << "questions.q1.criteria.maybe";
        QTest::newRow("noul number")
            << with("{\"q1\":{\"type\":\"noul\",\"instructions\":\"x\",\"criteria\":{\"true\":1}}}")
            << "questions.q1.criteria.true";
        QTest::newRow("dotted id")
            << with("{\"a.b\":{\"type\":\"noul\",\"instructions\":\"x\"}}") << "questions.a.b";
        QTest::newRow("empty id") << with("{\"\":{\"type\":\"noul\",\"instructions\":\"x\"}}")
                                  << "questions.";
    }

    void refuses()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, path);
        RequestError error;
        const QJsonObject body = QJsonDocument::fromJson(json).object();
        QVERIFY2(!body.isEmpty(), json.constData());
        QVERIFY(!DecisionRequests::validate(body, {}, &error));
        QCOMPARE(error.param, path);
        QVERIFY2(error.message.contains(path.section(u'[', 0, 0)), qPrintable(error.message));
    }

    void config();
    void cost();

    void bounds()
    {
        DecisionBounds b;
        b.maxQuestions = 2;
        b.maxOptions = 3;
        QJsonObject qs;
        for (int i = 0; i < 3; ++i)
            qs.insert(QStringLiteral("q%1").arg(i),
                      QJsonObject{{"type", "noul"}, {"instructions", "x"}});
        RequestError error;
        QVERIFY(!DecisionRequests::validate(
            QJsonObject{{"model", "m"}, {"state", "s"}, {"questions", qs}}, b, &error));
        QCOMPARE(error.param, QStringLiteral("questions"));
        const QJsonObject many{{"q", QJsonObject{{"type", "score"},
                                                 {"instructions", "x"},
                                                 {"criteria", QJsonArray{"a", "b", "c", "d"}}}}};
        QVERIFY(!DecisionRequests::validate(
            QJsonObject{{"model", "m"}, {"state", "s"}, {"questions", many}}, b, &error));
        QCOMPARE(error.param, QStringLiteral("questions.q.criteria"));
    }
};

void TestDecisionValidation::config()
{
    const DecisionsConfig d = DecisionsConfig::defaults();
    QVERIFY(d.model("~vendorD/evaluator-latest"));
    QCOMPARE(d.model("gateway/vendorD/evaluator-1.13"), d.model("vendorD/evaluator-1.13"));
    QVERIFY(!d.model("gateway/nope"));
    QCOMPARE(d.provider("openrouter")->totalTimeoutMs, 60000);
    QVERIFY(
        d.provider("openrouter")->unusableReason().contains("decisions.providers.openrouter.keys"));
    QCOMPARE(d.modelsJson().size(), 4); // each model and its gateway/ alias
    const DecisionsConfig c = DecisionsConfig::fromJson(
        QJsonDocument::fromJson("{\"providers\":{\"or\":{\"base_url\":\"https://x/api/v1\","
                                "\"keys\":[\"k\"],\"path\":\"/evaluate\"}},\"models\":[{\"id\":"
                                "\"vendorD/evaluator-1.13\",\"provider\":\"or\",\"upstream_model\":"
                                "\"d/e-1.13\",\"input_per_1m\":\"0.5\"}],\"bounds\":"
                                "{\"max_questions\":3}}")
            .object());
    const DecisionModel *m = c.model("gateway/vendorD/evaluator-1.13");
    QCOMPARE(m->provider, QStringLiteral("or"));
    QCOMPARE(m->upstreamModel, QStringLiteral("d/e-1.13"));
    QCOMPARE(m->inputPrice, 500000000);
    QCOMPARE(m->outputPrice, 4000000000); // kept from the default entry
    QCOMPARE(c.provider("or")->path, QStringLiteral("/evaluate"));
    QCOMPARE(c.provider("or")->totalTimeoutMs, 60000);
    QCOMPARE(c.bounds.maxQuestions, 3);
    QCOMPARE(m->maxOutputTokens, DecisionModel::kDefaultMaxOutputTokens);
    QCOMPARE(m->maxCost, 0);
    const DecisionsConfig limits = DecisionsConfig::fromJson(
        QJsonDocument::fromJson("{\"models\":[{\"id\":\"vendorD/evaluator-1.13\","
                                "\"max_output_tokens\":300,\"max_cost\":\"0.25\"}]}")
            .object());
    QCOMPARE(limits.model("vendorD/evaluator-1.13")->maxOutputTokens, 300);
    QCOMPARE(limits.model("vendorD/evaluator-1.13")->maxCost, 250000000);
    const QList<QPair<QByteArray, QString>> bad = {
        {"{\"providers\":{\"x\":{\"type\":\"chat\"}}}", "decisions.providers.x.type"},
        {"{\"providers\":{\"x\":{\"path\":\"evaluate\"}}}", "decisions.providers.x.path"},
        {"{\"models\":[{\"id\":\"gateway/m\",\"provider\":\"openrouter\"}]}",
         "decisions.models[0].id"},
        {"{\"models\":[{\"id\":\"m\",\"provider\":\"nope\"}]}", "decisions.models[0].provider"},
        {"{\"models\":[{\"id\":\"m\",\"provider\":\"openrouter\",\"input_per_1m\":1}]}",
         "decisions.models[0].input_per_1m"},
        {"{\"bounds\":{\"max_options\":0}}", "decisions.bounds.max_options"},
        {"{\"models\":[{\"id\":\"m\",\"provider\":\"openrouter\",\"max_output_tokens\":0}]}",
         "decisions.models[0].max_output_tokens"},
        {"{\"models\":[{\"id\":\"m\",\"provider\":\"openrouter\",\"max_output_tokens\":2.5}]}",
         "decisions.models[0].max_output_tokens"},
        {"{\"models\":[{\"id\":\"m\",\"provider\":\"openrouter\",\"max_cost\":\"0\"}]}",
         "decisions.models[0].max_cost"},
        {"{\"models\":[{\"id\":\"m\",\"provider\":\"openrouter\",\"max_cost\":0.5}]}",
         "decisions.models[0].max_cost"},
    };
    for (const auto &[json, name] : bad) {
        try {
            DecisionsConfig::fromJson(QJsonDocument::fromJson(json).object());
            QFAIL(json.constData());
        } catch (const std::runtime_error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(name), e.what());
        }
    }
}

void TestDecisionValidation::cost()
{
    using C = DecisionsConfig;
    QCOMPARE(C::costUnits("0.000412"), 412000);
    QCOMPARE(C::costUnits("1"), 1000000000);
    QCOMPARE(C::costUnits("0.0000000001"), 1); // below one unit: rounded up once
    QCOMPARE(C::costUnits("0.0000000015"), 2);
    QCOMPARE(C::costUnits("4.12e-4"), 412000);
    QCOMPARE(C::costUnits("4.12E-12"), 1);
    QCOMPARE(C::costUnits("0"), 0);
    QCOMPARE(C::costUnits("0.0"), 0);
    QCOMPARE(C::costUnits("2e3"), 2000000000000);
    QVERIFY(!C::costUnits("-0.1"));
    QVERIFY(!C::costUnits("\"0.1\""));
    QVERIFY(!C::costUnits("null"));
    QVERIFY(!C::costUnits("1e99"));
    QVERIFY(!C::costUnits(""));
    DecisionModel m;
    m.inputPrice = 1000000000;                     // 1 credit per 1M
    m.outputPrice = 4000000000;                    // 4 credits per 1M
    QCOMPARE(C::tokenCost(1000, 100, m), 1400000); // 0.001 + 0.0004 credits
    QCOMPARE(C::tokenCost(1, 0, m), 1000);
    m.inputPrice = 1;
    m.outputPrice = 1;
    QCOMPARE(C::tokenCost(1, 1, m), 1); // 2/1M of a unit, rounded up once

    // The hold: the body's bytes plus the template allowance at the input price, and the output
    // bound at the output price, exact; max_cost instead when set; refused past 64 bits.
    m.inputPrice = 1000000000;
    m.outputPrice = 4000000000;
    m.maxOutputTokens = 8192;
    QCOMPARE(C::holdFor(m, 976), 2000 * 1000 + 8192 * 4000);
    QCOMPARE(C::holdFor(m, 977), 2001 * 1000 + 8192 * 4000);
    m.maxCost = 7;
    QCOMPARE(C::holdFor(m, 976), 7);
    m.maxCost = 0;
    m.inputPrice = m.outputPrice = 0;
    QCOMPARE(C::holdFor(m, 976), 1); // free models still hold one unit
    m.inputPrice = std::numeric_limits<qint64>::max();
    QVERIFY(!C::holdFor(m, 1'000'000));
}

QTEST_GUILESS_MAIN(TestDecisionValidation)
#include "tst_decision_validation.moc"
