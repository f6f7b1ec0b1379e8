#include "ApiKeyModel.h"
#include "ApiKeysPanel.h"
#include "CreateApiKeyDialog.h"
#include "CreatedSecretDialog.h"
#include "Money.h"
#include "Secrets.h"
#include "TestDatabase.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDateTimeEdit>
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
    void rulesAreEnteredAndEdited();

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

// The dialog takes every rule, refuses bad ones with a reason, and Edit Rules changes them.
void TestApiKeysPanel::rulesAreEnteredAndEdited()
{
    TestDatabase t;
    ApiKeyModel model(t.db());
    ApiKeysPanel panel(&model);
    panel.show();
    QTRY_VERIFY(model.isLoaded());

    QTest::mouseClick(button(&panel, "createKeyButton"), Qt::LeftButton);
    auto *ask = panel.findChild<CreateApiKeyDialog *>();
    QVERIFY(ask);
    QPushButton *create =
        ask->findChild<QDialogButtonBox *>("buttons")->button(QDialogButtonBox::Ok);
    auto *problem = ask->findChild<QLabel *>("problemLabel");
    QTest::keyClicks(ask->findChild<QLineEdit *>("keyNameEdit"), "governed");
    auto *budget = ask->findChild<QLineEdit *>("budgetEdit");
    QTest::keyClicks(budget, "five");
    QVERIFY(!create->isEnabled());
    QVERIFY(problem->text().contains("positive amount"));
    budget->clear();
    QTest::keyClicks(budget, "2.5");
    ask->findChild<QComboBox *>("budgetPeriodCombo")->setCurrentText("week");
    QTest::keyClicks(ask->findChild<QLineEdit *>("modelsEdit"), "vendorB-*, gpt-image-1");
    auto *ips = ask->findChild<QLineEdit *>("allowedIpsEdit");
    QTest::keyClicks(ips, "10.0.0.0/99");
    QVERIFY(!create->isEnabled());
    QVERIFY(problem->text().contains("10.0.0.0/99"));
    ips->clear();
    QTest::keyClicks(ips, "10.0.0.0/8");
    ask->findChild<QCheckBox *>("expiresCheck")->setChecked(true);
    const QDateTime expiry = QDateTime::currentDateTime().addDays(7);
    ask->findChild<QDateTimeEdit *>("expiresEdit")->setDateTime(expiry);
    QVERIFY(create->isEnabled());
    QTest::mouseClick(create, Qt::LeftButton);
    QPointer<CreatedSecretDialog> shown;
    QTRY_VERIFY((shown = panel.findChild<CreatedSecretDialog *>()) && shown->isVisible());
    shown->close();

    QTRY_COMPARE(model.rowCount(), 1);
    const qint64 account = t.account();
    const qint64 id = model.recordAt(0).id;
    auto stored = [&] {
        return t.readNow<std::optional<ApiKeyRecord>>(
            [=](Store &s) { return s.apiKey(account, id); });
    };
    KeyRules rules = stored()->rules;
    QCOMPARE(rules.budget->amount, 2 * Money::kUnitsPerCredit + Money::kUnitsPerCredit / 2);
    QCOMPARE(rules.budget->period, KeyRules::Period::Week);
    QCOMPARE(rules.models, (QStringList{"vendorB-*", "gpt-image-1"}));
    QCOMPARE(rules.allowedIps, QStringList{"10.0.0.0/8"});
    QVERIFY(qAbs(rules.expires.secsTo(expiry.toUTC())) < 60);
    QTRY_VERIFY(panel.view()
                    ->model()
                    ->index(0, ApiKeyModel::BudgetColumn)
                    .data(ApiKeyModel::SpentFractionRole)
                    .isValid());

    // Edit Rules: the dialog comes filled in; clearing the models and the budget saves that.
    panel.view()->selectRow(0);
    QTest::mouseClick(button(&panel, "editKeyButton"), Qt::LeftButton);
    QPointer<CreateApiKeyDialog> edit;
    QTRY_VERIFY((edit = panel.findChild<CreateApiKeyDialog *>()) && edit->isVisible());
    QCOMPARE(edit->findChild<QLineEdit *>("modelsEdit")->text(),
             QStringLiteral("vendorB-*, gpt-image-1"));
    QCOMPARE(edit->findChild<QLineEdit *>("budgetEdit")->text(), QStringLiteral("2.500000000"));
    edit->findChild<QLineEdit *>("modelsEdit")->clear();
    edit->findChild<QLineEdit *>("budgetEdit")->clear();
    QTest::mouseClick(edit->findChild<QDialogButtonBox *>("buttons")->button(QDialogButtonBox::Ok),
                      Qt::LeftButton);
    QTRY_VERIFY(stored()->rules.models.isEmpty());
    rules = stored()->rules;
    QVERIFY(!rules.budget);
    QCOMPARE(rules.allowedIps, QStringList{"10.0.0.0/8"});
    QCOMPARE(stored()->name, QStringLiteral("governed"));
}

QTEST_MAIN(TestApiKeysPanel)
#include "tst_apikeyspanel.moc"
