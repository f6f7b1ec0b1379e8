// Settings > Social data (ui/SocialDataPanel) against a real server whose social-data family
// fetches the shared TikHub catalog from the fake upstream: the status, the platforms with the
// operator's rules (a disabled and a renamed one), the selected platform's actions with their
// required parameters and the filter; Refresh fetches the catalog again (the fake counts it)
// and, with the upstream gone, says why and keeps the catalog; a build without the family gets
// a label; the program's window lists the panel.

#include "FakeUpstreamProcess.h"
#include "MainWindow.h"
#include "ServerFixture.h"
#include "SocialDataPanel.h"

#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QTest>

namespace {

ServerSettings settingsFor(const QString &base)
{
    ServerSettings s = ServerSettings::defaults();
    s.familySections.insert(
        "social",
        QJsonObject{
            {"providers",
             QJsonObject{{"tikhub", QJsonObject{{"base_url", base},
                                                {"keys", QJsonArray{"th-panel-key"}},
                                                {"timeouts", QJsonObject{{"connect_ms", 2000}}}}}}},
            {"platforms", QJsonObject{{"bilibili", QJsonObject{{"enabled", false}}},
                                      {"twitter", QJsonObject{{"name", "x"}}}}},
            {"catalog", QJsonObject{{"refresh_hours", 0}}}});
    return s;
}

qint64 upstreamRequests(const FakeUpstreamProcess &fake)
{
    HttpClient c(fake.port());
    return c.get("/fake/stats").json().value("requests").toInteger();
}

// The row of a platform in the panel's model, or -1.
int rowOf(const QStandardItemModel *model, const QString &platform)
{
    const auto found = model->findItems(platform, Qt::MatchExactly, SocialDataPanel::NameColumn);
    return found.isEmpty() ? -1 : found.first()->row();
}

QString cell(const QAbstractItemModel *model, int row, int column)
{
    return model->index(row, column).data().toString();
}

} // namespace

class TestSocialPanel : public QObject
{
    Q_OBJECT

private slots:
    void showsCatalogAndRefreshes();
    void withoutFamily();
    void inTheProgramsWindow();
};

void TestSocialPanel::showsCatalogAndRefreshes()
{
    auto fake = std::make_unique<FakeUpstreamProcess>();
    QVERIFY(fake->start({"--social-openapi", QStringLiteral(SOCIAL_OPENAPI)}));
    ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake->url()));
    QVERIFY(f.ready());
    auto *family = f.services().family<SocialFamily>();
    QVERIFY(family && family->catalog());

    SocialDataPanel panel(family);
    panel.resize(1100, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QVERIFY(panel.isAvailable());
    QAbstractItemModelTester platformTester(panel.platformModel(),
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester actionTester(panel.actionModel(),
                                          QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto *status = panel.findChild<QLabel *>("statusLabel");
    QVERIFY(status);
    // Live: the first fetch lands without a click.
    QTRY_VERIFY_WITH_TIMEOUT(status->text().contains(QLatin1String("1010 actions")), 15000);
    QVERIFY2(status->text().contains(QLatin1String("upstream")), qPrintable(status->text()));

    QStandardItemModel *platforms = panel.platformModel();
    const int douyin = rowOf(platforms, QStringLiteral("douyin"));
    const int bilibili = rowOf(platforms, QStringLiteral("bilibili"));
    const int twitter = rowOf(platforms, QStringLiteral("twitter"));
    QVERIFY(douyin >= 0 && bilibili >= 0 && twitter >= 0);
    QCOMPARE(cell(platforms, douyin, SocialDataPanel::EnabledColumn), QStringLiteral("yes"));
    QCOMPARE(cell(platforms, douyin, SocialDataPanel::ActionsColumn), QStringLiteral("246"));
    QCOMPARE(cell(platforms, bilibili, SocialDataPanel::EnabledColumn), QStringLiteral("no"));
    QCOMPARE(cell(platforms, twitter, SocialDataPanel::PublicNameColumn), QStringLiteral("x"));
    QCOMPARE(
        cell(platforms, rowOf(platforms, QStringLiteral("tikhub")), SocialDataPanel::EnabledColumn),
        QStringLiteral("no"));

    // A platform's actions, as clients call them, with the required parameters.
    QVERIFY(panel.selectPlatform(QStringLiteral("douyin")));
    QSortFilterProxyModel *actions = panel.actionModel();
    QCOMPARE(actions->rowCount(), 246);
    auto *filter = panel.findChild<QLineEdit *>("actionsFilterEdit");
    QVERIFY(filter);
    QTest::keyClicks(filter, QStringLiteral("app/v3/fetch_one_video"));
    QVERIFY(actions->rowCount() >= 1);
    bool found = false;
    for (int row = 0; row < actions->rowCount(); ++row)
        if (cell(actions, row, SocialDataPanel::PathColumn) ==
            QLatin1String("douyin/app/v3/fetch_one_video")) {
            QCOMPARE(cell(actions, row, SocialDataPanel::MethodColumn), QStringLiteral("GET"));
            QCOMPARE(cell(actions, row, SocialDataPanel::RequiredColumn),
                     QStringLiteral("aweme_id"));
            found = true;
        }
    QVERIFY(found);
    filter->clear();
    QVERIFY(panel.selectPlatform(QStringLiteral("twitter")));
    QVERIFY(actions->rowCount() > 0);
    QVERIFY2(cell(actions, 0, SocialDataPanel::PathColumn).startsWith(QLatin1String("x/")),
             qPrintable(cell(actions, 0, SocialDataPanel::PathColumn)));

    // Refresh: one more fetch from the upstream, the selection kept.
    auto *refresh = panel.findChild<QPushButton *>("refreshButton");
    auto *message = panel.findChild<QLabel *>("messageLabel");
    QVERIFY(refresh && message);
    QTRY_VERIFY(refresh->isEnabled());
    const qint64 before = upstreamRequests(*fake);
    QSignalSpy finished(&panel, &SocialDataPanel::refreshFinished);
    QTest::mouseClick(refresh, Qt::LeftButton);
    QVERIFY(!refresh->isEnabled());
    QVERIFY(finished.wait(15000));
    QCOMPARE(finished.takeFirst().at(0).toBool(), true);
    QCOMPARE(upstreamRequests(*fake), before + 1);
    QVERIFY2(message->text().contains(QLatin1String("refreshed")), qPrintable(message->text()));
    QCOMPARE(panel.selectedPlatform(), QStringLiteral("twitter"));

    // The upstream gone: the refresh fails, says why, and the catalog stays.
    fake.reset();
    QTRY_VERIFY(refresh->isEnabled());
    QTest::mouseClick(refresh, Qt::LeftButton);
    QVERIFY(finished.wait(15000));
    QCOMPARE(finished.takeFirst().at(0).toBool(), false);
    QVERIFY2(message->text().contains(QLatin1String("could not be refreshed")),
             qPrintable(message->text()));
    QTRY_VERIFY2(status->text().contains(QLatin1String("failed")), qPrintable(status->text()));
    QVERIFY(status->text().contains(QLatin1String("1010 actions")));
    QCOMPARE(rowOf(platforms, QStringLiteral("douyin")) >= 0, true);
}

void TestSocialPanel::withoutFamily()
{
    SocialDataPanel panel(nullptr);
    QVERIFY(!panel.isAvailable());
    auto *label = panel.findChild<QLabel *>("unavailableLabel");
    QVERIFY(label);
    QVERIFY(label->text().contains(QLatin1String("no social-data family")));
    QVERIFY(!panel.findChild<QPushButton *>("refreshButton"));
}

void TestSocialPanel::inTheProgramsWindow()
{
    FakeUpstreamProcess fake;
    QVERIFY(fake.start({"--social-openapi", QStringLiteral(SOCIAL_OPENAPI)}));
    ServerFixture f(QStringLiteral("sqlite"), settingsFor(fake.url()));
    QVERIFY(f.ready());
    MainWindow window(f.services());
    QVERIFY(window.showPanel(QStringLiteral("Social data")));
    auto *panel = qobject_cast<SocialDataPanel *>(window.currentPanel());
    QVERIFY(panel);
    QVERIFY(panel->isAvailable());
}

QTEST_MAIN(TestSocialPanel)
#include "tst_social_panel.moc"
