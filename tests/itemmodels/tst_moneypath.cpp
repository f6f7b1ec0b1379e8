// DatabaseService's money path (writeMoney), on SQLite and PostgreSQL: what a family writes
// through its journal reaches the window's live ledger and usage models and the money counters
// once its transaction has committed, before its caller hears of it; nothing of a job that
// rolls back (alone, or beside one that commits in the same batch) is announced; grants and
// settlements are counted the same way.

#include "DatabaseService.h"
#include "LiveModels.h"
#include "TestSupport.h"

#include <future>
#include <QSignalSpy>
#include <QTest>

namespace {

// Runs a writeMoney job and waits for its outcome (done runs on the writer thread) and the
// money counters as they were when done ran.
template <class R, class Fn>
std::pair<DbResult<R>, MoneyCounters> writeMoneyNow(DatabaseService &db, Fn fn)
{
    auto promise = std::make_shared<std::promise<std::pair<DbResult<R>, MoneyCounters>>>();
    db.writeMoney<R>(nullptr, std::move(fn), [promise, &db](const DbResult<R> &r) {
        promise->set_value({r, db.moneyCounters()});
    });
    return promise->get_future().get();
}

DbResult<ChargeResult> grantNow(DatabaseService &db, qint64 units, const QString &reason)
{
    auto promise = std::make_shared<std::promise<DbResult<ChargeResult>>>();
    db.applyLedger(nullptr, db.defaultAccountId(), QStringLiteral("grant"), units, reason, {}, 0,
                   [promise](const DbResult<ChargeResult> &r) { promise->set_value(r); });
    return promise->get_future().get();
}

qint64 balanceNow(DatabaseService &db)
{
    auto promise = std::make_shared<std::promise<qint64>>();
    const qint64 account = db.defaultAccountId();
    db.read<qint64>(
        nullptr, [account](Store &s) { return s.balance(account); },
        [promise](const DbResult<qint64> &r) { promise->set_value(r.ok() ? r.value : -1); });
    return promise->get_future().get();
}

qint64 ledgerRowsNow(DatabaseService &db)
{
    auto promise = std::make_shared<std::promise<qint64>>();
    const qint64 account = db.defaultAccountId();
    db.read<qint64>(
        nullptr, [account](Store &s) { return qint64(s.ledger(account, 1000).size()); },
        [promise](const DbResult<qint64> &r) { promise->set_value(r.ok() ? r.value : -1); });
    return promise->get_future().get();
}

UsageRecord imageUsage(qint64 account, qint64 cost, const QString &requestId)
{
    UsageRecord u;
    u.accountId = account;
    u.endpoint = QStringLiteral("/v1/images/generations");
    u.model = QStringLiteral("test-image");
    u.setMeter(QStringLiteral("images"), 2);
    u.requests = 0;
    u.cost = cost;
    u.status = 200;
    u.requestId = requestId;
    return u;
}

constexpr qint64 kNoFloor = std::numeric_limits<qint64>::min();

// A started DatabaseService over the test's database, its account granted `seed` units.
std::unique_ptr<DatabaseService> started(const TestDatabase &t, qint64 seed)
{
    auto db = std::make_unique<DatabaseService>(t.config());
    db->start();
    if (!grantNow(*db, seed, QStringLiteral("seed")).ok())
        return nullptr;
    return db;
}

} // namespace

// Opens the test's database as SY_OPEN_DB does, then starts `db`, a DatabaseService over it whose
// account is granted `seed` units (the test fails when that does not work).
#define START_SERVICE(db, seed)                                                                    \
    SY_OPEN_DB(database);                                                                          \
    const std::unique_ptr<DatabaseService> service = started(database, seed);                      \
    QVERIFY(service);                                                                              \
    DatabaseService &db = *service

class TestMoneyPath : public QObject
{
    Q_OBJECT
private slots:
    void committedIsAnnounced_data() { addBackendRows(); }
    void committedIsAnnounced();
    void rolledBackIsNot_data() { addBackendRows(); }
    void rolledBackIsNot();
    void everyPathIsCounted_data() { addBackendRows(); }
    void everyPathIsCounted();
};

void TestMoneyPath::committedIsAnnounced()
{
    START_SERVICE(db, 1000);
    const qint64 account = db.defaultAccountId();
    LiveModels live(db);
    QTRY_VERIFY(live.isLoaded());
    QCOMPARE(live.ledger.rowCount(), 1);
    QCOMPARE(live.usage.rowCount(), 0);
    const MoneyCounters before = db.moneyCounters();

    // A family's task: a hold, its release, a usage record and the charge, in one transaction
    // with nothing else.
    const auto [r, atDone] = writeMoneyNow<qint64>(db, [account](MoneyJournal &j) {
        if (j.applyLedger(account, "charge", -300, "held", "task_1:hold", 0).status !=
            ChargeResult::Status::Committed)
            throw StoreError("hold refused");
        j.applyLedger(account, "refund", 300, "released", "task_1:release", 0);
        const qint64 id = j.insertUsage(imageUsage(account, 200, "req_money_1"));
        j.applyLedger(account, "charge", -200, "2 images", "task_1", kNoFloor);
        return id;
    });
    QVERIFY2(r.ok(), qPrintable(r.error));
    QVERIFY(r.value > 0);
    // Counted before the caller heard of it.
    QCOMPARE(atDone.entries[MoneyCounters::Charge] - before.entries[MoneyCounters::Charge], 2u);
    QCOMPARE(atDone.units[MoneyCounters::Charge] - before.units[MoneyCounters::Charge], 500u);
    QCOMPARE(atDone.entries[MoneyCounters::Refund] - before.entries[MoneyCounters::Refund], 1u);
    QCOMPARE(atDone.units[MoneyCounters::Refund] - before.units[MoneyCounters::Refund], 300u);
    QCOMPARE(atDone.entries[MoneyCounters::Grant], before.entries[MoneyCounters::Grant]);
    QCOMPARE(atDone.usageRecords - before.usageRecords, 1u);

    // The live models follow without a reload.
    QTRY_COMPARE(live.ledger.rowCount(), 4);
    QCOMPARE(live.ledger.balance(), 800);
    QCOMPARE(live.ledger.recordAt(0).requestId, QStringLiteral("task_1"));
    QCOMPARE(live.ledger.recordAt(0).amount, -200);
    QCOMPARE(live.ledger.recordAt(0).balanceAfter, 800);
    QCOMPARE(live.ledger.recordAt(1).kind, QStringLiteral("refund"));
    QCOMPARE(live.ledger.recordAt(2).requestId, QStringLiteral("task_1:hold"));
    QCOMPARE(live.ledger.recordAt(2).balanceAfter, 700);
    QTRY_COMPARE(live.usage.rowCount(), 1);
    QCOMPARE(live.usage.recordAt(0).id, r.value);
    QCOMPARE(live.usage.recordAt(0).cost, 200);
    QCOMPARE(live.usage.recordAt(0).meter(u"images"), 2);
    QVERIFY(live.usage.recordAt(0).time.isValid());
    QCOMPARE(balanceNow(db), 800);
    db.stop();
}

void TestMoneyPath::rolledBackIsNot()
{
    START_SERVICE(db, 1000);
    const qint64 account = db.defaultAccountId();
    LedgerModel ledger(db);
    QTRY_VERIFY(ledger.isLoaded());
    QSignalSpy appended(&db, &DatabaseService::ledgerAppended);
    QSignalSpy recorded(&db, &DatabaseService::usageRecorded);
    const MoneyCounters before = db.moneyCounters();

    // A job that wrote money and then failed: its transaction rolls back, nothing is told.
    const DbResult<bool> failed =
        writeMoneyNow<bool>(db, [account](MoneyJournal &j) -> bool {
            j.applyLedger(account, "charge", -300, "held", "task_2:hold", 0);
            j.insertUsage(imageUsage(account, 300, "req_money_2"));
            throw StoreError("the task's own row was refused");
        }).first;
    QVERIFY(!failed.ok());
    QCOMPARE(failed.error, QStringLiteral("the task's own row was refused"));

    // A charge its floor refuses writes and tells nothing, though the job commits.
    const DbResult<ChargeResult> refused =
        writeMoneyNow<ChargeResult>(db, [account](MoneyJournal &j) {
            return j.applyLedger(account, "charge", -5000, "too much", "task_3:hold", 0);
        }).first;
    QVERIFY(refused.ok());
    QCOMPARE(refused.value.status, ChargeResult::Status::Insufficient);

    // In one writer batch, a job that commits beside one that rolls back: only the first is
    // told.
    std::promise<DbResult<bool>> bad;
    std::promise<DbResult<ChargeResult>> good;
    {
        WriterHold hold(db);
        db.writeMoney<bool>(
            nullptr,
            [account](MoneyJournal &j) -> bool {
                j.applyLedger(account, "charge", -100, "held", "task_4:hold", 0);
                throw StoreError("refused");
            },
            [&bad](const DbResult<bool> &r) { bad.set_value(r); });
        db.writeMoney<ChargeResult>(
            nullptr,
            [account](MoneyJournal &j) {
                return j.applyLedger(account, "grant", 5, "after", QString(), 0);
            },
            [&good](const DbResult<ChargeResult> &r) { good.set_value(r); });
    }
    QVERIFY(!bad.get_future().get().ok());
    const DbResult<ChargeResult> granted = good.get_future().get();
    QVERIFY2(granted.ok(), qPrintable(granted.error));
    QCOMPARE(granted.value.status, ChargeResult::Status::Committed);
    db.flush();

    QCOMPARE(balanceNow(db), 1005);
    QCOMPARE(ledgerRowsNow(db), 2);
    QCOMPARE(appended.count(), 1);
    QCOMPARE(recorded.count(), 0);
    QCOMPARE(appended.at(0).at(0).value<LedgerEntry>().id, granted.value.entry.id);
    const MoneyCounters after = db.moneyCounters();
    QCOMPARE(after.entries[MoneyCounters::Charge], before.entries[MoneyCounters::Charge]);
    QCOMPARE(after.units[MoneyCounters::Charge], before.units[MoneyCounters::Charge]);
    QCOMPARE(after.entries[MoneyCounters::Grant] - before.entries[MoneyCounters::Grant], 1u);
    QCOMPARE(after.usageRecords, before.usageRecords);
    // The grant, announced after the failed jobs, reaches the model; nothing else does.
    QTRY_COMPARE(ledger.balance(), 1005);
    QCOMPARE(ledger.rowCount(), 2);
    db.stop();
}

void TestMoneyPath::everyPathIsCounted()
{
    START_SERVICE(db, 1'000'000'000'000);
    const qint64 account = db.defaultAccountId();
    // Two settlements (one billed) and one unbilled usage record, as the pipeline makes them.
    std::promise<DbResult<ChargeResult>> settled;
    UsageRecord billed;
    billed.accountId = account;
    billed.endpoint = QStringLiteral("/v1/chat/completions");
    billed.cost = 123'456'789'012;
    billed.status = 200;
    billed.requestId = QStringLiteral("req_counted_1");
    db.settle(nullptr, billed,
              [&settled](const DbResult<ChargeResult> &r) { settled.set_value(r); });
    UsageRecord free = billed;
    free.cost = 0;
    free.requestId = QStringLiteral("req_counted_2");
    db.recordUsage(free);
    QVERIFY(settled.get_future().get().ok());
    // A refund through the money path.
    const DbResult<ChargeResult> refunded =
        writeMoneyNow<ChargeResult>(db, [account](MoneyJournal &j) {
            return j.applyLedger(account, "refund", 7, "back", "req_counted_1:refund", 0);
        }).first;
    QVERIFY(refunded.ok());
    db.flush();
    const MoneyCounters c = db.moneyCounters();
    QCOMPARE(c.entries[MoneyCounters::Grant], 1u);
    QCOMPARE(c.units[MoneyCounters::Grant], 1'000'000'000'000u);
    QCOMPARE(c.entries[MoneyCounters::Charge], 1u);
    QCOMPARE(c.units[MoneyCounters::Charge], 123'456'789'012u);
    QCOMPARE(c.entries[MoneyCounters::Refund], 1u);
    QCOMPARE(c.units[MoneyCounters::Refund], 7u);
    QCOMPARE(c.usageRecords, 2u);
    const QByteArray text = c.render();
    for (const char *line : {"# TYPE switchyard_ledger_entries_total counter\n",
                             "switchyard_ledger_entries_total{kind=\"charge\"} 1\n",
                             "switchyard_ledger_entries_total{kind=\"refund\"} 1\n",
                             "switchyard_ledger_entries_total{kind=\"grant\"} 1\n",
                             "# TYPE switchyard_credits_units_total counter\n",
                             "switchyard_credits_units_total{kind=\"charge\"} 123456789012\n",
                             "switchyard_credits_units_total{kind=\"refund\"} 7\n",
                             "switchyard_credits_units_total{kind=\"grant\"} 1000000000000\n",
                             "switchyard_usage_records_total 2\n"})
        QVERIFY2(text.contains(line), text.constData());
    db.stop();
}

QTEST_GUILESS_MAIN(TestMoneyPath)
#include "tst_moneypath.moc"
