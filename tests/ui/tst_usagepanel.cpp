#include "ApiKeyModel.h"
#include "Money.h"
#include "TestDatabase.h"
#include "UsageBucketModel.h"
#include "UsageChartView.h"
#include "UsageModel.h"
#include "UsagePanel.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLineEdit>
#include <QLineSeries>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTest>

class TestUsagePanel : public QObject
{
    Q_OBJECT
private slots:
    void recordAppearsWithoutRefresh();
    void filtersByKeyAndModelText();
    void meterColumnsAppear();

private:
    static UsageRecord usage(qint64 account, qint64 keyId, const QString &model,
                             const QString &requestId)
    {
        UsageRecord r;
        r.accountId = account;
        r.keyId = keyId;
        r.endpoint = QStringLiteral("/v1/chat/completions");
        r.model = model;
        r.inputTokens = 1000;
        r.outputTokens = 250;
        r.cost = Money::kUnitsPerCredit / 4;
        r.status = 200;
        r.latencyMs = 412;
        r.requestId = requestId;
        return r;
    }
};

void TestUsagePanel::recordAppearsWithoutRefresh()
{
    TestDatabase t;
    ApiKeyModel keys(t.db());
    UsageModel records(t.db());
    UsageBucketModel buckets(t.db(), nullptr, 20);
    QAbstractItemModelTester tester(&records,
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    UsagePanel panel(&records, &buckets, &keys);
    panel.show();
    QTRY_VERIFY(records.isLoaded() && buckets.isLoaded());
    auto *chart = panel.findChild<UsageChartView *>("usageChart");
    QVERIFY(chart);
    QCOMPARE(chart->requestSeries()->count(), 48);

    t.db().recordUsage(usage(t.account(), 0, QStringLiteral("deepseek-chat"), "req_ui"));
    const QAbstractItemModel *table = panel.view()->model();
    QTRY_COMPARE(table->rowCount(), 1);
    QCOMPARE(table->index(0, UsageModel::ModelColumn).data().toString(),
             QStringLiteral("deepseek-chat"));
    QCOMPARE(table->index(0, UsageModel::CostColumn).data().toString(), QStringLiteral("0.25"));
    QCOMPARE(table->index(0, UsageModel::InputTokensColumn).data().toString(),
             QStringLiteral("1000"));
    QCOMPARE(table->index(0, UsageModel::LatencyColumn).data().toString(), QStringLiteral("412"));
    QCOMPARE(table->index(0, UsageModel::RequestIdColumn).data().toString(),
             QStringLiteral("req_ui"));

    // The chart follows within its coalescing delay: the current hour is the last point.
    QTRY_COMPARE(chart->requestSeries()->at(47).y(), 1.0);
    QCOMPARE(chart->creditSeries()->at(47).y(), 0.25);

    auto *bucket = panel.findChild<QComboBox *>("bucketCombo");
    bucket->setCurrentIndex(bucket->findData(UsageBucketModel::kDayMs));
    QTRY_COMPARE(chart->requestSeries()->count(), 30);
    QTRY_COMPARE(chart->requestSeries()->at(29).y(), 1.0);
}

void TestUsagePanel::filtersByKeyAndModelText()
{
    TestDatabase t;
    const qint64 account = t.account();
    const qint64 first = t.writeNow<CreatedSecret>([=](Store &s) {
                              return s.createApiKey(account, "first", QString());
                          }).id;
    const qint64 second = t.writeNow<CreatedSecret>([=](Store &s) {
                               return s.createApiKey(account, "second", QString());
                           }).id;
    ApiKeyModel keys(t.db());
    UsageModel records(t.db());
    UsageBucketModel buckets(t.db());
    UsagePanel panel(&records, &buckets, &keys);
    panel.show();
    auto *keyCombo = panel.findChild<QComboBox *>("keyFilterCombo");
    QTRY_COMPARE(keyCombo->count(), 3); // all keys + two

    t.db().recordUsage(usage(account, first, QStringLiteral("gpt-4o-mini"), "a"));
    t.db().recordUsage(usage(account, second, QStringLiteral("deepseek-chat"), "b"));
    t.db().recordUsage(usage(account, second, QStringLiteral("DeepSeek-reasoner"), "c"));
    const QAbstractItemModel *table = panel.view()->model();
    QTRY_COMPARE(table->rowCount(), 3);

    auto *text = panel.findChild<QLineEdit *>("modelFilterEdit");
    QTest::keyClicks(text, "deepseek");
    QCOMPARE(table->rowCount(), 2);

    keyCombo->setCurrentIndex(keyCombo->findData(first));
    QTRY_COMPARE(records.rowCount(), 1);
    QCOMPARE(table->rowCount(), 0); // first's only record is not a deepseek model
    text->clear();
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->index(0, UsageModel::RequestIdColumn).data().toString(), QStringLiteral("a"));

    // Live records still honour the key filter.
    t.db().recordUsage(usage(account, second, QStringLiteral("m"), "d"));
    t.db().recordUsage(usage(account, first, QStringLiteral("m"), "e"));
    QTRY_COMPARE(table->rowCount(), 2);

    keyCombo->setCurrentIndex(0);
    QTRY_COMPARE(table->rowCount(), 5);
}

// A record with a meter the table has no column for yet adds one, headed by the meter's label.
void TestUsagePanel::meterColumnsAppear()
{
    TestDatabase t;
    ApiKeyModel keys(t.db());
    UsageModel records(t.db());
    records.setMeterSpecs({{QStringLiteral("test_minutes"), QStringLiteral("Minutes")}});
    UsageBucketModel buckets(t.db());
    UsagePanel panel(&records, &buckets, &keys);
    panel.show();
    QTRY_VERIFY(records.isLoaded());
    t.db().recordUsage(usage(t.account(), 0, QStringLiteral("m"), "first"));
    const QAbstractItemModel *table = panel.view()->model();
    QTRY_COMPARE(table->rowCount(), 1);
    QCOMPARE(table->columnCount(), int(UsageModel::ColumnCount));

    UsageRecord metered = usage(t.account(), 0, QStringLiteral("m"), "metered");
    metered.setMeter(QStringLiteral("test_minutes"), 90);
    t.db().recordUsage(metered);
    QTRY_COMPARE(table->rowCount(), 2);
    QCOMPARE(table->columnCount(), UsageModel::ColumnCount + 1);
    QCOMPARE(table->headerData(UsageModel::ColumnCount, Qt::Horizontal).toString(),
             QStringLiteral("Minutes"));
    QCOMPARE(table->index(0, UsageModel::ColumnCount).data().toString(), QStringLiteral("90"));
    QVERIFY(!panel.view()->isColumnHidden(UsageModel::ColumnCount));
}

QTEST_MAIN(TestUsagePanel)
#include "tst_usagepanel.moc"
