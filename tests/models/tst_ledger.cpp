#include "DatabaseService.h"
#include "TestSupport.h"

#include <atomic>
#include <latch>
#include <QTest>
#include <QThread>

// The charge path under concurrency: many threads posting charges through the single writer.
class TestLedger : public QObject
{
    Q_OBJECT

    static void grant(DatabaseService &db, qint64 amount)
    {
        std::latch done(1);
        db.applyLedger(nullptr, db.defaultAccountId(), "grant", amount, "seed", "", 0,
                       [&](const DbResult<ChargeResult> &r) {
                           QVERIFY(r.ok());
                           done.count_down();
                       });
        done.wait();
    }

private slots:
    void concurrentChargesNeverOverdraw_data() { addBackendRows(); }
    void concurrentChargesNeverOverdraw()
    {
        SY_OPEN_DB(t);
        DatabaseService db(t.config());
        db.start();
        grant(db, 1000);
        constexpr int kThreads = 16;
        constexpr int kPerThread = 125; // 2000 attempts of 1 unit against 1000 available
        std::atomic<int> committed{0}, refused{0}, failed{0};
        std::latch finished(kThreads * kPerThread);
        std::vector<std::unique_ptr<QThread>> threads;
        for (int w = 0; w < kThreads; ++w) {
            threads.emplace_back(QThread::create([&, w] {
                for (int i = 0; i < kPerThread; ++i)
                    db.applyLedger(nullptr, db.defaultAccountId(), "charge", -1, "test",
                                   QStringLiteral("r-%1-%2").arg(w).arg(i), 0,
                                   [&](const DbResult<ChargeResult> &r) {
                                       if (!r.ok())
                                           ++failed;
                                       else if (r.value.status == ChargeResult::Status::Committed)
                                           ++committed;
                                       else if (r.value.status ==
                                                ChargeResult::Status::Insufficient)
                                           ++refused;
                                       finished.count_down();
                                   });
            }));
            threads.back()->start();
        }
        finished.wait();
        for (auto &th : threads)
            th->wait();
        QCOMPARE(failed.load(), 0);
        QCOMPARE(committed.load(), 1000);
        QCOMPARE(refused.load(), 1000);
        // Group commit: far fewer transactions than charges.
        QVERIFY2(db.writerBatches() < 2001, qPrintable(QString::number(db.writerBatches())));
        db.stop();

        QSqlDatabase conn = t.config().open(QStringLiteral("check"));
        Store s(conn, t.config().kind());
        QCOMPARE(s.balance(s.defaultAccountId()), qint64(0));
        QCOMPARE(s.ledgerSum(s.defaultAccountId()), qint64(0));
    }

    void duplicateRequestsCountOnce_data() { addBackendRows(); }
    void duplicateRequestsCountOnce()
    {
        SY_OPEN_DB(t);
        DatabaseService db(t.config());
        db.start();
        grant(db, 100'000);
        constexpr int kIds = 200;
        std::atomic<int> committed{0}, duplicates{0};
        std::latch finished(kIds * 3);
        std::vector<std::unique_ptr<QThread>> threads;
        for (int copy = 0; copy < 3; ++copy) { // three threads post the same request ids
            threads.emplace_back(QThread::create([&] {
                for (int i = 0; i < kIds; ++i)
                    db.applyLedger(
                        nullptr, db.defaultAccountId(), "charge", -7, "dup",
                        QStringLiteral("same-%1").arg(i), 0, [&](const DbResult<ChargeResult> &r) {
                            if (r.ok() && r.value.status == ChargeResult::Status::Committed)
                                ++committed;
                            if (r.ok() && r.value.status == ChargeResult::Status::Duplicate)
                                ++duplicates;
                            finished.count_down();
                        });
            }));
            threads.back()->start();
        }
        finished.wait();
        for (auto &th : threads)
            th->wait();
        QCOMPARE(committed.load(), kIds);
        QCOMPARE(duplicates.load(), 2 * kIds);
        db.stop();
        QSqlDatabase conn = t.config().open(QStringLiteral("check"));
        Store s(conn, t.config().kind());
        QCOMPARE(s.balance(s.defaultAccountId()), qint64(100'000 - 7 * kIds));
        QCOMPARE(s.ledgerSum(s.defaultAccountId()), s.balance(s.defaultAccountId()));
    }

    void settleWritesUsageAndChargeTogether_data() { addBackendRows(); }
    void settleWritesUsageAndChargeTogether()
    {
        SY_OPEN_DB(t);
        DatabaseService db(t.config());
        db.start();
        grant(db, 50);
        UsageRecord u;
        u.accountId = db.defaultAccountId();
        u.endpoint = "/v1/test";
        u.cost = 80; // delivered work may overrun the balance
        u.status = 200;
        u.requestId = "req_settle";
        for (int i = 0; i < 2; ++i) { // settling twice records once
            std::latch done(1);
            db.settle(nullptr, u, [&](const DbResult<ChargeResult> &r) {
                QVERIFY(r.ok());
                QCOMPARE(r.value.status, i == 0 ? ChargeResult::Status::Committed
                                                : ChargeResult::Status::Duplicate);
                done.count_down();
            });
            done.wait();
        }
        db.stop();
        QSqlDatabase conn = t.config().open(QStringLiteral("check"));
        Store s(conn, t.config().kind());
        QCOMPARE(s.balance(s.defaultAccountId()), qint64(-30));
        UsageQuery q;
        q.accountId = s.defaultAccountId();
        const UsagePage page = s.usage(q);
        QCOMPARE(page.records.size(), 1);
        QCOMPARE(page.records.first().cost, qint64(80));
    }
};

QTEST_GUILESS_MAIN(TestLedger)
#include "tst_ledger.moc"
