#include "DatabaseService.h"
#include "DbWorker.h"
#include "SqliteStatements.h"
#include "Store.h"
#include "TestSupport.h"

#include <atomic>
#include <latch>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QSemaphore>
#include <QSet>
#include <QSqlError>
#include <QSqlQuery>
#include <QTest>
#include <QThread>
#include <sqlite3.h>
#include <tuple>

// The charge path under concurrency: many threads posting charges through the single writer.
class TestLedger : public QObject
{
    Q_OBJECT

    // Migrates the test's database and grants its default account `amount` units.
    static void seed(const TestDatabase &t, qint64 amount)
    {
        DatabaseService db(t.config());
        db.start(); // migrations
        grant(db, amount);
        db.stop();
    }

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

    static bool sameUsage(const UsageRecord &got, const UsageRecord &want)
    {
        const auto fields = [](const UsageRecord &r) {
            return std::make_tuple(
                r.id, r.accountId, r.keyId, r.tokenId, r.time.toMSecsSinceEpoch(), r.endpoint,
                r.model, r.inputTokens, r.outputTokens, r.cacheReadTokens, r.cacheWriteTokens,
                r.requests, r.cost, r.status, r.latencyMs, r.requestId, r.estimated, r.meters);
        };
        if (fields(got) == fields(want))
            return true;
        qWarning("usage record %lld read back differs from what was written (request %s)", got.id,
                 qPrintable(want.requestId));
        return false;
    }

    // The writer settles what queued up behind a busy job as one batch; one of its charges was
    // settled before, so the batch is refused as written and settled again with the lookup
    // (SettleBatch.cpp, SettleBatchPostgres.cpp): the repeat alone is a duplicate.
    void repeatedChargeInAWriterBatch_data() { addBackendRows(); }
    void repeatedChargeInAWriterBatch()
    {
        SY_OPEN_DB(t);
        DatabaseService db(t.config());
        db.start();
        grant(db, 100'000);
        UsageRecord u;
        u.accountId = db.defaultAccountId();
        u.endpoint = "/v1/batch";
        u.cost = 3;
        u.status = 200;
        u.requestId = "settled-before";
        {
            std::latch done(1);
            db.settle(nullptr, u, [&](const DbResult<ChargeResult> &) { done.count_down(); });
            done.wait();
        }
        WriterHold writer(db);
        const quint64 batchesBefore = db.writerBatches();
        constexpr int kCount = 40, kRepeat = 25;
        std::vector<ChargeResult::Status> status(kCount);
        std::vector<QString> errors(kCount);
        std::latch settled(kCount);
        for (int i = 0; i < kCount; ++i) {
            u.requestId =
                i == kRepeat ? QStringLiteral("settled-before") : QStringLiteral("batch-%1").arg(i);
            db.settle(nullptr, u, [&, i](const DbResult<ChargeResult> &r) {
                status[size_t(i)] = r.value.status;
                errors[size_t(i)] = r.error;
                settled.count_down();
            });
        }
        writer.release();
        settled.wait();
        // The held job's batch, then one for all the settlements.
        QCOMPARE(db.writerBatches() - batchesBefore, quint64(1));
        for (int i = 0; i < kCount; ++i) {
            QVERIFY2(errors[size_t(i)].isEmpty(), qPrintable(errors[size_t(i)]));
            QCOMPARE(status[size_t(i)], i == kRepeat ? ChargeResult::Status::Duplicate
                                                     : ChargeResult::Status::Committed);
        }
        db.stop();
        QSqlDatabase conn = t.config().open(QStringLiteral("check"));
        Store s(conn, t.config().kind());
        QCOMPARE(s.balance(s.defaultAccountId()), qint64(100'000 - 3 * kCount));
        QCOMPARE(s.ledgerSum(s.defaultAccountId()), s.balance(s.defaultAccountId()));
        UsageQuery q;
        q.accountId = s.defaultAccountId();
        q.limit = 100;
        QCOMPARE(s.usage(q).records.size(), kCount); // the repeat stores no usage record
    }

    // A settlement still expected (a ticket out) holds the writer's batch until it comes, up to
    // the gather time, and then both commit together; with none expected nothing waits.
    void expectedSettlementsShareACommit_data() { addBackendRows(); }
    void expectedSettlementsShareACommit()
    {
        SY_OPEN_DB(t);
        DatabaseService db(t.config());
        db.setGatherTime(std::chrono::seconds(60)); // far beyond what the test may take
        db.start();
        grant(db, 100'000);
        UsageRecord u;
        u.accountId = db.defaultAccountId();
        u.endpoint = "/v1/gather";
        u.cost = 3;
        u.status = 200;
        QSemaphore settled;
        const auto done = [&](const DbResult<ChargeResult> &r) {
            QVERIFY2(r.ok(), qPrintable(r.error));
            settled.release();
        };
        QElapsedTimer clock;
        clock.start();

        // None expected: it commits at once.
        u.requestId = "alone";
        db.settle(nullptr, u, done);
        QVERIFY(settled.tryAcquire(1, 20'000));

        // One expected: the first waits for it, then one batch takes both.
        SettlementTicket ticket = db.expectSettlement();
        QCOMPARE(db.expectedSettlements(), 1);
        const quint64 before = db.writerBatches();
        u.requestId = "first";
        db.settle(nullptr, u, done);
        QVERIFY(!settled.tryAcquire(1, 300)); // without the wait it took a millisecond
        u.requestId = "expected";
        db.settle(nullptr, u, done, std::move(ticket));
        QVERIFY(!ticket);
        QVERIFY(settled.tryAcquire(2, 20'000));
        QCOMPARE(db.writerBatches() - before, quint64(1));
        QCOMPARE(db.expectedSettlements(), 0);

        // A ticket moved counts once; one dropped is no longer expected.
        {
            SettlementTicket a = db.expectSettlement();
            SettlementTicket b = std::move(a);
            SettlementTicket c = db.expectSettlement();
            QCOMPARE(db.expectedSettlements(), 2);
            c = std::move(b);
            QCOMPARE(db.expectedSettlements(), 1);
        }
        QCOMPARE(db.expectedSettlements(), 0);
        u.requestId = "after-drop";
        db.settle(nullptr, u, done);
        QVERIFY(settled.tryAcquire(1, 20'000));
        // Every wait ended early: the gather time is a minute.
        QVERIFY2(clock.elapsed() < 50'000, qPrintable(QString::number(clock.elapsed())));
        db.stop();
        QSqlDatabase conn = t.config().open(QStringLiteral("check"));
        Store s(conn, t.config().kind());
        QCOMPARE(s.balance(s.defaultAccountId()), qint64(100'000 - 4 * 3));
        QCOMPARE(s.ledgerSum(s.defaultAccountId()), s.balance(s.defaultAccountId()));
    }

    // Store::settleBatch against the one-by-one statements it replaces: the same ledger, the
    // same balances after each entry, the same usage records, ids matching their rows, for a
    // batch that crosses every multi-row statement size, with duplicates (stored earlier and
    // repeated within the batch), cost-free records and an unknown account. The "alone" rows
    // settle the same 300 as batches of one each (PostgreSQL's one-row statement): the same
    // outcomes, a repeat then found among the rows stored before.
    void settleBatchMatchesOneByOne_data()
    {
        QTest::addColumn<QString>("backend");
        QTest::addColumn<bool>("alone");
        for (const char *backend : {"sqlite", "postgres"}) {
            QTest::newRow(backend) << QString::fromLatin1(backend) << false;
            QTest::addRow("%s alone", backend) << QString::fromLatin1(backend) << true;
        }
    }
    void settleBatchMatchesOneByOne()
    {
        QFETCH(bool, alone);
        SY_OPEN_DB(t);
        seed(t, 1'000'000);
        QSqlDatabase conn = t.config().open(QStringLiteral("batch"));
        Store s(conn, t.config().kind());
        const qint64 account = s.defaultAccountId();
        s.applyLedger(account, "charge", -5, "/v1/x", "stored-before", 0);
        const qint64 start = s.balance(account);

        QList<Store::Settlement> batch;
        qint64 charged = 0;
        for (int i = 0; i < 300; ++i) { // 256 + 32 + 8 + 4
            UsageRecord u;
            u.accountId = account;
            // Text that PostgreSQL's array literals and SQL quoting must carry as it is.
            u.endpoint = QStringLiteral("/v1/e%1 \"q\\ {a,b} 'NULL' \u00e9").arg(i % 7);
            u.keyId = i % 2 ? 0 : 1000 + i; // 0 is stored as NULL
            u.model = QStringLiteral("m%1").arg(i);
            u.cost = i % 5 == 0 ? 0 : i; // every fifth records usage only
            u.status = 200;
            u.requestId = QStringLiteral("req-%1").arg(i);
            u.time = QDateTime::fromMSecsSinceEpoch(1'700'000'000'000 + i, Qt::UTC);
            // Every column its own value, so that a column bound in the wrong place shows.
            u.tokenId = i % 2 ? 2000 + i : 0;
            u.inputTokens = i * 3;
            u.outputTokens = i * 5 + 1;
            u.cacheReadTokens = i * 7 + 2;
            u.cacheWriteTokens = i * 11 + 3;
            u.requests = 1 + i % 3;
            u.status = 200 + i % 3;
            u.latencyMs = i * 19 % 1000 + 6;
            u.estimated = i % 3 == 0;
            // Meters: none on every seventh, one or three on the others, each its own value.
            if (i % 7 != 0) {
                u.setMeter(QStringLiteral("characters"), i * 13 + 4);
                if (i % 2 == 0) {
                    u.setMeter(QStringLiteral("audio_ms"), i * 17 + 5);
                    u.setMeter(QStringLiteral("images"), i % 4 + 7);
                }
            }
            // Charged by an earlier batch, in a late chunk of the ledger's inserts: the chunks
            // before it are written when the unique index refuses it (SettleBatch.cpp).
            if (i == 271)
                u.requestId = "stored-before";
            if (i == 42 || i == 43)
                u.requestId = "twice"; // the second is a duplicate of the first
            if (i == 99 || i == 100)
                u.accountId = 987654; // no such account: refused alone, charged or not (100)
            batch.append(Store::Settlement{u, {}, {}});
        }
        if (alone) {
            for (Store::Settlement &one : batch) {
                QList<Store::Settlement> single{one};
                s.transaction([&] { s.settleBatch(single); });
                one = single.first();
            }
        } else {
            s.transaction([&] { s.settleBatch(batch); });
        }
        qint64 expected = start;
        QSet<qint64> ledgerIds, usageIds;
        for (int i = 0; i < batch.size(); ++i) {
            const Store::Settlement &r = batch[i];
            if (i == 99 || i == 100) {
                QCOMPARE(r.charge.status, ChargeResult::Status::UnknownAccount);
                QVERIFY(!r.error.isEmpty());
                QCOMPARE(r.usage.id, qint64(0));
                continue;
            }
            QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
            if (i == 271 || i == 43) {
                QCOMPARE(r.charge.status, ChargeResult::Status::Duplicate);
                QCOMPARE(r.usage.id, qint64(0));
                QVERIFY(r.charge.entry.id > 0);
                QCOMPARE(r.charge.entry.requestId,
                         i == 271 ? QStringLiteral("stored-before") : QStringLiteral("twice"));
                if (i == 43)
                    QCOMPARE(r.charge.entry.id, batch[42].charge.entry.id);
                continue;
            }
            QVERIFY(r.usage.id > 0);
            QVERIFY(!usageIds.contains(r.usage.id));
            usageIds.insert(r.usage.id);
            if (r.usage.cost == 0) {
                QCOMPARE(r.charge.entry.id, qint64(0));
                continue;
            }
            expected -= r.usage.cost;
            charged += r.usage.cost;
            QCOMPARE(r.charge.status, ChargeResult::Status::Committed);
            QCOMPARE(r.charge.entry.amount, -r.usage.cost);
            QCOMPARE(r.charge.entry.balanceAfter, expected);
            QVERIFY(!ledgerIds.contains(r.charge.entry.id));
            ledgerIds.insert(r.charge.entry.id);
        }
        QCOMPARE(s.balance(account), start - charged);
        QCOMPARE(s.ledgerSum(account), s.balance(account));
        // Every id names the row written for that settlement.
        QSqlQuery q(conn);
        QVERIFY(q.prepare("SELECT id, request_id, amount, balance_after, reason FROM ledger "
                          "WHERE kind = 'charge' AND request_id LIKE 'req-%'"));
        QVERIFY(q.exec());
        int rows = 0;
        while (q.next()) {
            const int i = q.value(1).toString().mid(4).toInt();
            QCOMPARE(q.value(0).toLongLong(), batch[i].charge.entry.id);
            QCOMPARE(q.value(2).toLongLong(), -batch[i].usage.cost);
            QCOMPARE(q.value(3).toLongLong(), batch[i].charge.entry.balanceAfter);
            QCOMPARE(q.value(4).toString(), batch[i].usage.endpoint);
            ++rows;
        }
        QCOMPARE(rows, ledgerIds.size() - 1); // "twice" does not match req-%
        // Each column by its own name, as the table has it.
        QVERIFY(q.prepare("SELECT id, request_id, model, input_tokens, time_ms, cost, endpoint, "
                          "key_id, token_id, output_tokens, cache_read_tokens, "
                          "cache_write_tokens, requests, status, latency_ms, estimated, "
                          "account_id FROM usage_records"));
        QVERIFY(q.exec());
        rows = 0;
        while (q.next()) {
            const int i = q.value(2).toString().mid(1).toInt();
            const UsageRecord &u = batch[i].usage;
            QCOMPARE(q.value(0).toLongLong(), u.id);
            QCOMPARE(q.value(1).toString(), u.requestId);
            QCOMPARE(q.value(3).toLongLong(), qint64(i * 3));
            QCOMPARE(q.value(4).toLongLong(), 1'700'000'000'000 + i);
            QCOMPARE(q.value(5).toLongLong(), u.cost);
            QCOMPARE(q.value(6).toString(), u.endpoint);
            QCOMPARE(q.value(7).isNull(), u.keyId == 0);
            QCOMPARE(q.value(7).toLongLong(), u.keyId);
            QCOMPARE(q.value(8).isNull(), u.tokenId == 0);
            QCOMPARE(q.value(8).toLongLong(), u.tokenId);
            QCOMPARE(q.value(9).toLongLong(), qint64(i * 5 + 1));
            QCOMPARE(q.value(10).toLongLong(), qint64(i * 7 + 2));
            QCOMPARE(q.value(11).toLongLong(), qint64(i * 11 + 3));
            QCOMPARE(q.value(12).toLongLong(), qint64(1 + i % 3));
            QCOMPARE(q.value(13).toInt(), 200 + i % 3);
            QCOMPARE(q.value(14).toInt(), i * 19 % 1000 + 6);
            QCOMPARE(q.value(15).toInt(), i % 3 == 0 ? 1 : 0);
            QCOMPARE(q.value(16).toLongLong(), account);
            ++rows;
        }
        // Each meter a row of its record's, and no other rows.
        QHash<qint64, qsizetype> byId;
        qsizetype meterRows = 0;
        for (qsizetype i = 0; i < batch.size(); ++i)
            if (batch[i].usage.id > 0) {
                byId.insert(batch[i].usage.id, i);
                meterRows += batch[i].usage.meters.size();
            }
        QVERIFY(meterRows > 0);
        QVERIFY(q.exec("SELECT usage_id, meter, quantity FROM usage_meters"));
        qsizetype seen = 0;
        while (q.next()) {
            QVERIFY(byId.contains(q.value(0).toLongLong()));
            const UsageRecord &u = batch[byId.value(q.value(0).toLongLong())].usage;
            QCOMPARE(q.value(2).toLongLong(), u.meter(q.value(1).toString()));
            QVERIFY(q.value(2).toLongLong() != 0);
            ++seen;
        }
        QCOMPARE(seen, meterRows);
        // Read back through the store, every column as written; then one record through the
        // single-row insert.
        UsageQuery all;
        all.accountId = account;
        all.limit = 1000;
        const UsagePage page = s.usage(all);
        QCOMPARE(page.records.size(), rows);
        for (const UsageRecord &got : page.records)
            QVERIFY(sameUsage(got, batch[got.model.mid(1).toInt()].usage));
        UsageRecord single = batch[1].usage;
        single.requestId = QStringLiteral("single");
        single.id = s.insertUsage(single);
        QVERIFY(single.id > 0);
        UsageRecord orphan = single;
        orphan.accountId = 987654;
        QVERIFY_THROWS_EXCEPTION(StoreError, s.insertUsage(orphan));
        all.limit = 1;
        const UsagePage newest = s.usage(all);
        QCOMPARE(newest.records.size(), 1);
        QVERIFY(sameUsage(newest.records.first(), single));
        QCOMPARE(rows, usageIds.size());
    }

    // PostgreSQL: the settlement statement is prepared again each time the rows settled on its
    // connection double from 1,000, so that its plan follows the ledger's size (a plan made on
    // an empty ledger reads all of it for the duplicate check). Seen in pg_prepared_statements:
    // one name up to 1,000 rows, a new one after, the same up to 2,000. The one-row statement
    // (a batch of one) is made again at the same points.
    void settlementStatementReplannedAsRowsDouble_data()
    {
        QTest::addColumn<QString>("backend");
        QTest::newRow("postgres") << QStringLiteral("postgres");
    }
    void settlementStatementReplannedAsRowsDouble()
    {
        SY_OPEN_DB(t);
        {
            DatabaseService db(t.config());
            db.start(); // migrations
            db.stop();
        }
        QSqlDatabase conn = t.config().open(QStringLiteral("replan"));
        Store s(conn, t.config().kind());
        QSqlQuery q(conn);
        const auto statementName = [&q](const char *pattern) -> QString {
            if (!q.exec(QStringLiteral("SELECT name FROM pg_prepared_statements WHERE statement "
                                       "LIKE '%1'")
                            .arg(QLatin1String(pattern))))
                return QStringLiteral("error: ") + q.lastError().text();
            QStringList names;
            while (q.next())
                names.append(q.value(0).toString());
            return names.join(u',');
        };
        const auto settlement = [&s](int b, int i) {
            UsageRecord u;
            u.accountId = s.defaultAccountId();
            u.endpoint = QStringLiteral("/v1/replan");
            u.cost = 1;
            u.status = 200;
            u.requestId = QStringLiteral("replan-%1-%2").arg(b).arg(i);
            u.time = QDateTime::currentDateTimeUtc();
            return Store::Settlement{u, {}, {}};
        };
        // The names after each round: one settlement alone, then a batch of 100.
        QStringList seen, seenOne;
        for (int b = 0; b < 21; ++b) {
            QList<Store::Settlement> single{settlement(b, 100)};
            s.settleBatch(single);
            QVERIFY2(single[0].error.isEmpty() && single[0].usage.id > 0,
                     qPrintable(single[0].error));
            QList<Store::Settlement> batch;
            for (int i = 0; i < 100; ++i)
                batch.append(settlement(b, i));
            s.settleBatch(batch);
            for (const Store::Settlement &r : batch)
                QVERIFY2(r.error.isEmpty() && r.usage.id > 0, qPrintable(r.error));
            seen.append(statementName("%unnest(%ledger_rows%"));
            seenOne.append(statementName("%NOT MATERIALIZED%"));
        }
        for (const QStringList &names : {seen, seenOne}) {
            QVERIFY(!names[0].isEmpty() && !names[0].contains(u','));
            for (int b = 1; b < 9; ++b)
                QCOMPARE(names[b], names[0]);
            QCOMPARE(names[9], QString()); // 1,010 rows: deallocated
            QVERIFY(!names[10].isEmpty() && names[10] != names[0]);
            for (int b = 11; b < 19; ++b)
                QCOMPARE(names[b], names[10]);
            QCOMPARE(names[19], QString()); // 2,020
            QVERIFY(!names[20].isEmpty() && names[20] != names[10]);
        }
        QVERIFY(seenOne[0] != seen[0]);
    }

    // PostgreSQL: the writer's connection uses generic plans only (custom ones of the
    // settlement statement took as long to make as to run while the tables were small); a
    // reader's keeps PostgreSQL's default.
    void writerPlansGenerically_data() { settlementStatementReplannedAsRowsDouble_data(); }
    void writerPlansGenerically()
    {
        SY_OPEN_DB(t);
        for (const auto mode : {DbWorker::Mode::Writer, DbWorker::Mode::Reader}) {
            DbWorker worker(t.config(), mode, QStringLiteral("plans"));
            worker.start();
            QString setting, error;
            worker.post(
                [&setting](Store &store) {
                    QSqlQuery q(store.database());
                    if (q.exec(QStringLiteral("SHOW plan_cache_mode")) && q.next())
                        setting = q.value(0).toString();
                },
                [&error](const QString &e) { error = e; });
            worker.flush();
            worker.shutdown();
            QVERIFY2(error.isEmpty(), qPrintable(error));
            QCOMPARE(setting, mode == DbWorker::Mode::Writer ? QStringLiteral("force_generic_plan")
                                                             : QStringLiteral("auto"));
        }
    }

    // Amounts whose sum leaves 64 bits (an upstream that reports absurd usage): refused on both
    // databases, one entry and one batch alike, and the balance stays an exact integer.
    void amountsBeyondTheBalancesRange_data() { addBackendRows(); }
    void amountsBeyondTheBalancesRange()
    {
        SY_OPEN_DB(t);
        seed(t, 1'000);
        QSqlDatabase conn = t.config().open(QStringLiteral("range"));
        Store s(conn, t.config().kind());
        const qint64 account = s.defaultAccountId();
        constexpr qint64 kMax = std::numeric_limits<qint64>::max();
        constexpr qint64 kNoFloor = std::numeric_limits<qint64>::min();
        const auto inTransaction = [&](const std::function<void()> &f) {
            try {
                s.transaction(f);
                return true;
            } catch (const StoreError &) {
                return false;
            }
        };
        // 1,000 - max fits; another max would not, and is not stored (refused outright on
        // PostgreSQL; on SQLite the floor test's sum already leaves 64 bits).
        QVERIFY(
            inTransaction([&] { s.applyLedger(account, "charge", -kMax, "/x", "a", kNoFloor); }));
        const qint64 low = 1'000 - kMax;
        QCOMPARE(s.balance(account), low);
        ChargeResult second;
        const bool stored = inTransaction(
            [&] { second = s.applyLedger(account, "charge", -kMax, "/x", "b", kNoFloor); });
        QVERIFY(!stored || second.status != ChargeResult::Status::Committed);
        QCOMPARE(s.balance(account), low);
        // And a grant past the top.
        const bool raised = inTransaction([&] {
            s.applyLedger(account, "grant", kMax, "/x", "", 0);
            s.applyLedger(account, "grant", kMax, "/x", "", 0);
            s.applyLedger(account, "grant", kMax, "/x", "", 0);
        });
        QVERIFY(!raised);
        QCOMPARE(s.balance(account), low);

        const auto settlement = [&](const QString &id, qint64 cost) {
            UsageRecord u;
            u.accountId = account;
            u.endpoint = QStringLiteral("/x");
            u.cost = cost;
            u.status = 200;
            u.requestId = id;
            u.time = QDateTime::currentDateTimeUtc();
            return Store::Settlement{u, {}, {}};
        };
        // One charge that passes the bottom, and two whose sum leaves 64 bits.
        for (const QList<Store::Settlement> &rows :
             {QList<Store::Settlement>{settlement("c", kMax)},
              QList<Store::Settlement>{settlement("d", kMax / 2 + 1),
                                       settlement("e", kMax / 2 + 1)}}) {
            QList<Store::Settlement> batch = rows;
            QVERIFY(!inTransaction([&] { s.settleBatch(batch); }));
            QCOMPARE(s.balance(account), low);
        }
        QSqlQuery q(conn);
        QVERIFY(q.exec("SELECT balance FROM accounts WHERE id = " + QString::number(account)));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).typeId(), int(QMetaType::LongLong));
        QCOMPARE(s.ledgerSum(account), low);
    }

    // Through DatabaseService: settlements from many threads are stored in batches; one that
    // fails (an unknown account) fails alone, the others of its batch are stored.
    void settlementsBatchAndFailAlone_data() { addBackendRows(); }
    void settlementsBatchAndFailAlone()
    {
        SY_OPEN_DB(t);
        DatabaseService db(t.config());
        db.start();
        grant(db, 1'000'000);
        constexpr int kThreads = 8;
        constexpr int kPerThread = 250;
        std::atomic<int> ok{0}, failed{0};
        std::latch finished(kThreads * kPerThread);
        std::vector<std::unique_ptr<QThread>> threads;
        for (int w = 0; w < kThreads; ++w) {
            threads.emplace_back(QThread::create([&, w] {
                for (int i = 0; i < kPerThread; ++i) {
                    UsageRecord u;
                    // Two unknown accounts, one charged and one with usage only.
                    const bool unknown = (w == 3 && i == 100) || (w == 5 && i == 50);
                    u.accountId = unknown ? 424242 : db.defaultAccountId();
                    u.endpoint = "/v1/test";
                    u.cost = w == 5 && i == 50 ? 0 : 3;
                    u.status = 200;
                    u.requestId = QStringLiteral("b-%1-%2").arg(w).arg(i);
                    db.settle(nullptr, u, [&](const DbResult<ChargeResult> &r) {
                        (r.ok() && r.value.status == ChargeResult::Status::Committed ? ok
                                                                                     : failed)++;
                        finished.count_down();
                    });
                }
            }));
            threads.back()->start();
        }
        finished.wait();
        for (auto &th : threads)
            th->wait();
        QCOMPARE(failed.load(), 2);
        QCOMPARE(ok.load(), kThreads * kPerThread - 2);
        QVERIFY2(db.writerBatches() < quint64(kThreads * kPerThread),
                 qPrintable(QString::number(db.writerBatches())));
        db.stop();
        QSqlDatabase conn = t.config().open(QStringLiteral("check"));
        Store s(conn, t.config().kind());
        QCOMPARE(s.balance(s.defaultAccountId()),
                 qint64(1'000'000 - 3 * (kThreads * kPerThread - 2)));
        QCOMPARE(s.ledgerSum(s.defaultAccountId()), s.balance(s.defaultAccountId()));
        QSqlQuery q(conn);
        QVERIFY(q.exec("SELECT COUNT(*), SUM(cost) FROM usage_records"));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toLongLong(), qint64(kThreads * kPerThread - 2));
        QCOMPARE(q.value(1).toLongLong(), qint64(3 * (kThreads * kPerThread - 2)));
    }

    // A batch that fails is settled again one by one. What an earlier commit stored (a lost
    // PostgreSQL connection may have committed the batch before it dropped) is found, not
    // stored twice: a usage record alone, and a charge with its usage record, reported as
    // committed. A charge the balance's range refuses fails alone, and stores nothing.
    void retriedSettlementsFindWhatWasStored_data() { addBackendRows(); }
    void retriedSettlementsFindWhatWasStored()
    {
        SY_OPEN_DB(t);
        seed(t, 1'000);
        const auto record = [](const QString &id, qint64 cost, qint64 timeMs) {
            UsageRecord u;
            u.endpoint = QStringLiteral("/x");
            u.cost = cost;
            u.status = 200;
            u.requestId = id;
            u.time = QDateTime::fromMSecsSinceEpoch(timeMs, Qt::UTC);
            return u;
        };
        QList<UsageRecord> records{record("x0", 0, 1'700'000'000'001),
                                   record("c1", 5, 1'700'000'000'002),
                                   record("n1", 7, 1'700'000'000'003)};
        // Three charges whose sum leaves 64 bits fail the batch; alone, the first passes.
        for (const char *id : {"o1", "o2", "o3"})
            records.append(record(QLatin1String(id), qint64(1) << 62, 1'700'000'000'004));
        {
            QSqlDatabase conn = t.config().open(QStringLiteral("earlier"));
            Store s(conn, t.config().kind());
            for (UsageRecord &u : records)
                u.accountId = s.defaultAccountId();
            s.transaction([&] {
                s.insertUsage(records[0]);
                s.applyLedger(records[1].accountId, "charge", -5, "/x", "c1", 0);
                s.insertUsage(records[1]);
            });
        }
        DatabaseService db(t.config());
        std::atomic<int> appended{0}, recorded{0};
        connect(
            &db, &DatabaseService::ledgerAppended, &db, [&] { ++appended; }, Qt::DirectConnection);
        connect(
            &db, &DatabaseService::usageRecorded, &db, [&] { ++recorded; }, Qt::DirectConnection);
        db.start();
        QList<DbResult<ChargeResult>> results(records.size());
        std::latch done(records.size());
        {
            WriterHold hold(db); // all of them in one batch
            for (qsizetype i = 0; i < records.size(); ++i)
                db.settle(nullptr, records[i], [&, i](const DbResult<ChargeResult> &r) {
                    results[i] = r;
                    done.count_down();
                });
        }
        done.wait();
        const qint64 batches = qint64(db.writerBatches());
        db.stop();
        for (int i : {0, 1, 2, 3})
            QVERIFY2(results[i].ok(), qPrintable(records[i].requestId + ": " + results[i].error));
        for (int i : {1, 2, 3})
            QCOMPARE(results[i].value.status, ChargeResult::Status::Committed);
        QCOMPARE(results[1].value.entry.amount, qint64(-5));
        for (int i : {4, 5})
            QVERIFY(!results[i].ok());
        QCOMPARE(appended.load(), 3);
        QCOMPARE(recorded.load(), 4);
        QVERIFY2(batches > 2, "the batch did not fail"); // the hold, the batch, the retries

        QSqlDatabase conn = t.config().open(QStringLiteral("check"));
        Store s(conn, t.config().kind());
        const qint64 account = s.defaultAccountId();
        QCOMPARE(s.balance(account), 1'000 - 5 - 7 - (qint64(1) << 62));
        QCOMPARE(s.ledgerSum(account), s.balance(account));
        QSqlQuery q(conn);
        QVERIFY(q.exec("SELECT request_id, COUNT(*) FROM usage_records GROUP BY request_id "
                       "ORDER BY request_id"));
        QStringList rows;
        while (q.next())
            rows.append(q.value(0).toString() + u'=' + q.value(1).toString());
        QCOMPARE(rows, QStringList({"c1=1", "n1=1", "o1=1", "x0=1"}));
        QVERIFY(q.exec("SELECT COUNT(*) FROM ledger WHERE kind = 'charge'"));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toInt(), 3);
    }

    // The writer's Commit::Alone: on PostgreSQL such a job runs outside the group's transaction
    // (a SAVEPOINT there is refused), on SQLite inside it; either way the jobs run and are
    // written in the order posted, and a grouped job that fails fails alone.
    void aloneJobsKeepTheirOrder_data() { addBackendRows(); }
    void aloneJobsKeepTheirOrder()
    {
        SY_OPEN_DB(t);
        {
            DatabaseService db(t.config());
            db.start(); // migrations
            db.stop();
        }
        DbWorker writer(t.config(), DbWorker::Mode::Writer, QStringLiteral("alone-writer"));
        writer.start();
        std::latch started(1), release(1);
        writer.post(
            [&](Store &) {
                started.count_down();
                release.wait(); // the jobs below queue up meanwhile: one batch
            },
            {});
        started.wait();
        QStringList ran;
        QList<QString> errors(4);
        bool savepointInGroup = false, savepointAlone = false;
        const auto insert = [](Store &s, const char *name) {
            QSqlQuery q(s.database());
            if (!q.exec(QStringLiteral("INSERT INTO accounts (name, balance, created_ms) VALUES "
                                       "('%1', 0, 0)")
                            .arg(QLatin1String(name))))
                throw StoreError(q.lastError().text().toStdString());
        };
        const auto savepoint = [](Store &s) {
            return QSqlQuery(s.database()).exec(QStringLiteral("SAVEPOINT probe")) &&
                   QSqlQuery(s.database()).exec(QStringLiteral("RELEASE SAVEPOINT probe"));
        };
        writer.post(
            [&](Store &s) {
                ran << "g1";
                savepointInGroup = savepoint(s);
                insert(s, "g1");
            },
            [&](const QString &e) { errors[0] = e; });
        writer.post(
            [&](Store &s) {
                ran << "a";
                savepointAlone = savepoint(s);
                insert(s, "a");
            },
            [&](const QString &e) { errors[1] = e; }, DbWorker::Commit::Alone);
        writer.post(
            [&](Store &s) {
                ran << "g2";
                insert(s, "g2");
                throw StoreError("refused");
            },
            [&](const QString &e) { errors[2] = e; });
        writer.post(
            [&](Store &s) {
                ran << "g3";
                insert(s, "g3");
            },
            [&](const QString &e) { errors[3] = e; });
        release.count_down();
        writer.flush();
        writer.shutdown();
        QCOMPARE(ran, QStringList({"g1", "a", "g2", "g3"}));
        QCOMPARE(errors, QList<QString>({{}, {}, QStringLiteral("refused"), {}}));
        QVERIFY(savepointInGroup);
        QCOMPARE(savepointAlone, t.config().kind() == DatabaseConfig::Kind::Sqlite);

        QSqlDatabase conn = t.config().open(QStringLiteral("check"));
        QSqlQuery q(conn);
        QVERIFY(q.exec("SELECT name FROM accounts WHERE name IN ('g1', 'a', 'g2', 'g3') ORDER BY "
                       "id"));
        QStringList written;
        while (q.next())
            written << q.value(0).toString();
        QCOMPARE(written, QStringList({"g1", "a", "g3"}));
    }

    // SQLite's WAL under a stream of settlements: the Checkpointer copies it into the database
    // on its own thread and the WAL starts over (its header's salt changes) instead of growing
    // without end; every settlement is there afterwards.
    void walIsCheckpointedAndStartsOver()
    {
        TestDatabase t(QStringLiteral("sqlite"));
        DatabaseService db(t.config());
        db.start();
        grant(db, 1'000'000'000);
        const QString wal = t.config().sqlitePath() + QStringLiteral("-wal");
        const auto salt = [&wal] {
            QFile f(wal);
            return f.open(QIODevice::ReadOnly) ? f.read(32).mid(16, 8) : QByteArray();
        };
        const QByteArray firstSalt = salt();
        QVERIFY(!firstSalt.isEmpty());
        constexpr int kSettlements = 40'000; // about 30 MB of WAL written
        std::atomic<int> done{0}, failed{0};
        qint64 largest = 0;
        for (int i = 0; i < kSettlements; ++i) {
            UsageRecord u;
            u.accountId = db.defaultAccountId();
            u.endpoint = "/v1/test/" + QString::number(i % 97).repeated(8);
            u.cost = 1;
            u.status = 200;
            u.requestId = QStringLiteral("w-%1").arg(i);
            db.settle(nullptr, u, [&](const DbResult<ChargeResult> &r) {
                if (!r.ok())
                    ++failed;
                ++done;
            });
            if (i % 500 == 0) {
                QTRY_VERIFY(done.load() >= i - 2000); // keep a bounded number in flight
                largest = std::max(largest, QFileInfo(wal).size());
            }
        }
        QTRY_COMPARE_WITH_TIMEOUT(done.load(), kSettlements, 60'000);
        QCOMPARE(failed.load(), 0);
        QTRY_VERIFY(db.checkpoints() > 0);
        // The WAL starts over at the first write after a finished checkpoint: keep writing.
        int more = 0;
        QElapsedTimer waited;
        waited.start();
        while (salt() == firstSalt && waited.elapsed() < 20'000) {
            UsageRecord u;
            u.accountId = db.defaultAccountId();
            u.endpoint = "/v1/test/more";
            u.status = 200;
            u.requestId = QStringLiteral("m-%1").arg(more++);
            db.settle(nullptr, u, {});
            QTest::qWait(20);
        }
        QVERIFY2(salt() != firstSalt, "the WAL never started over");
        QVERIFY2(largest < 64LL << 20, qPrintable(QString::number(largest)));
        db.stop();
        QSqlDatabase conn = t.config().open(QStringLiteral("check"));
        Store s(conn, t.config().kind());
        QCOMPARE(s.balance(s.defaultAccountId()), qint64(1'000'000'000 - kSettlements));
        QCOMPARE(s.ledgerSum(s.defaultAccountId()), s.balance(s.defaultAccountId()));
    }

    // Under a load that never lets the Checkpointer's own pass finish, the WAL grows until it
    // holds Checkpointer::kRestartBytes of frames, and then the writer checkpoints so that it
    // can start over. After that the WAL file keeps the size it grew to, but a trickle of
    // settlements must not cost the writer a checkpoint (three fdatasync calls) on every pass.
    void writerCheckpointsOnlyForALongWal()
    {
        TestDatabase t(QStringLiteral("sqlite"));
        DatabaseService db(t.config());
        db.start();
        const QString wal = t.config().sqlitePath() + QStringLiteral("-wal");
        std::atomic<int> posted{0}, done{0}, failed{0};
        const auto settle = [&](const QString &endpoint) {
            UsageRecord u;
            u.accountId = db.defaultAccountId();
            u.endpoint = endpoint;
            u.status = 200;
            u.requestId = QStringLiteral("l-%1").arg(posted++);
            db.settle(nullptr, u, [&](const DbResult<ChargeResult> &r) {
                if (!r.ok())
                    ++failed;
                ++done;
            });
        };
        QElapsedTimer t0;
        t0.start();
        const QString wide = QStringLiteral("/v1/test/") + QString(400, QLatin1Char('w'));
        while (db.writerCheckpoints() == 0 && t0.elapsed() < 60'000) {
            if (posted - done < 4'000)
                settle(wide);
            else
                QThread::yieldCurrentThread();
        }
        QVERIFY2(db.writerCheckpoints() > 0, "the WAL was never long enough to start over");
        QTRY_COMPARE_WITH_TIMEOUT(done.load(), posted.load(), 60'000);
        QCOMPARE(failed.load(), 0);
        QVERIFY2(QFileInfo(wal).size() >= Checkpointer::kRestartBytes,
                 qPrintable(QString::number(QFileInfo(wal).size())));
        QTest::qWait(3 * Checkpointer::kPollMs); // the last of the burst copied

        const quint64 before = db.writerCheckpoints();
        for (int i = 0; i < 60; ++i) { // about 12 of the Checkpointer's passes
            settle(QStringLiteral("/v1/test/trickle"));
            QTest::qWait(20);
        }
        QTRY_COMPARE(done.load(), posted.load());
        // One may be due from the burst's last frames; before the fix there were 13.
        QVERIFY2(db.writerCheckpoints() - before <= 2,
                 qPrintable(QString::number(db.writerCheckpoints() - before)));
        db.stop();
    }

    // After an overload, a quiet connection gives its page cache back; a busy one keeps it.
    void quietConnectionsGiveTheirCacheBack()
    {
        TestDatabase t(QStringLiteral("sqlite"));
        QVERIFY(t.ready());
        const auto run = [](DbWorker &w, DbWorker::Job job) {
            std::latch done(1);
            QString error;
            w.post(std::move(job), [&](const QString &e) {
                error = e;
                done.count_down();
            });
            done.wait();
            return error;
        };
        // On the worker's thread: Qt opens SQLite connections without their mutex.
        const auto status = [&](DbWorker &w, int what) {
            int used = -1, highwater = 0;
            run(w, [&](Store &s) {
                sqlite3_db_status(SqliteStatements(s.database()).handle(), what, &used, &highwater,
                                  0);
            });
            return used;
        };
        const auto settle = [](Store &s, const QString &prefix) { // 256 + 32 + 8 + 4 rows
            QList<Store::Settlement> batch;
            for (int i = 0; i < 300; ++i) {
                UsageRecord u;
                u.accountId = s.defaultAccountId();
                u.endpoint = QStringLiteral("/v1/test");
                u.status = 200;
                u.requestId = prefix + QString::number(i);
                u.time = QDateTime::currentDateTimeUtc();
                batch.append(Store::Settlement{u, {}, {}});
            }
            s.settleBatch(batch);
            for (const Store::Settlement &one : batch)
                if (!one.usage.id)
                    throw StoreError("a usage record was not stored");
        };
        const auto readAll = [&](Store &s) {
            QSqlQuery q(s.database());
            if (!q.exec(QStringLiteral("SELECT sum(length(x)) FROM pad")) || !q.next() ||
                q.value(0).toLongLong() != 3'000'000)
                throw StoreError("the rows did not read back");
        };
        {
            DatabaseService db(t.config());
            db.start(); // migrations
            db.stop();
        }
        { // 3 MB of rows: more than a connection's 2 MB cache
            QSqlQuery q(t.config().open(QStringLiteral("pad")));
            QVERIFY(q.exec(QStringLiteral("CREATE TABLE pad (x BLOB)")));
            QVERIFY(q.exec(QStringLiteral("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                                          "FROM n WHERE i < 3000) INSERT INTO pad SELECT "
                                          "zeroblob(1000) FROM n")));
        }
        for (const auto mode : {DbWorker::Mode::Writer, DbWorker::Mode::Reader}) {
            const bool writer = mode == DbWorker::Mode::Writer;
            DbWorker w(t.config(), mode, QStringLiteral("cache"));
            w.setCacheWindow(1'000, 10); // busy: more than 10 jobs a second
            w.start();
            // Busy from the start, one job at a time: the cache fills and stays.
            QElapsedTimer busy;
            busy.start();
            QCOMPARE(run(w, readAll), QString());
            const int warm = status(w, SQLITE_DBSTATUS_CACHE_USED);
            QVERIFY2(warm > 1'000'000, qPrintable(QString::number(warm)));
            if (writer) {
                QCOMPARE(run(w, [&](Store &s) { settle(s, QStringLiteral("a-")); }), QString());
                QVERIFY(status(w, SQLITE_DBSTATUS_STMT_USED) > 400'000);
            }
            while (busy.elapsed() < 3'000)
                QCOMPARE(run(w, [](Store &) {}), QString());
            QCOMPARE(w.cacheReleases(), quint64(0));
            QVERIFY(status(w, SQLITE_DBSTATUS_CACHE_USED) > 1'000'000);
            // Quiet: given back within two windows, and once.
            QTRY_COMPARE_WITH_TIMEOUT(w.cacheReleases(), quint64(1), 10'000);
            QTest::qWait(2'500);
            QCOMPARE(w.cacheReleases(), quint64(1));
            const int cold = status(w, SQLITE_DBSTATUS_CACHE_USED);
            QVERIFY2(cold < 100'000, qPrintable(QString::number(cold)));
            if (writer) {
                QVERIFY(status(w, SQLITE_DBSTATUS_STMT_USED) < 50'000);
                // The dropped statements are made again.
                QCOMPARE(run(w, [&](Store &s) { settle(s, QStringLiteral("b-")); }), QString());
            }
            // The connection still answers, and its cache fills again.
            QCOMPARE(run(w, readAll), QString());
            QVERIFY(status(w, SQLITE_DBSTATUS_CACHE_USED) > 1'000'000);
            QTRY_COMPARE_WITH_TIMEOUT(w.cacheReleases(), quint64(2), 10'000);
        }
    }
};

QTEST_GUILESS_MAIN(TestLedger)
#include "tst_ledger.moc"
