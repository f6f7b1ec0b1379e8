#include "ApiKeyModel.h"
#include "ApiKeysPanel.h"
#include "CreateApiKeyDialog.h"
#include "CreatedSecretDialog.h"
#include "Secrets.h"
#include "TestDatabase.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <QTableView>
#include <QTest>

class TestApiKeysPanel : public QObject
{
    Q_OBJECT
private slots:
    void createKeyShowsSecretOnce();
    void cancelledCreateWritesNothing();
    void revokeAsksThenRevokes();

private:
    static QPushButton *button(QWidget *parent, const char *name)
    {
        return parent->findChild<QPushButton *>(QLatin1String(name));
    }
};

void TestApiKeysPanel::createKeyShowsSecretOnce()
{
    TestDatabase t;
    ApiKeyModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    ApiKeysPanel panel(&model);
    panel.show();
    QTRY_VERIFY(model.isLoaded());

    QTest::mouseClick(button(&panel, "createKeyButton"), Qt::LeftButton);
    auto *ask = panel.findChild<CreateApiKeyDialog *>();
    QVERIFY(ask);
    QVERIFY(ask->isVisible());
    QPushButton *create =
        ask->findChild<QDialogButtonBox *>("buttons")->button(QDialogButtonBox::Ok);
    QVERIFY(!create->isEnabled()); // a name is required
    QTest::keyClicks(ask->findChild<QLineEdit *>("keyNameEdit"), "ci runner");
    QVERIFY(create->isEnabled());
    QTest::mouseClick(create, Qt::LeftButton);

    QPointer<CreatedSecretDialog> shown;
    QTRY_VERIFY((shown = panel.findChild<CreatedSecretDialog *>()) && shown->isVisible());
    auto *field = shown->findChild<QLineEdit *>("secretField");
    const QString secret = field->text();
    QVERIFY(secret.startsWith(QStringLiteral("sk-")));
    QVERIFY(Secrets::looksValid(secret, Secrets::kApiKeyPrefix));
    QVERIFY(field->isReadOnly());
    QVERIFY(shown->findChild<QLabel *>("warningLabel")->text().contains("cannot be shown again"));
    QTest::mouseClick(shown->findChild<QPushButton *>("copyButton"), Qt::LeftButton);
    QCOMPARE(QGuiApplication::clipboard()->text(), secret);

    // The secret is what the store authenticates.
    const QByteArray hash = Secrets::hash(secret);
    const auto stored = t.readNow<std::optional<ApiKeyRecord>>(
        [hash](Store &s) { return s.findApiKeyByHash(hash); });
    QVERIFY(stored.has_value());
    QCOMPARE(stored->name, QStringLiteral("ci runner"));

    QTest::mouseClick(
        shown->findChild<QDialogButtonBox *>("buttons")->button(QDialogButtonBox::Close),
        Qt::LeftButton);
    QTRY_VERIFY(shown.isNull()); // closed and gone: there is no second showing
    QApplication::clipboard()->clear();

    QTRY_COMPARE(panel.view()->model()->rowCount(), 1);
    const QAbstractItemModel *shownModel = panel.view()->model();
    QCOMPARE(shownModel->index(0, ApiKeyModel::PrefixColumn).data().toString(),
             secret.left(9) + QStringLiteral("..."));
    QCOMPARE(shownModel->index(0, ApiKeyModel::NameColumn).data().toString(),
             QStringLiteral("ci runner"));
    QCOMPARE(shownModel->index(0, ApiKeyModel::StatusColumn).data().toString(),
             QStringLiteral("Active"));
    QVERIFY(!modelContains(model, secret));
    QVERIFY(!modelContains(*shownModel, secret));
    // Nor does any widget left in the panel hold it.
    for (const QLineEdit *edit : panel.findChildren<QLineEdit *>())
        QVERIFY(!edit->text().contains(secret));
    for (const QLabel *label : panel.findChildren<QLabel *>())
        QVERIFY(!label->text().contains(secret));
    QVERIFY(panel.findChildren<CreatedSecretDialog *>().isEmpty());
}

void TestApiKeysPanel::cancelledCreateWritesNothing()
{
    TestDatabase t;
    ApiKeyModel model(t.db());
    ApiKeysPanel panel(&model);
    panel.show();
    QTRY_VERIFY(model.isLoaded());
    QTest::mouseClick(button(&panel, "createKeyButton"), Qt::LeftButton);
    QPointer<CreateApiKeyDialog> ask = panel.findChild<CreateApiKeyDialog *>();
    QVERIFY(ask);
    QTest::keyClicks(ask->findChild<QLineEdit *>("keyNameEdit"), "never");
    ask->reject();
    QTRY_VERIFY(ask.isNull());
    QTest::qWait(100);
    QVERIFY(panel.findChildren<CreatedSecretDialog *>().isEmpty());
    const qint64 account = t.account();
    QVERIFY(
        t.readNow<QList<ApiKeyRecord>>([=](Store &s) { return s.listApiKeys(account); }).isEmpty());
}

void TestApiKeysPanel::revokeAsksThenRevokes()
{
    TestDatabase t;
    const qint64 account = t.account();
    const CreatedSecret key = t.writeNow<CreatedSecret>(
        [=](Store &s) { return s.createApiKey(account, QStringLiteral("old"), QString()); });
    ApiKeyModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    ApiKeysPanel panel(&model);
    panel.show();
    QTRY_COMPARE(model.rowCount(), 1);

    QPushButton *revoke = button(&panel, "revokeKeyButton");
    QVERIFY(!revoke->isEnabled()); // nothing selected
    panel.view()->selectRow(0);
    QVERIFY(revoke->isEnabled());
    auto isRevoked = [&] {
        const auto stored = t.readNow<std::optional<ApiKeyRecord>>(
            [=](Store &s) { return s.apiKey(account, key.id); });
        return stored && stored->isRevoked();
    };

    // Cancelled: nothing happens.
    QTest::mouseClick(revoke, Qt::LeftButton);
    QPointer<QMessageBox> box = panel.findChild<QMessageBox *>("revokeConfirmation");
    QVERIFY(box);
    QVERIFY(box->text().contains(QStringLiteral("old")));
    QTest::mouseClick(box->findChild<QPushButton *>("cancelButton"), Qt::LeftButton);
    QTRY_VERIFY(box.isNull());
    QTest::qWait(100);
    QVERIFY(!isRevoked());

    // Confirmed: revoked in the store and shown so.
    QTest::mouseClick(revoke, Qt::LeftButton);
    box = panel.findChild<QMessageBox *>("revokeConfirmation");
    QVERIFY(box);
    QTest::mouseClick(box->findChild<QPushButton *>("confirmButton"), Qt::LeftButton);
    QTRY_COMPARE(panel.view()->model()->index(0, ApiKeyModel::StatusColumn).data().toString(),
                 QStringLiteral("Revoked"));
    QVERIFY(isRevoked());
    QVERIFY(!revoke->isEnabled());
}

QTEST_MAIN(TestApiKeysPanel)
#include "tst_apikeyspanel.moc"
