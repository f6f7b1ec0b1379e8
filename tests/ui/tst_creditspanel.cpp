#include "CreditsPanel.h"
#include "LedgerModel.h"
#include "Money.h"
#include "TestDatabase.h"

#include <QAbstractItemModelTester>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

class TestCreditsPanel : public QObject
{
    Q_OBJECT
private slots:
    void validatesAmount();
    void grantUpdatesBalanceAndLedger();
    void chargesShowLive();
    void exportsTheLedger();
};

void TestCreditsPanel::validatesAmount()
{
    TestDatabase t;
    LedgerModel model(t.db());
    CreditsPanel panel(&model);
    panel.show();
    auto *amount = panel.findChild<QLineEdit *>("grantAmountEdit");
    auto *grant = panel.findChild<QPushButton *>("grantButton");
    auto *message = panel.findChild<QLabel *>("grantMessageLabel");
    QVERIFY(!grant->isEnabled());
    for (const char *bad : {"abc", "1e3", "1,5", "-2", "0", "0.0000000001", "1."}) {
        amount->setText(QString::fromLatin1(bad));
        QVERIFY2(!grant->isEnabled(), bad);
        QVERIFY2(!message->text().isEmpty(), bad);
    }
    for (const char *good : {"25", "0.5", "0.000000001", "+3", "1000000"}) {
        amount->setText(QString::fromLatin1(good));
        QVERIFY2(grant->isEnabled(), good);
        QVERIFY2(message->text().isEmpty(), good);
    }
}

void TestCreditsPanel::grantUpdatesBalanceAndLedger()
{
    TestDatabase t;
    LedgerModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    CreditsPanel panel(&model);
    panel.show();
    auto *balance = panel.findChild<QLabel *>("balanceLabel");
    QTRY_COMPARE(balance->text(), QStringLiteral("Balance: 0.00 credits"));

    QTest::keyClicks(panel.findChild<QLineEdit *>("grantAmountEdit"), "12.5");
    QTest::keyClicks(panel.findChild<QLineEdit *>("grantNoteEdit"), "welcome credit");
    QTest::mouseClick(panel.findChild<QPushButton *>("grantButton"), Qt::LeftButton);

    QTRY_COMPARE(balance->text(), QStringLiteral("Balance: 12.50 credits"));
    QTRY_COMPARE(panel.view()->model()->rowCount(), 1);
    const QAbstractItemModel *ledger = panel.view()->model();
    QCOMPARE(ledger->index(0, LedgerModel::KindColumn).data().toString(), QStringLiteral("grant"));
    QCOMPARE(ledger->index(0, LedgerModel::AmountColumn).data().toString(),
             QStringLiteral("12.50"));
    QCOMPARE(ledger->index(0, LedgerModel::BalanceColumn).data().toString(),
             QStringLiteral("12.50"));
    QCOMPARE(ledger->index(0, LedgerModel::ReasonColumn).data().toString(),
             QStringLiteral("welcome credit"));
    QTRY_VERIFY(panel.findChild<QLineEdit *>("grantAmountEdit")->text().isEmpty());
    QVERIFY(panel.findChild<QLabel *>("grantMessageLabel")->text().contains("12.50"));

    const qint64 account = t.account();
    QCOMPARE(t.readNow<qint64>([=](Store &s) { return s.balance(account); }),
             12 * Money::kUnitsPerCredit + Money::kUnitsPerCredit / 2);
    QCOMPARE(t.readNow<qint64>([=](Store &s) { return s.ledgerSum(account); }),
             12 * Money::kUnitsPerCredit + Money::kUnitsPerCredit / 2);
}

void TestCreditsPanel::chargesShowLive()
{
    TestDatabase t;
    const qint64 account = t.account();
    t.writeNow<ChargeResult>([=](Store &s) {
        return s.applyLedger(account, QStringLiteral("grant"), 2 * Money::kUnitsPerCredit,
                             QStringLiteral("seed"), QString(), 0);
    });
    LedgerModel model(t.db());
    CreditsPanel panel(&model);
    panel.show();
    auto *balance = panel.findChild<QLabel *>("balanceLabel");
    QTRY_COMPARE(balance->text(), QStringLiteral("Balance: 2.00 credits"));

    UsageRecord usage;
    usage.accountId = account;
    usage.endpoint = QStringLiteral("/v1/messages");
    usage.requestId = QStringLiteral("req_ui_1");
    usage.cost = 250'000'000;
    usage.status = 200;
    t.db().recordUsage(usage);
    QTRY_COMPARE(balance->text(), QStringLiteral("Balance: 1.75 credits"));
    QTRY_COMPARE(panel.view()->model()->rowCount(), 2);
    QCOMPARE(panel.view()->model()->index(0, LedgerModel::RequestIdColumn).data().toString(),
             QStringLiteral("req_ui_1"));
}

// Export CSV writes every ledger entry, more than a page, with exact amounts.
void TestCreditsPanel::exportsTheLedger()
{
    TestDatabase t;
    const qint64 account = t.account();
    t.writeNow<bool>([=](Store &s) {
        for (int i = 0; i < 1'200; ++i)
            s.applyLedger(account, "grant", 1'000'000'001, QStringLiteral("note %1, \"q\"").arg(i),
                          "", 0);
        return true;
    });
    LedgerModel model(t.db());
    CreditsPanel panel(&model);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("ledger.csv"));
    QSignalSpy exported(&panel, &CreditsPanel::exported);
    panel.exportCsv(path);
    QVERIFY(exported.wait(30'000));
    QVERIFY(exported.first().first().toBool());
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = file.readAll().split('\n');
    QCOMPARE(lines.size(), 1'200 + 2);
    QVERIFY(lines[1].contains(",grant,1.000000001,1000000001,1200.000001200,"));
    QVERIFY(lines[1].contains(",\"note 1199, \"\"q\"\"\","));
}

QTEST_MAIN(TestCreditsPanel)
#include "tst_creditspanel.moc"
