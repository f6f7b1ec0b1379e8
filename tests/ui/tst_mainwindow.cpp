#include "MainWindow.h"
#include "RequestMeter.h"
#include "TestDatabase.h"

#include <QLabel>
#include <QListWidget>
#include <QStackedWidget>
#include <QTest>

class TestMainWindow : public QObject
{
    Q_OBJECT
private slots:
    void sidebarSwitchesPanels();
    void statusBarWithoutServer();
    void meterSlidesOverOneMinute();
};

void TestMainWindow::sidebarSwitchesPanels()
{
    TestDatabase t;
    MainWindow window(t.db(), nullptr);
    window.show();
    auto *sidebar = window.findChild<QListWidget *>("sidebar");
    auto *stack = window.findChild<QStackedWidget *>("panels");
    QVERIFY(sidebar && stack);
    QCOMPARE(stack->count(), 6);
    QCOMPARE(window.currentPanel()->objectName(), QStringLiteral("apiKeysPanel"));

    const QMap<QString, QString> panels{
        {"API Keys", "apiKeysPanel"},        {"Control Tokens", "controlTokensPanel"},
        {"Credits", "creditsPanel"},         {"Usage", "usagePanel"},
        {"Address testing", "addressPanel"}, {"Speech & transcription", "audioPanel"}};
    for (auto it = panels.cbegin(); it != panels.cend(); ++it) {
        QVERIFY(window.showPanel(it.key()));
        QCOMPARE(window.currentPanel()->objectName(), it.value());
    }
    QVERIFY(!window.showPanel(QStringLiteral("Nope")));

    // Headings are not selectable; a click on a panel row switches.
    QList<QListWidgetItem *> headings = sidebar->findItems("Settings", Qt::MatchExactly);
    QCOMPARE(headings.size(), 1);
    QCOMPARE(headings.first()->flags(), Qt::NoItemFlags);
    QListWidgetItem *credits = sidebar->findItems("Credits", Qt::MatchContains).value(0);
    QVERIFY(credits);
    QTest::mouseClick(sidebar->viewport(), Qt::LeftButton, {},
                      sidebar->visualItemRect(credits).center());
    QCOMPARE(window.currentPanel()->objectName(), QStringLiteral("creditsPanel"));

    // Sections keep their panels together, also for panels added later.
    auto *extra = new QWidget;
    extra->setObjectName("extraPanel");
    window.addPanel(QStringLiteral("Settings"), QStringLiteral("Upstreams"), extra);
    const int headingRow = sidebar->row(headings.first());
    QCOMPARE(sidebar->item(headingRow + 3)->data(Qt::AccessibleTextRole).toString(),
             QStringLiteral("Upstreams"));
    QVERIFY(window.showPanel(QStringLiteral("Upstreams")));
    QCOMPARE(window.currentPanel(), extra);
}

void TestMainWindow::statusBarWithoutServer()
{
    TestDatabase t;
    MainWindow window(t.db(), nullptr);
    window.show();
    QCOMPARE(window.findChild<QLabel *>("addressLabel")->text(),
             QStringLiteral("API server not running"));
    QCOMPARE(window.findChild<QLabel *>("rateLabel")->text(), QStringLiteral("0 req/min"));
    QVERIFY(window.findChild<QLabel *>("errorsLabel")->text().contains("0 server (5xx)"));
}

void TestMainWindow::meterSlidesOverOneMinute()
{
    RequestMeter meter(0);
    for (int i = 0; i < 3; ++i)
        meter.record(200);
    meter.record(404);
    meter.record(503);
    QCOMPARE(meter.sample(1'000), quint64(5)); // younger than a minute: everything so far
    meter.record(200);
    QCOMPARE(meter.sample(30'000), quint64(6));
    QCOMPARE(meter.sample(60'000), quint64(6)); // the window now starts at 0
    // At 61 s the 1 s sample (5 requests) is the baseline: only one request since.
    QCOMPARE(meter.sample(61'000), quint64(1));
    QCOMPARE(meter.sample(91'000), quint64(0));
    QCOMPARE(meter.total(), quint64(6));
    QCOMPARE(meter.serverErrors(), quint64(1));
    QCOMPARE(meter.clientErrors(), quint64(1));
}

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
