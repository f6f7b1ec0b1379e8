// Image money on the one money path, over HTTP on SQLite and PostgreSQL: a task's hold, release
// and charge reach the window's live ledger and usage models bound to the server's
// DatabaseService without a reload and move the money counters of /metrics; the credit gate
// counts the hold at once (a request right after the task's creation is refused on it, with a
// balance freshness far longer than the test), and only once while a synchronous request waits
// for its images; a failed task gives everything back; concurrent
// tasks against a balance that covers only some never take it below zero and lose nothing; the
// sweep's release of an abandoned task is announced too; an instance that admits on a balance
// it read before another instance's hold is refused by the durable hold.

#include "ImagesTestSupport.h"
#include "LiveModels.h"
#include "MetricsPage.h"
#include "Money.h"

#include <QDateTime>

using namespace ImagesTest;

namespace {

constexpr qint64 kAddressPrice = 100'000; // 0.0001 credits a request

using MetricsPage = QHash<QByteArray, QByteArray>;

// How far a counter moved from one /metrics page to a later one; `kind` its label, if any.
qint64 moved(const MetricsPage &before, const MetricsPage &after, const char *name,
             const char *kind = nullptr)
{
    const QByteArray series =
        kind ? QByteArray(name) + "{kind=\"" + kind + "\"}" : QByteArray(name);
    return after.value(series).toLongLong() - before.value(series).toLongLong();
}

// The ledger model's entries whose request id starts with the task's id, oldest first.
QList<LedgerEntry> taskEntries(const LedgerModel &m, const QString &taskId)
{
    QList<LedgerEntry> out;
    for (int row = m.rowCount() - 1; row >= 0; --row)
        if (m.recordAt(row).requestId.startsWith(taskId))
            out.append(m.recordAt(row));
    return out;
}

HttpReply transferCoord(ServerFixture &f, const QByteArray &key)
{
    return f.client().postJson("/v1/address/transfer-coord",
                               R"({"text": "120.026208,30.279212", "srcCoord": "gcj02"})", key);
}

ServerSettings moneySettings(const FakeUpstreamProcess &fake, const QJsonObject &extra = {})
{
    ServerSettings s = settingsWith(section(fake, extra));
    // Far longer than any test: what the gate knows of a balance comes from this instance's
    // own notes, never from a fresh read.
    s.balanceFreshMs = 600'000;
    s.familySections.insert(
        QStringLiteral("address"),
        QJsonObject{{"price_per_request", Money::formatCredits(kAddressPrice)}});
    return s;
}

} // namespace

class TestImagesMoney : public QObject
{
    Q_OBJECT

private slots:
    void holdAndChargeLive_data() { addBackendRows(); }
    void holdAndChargeLive();
    void keyRulesRefuseBeforeTheTask_data() { addBackendRows(); }
    void keyRulesRefuseBeforeTheTask();
    void gateSeesTheHoldAtOnce_data() { addBackendRows(); }
    void gateSeesTheHoldAtOnce();
    void syncWaitCountsItsImagesOnce_data() { addBackendRows(); }
    void syncWaitCountsItsImagesOnce();
    void failedTaskGivesAllBack_data() { addBackendRows(); }
    void failedTaskGivesAllBack();
    void concurrentTasksNeverOverdraw_data() { addBackendRows(); }
    void concurrentTasksNeverOverdraw();
    void sweptTaskAnnounced_data() { addBackendRows(); }
    void sweptTaskAnnounced();
    void otherInstancesHoldCounts();
};

// A key's rules (KeyRules.h) on the image family: a budget below n images' worst case is 402
// key_budget_exceeded and a model outside the key's list 403 model_not_allowed, both before any
// task or hold exists; within them the task is held and charged as usual.
void TestImagesMoney::keyRulesRefuseBeforeTheTask()
{
    SY_START_ON_FAKE(fake, f, moneySettings(fake));
    f.grant(kCredit);
    const qint64 account = f.store().defaultAccountId();
    KeyRules budgeted;
    budgeted.budget = KeyRules::Budget{kPrice + kPrice / 2, KeyRules::Period::Total};
    const QByteArray key =
        f.store().createApiKey(account, "budgeted", {}, budgeted).secret.toLatin1();
    KeyRules other;
    other.models = {QStringLiteral("some-other-*")};
    const QByteArray elsewhere =
        f.store().createApiKey(account, "models", {}, other).secret.toLatin1();
    const qsizetype entries = f.store().ledger(account, 100).size();

    HttpReply r = post(f, {{"prompt", "two lanterns"}, {"n", 2}}, key);
    QCOMPARE(r.status, 402);
    QCOMPARE(r.json().value("error").toObject().value("code").toString(),
             QStringLiteral("key_budget_exceeded"));
    r = post(f, {{"prompt", "one lantern"}}, elsewhere);
    QCOMPARE(r.status, 403);
    QCOMPARE(r.json().value("error").toObject().value("code").toString(),
             QStringLiteral("model_not_allowed"));
    QCOMPARE(f.store().ledger(account, 100).size(), entries); // no hold, no task
    QCOMPARE(f.store().balance(account), kCredit);

    // One image fits the budget: held and charged as usual; the next does not fit any more.
    r = post(f, {{"prompt", "one lantern"}}, key);
    QCOMPARE(r.status, 200);
    QTRY_COMPARE(f.store().balance(account), kCredit - kPrice);
    r = post(f, {{"prompt", "another"}}, key);
    QCOMPARE(r.status, 402);
    QCOMPARE(f.store().balance(account), kCredit - kPrice);
}

void TestImagesMoney::holdAndChargeLive()
{
    SY_START_ON_FAKE(fake, f, moneySettings(fake));
    const QByteArray key = f.fundedKey(kCredit);
    // The window's models, on the server's own DatabaseService, loaded before the task.
    LiveModels live(f.service());
    QTRY_VERIFY(live.isLoaded());
    QCOMPARE(live.ledger.rowCount(), 1);
    const MetricsPage before = metricsPage(f.port());
    QVERIFY(before.contains("switchyard_ledger_entries_total{kind=\"charge\"}"));

    const HttpReply r = post(f, {{"prompt", "two lanterns"}, {"n", 2}}, key);
    QCOMPARE(r.status, 200);
    const QString id = r.json().value("id").toString();
    QVERIFY(id.startsWith("imgtask_"));

    // Hold, release and charge, as they were committed, without a reload.
    QTRY_COMPARE(taskEntries(live.ledger, id).size(), 3);
    const QList<LedgerEntry> e = taskEntries(live.ledger, id);
    QCOMPARE(e[0].kind, QStringLiteral("charge"));
    QCOMPARE(e[0].requestId, id + ":hold");
    QCOMPARE(e[0].amount, -2 * kPrice);
    QCOMPARE(e[0].balanceAfter, kCredit - 2 * kPrice);
    QCOMPARE(e[1].kind, QStringLiteral("refund"));
    QCOMPARE(e[1].requestId, id + ":release");
    QCOMPARE(e[1].amount, 2 * kPrice);
    QCOMPARE(e[2].kind, QStringLiteral("charge"));
    QCOMPARE(e[2].requestId, id);
    QCOMPARE(e[2].amount, -2 * kPrice);
    QCOMPARE(e[2].balanceAfter, kCredit - 2 * kPrice);
    QTRY_COMPARE(live.ledger.balance(), kCredit - 2 * kPrice);
    QCOMPARE(balance(f), kCredit - 2 * kPrice);

    // The task's usage record (the images and their cost) and the request's own (unbilled).
    QTRY_COMPARE(live.usage.rowCount(), 2);
    qint64 images = 0, cost = 0;
    for (int row = 0; row < live.usage.rowCount(); ++row) {
        const UsageRecord &u = live.usage.recordAt(row);
        QCOMPARE(u.endpoint, QStringLiteral("/v1/images/generations"));
        images += u.meter(u"images");
        cost += u.cost;
    }
    QCOMPARE(images, 2);
    QCOMPARE(cost, 2 * kPrice);

    // /metrics counts the hold and the charge, the release, and both usage records.
    MetricsPage after;
    QTRY_VERIFY(moved(before, after = metricsPage(f.port()), "switchyard_usage_records_total") ==
                2);
    QCOMPARE(moved(before, after, "switchyard_ledger_entries_total", "charge"), 2);
    QCOMPARE(moved(before, after, "switchyard_credits_units_total", "charge"), 4 * kPrice);
    QCOMPARE(moved(before, after, "switchyard_ledger_entries_total", "refund"), 1);
    QCOMPARE(moved(before, after, "switchyard_credits_units_total", "refund"), 2 * kPrice);
    QCOMPARE(moved(before, after, "switchyard_ledger_entries_total", "grant"), 0);
}

void TestImagesMoney::gateSeesTheHoldAtOnce()
{
    SY_START_ON_FAKE(fake, f, moneySettings(fake));
    const QByteArray key = f.createKey();
    // Two images and one address request, less one unit: after the images' hold the balance is
    // positive but short of the second address request's reservation.
    f.grant(2 * kPrice + 2 * kAddressPrice - 1);
    // The gate reads the balance once here, and then keeps it fresh far longer than the test.
    QCOMPARE(transferCoord(f, key).status, 200);
    const HttpReply task = post(f, {{"prompt", "slow heron [fake delay-ms=400]"}, {"n", 2}}, key,
                                {{"Prefer", "respond-async"}});
    QCOMPARE(task.status, 202);
    // Right after the task was created, on the gate's own notes: the hold counts.
    const HttpReply refused = transferCoord(f, key);
    QCOMPARE(refused.status, 402);
    const QString id = task.json().value("id").toString();
    QTRY_COMPARE_WITH_TIMEOUT(ImagesTest::task(f, id)->status, QStringLiteral("completed"), 15000);
    // Nothing was served on the balance from before the hold.
    QCOMPARE(balance(f), kAddressPrice - 1);
    QCOMPARE(count(f, "SELECT COUNT(*) FROM usage_records WHERE endpoint = "
                      "'/v1/address/transfer-coord' AND cost > 0"),
             1);
}

void TestImagesMoney::syncWaitCountsItsImagesOnce()
{
    SY_START_ON_FAKE(fake, f, moneySettings(fake));
    const QByteArray key = f.createKey();
    // Two images and two address requests: exactly enough.
    f.grant(2 * kPrice + 2 * kAddressPrice);
    QCOMPARE(transferCoord(f, key).status, 200); // the gate reads the balance once
    // A synchronous request that waits for its images while the upstream takes its time.
    HttpClient waiting(f.port());
    QVERIFY(waiting.connectIfNeeded());
    waiting.send("POST", "/v1/images/generations",
                 {{"Authorization", "Bearer " + key}, {"Content-Type", "application/json"}},
                 QJsonDocument(QJsonObject{{"prompt", "slow crane [fake delay-ms=800]"}, {"n", 2}})
                     .toJson(QJsonDocument::Compact));
    QTRY_COMPARE(count(f, "SELECT COUNT(*) FROM image_tasks"), 1);
    // Its durable hold stands in for its hold in memory: while it waits, what is left is the
    // second address request's, not less.
    QCOMPARE(transferCoord(f, key).status, 200);
    const HttpReply images = waiting.readReply(15'000);
    QCOMPARE(images.status, 200);
    QCOMPARE(balance(f), 0);
    QCOMPARE(transferCoord(f, key).status, 402);
}

void TestImagesMoney::failedTaskGivesAllBack()
{
    SY_START_ON_FAKE(fake, f, moneySettings(fake));
    const QByteArray key = f.fundedKey(kCredit);
    LedgerModel ledger(f.service());
    QTRY_VERIFY(ledger.isLoaded());
    const MetricsPage before = metricsPage(f.port());
    const HttpReply r = post(f, {{"prompt", "a storm [fake fault=500]"}, {"n", 3}}, key);
    QCOMPARE(r.status, 502);
    const QString id = r.json().value("id").toString();
    QVERIFY(!id.isEmpty());
    // The hold and its release, and no charge.
    QTRY_COMPARE(taskEntries(ledger, id).size(), 2);
    const QList<LedgerEntry> e = taskEntries(ledger, id);
    QCOMPARE(e[0].requestId, id + ":hold");
    QCOMPARE(e[0].amount, -3 * kPrice);
    QCOMPARE(e[1].requestId, id + ":release");
    QCOMPARE(e[1].amount, 3 * kPrice);
    QCOMPARE(e[1].balanceAfter, kCredit);
    QTRY_COMPARE(ledger.balance(), kCredit);
    QCOMPARE(balance(f), kCredit);
    QCOMPARE(count(f, "SELECT COUNT(*) FROM usage_records WHERE cost > 0"), 0);
    const MetricsPage after = metricsPage(f.port());
    QCOMPARE(moved(before, after, "switchyard_credits_units_total", "charge"), 3 * kPrice);
    QCOMPARE(moved(before, after, "switchyard_credits_units_total", "refund"), 3 * kPrice);
}

void TestImagesMoney::concurrentTasksNeverOverdraw()
{
    SY_START_ON_FAKE(fake, f, moneySettings(fake, {{"max_concurrent", 16}}));
    const QByteArray key = f.createKey();
    constexpr int kFits = 5;     // tasks of two images the balance covers
    constexpr int kClients = 16; // sent together
    f.grant(kFits * 2 * kPrice);
    QList<std::shared_ptr<HttpClient>> clients;
    for (int i = 0; i < kClients; ++i) {
        auto c = std::make_shared<HttpClient>(f.port());
        QVERIFY(c->connectIfNeeded());
        clients.append(c);
    }
    // Half wait for their images, half are answered at once; every upstream call takes a while.
    for (int i = 0; i < kClients; ++i) {
        QList<QPair<QByteArray, QByteArray>> headers{{"Authorization", "Bearer " + key},
                                                     {"Content-Type", "application/json"}};
        if (i % 2)
            headers.append(qMakePair(QByteArray("Prefer"), QByteArray("respond-async")));
        clients[i]->send(
            "POST", "/v1/images/generations", headers,
            QJsonDocument(
                QJsonObject{{"prompt", QStringLiteral("gull %1 [fake delay-ms=300]").arg(i)},
                            {"n", 2}})
                .toJson(QJsonDocument::Compact));
    }
    int served = 0, refused = 0;
    for (int i = 0; i < kClients; ++i) {
        const HttpReply r = clients[i]->readReply(20'000);
        QVERIFY2(r.status == 200 || r.status == 202 || r.status == 402,
                 qPrintable(QString::number(r.status) + ": " + r.errorMessage()));
        (r.status == 402 ? refused : served)++;
        QVERIFY(balance(f) >= 0);
    }
    // One instance: its gate admits what the balance covers, a synchronous request's hold
    // handed back once its durable hold stands. On SQLite the gate is in memory and the hand-
    // back immediate: exactly what fits. On PostgreSQL the holds are in the shared state and a
    // hand-back goes with the next batch, so for a moment the durable hold and the shared one
    // both count and a request may be refused (server/SharedState.h: under load, more than
    // one); never one more admitted, and what was refused is served one by one below.
    if (f.store().isPostgres())
        QVERIFY2(served >= 1 && served <= kFits, qPrintable(QString::number(served)));
    else
        QCOMPARE(served, kFits);
    QCOMPARE(served + refused, kClients);
    QCOMPARE(count(f, "SELECT COUNT(*) FROM image_tasks"), served);
    QTRY_COMPARE_WITH_TIMEOUT(
        count(f, "SELECT COUNT(*) FROM image_tasks WHERE status IN ('queued', 'in_progress', "
                 "'uploading')"),
        0, 15000);
    QCOMPARE(balance(f), (kFits - served) * 2 * kPrice);
    // Nothing held was lost: what is left serves exactly the tasks it covers, one by one.
    int more = 0;
    for (;;) {
        const HttpReply r = post(f, {{"prompt", "one more"}, {"n", 2}}, key);
        if (r.status == 402)
            break;
        QCOMPARE(r.status, 200);
        QVERIFY(++more <= kFits);
    }
    qInfo("%d of %d tasks served together, %d more one by one", served, kClients, more);
    QCOMPARE(served + more, kFits);
    QCOMPARE(balance(f), 0);
    HttpClient stats(fake.port());
    QCOMPARE(stats.get("/fake/stats").json().value("requests").toInt(), kFits);
}

void TestImagesMoney::sweptTaskAnnounced()
{
    SY_START_ON_FAKE(fake, f, moneySettings(fake, {{"task_lease_ms", 300}}));
    f.grant(kCredit);
    LedgerModel ledger(f.service());
    QTRY_VERIFY(ledger.isLoaded());
    // A task of an instance that died after its upstream call began, held on the store directly.
    ImageStore::Task t;
    t.id = QStringLiteral("imgtask_swept");
    t.accountId = f.store().defaultAccountId();
    t.model = "test-image";
    t.prompt = "left behind";
    t.params = "{\"n\":2,\"response_format\":\"url\"}";
    t.n = 2;
    t.status = QStringLiteral("in_progress");
    t.baseUrl = "http://127.0.0.1";
    t.price = kPrice;
    t.held = 2 * kPrice;
    t.requestId = "req_swept";
    t.owner = "gone:1:0000";
    t.leaseUntil = QDateTime::currentMSecsSinceEpoch() - 1000;
    t.createdMs = t.leaseUntil - 5000;
    MoneyJournal journal(f.store());
    QCOMPARE(ImageStore::insertTask(journal, t, 0).status, ChargeResult::Status::Committed);
    QCOMPARE(journal.entries().size(), 1);
    // The sweep fails it and releases the hold through the money path.
    QTRY_COMPARE_WITH_TIMEOUT(task(f, t.id)->status, QStringLiteral("failed"), 10000);
    QTRY_COMPARE(taskEntries(ledger, t.id).size(), 1);
    QCOMPARE(taskEntries(ledger, t.id).at(0).requestId, t.id + ":release");
    QTRY_COMPARE(ledger.balance(), kCredit);
    QCOMPARE(balance(f), kCredit);
}

// Two instances on one PostgreSQL database: the second admits on a balance it read before the
// first one's hold, and the durable hold refuses it.
void TestImagesMoney::otherInstancesHoldCounts()
{
    IMAGES_REQUIRE_POSTGRES();
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    const ServerSettings settings = moneySettings(fake);
    ServerFixture a(QStringLiteral("postgres"), settings);
    QVERIFY(a.ready());
    QString error;
    const auto b = secondInstance(a, settings, &error);
    QVERIFY2(b, qPrintable(error));
    HttpClient toB(quint16(b->host()->url().port()));
    const QByteArray key = a.fundedKey(2 * kPrice + kAddressPrice);
    // B reads the balance (two images' worth after this request) and keeps it fresh.
    QCOMPARE(toB.postJson("/v1/address/transfer-coord",
                          R"({"text": "120.026208,30.279212", "srcCoord": "gcj02"})", key)
                 .status,
             200);
    // B hands that request's hold back just after its charge (server/SharedState.h); until
    // then both count, and A could refuse what follows.
    QTRY_COMPARE(count(a, QStringLiteral("SELECT COALESCE(SUM(held), 0) FROM shared_holds")), 0);
    const HttpReply held =
        post(a, {{"prompt", "one heron"}, {"n", 2}}, key, {{"Prefer", "respond-async"}});
    QCOMPARE(held.status, 202);
    QCOMPARE(balance(a), 0);
    const HttpReply refused =
        toB.request("POST", "/v1/images/generations",
                    {{"Authorization", "Bearer " + key}, {"Content-Type", "application/json"}},
                    QJsonDocument(QJsonObject{{"prompt", "another heron"}, {"n", 2}})
                        .toJson(QJsonDocument::Compact));
    QCOMPARE(refused.status, 402);
    QCOMPARE(refused.json().value("error").toObject().value("type").toString(),
             QStringLiteral("insufficient_credits"));
    QCOMPARE(count(a, "SELECT COUNT(*) FROM image_tasks"), 1);
    QTRY_COMPARE_WITH_TIMEOUT(task(a, held.json().value("id").toString())->status,
                              QStringLiteral("completed"), 15000);
    QCOMPARE(balance(a), 0);
    HttpClient stats(fake.port());
    QCOMPARE(stats.get("/fake/stats").json().value("requests").toInt(), 1);
    b->stop();
}

QTEST_GUILESS_MAIN(TestImagesMoney)
#include "tst_images_money.moc"
