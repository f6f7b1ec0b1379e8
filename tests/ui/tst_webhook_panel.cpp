// Activity > Webhook deliveries (ui/WebhookDeliveriesPanel) against a real server: image tasks
// with a callbackUrl on an HTTPS receiver on loopback (its certificate trusted through the fetch
// policy's ca_file, loopback opened by the explicit allow_cidrs test setting), the fake upstream
// as the image provider and the schedule scaled by 0.05. The panel shows a delivery appear,
// retry and succeed while it happens, its attempts and the answer's excerpt, and a manual
// resend; the status and text filters hide and show rows and the selection survives them; a
// build without the family gets a label; the program's window lists the panel.

#include "images/WebhookDeliveryModel.h"
#include "ImagesTestSupport.h"
#include "MainWindow.h"
#include "WebhookDeliveriesPanel.h"
#include "WebhookReceiver.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>

using namespace ImagesTest;

namespace {

QJsonObject webhookSection(const FakeUpstreamProcess &fake, const WebhookReceiver &receiver,
                           const QJsonObject &extra = {})
{
    QJsonObject hooks{{"schedule_scale", 0.05},
                      {"timeout_ms", 600},
                      {"lease_ms", 3000},
                      {"poll_ms", 50},
                      {"fetch", QJsonObject{{"allow_cidrs", QJsonArray{"127.0.0.0/8"}},
                                            {"ca_file", receiver.caFile()}}}};
    for (auto it = extra.begin(); it != extra.end(); ++it)
        hooks.insert(it.key(), it.value());
    return section(fake, {{"webhooks", hooks}});
}

QString submit(ServerFixture &f, const QByteArray &key, const WebhookReceiver &receiver)
{
    const HttpReply r =
        post(f, {{"prompt", "a harbour at dawn"}, {"callbackUrl", receiver.url()}}, key);
    if (r.status != 202) {
        qWarning("submit: %d %s", r.status, r.body.constData());
        return {};
    }
    return r.json().value("id").toString();
}

QString cell(const QAbstractItemModel *model, int row, int column)
{
    return model->index(row, column).data().toString();
}

// The row of the delivery of this task, or -1.
int rowOfTask(const WebhookDeliveryModel *model, const QString &taskId)
{
    for (int row = 0; row < model->rowCount(); ++row)
        if (model->recordAt(row).taskId == taskId)
            return row;
    return -1;
}

QString statusOfTask(const WebhookDeliveryModel *model, const QString &taskId)
{
    const int row = rowOfTask(model, taskId);
    return row < 0 ? QString() : cell(model, row, WebhookDeliveryModel::StatusColumn);
}

// The task of the only row, or a description of the rows.
QString onlyTask(const WebhookDeliveryModel *model)
{
    return model->rowCount() == 1 ? model->recordAt(0).taskId
                                  : QStringLiteral("%1 rows").arg(model->rowCount());
}

QString describe(const QList<QStringList> &states)
{
    QStringList parts;
    for (const QStringList &s : states)
        parts.append(s.join(u'/'));
    return parts.join(QStringLiteral(", "));
}

void clickRow(QTableView *view, int row)
{
    const QRect rect = view->visualRect(view->model()->index(row, 1));
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, rect.center());
}

void chooseStatus(QComboBox *combo, const QString &status)
{
    combo->setCurrentIndex(combo->findData(status));
}

} // namespace

class TestWebhookPanel : public QObject
{
    Q_OBJECT

private slots:
    void deliveryRetriesAndSucceedsLive_data() { backends(); }
    void deliveryRetriesAndSucceedsLive();
    void filtersHideAndShowRows();
    void withoutFamily();
    void inTheProgramsWindow();
};

void TestWebhookPanel::deliveryRetriesAndSucceedsLive()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    // Two failures, then 200 with a body. The second failure is answered after 300 ms (within
    // the 600 ms timeout), so the retrying state lasts long enough to be read at least once.
    receiver.script({{500}, WebhookReceiver::Answer::after(300, 500)});
    receiver.setDefault({200, 0, false, "{\"received\":true}"});
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    SY_START_SERVER(f, settingsWith(webhookSection(fake, receiver)));
    auto *family = f.services().family<ImagesFamily>();
    QVERIFY(family);
    const QByteArray key = f.createKey();
    f.grant(kCredit);

    // Every state the table showed, and every pending count the header showed.
    QList<QStringList> states;
    QList<qint64> pendingCounts;
    WebhookDeliveriesPanel panel(family);
    panel.resize(1100, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    WebhookDeliveryModel *model = panel.deliveryModel();
    WebhookAttemptModel *attempts = panel.attemptModel();
    QVERIFY(model && attempts);
    QAbstractItemModelTester deliveryTester(model,
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester attemptTester(attempts,
                                           QAbstractItemModelTester::FailureReportingMode::QtTest);
    const auto snapshot = [&] {
        if (model->rowCount() == 0)
            return;
        const QStringList s{cell(model, 0, WebhookDeliveryModel::StatusColumn),
                            cell(model, 0, WebhookDeliveryModel::AttemptsColumn),
                            cell(model, 0, WebhookDeliveryModel::LastStatusColumn),
                            cell(model, 0, WebhookDeliveryModel::NextAttemptColumn).isEmpty()
                                ? QString()
                                : QStringLiteral("next")};
        if (states.isEmpty() || states.last() != s)
            states.append(s);
    };
    connect(model, &QAbstractItemModel::rowsInserted, &panel, snapshot);
    connect(model, &QAbstractItemModel::dataChanged, &panel, snapshot);
    connect(model, &WebhookDeliveryModel::pendingCountChanged, &panel,
            [&](qint64 n) { pendingCounts.append(n); });
    QTRY_VERIFY(model->isLoaded());
    QCOMPARE(model->rowCount(), 0);
    auto *pendingLabel = panel.findChild<QLabel *>("pendingLabel");
    QVERIFY(pendingLabel);
    QCOMPARE(pendingLabel->text(), QStringLiteral("Pending: 0"));
    auto *resend = panel.findChild<QPushButton *>("resendButton");
    QVERIFY(resend);
    QVERIFY(!resend->isEnabled()); // nothing selected

    const QString taskId = submit(f, key, receiver);
    QVERIFY(!taskId.isEmpty());

    // The delivery appears, retries and succeeds, without a click.
    QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 1, 15000);
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::TaskColumn), taskId);
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::UrlColumn), receiver.url());
    QTRY_COMPARE_WITH_TIMEOUT(cell(model, 0, WebhookDeliveryModel::StatusColumn),
                              QStringLiteral("delivered"), 15000);
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::AttemptsColumn), QStringLiteral("3"));
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::LastStatusColumn), QStringLiteral("200"));
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::LastErrorColumn), QString());
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::NextAttemptColumn), QString());
    QVERIFY(!cell(model, 0, WebhookDeliveryModel::UpdatedColumn).isEmpty());
    const QStringList retrying{"pending", "1", "500", "next"};
    QVERIFY2(states.contains(retrying), qPrintable("states seen: " + describe(states)));
    QCOMPARE(states.last(), (QStringList{"delivered", "3", "200", ""}));
    QVERIFY2(pendingCounts.contains(1), "the header never counted the pending delivery");
    QTRY_COMPARE(pendingLabel->text(), QStringLiteral("Pending: 0"));
    const qint64 deliveryId = model->recordAt(0).id;
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::IdColumn), QString::number(deliveryId));

    // Selected: its attempts, 500, 500, 200, each on the schedule.
    clickRow(panel.deliveryView(), 0);
    QCOMPARE(panel.selectedDelivery(), deliveryId);
    QVERIFY(resend->isEnabled());
    QTRY_COMPARE(attempts->rowCount(), 3);
    QCOMPARE(attempts->deliveryId(), deliveryId);
    const QStringList statuses{"500", "500", "200"};
    for (int row = 0; row < 3; ++row) {
        QCOMPARE(cell(attempts, row, WebhookAttemptModel::AttemptColumn), QString::number(row + 1));
        QCOMPARE(cell(attempts, row, WebhookAttemptModel::StatusColumn), statuses[row]);
        QCOMPARE(cell(attempts, row, WebhookAttemptModel::TriggerColumn),
                 QStringLiteral("scheduled"));
        QCOMPARE(cell(attempts, row, WebhookAttemptModel::AddressColumn),
                 QStringLiteral("127.0.0.1"));
        QVERIFY(!cell(attempts, row, WebhookAttemptModel::StartedColumn).isEmpty());
        QVERIFY(cell(attempts, row, WebhookAttemptModel::DurationColumn).toInt() >= 0);
    }
    QCOMPARE(cell(attempts, 0, WebhookAttemptModel::ErrorColumn), QStringLiteral("HTTP 500"));
    QCOMPARE(cell(attempts, 2, WebhookAttemptModel::ErrorColumn), QString());
    QVERIFY(cell(attempts, 1, WebhookAttemptModel::DurationColumn).toInt() >= 300);
    auto *label = panel.findChild<QLabel *>("attemptsLabel");
    QVERIFY(label->text().contains(taskId));

    // The excerpt of the answer that was delivered; none for a failure.
    auto *excerpt = panel.findChild<QPlainTextEdit *>("excerptView");
    QVERIFY(excerpt);
    clickRow(panel.attemptView(), 2);
    QCOMPARE(excerpt->toPlainText(), QStringLiteral("{\"received\":true}"));
    QCOMPARE(cell(attempts, 2, WebhookAttemptModel::ExcerptColumn),
             QStringLiteral("{\"received\":true}"));
    clickRow(panel.attemptView(), 0);
    QCOMPARE(excerpt->toPlainText(), QString());
    clickRow(panel.attemptView(), 2);

    // Resend: a fourth attempt, manual, while the selections stay where they were.
    QSignalSpy resent(&panel, &WebhookDeliveriesPanel::resendFinished);
    QTest::mouseClick(resend, Qt::LeftButton);
    QTRY_COMPARE(resent.size(), 1);
    QCOMPARE(resent.at(0).at(0).toBool(), true);
    QTRY_COMPARE_WITH_TIMEOUT(attempts->rowCount(), 4, 10000);
    QCOMPARE(cell(attempts, 3, WebhookAttemptModel::TriggerColumn), QStringLiteral("manual"));
    QCOMPARE(cell(attempts, 3, WebhookAttemptModel::StatusColumn), QStringLiteral("200"));
    QCOMPARE(cell(attempts, 3, WebhookAttemptModel::AttemptColumn), QStringLiteral("4"));
    QTRY_COMPARE(cell(model, 0, WebhookDeliveryModel::AttemptsColumn), QStringLiteral("4"));
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::StatusColumn), QStringLiteral("delivered"));
    QCOMPARE(receiver.requests().size(), 4);
    QCOMPARE(receiver.requests().at(3).header("x-switchyard-attempt"), QByteArray("4"));
    QCOMPARE(panel.selectedDelivery(), deliveryId);
    QCOMPARE(panel.attemptView()->selectionModel()->selectedRows().size(), 1);
    QCOMPARE(panel.attemptView()->selectionModel()->selectedRows().at(0).row(), 2);
    QCOMPARE(excerpt->toPlainText(), QStringLiteral("{\"received\":true}"));
}

void TestWebhookPanel::filtersHideAndShowRows()
{
    WebhookReceiver receiver;
    QVERIFY2(receiver.start(), qPrintable(receiver.errorString()));
    FakeUpstreamProcess fake;
    QVERIFY(fake.start());
    // One retry, 3 s after the first failure (60 s scaled by 0.05): a failing delivery is
    // pending for 3 s, then failed.
    ServerFixture f(
        QStringLiteral("sqlite"),
        settingsWith(webhookSection(
            fake, receiver, {{"retries", 1}, {"backoff_ms", 60000}, {"backoff_cap_ms", 60000}})));
    QVERIFY2(f.ready(), qPrintable(f.skipReason()));
    auto *family = f.services().family<ImagesFamily>();
    const QByteArray key = f.createKey();
    f.grant(kCredit);

    WebhookDeliveriesPanel panel(family);
    panel.resize(1100, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    WebhookDeliveryModel *model = panel.deliveryModel();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto *status = panel.findChild<QComboBox *>("statusFilterCombo");
    auto *text = panel.findChild<QLineEdit *>("textFilterEdit");
    QVERIFY(status && text);
    QCOMPARE(status->count(), 4);

    const QString delivered = submit(f, key, receiver);
    QVERIFY(!delivered.isEmpty());
    QTRY_COMPARE_WITH_TIMEOUT(statusOfTask(model, delivered), QStringLiteral("delivered"), 15000);
    receiver.setDefault({500});
    const QString failing = submit(f, key, receiver);
    QVERIFY(!failing.isEmpty());
    QTRY_COMPARE_WITH_TIMEOUT(statusOfTask(model, failing), QStringLiteral("pending"), 15000);
    QCOMPARE(model->rowCount(), 2);
    QCOMPARE(model->recordAt(0).taskId, failing); // newest first

    // The delivered one stays selected through the filters that hide it.
    panel.selectDelivery(model->recordAt(1).id);
    const qint64 selected = model->recordAt(1).id;
    QCOMPARE(panel.selectedDelivery(), selected);

    chooseStatus(status, QStringLiteral("pending"));
    QTRY_COMPARE(onlyTask(model), failing);
    QCOMPARE(panel.selectedDelivery(), 0);
    QCOMPARE(panel.attemptModel()->rowCount(), 0);
    chooseStatus(status, QStringLiteral("delivered"));
    QTRY_COMPARE(onlyTask(model), delivered);
    QCOMPARE(panel.selectedDelivery(), selected);
    QTRY_COMPARE(panel.attemptModel()->rowCount(), 1);

    // The failing delivery's retry fails too: failed, and shown under "Failed" only.
    chooseStatus(status, QStringLiteral("failed"));
    QTRY_COMPARE_WITH_TIMEOUT(onlyTask(model), failing, 15000);
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::StatusColumn), QStringLiteral("failed"));
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::AttemptsColumn), QStringLiteral("2"));
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::LastStatusColumn), QStringLiteral("500"));
    QCOMPARE(cell(model, 0, WebhookDeliveryModel::LastErrorColumn), QStringLiteral("HTTP 500"));
    chooseStatus(status, QStringLiteral("pending"));
    QTRY_COMPARE(model->rowCount(), 0);
    chooseStatus(status, QString());
    QTRY_COMPARE(model->rowCount(), 2);
    QTRY_COMPARE(panel.selectedDelivery(), selected);

    // The text filter: a part of a task id (any case), a part of the URL, nothing.
    QTest::keyClicks(text, delivered.right(10).toUpper());
    QTRY_COMPARE(onlyTask(model), delivered);
    text->clear();
    QTest::keyClicks(text, QString::number(receiver.port()));
    QTRY_COMPARE(model->rowCount(), 2);
    text->clear();
    QTest::keyClicks(text, "no-such-delivery");
    QTRY_COMPARE(model->rowCount(), 0);
    text->clear();
    chooseStatus(status, QStringLiteral("failed"));
    QTest::keyClicks(text, failing); // a whole task id, with the status filter
    QTRY_COMPARE(onlyTask(model), failing);
    text->clear();
    chooseStatus(status, QString());
    QTRY_COMPARE(model->rowCount(), 2);
    QTRY_COMPARE(panel.findChild<QLabel *>("pendingLabel")->text(), QStringLiteral("Pending: 0"));

    // A burst of reloads is one read (a model of its own: the panel's timer reloads too).
    WebhookDeliveryModel own(f.service());
    QTRY_VERIFY(own.isLoaded());
    QCOMPARE(own.rowCount(), 2);
    const quint64 before = own.reads();
    for (int i = 0; i < 50; ++i)
        own.reload();
    QTRY_COMPARE(own.reads(), before + 1);
    QTest::qWait(300);
    QCOMPARE(own.reads(), before + 1);
}

void TestWebhookPanel::withoutFamily()
{
    WebhookDeliveriesPanel panel(nullptr);
    panel.show();
    QVERIFY(!panel.isAvailable());
    QVERIFY(!panel.deliveryModel());
    QCOMPARE(panel.selectedDelivery(), 0);
    auto *label = panel.findChild<QLabel *>("unavailableLabel");
    QVERIFY(label);
    QVERIFY(label->text().contains(QStringLiteral("no image-task family")));
    QVERIFY(!panel.findChild<QPushButton *>("resendButton"));
    QVERIFY(!panel.findChild<QTableView *>("deliveriesTable"));
    panel.refresh();        // nothing to do, and no crash
    panel.resendSelected(); // likewise
}

void TestWebhookPanel::inTheProgramsWindow()
{
    ServerFixture f(QStringLiteral("sqlite"));
    QVERIFY2(f.ready(), qPrintable(f.skipReason()));
    MainWindow window(f.services());
    QVERIFY(window.showPanel(QStringLiteral("Webhook deliveries")));
    auto *panel = qobject_cast<WebhookDeliveriesPanel *>(window.currentPanel());
    QVERIFY(panel);
    QVERIFY(panel->isAvailable());
    QTRY_VERIFY(panel->deliveryModel()->isLoaded());
}

QTEST_MAIN(TestWebhookPanel)
#include "tst_webhook_panel.moc"
