#include "Money.h"
#include "TestDatabase.h"
#include "UsageBucketModel.h"

#include <QAbstractItemModelTester>
#include <QTest>

class TestUsageBucketModel : public QObject
{
    Q_OBJECT
private slots:
    void contiguousBucketsWithLiveRefresh();
    void dayBuckets();
};

namespace {

UsageRecord charged(qint64 account, const QDateTime &time, qint64 cost)
{
    UsageRecord r;
    r.accountId = account;
    r.time = time;
    r.endpoint = QStringLiteral("/v1/responses");
    r.model = QStringLiteral("m");
    r.cost = cost;
    r.status = 200;
    return r;
}

qint64 value(const UsageBucketModel &model, int row, int column)
{
    return model.index(row, column).data(UsageBucketModel::ValueRole).toLongLong();
}

} // namespace

void TestUsageBucketModel::contiguousBucketsWithLiveRefresh()
{
    TestDatabase t;
    const qint64 account = t.account();
    const QDateTime now = QDateTime::currentDateTimeUtc();
    t.writeNow<qint64>([=](Store &s) {
        s.insertUsage(charged(account, now.addSecs(-2 * 3600), 7));
        return s.insertUsage(charged(account, now.addDays(-5), 100)); // outside the window
    });

    UsageBucketModel model(t.db(), nullptr, 20);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setBuckets(UsageBucketModel::kHourMs, 3);
    QTRY_VERIFY(model.isLoaded());
    QCOMPARE(model.rowCount(), 3);
    const qint64 currentHour =
        now.toMSecsSinceEpoch() / UsageBucketModel::kHourMs * UsageBucketModel::kHourMs;
    QCOMPARE(value(model, 2, UsageBucketModel::StartColumn), currentHour);
    QCOMPARE(value(model, 0, UsageBucketModel::StartColumn),
             currentHour - 2 * UsageBucketModel::kHourMs);
    QCOMPARE(value(model, 0, UsageBucketModel::RequestsColumn), 1);
    QCOMPARE(value(model, 0, UsageBucketModel::CostColumn), 7);
    QCOMPARE(value(model, 1, UsageBucketModel::RequestsColumn), 0);
    QCOMPARE(value(model, 2, UsageBucketModel::RequestsColumn), 0);

    t.db().recordUsage(charged(account, QDateTime(), Money::kUnitsPerCredit));
    t.db().recordUsage(charged(account, QDateTime(), 1));
    QTRY_COMPARE(value(model, 2, UsageBucketModel::RequestsColumn), 2);
    QCOMPARE(value(model, 2, UsageBucketModel::CostColumn), Money::kUnitsPerCredit + 1);
    QCOMPARE(model.index(2, UsageBucketModel::CostColumn).data().toString(),
             QStringLiteral("1.000000001"));
}

void TestUsageBucketModel::dayBuckets()
{
    TestDatabase t;
    const qint64 account = t.account();
    const QDateTime now = QDateTime::currentDateTimeUtc();
    t.writeNow<qint64>([=](Store &s) {
        s.insertUsage(charged(account, now.addDays(-3), 5));
        return s.insertUsage(charged(account, now.addDays(-3), 6));
    });
    UsageBucketModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setBuckets(UsageBucketModel::kDayMs, 30);
    QTRY_COMPARE(model.rowCount(), 30);
    QCOMPARE(model.bucketMs(), UsageBucketModel::kDayMs);
    QCOMPARE(value(model, 26, UsageBucketModel::RequestsColumn), 2);
    QCOMPARE(value(model, 26, UsageBucketModel::CostColumn), 11);
}

QTEST_GUILESS_MAIN(TestUsageBucketModel)
#include "tst_usagebucketmodel.moc"
