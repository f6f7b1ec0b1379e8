#include "ApiKeyModel.h"
#include "Money.h"
#include "TestDatabase.h"
#include "UsageBucketModel.h"
#include "UsageChartView.h"
#include "UsageModel.h"
#include "UsagePanel.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QLineSeries>
#include <QSet>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

class TestUsagePanel : public QObject
{
    Q_OBJECT
private slots:
    void recordAppearsWithoutRefresh();
    void filtersByKeyAndModelText();
    void meterColumnsAppear();
    void exportAndBreakdown();

private:
    // Two keys, "first" and "second": their ids.
    static std::pair<qint64, qint64> firstAndSecond(TestDatabase &t)
    {
        const qint64 account = t.account();
        const auto key = [&](const char *name) {
            return t
                .writeNow<CreatedSecret>([=](Store &s) {
                    return s.createApiKey(account, QString::fromLatin1(name), QString());
                })
                .id;
        };
        const qint64 first = key("first");
        return {first, key("second")};
    }

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
    const auto [first, second] = firstAndSecond(t);
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

// Export CSV writes every record the key filter matches, more than a page, as the API's CSV;
// the breakdown sums them per key (by name) and per model.
void TestUsagePanel::exportAndBreakdown()
{
    TestDatabase t;
    const qint64 account = t.account();
    const auto [first, second] = firstAndSecond(t);
    t.writeNow<bool>([=](Store &s) {
        for (int i = 0; i < 2'500; ++i)
            s.insertUsage(usage(account, i % 5 ? first : second,
                                i % 2 ? QStringLiteral("m,odd") : QStringLiteral("even"),
                                QStringLiteral("r%1").arg(i)));
        return true;
    });
    ApiKeyModel keys(t.db());
    UsageModel records(t.db());
    UsageBucketModel buckets(t.db());
    UsagePanel panel(&records, &buckets, &keys);
    panel.show();
    QTRY_VERIFY(records.isLoaded());
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("usage.csv"));
    QSignalSpy exported(&panel, &UsagePanel::exported);
    panel.exportCsv(path);
    QVERIFY(exported.wait(30'000));
    QCOMPARE(exported.first().first().toBool(), true);
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = file.readAll().split('\n');
    QCOMPARE(lines.size(), 2'500 + 2); // the header, the rows, the empty tail after the last CRLF
    QVERIFY(lines.first().startsWith("id,time,api_key_id,endpoint,model,"));
    QVERIFY(lines[1].contains(",\"m,odd\",")); // the newest: r2499
    QVERIFY(lines[1].contains(",r2499,"));

    // Filtered by key: only its records.
    auto *keyCombo = panel.findChild<QComboBox *>("keyFilterCombo");
    QTRY_COMPARE(keyCombo->count(), 3);
    keyCombo->setCurrentIndex(keyCombo->findData(second));
    exported.clear();
    panel.exportCsv(path);
    QVERIFY(exported.wait(30'000));
    file.close();
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll().count('\n'), 500 + 1);

    // The breakdown over the same filter, then by model over every key.
    auto *table = panel.findChild<QTableWidget *>("breakdownTable");
    QTRY_COMPARE(table->rowCount(), 1);
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("second"));
    QCOMPARE(table->item(0, 1)->data(Qt::DisplayRole).toLongLong(), 500);
    keyCombo->setCurrentIndex(0);
    auto *group = panel.findChild<QComboBox *>("breakdownCombo");
    group->setCurrentIndex(group->findData(QStringLiteral("model")));
    QTRY_COMPARE(table->rowCount(), 2);
    QSet<QString> models{table->item(0, 0)->text(), table->item(1, 0)->text()};
    QCOMPARE(models, (QSet<QString>{"even", "m,odd"}));
    QCOMPARE(table->item(0, 1)->data(Qt::DisplayRole).toLongLong(), 1'250);
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("312.50")); // 1,250 x 0.25 credits

    // A file that cannot be written: the export fails and says so.
    exported.clear();
    panel.exportCsv(dir.filePath(QStringLiteral("missing/usage.csv")));
    QVERIFY(exported.wait(10'000));
    QCOMPARE(exported.first().first().toBool(), false);
}

QTEST_MAIN(TestUsagePanel)
#include "tst_usagepanel.moc"
