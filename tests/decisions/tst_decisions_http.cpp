// The decisions routes over HTTP against the fake upstream's OpenRouter-style decisions API
// (tests/fake_upstream): both paths on one handler and one rate-limit bucket shared with chat,
// the upstream's answer passed through, the model's gateway/ prefix removed, billing exact from
// usage.cost or from tokens and prices, the errors mapped and never billed, 402 and 503.

#include "DecisionsTestSupport.h"
#include "FakeUpstreamProcess.h"
#include "Money.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSqlQuery>
#include <QTest>

using namespace DecisionsTest;

namespace {

const QByteArray kUpstreamKey = "sk-decisions-upstream-SECRET-0123456789";

ServerSettings settingsFor(const FakeUpstreamProcess &fake, int totalMs = 20000,
                           int chatPerMinute = 600)
{
    ServerSettings s = ServerSettings::defaults();
    s.tiers[QStringLiteral("default")].perMinute[QStringLiteral("chat")] = chatPerMinute;
    s.familySections.insert(
        "decisions",
        QJsonObject{
            {"providers",
             QJsonObject{
                 {"openrouter", QJsonObject{{"base_url", fake.base("/api/v1")},
                                            {"keys", QJsonArray{QString::fromLatin1(kUpstreamKey)}},
                                            {"timeouts", QJsonObject{{"total_ms", totalMs}}}}}}},
            {"models", QJsonArray{QJsonObject{{"id", "vendorD/evaluator-1.13"},
                                              {"upstream_model", "vendord/evaluator-1.13-up"},
                                              {"input_per_1m", "1.0"},
                                              {"output_per_1m", "4.0"}}}}});
    return s;
}

QJsonObject request(const QString &model, const QString &state)
{
    return {{"model", model},
            {"state", state},
            {"questions",
             QJsonObject{{"polite", QJsonObject{{"type", "noul"}, {"instructions", "Polite?"}}},
                         {"tone", QJsonObject{{"type", "choice"},
                                              {"instructions", "Tone?"},
                                              {"criteria", QJsonObject{{"warm", "warm"},
                                                                       {"cold", QJsonValue()}}}}},
                         {"quality", QJsonObject{{"type", "score"},
                                                 {"instructions", "Quality"},
                                                 {"criteria", QJsonArray{"bad", "ok", "good"}}}}}}};
}

// What a request for vendorD/evaluator-1.13 holds: the model's prices (1.00 and 4.00 credits per
// 1M tokens) on the body it sends upstream (one token a byte, plus 1,024; the upstream's model
// name is three bytes longer than the one asked) and on the output bound (8,192 tokens).
qint64 evaluatorHold(const QJsonObject &body)
{
    const qint64 bytes = QJsonDocument(body).toJson(QJsonDocument::Compact).size() + 3;
    return (bytes + 1024) * 1000 + 8192 * 4000;
}

int upstreamRequests(const FakeUpstreamProcess &fake)
{
    return HttpClient(fake.port()).get("/fake/stats").json().value("requests").toInt();
}

} // namespace

class TestDecisionsHttp : public QObject
{
    Q_OBJECT

private slots:
    void decided_data() { backends(); }
    void decided()
    {
        SY_START_ON_FAKE(fake, f, settingsFor(fake));
        const QByteArray key = f.fundedKey(1000000000);
        const qint64 before = balance(f);
        const HttpReply r = post(f, "/v1/decisions",
                                 request("gateway/vendorD/evaluator-1.13", "Thanks a lot!"), key);
        QVERIFY2(r.status == 200, r.body.constData());
        const QJsonObject body = r.json();
        const QJsonObject answers = body.value("answers").toObject();
        QCOMPARE(answers.keys(), (QStringList{"polite", "quality", "tone"}));
        // The upstream saw its own model name, without the gateway/ prefix.
        QVERIFY2(body.value("model").toString().startsWith("vendord/evaluator-1.13-up"),
                 r.body.constData());
        const qint64 cost = reportedCost(r.body);
        QVERIFY2(cost > 0, r.body.constData());
        QCOMPARE(before - balance(f), cost);
        QSqlQuery q(f.store().database());
        QVERIFY(q.exec("SELECT model, input_tokens, output_tokens, cost, estimated FROM "
                       "usage_records WHERE cost > 0"));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toString(), QStringLiteral("gateway/vendorD/evaluator-1.13"));
        const QJsonObject usage = body.value("usage").toObject();
        QCOMPARE(q.value(1).toLongLong(), usage.value("input_tokens").toInteger());
        QCOMPARE(q.value(2).toLongLong(), usage.value("output_tokens").toInteger());
        QCOMPARE(q.value(3).toLongLong(), cost);
        QCOMPARE(q.value(4).toInt(), 0);
        QVERIFY(!q.next());
    }

    void tokensWhenNoCost()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake));
        QVERIFY(f.ready());
        const QByteArray key = f.fundedKey(1000000000);
        const qint64 before = balance(f);
        const HttpReply r = post(f, "/api/alpha/decisions",
                                 request("vendorD/evaluator-1.13", "ok [fake cost=none]"), key);
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(reportedCost(r.body), -1);
        const QJsonObject usage = r.json().value("usage").toObject();
        DecisionModel m;
        m.inputPrice = 1000000000;
        m.outputPrice = 4000000000;
        const qint64 expected = DecisionsConfig::tokenCost(
            usage.value("input_tokens").toInteger(), usage.value("output_tokens").toInteger(), m);
        QVERIFY(expected > 0);
        QCOMPARE(before - balance(f), expected);
    }

    void aliasSharesTheChatBucket()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake, 20000, 2));
        QVERIFY(f.ready());
        const QByteArray key = f.fundedKey(1000000000);
        QCOMPARE(post(f, "/v1/decisions", request("vendorD/evaluator-1.13", "a"), key).status, 200);
        QCOMPARE(
            post(f, "/api/alpha/decisions", request("vendorD/evaluator-1.13", "b"), key).status,
            200);
        QCOMPARE(
            post(f, "/api/alpha/decisions", request("vendorD/evaluator-1.13", "c"), key).status,
            429);
        QCOMPARE(post(f, "/v1/decisions", request("vendorD/evaluator-1.13", "d"), key).status, 429);
    }

    void refusedBeforeUpstream()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake));
        QVERIFY(f.ready());
        const QByteArray key = f.fundedKey(1000000000);
        QJsonObject bad = request("vendorD/evaluator-1.13", "x");
        QJsonObject qs = bad.value("questions").toObject();
        qs.insert("q1", QJsonObject{{"type", "score"}, {"instructions", "x"}, {"criteria", "no"}});
        bad.insert("questions", qs);
        HttpReply r = post(f, "/v1/decisions", bad, key);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value("error").toObject().value("param").toString(),
                 QStringLiteral("questions.q1.criteria"));
        r = post(f, "/v1/decisions", request("vendorX/judge", "x"), key);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value("error").toObject().value("param").toString(),
                 QStringLiteral("model"));
        QCOMPARE(
            post(f, "/v1/decisions", request("vendorD/evaluator-1.13", "x"), "sk-wrong").status,
            401);
        QCOMPARE(upstreamRequests(fake), 0);
        QCOMPARE(balance(f), 1000000000);
    }

    // A key's rules refuse before the evaluator is asked: its budget (402
    // key_budget_exceeded), its models (403 model_not_allowed, also for the model named by
    // the request), its expiry (401 key_expired); nothing charged. Within the budget the
    // worst case is held against it.
    void keyRulesBeforeUpstream_data() { backends(); }
    void keyRulesBeforeUpstream()
    {
        QFETCH(QString, backend);
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        ServerFixture f(backend, settingsFor(fake));
        if (!f.ready()) {
            if (qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") == QLatin1String("1"))
                QFAIL(qPrintable(f.skipReason()));
            QSKIP(qPrintable(f.skipReason()));
        }
        f.grant(1000000000);
        Store &store = f.store();
        const qint64 account = store.defaultAccountId();
        const auto keyWith = [&](const KeyRules &rules) {
            return store
                .createApiKey(account, QStringLiteral("ruled"), QStringLiteral("default"), rules)
                .secret.toLatin1();
        };
        KeyRules poor;
        poor.budget = KeyRules::Budget{1, KeyRules::Period::Month};
        KeyRules otherModels;
        otherModels.models = {QStringLiteral("vendorB-*")};
        KeyRules old;
        old.expires = QDateTime::currentDateTimeUtc().addSecs(-60);
        KeyRules enough;
        enough.budget = KeyRules::Budget{100000000, KeyRules::Period::Day};
        enough.models = {QStringLiteral("vendorD/*")};
        const QJsonObject ask = request("vendorD/evaluator-1.13", "x");
        HttpReply r = post(f, "/v1/decisions", ask, keyWith(poor));
        QCOMPARE(r.status, 402);
        QCOMPARE(r.json().value("error").toObject().value("code").toString(),
                 QStringLiteral("key_budget_exceeded"));
        r = post(f, "/v1/decisions", ask, keyWith(otherModels));
        QCOMPARE(r.status, 403);
        QCOMPARE(r.json().value("error").toObject().value("code").toString(),
                 QStringLiteral("model_not_allowed"));
        r = post(f, "/v1/decisions", ask, keyWith(old));
        QCOMPARE(r.status, 401);
        QCOMPARE(r.json().value("error").toObject().value("code").toString(),
                 QStringLiteral("key_expired"));
        QCOMPARE(upstreamRequests(fake), 0);
        QCOMPARE(balance(f), 1000000000);
        const CreatedSecret within = store.createApiKey(account, QStringLiteral("within"),
                                                        QStringLiteral("default"), enough);
        r = post(f, "/v1/decisions", ask, within.secret.toLatin1());
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(upstreamRequests(fake), 1);
        const qint64 spent = 1000000000 - balance(f);
        QVERIFY(spent > 0);
        QTRY_COMPARE(store.keySpent(within.id, 0, 0), spent);
    }

    void insufficientCredits()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake));
        QVERIFY(f.ready());
        const QByteArray key = f.createKey();
        const HttpReply r = post(f, "/v1/decisions", request("vendorD/evaluator-1.13", "x"), key);
        QCOMPARE(r.status, 402);
        QCOMPARE(upstreamRequests(fake), 0);
    }

    // A request holds the evaluator's worst case from the model's prices (1.00 and 4.00 per
    // 1M), the body it sends upstream (one token a byte, plus 1,024) and the output bound
    // (8,192): a unit less is a 402 before the upstream; exactly that is served and charged only
    // what the answer costs.
    void holdsTheWorstCase_data() { backends(); }
    void holdsTheWorstCase()
    {
        SY_START_ON_FAKE(fake, f, settingsFor(fake));
        const QByteArray key = f.createKey();
        const QJsonObject body = request("vendorD/evaluator-1.13", QString(5000, u'x'));
        const qint64 hold = evaluatorHold(body);
        f.grant(hold - 1);
        HttpReply r = post(f, "/v1/decisions", body, key);
        QCOMPARE(r.status, 402);
        QVERIFY2(r.errorMessage().contains(Money::formatCredits(hold)), r.body.constData());
        QCOMPARE(upstreamRequests(fake), 0);
        QCOMPARE(balance(f), hold - 1);
        f.grant(1);
        r = post(f, "/v1/decisions", body, key);
        QVERIFY2(r.status == 200, r.body.constData());
        const qint64 cost = reportedCost(r.body);
        QVERIFY(cost > 0 && cost < hold);
        QCOMPARE(balance(f), hold - cost);
    }

    // A configured max_cost is what a request holds.
    void maxCostIsHeld()
    {
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        ServerSettings settings = settingsFor(fake);
        QJsonObject section = settings.familySections.value("decisions").toObject();
        QJsonArray models = section.value("models").toArray();
        QJsonObject model = models.at(0).toObject();
        model.insert("max_cost", "0.002");
        models.replace(0, model);
        section.insert("models", models);
        settings.familySections.insert("decisions", section);
        ServerFixture f(QStringLiteral("sqlite"), settings);
        QVERIFY(f.ready());
        const QByteArray key = f.createKey();
        f.grant(1'999'999);
        QCOMPARE(post(f, "/v1/decisions", request("vendorD/evaluator-1.13", "x"), key).status, 402);
        f.grant(1);
        QCOMPARE(post(f, "/v1/decisions", request("vendorD/evaluator-1.13", "x"), key).status, 200);
    }

    // An upstream that reports more than the hold is charged what it reports (no clamping):
    // the balance goes below zero by at most that excess, and the next request is refused
    // before the upstream.
    void overReportedCostIsCharged_data() { backends(); }
    void overReportedCostIsCharged()
    {
        SY_START_ON_FAKE(fake, f, settingsFor(fake));
        const qint64 granted = 100'000'000; // 0.1 credits
        const QByteArray key = f.fundedKey(granted);
        const QJsonObject body = request("vendorD/evaluator-1.13", "x [fake cost=0.5]");
        const qint64 hold = evaluatorHold(body);
        QVERIFY(hold < granted);
        HttpReply r = post(f, "/v1/decisions", body, key);
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(reportedCost(r.body), 500'000'000);
        QCOMPARE(balance(f), granted - 500'000'000);
        QVERIFY(-balance(f) <= 500'000'000 - hold);
        r = post(f, "/v1/decisions", request("vendorD/evaluator-1.13", "y"), key);
        QCOMPARE(r.status, 402);
        QCOMPARE(upstreamRequests(fake), 1);
        QCOMPARE(balance(f), granted - 500'000'000);
    }

    void unconfigured()
    {
        ServerFixture f(QStringLiteral("sqlite"));
        QVERIFY(f.ready());
        const QByteArray key = f.fundedKey(1000000000);
        const HttpReply r =
            post(f, "/v1/decisions", request("~vendorD/evaluator-latest", "x"), key);
        QCOMPARE(r.status, 503);
        QVERIFY2(r.errorMessage().contains("decisions.providers.openrouter.keys"),
                 qPrintable(r.errorMessage()));
        QCOMPARE(balance(f), 1000000000);
    }

    void upstreamFailures_data()
    {
        QTest::addColumn<QString>("directive");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("code");
        QTest::newRow("429") << "[fake fault=429]" << 429 << "upstream_rate_limited";
        QTest::newRow("500") << "[fake fault=500]" << 502 << "upstream_failed";
        QTest::newRow("timeout") << "[fake delay-ms=4000]" << 504 << "upstream_timeout";
    }

    void upstreamFailures()
    {
        QFETCH(QString, directive);
        QFETCH(int, status);
        QFETCH(QString, code);
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake, 1500));
        QVERIFY(f.ready());
        const QByteArray key = f.fundedKey(1000000000);
        const HttpReply r =
            post(f, "/v1/decisions", request("vendorD/evaluator-1.13", "x " + directive), key);
        QCOMPARE(r.status, status);
        QCOMPARE(r.json().value("error").toObject().value("code").toString(), code);
        QVERIFY(!r.body.contains(kUpstreamKey));
        if (status == 429)
            QVERIFY(!r.header("retry-after").isEmpty());
        QCOMPARE(balance(f), 1000000000);
    }

    // A client that leaves while the evaluator works: the upstream call is stopped (the fake
    // sees its client leave), the request is closed as 499 and nothing is charged.
    void clientLeaves_data() { backends(); }
    void clientLeaves()
    {
        SY_START_ON_FAKE(fake, f, settingsFor(fake));
        const QByteArray key = f.fundedKey(1000000000);
        const QByteArray body =
            QJsonDocument(request("vendorD/evaluator-1.13", "x [fake delay-ms=4000]"))
                .toJson(QJsonDocument::Compact);
        HttpClient c = f.client();
        QVERIFY(c.connectIfNeeded());
        c.sendRaw("POST /v1/decisions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key +
                  "\r\nContent-Type: application/json\r\nContent-Length: " +
                  QByteArray::number(body.size()) + "\r\n\r\n" + body);
        QTRY_COMPARE_WITH_TIMEOUT(upstreamRequests(fake), 1, 3000);
        c.socket().abort();
        QTRY_COMPARE_WITH_TIMEOUT(
            HttpClient(fake.port()).get("/fake/stats").json().value("cancelled").toInt(), 1, 3000);
        const QList<UsageRecord> records = waitUsage(f, 1);
        QCOMPARE(records.size(), 1);
        QCOMPARE(records[0].status, 499);
        QCOMPARE(records[0].cost, 0);
        QCOMPARE(balance(f), 1000000000);
    }

    void modelsListed()
    {
        ServerFixture f(QStringLiteral("sqlite"));
        QVERIFY(f.ready());
        QSet<QString> ids;
        for (const QJsonValue &m : f.client().get("/v1/models").json().value("data").toArray())
            if (m.toObject().value("endpoints").toArray().contains(QJsonValue("decisions")))
                ids.insert(m.toObject().value("id").toString());
        QCOMPARE(ids, (QSet<QString>{"~vendorD/evaluator-latest", "vendorD/evaluator-1.13",
                                     "gateway/~vendorD/evaluator-latest",
                                     "gateway/vendorD/evaluator-1.13"}));
    }
};

QTEST_GUILESS_MAIN(TestDecisionsHttp)
#include "tst_decisions_http.moc"
