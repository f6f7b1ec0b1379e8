#include "Money.h"
#include "TestDatabase.h"
#include "UsageModel.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

class TestUsageModel : public QObject
{
    Q_OBJECT
private slots:
    void recordAppearsLive();
    void filtersByKeyAndTime();
    void pagesOlderRecords();
    void meterColumnsFollowTheRecords();

private:
    static UsageRecord usage(qint64 account, qint64 keyId, const QString &model,
                             const QString &requestId, const QDateTime &time = QDateTime());
};

UsageRecord TestUsageModel::usage(qint64 account, qint64 keyId, const QString &model,
                                  const QString &requestId, const QDateTime &time)
{
    UsageRecord r;
    r.accountId = account;
    r.keyId = keyId;
    r.time = time;
    r.endpoint = QStringLiteral("/v1/chat/completions");
    r.model = model;
    r.inputTokens = 120;
    r.outputTokens = 30;
    r.cost = *Money::parseCredits(u"0.0015");
    r.status = 200;
    r.latencyMs = 87;
    r.requestId = requestId;
    return r;
}

void TestUsageModel::recordAppearsLive()
{
    TestDatabase t;
    UsageModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_VERIFY(model.isLoaded());
    QCOMPARE(model.rowCount(), 0);

    t.db().recordUsage(usage(t.account(), 0, QStringLiteral("gpt-4o-mini"), "req_a"));
    QTRY_COMPARE(model.rowCount(), 1);
    auto cell = [&](int row, int column) { return model.index(row, column).data().toString(); };
    QCOMPARE(cell(0, UsageModel::ModelColumn), QStringLiteral("gpt-4o-mini"));
    QCOMPARE(cell(0, UsageModel::EndpointColumn), QStringLiteral("/v1/chat/completions"));
    QCOMPARE(cell(0, UsageModel::InputTokensColumn), QStringLiteral("120"));
    QCOMPARE(cell(0, UsageModel::OutputTokensColumn), QStringLiteral("30"));
    QCOMPARE(cell(0, UsageModel::CostColumn), QStringLiteral("0.0015"));
    QCOMPARE(cell(0, UsageModel::StatusColumn), QStringLiteral("200"));
    QCOMPARE(cell(0, UsageModel::LatencyColumn), QStringLiteral("87"));
    QCOMPARE(cell(0, UsageModel::RequestIdColumn), QStringLiteral("req_a"));
    QVERIFY(!cell(0, UsageModel::TimeColumn).isEmpty());

    t.db().recordUsage(usage(t.account(), 0, QStringLiteral("deepseek-chat"), "req_b"));
    t.db().recordUsage(usage(t.account(), 0, QStringLiteral("deepseek-chat"), "req_c"));
    QTRY_COMPARE(model.rowCount(), 3);
    QCOMPARE(cell(0, UsageModel::RequestIdColumn), QStringLiteral("req_c")); // newest first
    QCOMPARE(cell(2, UsageModel::RequestIdColumn), QStringLiteral("req_a"));
}

void TestUsageModel::filtersByKeyAndTime()
{
    TestDatabase t;
    const qint64 account = t.account();
    const qint64 key1 = t.writeNow<CreatedSecret>([=](Store &s) {
                             return s.createApiKey(account, "one", QString());
                         }).id;
    const qint64 key2 = t.writeNow<CreatedSecret>([=](Store &s) {
                             return s.createApiKey(account, "two", QString());
                         }).id;
    const QDateTime now = QDateTime::currentDateTimeUtc();
    t.writeNow<qint64>([=](Store &s) {
        s.insertUsage(usage(account, key1, "m", "old", now.addDays(-3)));
        s.insertUsage(usage(account, key1, "m", "k1", now.addSecs(-60)));
        return s.insertUsage(usage(account, key2, "m", "k2", now.addSecs(-30)));
    });

    UsageModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_COMPARE(model.rowCount(), 3);

    UsageFilter byKey;
    byKey.keyId = key1;
    model.setFilter(byKey);
    QTRY_COMPARE(model.rowCount(), 2);
    QCOMPARE(model.index(0, UsageModel::RequestIdColumn).data().toString(), QStringLiteral("k1"));

    UsageFilter recent = byKey;
    recent.from = now.addDays(-1);
    model.setFilter(recent);
    QTRY_COMPARE(model.rowCount(), 1);

    // Live records honour the filter too.
    t.db().recordUsage(usage(account, key2, "m", "live-k2"));
    t.db().recordUsage(usage(account, key1, "m", "live-k1"));
    QTRY_COMPARE(model.rowCount(), 2);
    QCOMPARE(model.index(0, UsageModel::RequestIdColumn).data().toString(),
             QStringLiteral("live-k1"));

    model.setFilter(UsageFilter{});
    QTRY_COMPARE(model.rowCount(), 5);
}

void TestUsageModel::pagesOlderRecords()
{
    TestDatabase t;
    const qint64 account = t.account();
    t.writeNow<bool>([=](Store &s) {
        for (int i = 0; i < 5; ++i)
            s.insertUsage(usage(account, 0, "m", QStringLiteral("r%1").arg(i)));
        return true;
    });
    UsageModel model(t.db(), nullptr, 2, 4);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_VERIFY(model.isLoaded());
    for (int guard = 0; guard < 10 && model.rowCount() < 5; ++guard) {
        if (model.canFetchMore(QModelIndex()))
            model.fetchMore(QModelIndex());
        QTest::qWait(20);
    }
    QCOMPARE(model.rowCount(), 5);
    QVERIFY(!model.canFetchMore(QModelIndex()));
    QCOMPARE(model.index(4, UsageModel::RequestIdColumn).data().toString(), QStringLiteral("r0"));

    // A live burst keeps the newest maxRows and leaves the rest to fetchMore().
    for (int i = 5; i < 8; ++i)
        t.db().recordUsage(usage(account, 0, "m", QStringLiteral("r%1").arg(i)));
    QTRY_COMPARE(model.index(0, UsageModel::RequestIdColumn).data().toString(),
                 QStringLiteral("r7"));
    QCOMPARE(model.rowCount(), 4);
    QVERIFY(model.canFetchMore(QModelIndex()));
}

// A column per meter the records shown have, in name order, headed by its description's label
// or its name; a record without the meter has an empty cell. Columns appear for stored records
// (a reload) and for live ones alike, and their headers follow the descriptions the owner gives.
void TestUsageModel::meterColumnsFollowTheRecords()
{
    TestDatabase t;
    const qint64 account = t.account();
    t.writeNow<qint64>([=](Store &s) {
        UsageRecord stored = usage(account, 0, "m", "stored");
        stored.setMeter(QStringLiteral("test_sheets"), 12);
        s.insertUsage(usage(account, 0, "m", "plain"));
        return s.insertUsage(stored);
    });
    UsageModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_COMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), UsageModel::ColumnCount + 1);
    QCOMPARE(model.meterColumns(), QStringList{"test_sheets"});
    const int sheets = UsageModel::ColumnCount;
    // Not described yet: its own name, until the owner gives the description.
    QCOMPARE(model.headerData(sheets, Qt::Horizontal).toString(), QStringLiteral("test_sheets"));
    QSignalSpy headers(&model, &QAbstractItemModel::headerDataChanged);
    model.setMeterSpecs({{QStringLiteral("test_sheets"), QStringLiteral("Sheets")}});
    QCOMPARE(headers.size(), 1);
    QCOMPARE(headers.first().at(1).toInt(), sheets);
    QCOMPARE(headers.first().at(2).toInt(), sheets);
    QCOMPARE(model.headerData(sheets, Qt::Horizontal).toString(), QStringLiteral("Sheets"));
    QCOMPARE(model.index(0, sheets).data().toString(), QStringLiteral("12"));
    QVERIFY(!model.index(1, sheets).data().isValid()); // "plain" has none
    QCOMPARE(model.index(1, sheets).data(UsageModel::SortRole).toLongLong(), 0);

    // A meter without a description, before the described one in name order.
    UsageRecord live = usage(account, 0, "m", "live");
    live.setMeter(QStringLiteral("test_aaa"), 4'000'000'000'000);
    live.setMeter(QStringLiteral("test_sheets"), 3);
    t.db().recordUsage(live);
    QTRY_COMPARE(model.rowCount(), 3);
    QCOMPARE(model.meterColumns(), (QStringList{"test_aaa", "test_sheets"}));
    QCOMPARE(model.headerData(sheets, Qt::Horizontal).toString(), QStringLiteral("test_aaa"));
    QCOMPARE(model.index(0, sheets).data().toLongLong(), 4'000'000'000'000);
    QCOMPARE(model.index(0, sheets + 1).data().toLongLong(), 3);
    QCOMPARE(model.index(1, sheets + 1).data().toLongLong(), 12);
    QVERIFY(!model.index(1, sheets).data().isValid());
}

QTEST_GUILESS_MAIN(TestUsageModel)
#include "tst_usagemodel.moc"
