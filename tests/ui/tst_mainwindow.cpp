#include "control/ControlFamily.h"
#include "MainWindow.h"
#include "RequestMeter.h"
#include "ServerHost.h"
#include "Services.h"
#include "UsageModel.h"

#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QStackedWidget>
#include <QTemporaryDir>
#include <QTest>

// The window over the program's Services: its sidebar is what the families offer
// (PanelRegistry), nothing else.
class TestMainWindow : public QObject
{
    Q_OBJECT
private slots:
    void sidebarSwitchesPanels();
    void onlyTheServicesFamiliesPanels();
    void statusBarWithoutServer();
    void usageColumnsAsTheFamiliesRegister();
    void meterSlidesOverOneMinute();
    void alertBanner();

private:
    static ServerSettings settingsIn(const QTemporaryDir &dir)
    {
        ServerSettings settings = ServerSettings::defaults();
        settings.configPath = dir.filePath(QStringLiteral("config.json"));
        return settings;
    }
    static DatabaseConfig databaseIn(const QTemporaryDir &dir)
    {
        return DatabaseConfig::sqlite(dir.filePath(QStringLiteral("switchyard.db")));
    }
};

void TestMainWindow::sidebarSwitchesPanels()
{
    QTemporaryDir dir;
    Services services(settingsIn(dir), databaseIn(dir));
    services.start();
    MainWindow window(services);
    window.show();
    auto *sidebar = window.findChild<QListWidget *>("sidebar");
    auto *stack = window.findChild<QStackedWidget *>("panels");
    QVERIFY(sidebar && stack);
    // The first panel in order is selected.
    QCOMPARE(window.currentPanel()->objectName(), QStringLiteral("apiKeysPanel"));

    // Every family's panel, each under its heading, in the registered order.
    const QStringList rows{"Settings",
                           "API Keys",
                           "Control Tokens",
                           "Providers",
                           "Social data",
                           "Billing",
                           "Credits",
                           "Usage",
                           "Tools",
                           "Address testing",
                           "Speech & transcription",
                           "Activity",
                           "Webhook deliveries"};
    QStringList shown;
    for (int row = 0; row < sidebar->count(); ++row)
        shown.append(sidebar->item(row)->text().trimmed());
    QCOMPARE(shown, rows);
    QCOMPARE(stack->count(), 9);
    const QMap<QString, QString> panels{{"API Keys", "apiKeysPanel"},
                                        {"Control Tokens", "controlTokensPanel"},
                                        {"Providers", "providersPanel"},
                                        {"Credits", "creditsPanel"},
                                        {"Usage", "usagePanel"},
                                        {"Address testing", "addressPanel"},
                                        {"Speech & transcription", "audioPanel"}};
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
    QCOMPARE(sidebar->item(headingRow + 5)->data(Qt::AccessibleTextRole).toString(),
             QStringLiteral("Upstreams"));
    QVERIFY(window.showPanel(QStringLiteral("Upstreams")));
    QCOMPARE(window.currentPanel(), extra);
}

// Services with the control family alone: its panels, none of a family it does not have, and
// a registry without the control family's panels shows none of them.
void TestMainWindow::onlyTheServicesFamiliesPanels()
{
    QTemporaryDir dir;
    FamilyList families;
    families.push_back(std::make_unique<ControlFamily>());
    Services services(settingsIn(dir), databaseIn(dir), std::move(families));
    services.start();
    {
        MainWindow window(services);
        QCOMPARE(window.findChild<QStackedWidget *>("panels")->count(), 4);
        for (const char *title : {"API Keys", "Control Tokens", "Credits", "Usage"})
            QVERIFY2(window.showPanel(QString::fromLatin1(title)), title);
        QVERIFY(!window.showPanel(QStringLiteral("Providers")));
        QVERIFY(!window.showPanel(QStringLiteral("Address testing")));
    }
    MainWindow bare(services, PanelRegistry());
    QCOMPARE(bare.findChild<QStackedWidget *>("panels")->count(), 0);
    QCOMPARE(bare.findChild<QListWidget *>("sidebar")->count(), 0);
    QVERIFY(!bare.currentPanel());
}

void TestMainWindow::statusBarWithoutServer()
{
    QTemporaryDir dir;
    Services services(settingsIn(dir), databaseIn(dir));
    services.start();
    MainWindow window(services);
    window.show();
    QCOMPARE(window.findChild<QLabel *>("listenLabel")->text(),
             QStringLiteral("API server not running"));
    QCOMPARE(window.findChild<QLabel *>("rateLabel")->text(), QStringLiteral("0 req/min"));
    QVERIFY(window.findChild<QLabel *>("errorsLabel")->text().contains("0 server (5xx)"));
}

// The Usage panel's meter columns are headed as the Services' families register them
// (ServiceFamily::meters()); a meter no family describes shows under its own name.
void TestMainWindow::usageColumnsAsTheFamiliesRegister()
{
    QTemporaryDir dir;
    Services services(settingsIn(dir), databaseIn(dir));
    services.start();
    MainWindow window(services);
    UsageModel *usage = window.usageModel();
    QTRY_VERIFY(usage->isLoaded());

    UsageRecord record;
    record.accountId = services.database().defaultAccountId();
    record.endpoint = QStringLiteral("/v1/test");
    record.status = 200;
    record.requestId = QStringLiteral("req_meters");
    for (const char *meter : {"characters", "audio_ms", "images", "test_undescribed"})
        record.setMeter(QString::fromLatin1(meter), 1);
    services.database().recordUsage(record);
    QTRY_COMPARE(usage->rowCount(), 1);
    QCOMPARE(usage->meterColumns(),
             (QStringList{"audio_ms", "characters", "images", "test_undescribed"}));
    QStringList headers;
    for (int i = 0; i < usage->meterColumns().size(); ++i)
        headers.append(usage->headerData(UsageModel::ColumnCount + i, Qt::Horizontal).toString());
    QCOMPARE(headers, (QStringList{"Audio (ms)", "Characters", "Images", "test_undescribed"}));
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

// An alert the server fires shows in the banner above the panels (and, with a tray, as a
// message); later ones are counted until the banner is dismissed.
void TestMainWindow::alertBanner()
{
    QTemporaryDir dir;
    Services services(settingsIn(dir), databaseIn(dir));
    services.start();
    QString error;
    QVERIFY2(services.listen(QHostAddress::LocalHost, 0, &error), qPrintable(error));
    MainWindow window(services);
    window.show();
    QWidget *banner = window.alertBanner();
    auto *text = window.findChild<QLabel *>("alertText");
    QVERIFY(banner && text);
    QVERIFY(!banner->isVisible());

    const QJsonObject alert{{"id", "alr_1"},
                            {"type", "balance_below"},
                            {"created_at", "2026-12-02T10:00:00.000Z"},
                            {"message", "The balance of account 1 is 4 credits, below the alert "
                                        "threshold of 5."}};
    emit services.host()->alertFired(alert); // as the server thread does
    QTRY_VERIFY(banner->isVisible());
    QVERIFY(text->text().contains(QStringLiteral("below the alert threshold of 5")));
    window.showAlert(alert);
    QVERIFY(text->text().contains(QStringLiteral("1 more")));
    auto *dismiss = window.findChild<QPushButton *>("alertDismiss");
    QVERIFY(dismiss);
    dismiss->click();
    QVERIFY(!banner->isVisible());
    window.showAlert(alert);
    QVERIFY(banner->isVisible());
    QVERIFY(!text->text().contains(QStringLiteral("more")));
    services.stop();
}

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
