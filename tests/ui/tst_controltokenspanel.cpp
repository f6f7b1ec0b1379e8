#include "ControlTokenModel.h"
#include "ControlTokensPanel.h"
#include "CreatedSecretDialog.h"
#include "Scopes.h"
#include "Secrets.h"
#include "TestDatabase.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QDialogButtonBox>
#include <QLineEdit>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QTest>

class TestControlTokensPanel : public QObject
{
    Q_OBJECT
private slots:
    void createShowsTokenOnceWithScopesAndExpiry();
    void revokeAsksThenRevokes();
};

void TestControlTokensPanel::createShowsTokenOnceWithScopesAndExpiry()
{
    TestDatabase t;
    ControlTokenModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    ControlTokensPanel panel(&model);
    panel.show();
    QTRY_VERIFY(model.isLoaded());

    for (const QString &scope : Scopes::core())
        QVERIFY2(panel.findChild<QCheckBox *>(QStringLiteral("scope_") + scope), qPrintable(scope));
    auto *create = panel.findChild<QPushButton *>("createTokenButton");
    QVERIFY(!create->isEnabled()); // no scope yet
    panel.findChild<QCheckBox *>(QStringLiteral("scope_usage:read"))->setChecked(true);
    panel.findChild<QCheckBox *>(QStringLiteral("scope_credits:read"))->setChecked(true);
    QVERIFY(create->isEnabled());
    QTest::keyClicks(panel.findChild<QLineEdit *>("tokenNameEdit"), "dashboards");
    panel.findChild<QSpinBox *>("tokenExpirySpin")->setValue(30);
    QTest::mouseClick(create, Qt::LeftButton);

    QPointer<CreatedSecretDialog> shown;
    QTRY_VERIFY((shown = panel.findChild<CreatedSecretDialog *>()) && shown->isVisible());
    const QString secret = shown->findChild<QLineEdit *>("secretField")->text();
    QVERIFY(Secrets::looksValid(secret, Secrets::kControlTokenPrefix));

    const QByteArray hash = Secrets::hash(secret);
    const auto stored = t.readNow<std::optional<ControlTokenRecord>>(
        [hash](Store &s) { return s.findControlTokenByHash(hash); });
    QVERIFY(stored.has_value());
    QCOMPARE(stored->name, QStringLiteral("dashboards"));
    QCOMPARE(stored->scopes, (QStringList{Scopes::CreditsRead, Scopes::UsageRead}));
    const qint64 days = QDateTime::currentDateTimeUtc().daysTo(stored->expires);
    QVERIFY2(days >= 29 && days <= 30, qPrintable(QString::number(days)));

    shown->reject();
    QTRY_VERIFY(shown.isNull());
    QTRY_COMPARE(panel.view()->model()->rowCount(), 1);
    QVERIFY(!modelContains(model, secret));
    const QAbstractItemModel *table = panel.view()->model();
    QCOMPARE(table->index(0, ControlTokenModel::ScopesColumn).data().toString(),
             QStringLiteral("credits:read, usage:read"));
    QCOMPARE(table->index(0, ControlTokenModel::StatusColumn).data().toString(),
             QStringLiteral("Active"));
    // The form is ready for the next token.
    QVERIFY(panel.findChild<QLineEdit *>("tokenNameEdit")->text().isEmpty());
    QVERIFY(!create->isEnabled());
    QCOMPARE(panel.findChild<QSpinBox *>("tokenExpirySpin")->value(), 0);

    // Never expiring, no name.
    panel.findChild<QCheckBox *>(QStringLiteral("scope_envx:write"))->setChecked(true);
    QTest::mouseClick(create, Qt::LeftButton);
    QTRY_VERIFY((shown = panel.findChild<CreatedSecretDialog *>()) && shown->isVisible());
    shown->accept();
    QTRY_COMPARE(table->rowCount(), 2);
    const QModelIndex row = table
                                ->match(table->index(0, ControlTokenModel::ScopesColumn),
                                        Qt::DisplayRole, QStringLiteral("envx:write"))
                                .value(0);
    QVERIFY(row.isValid());
    QCOMPARE(table->index(row.row(), ControlTokenModel::ExpiresColumn).data().toString(),
             QStringLiteral("Never"));
}

void TestControlTokensPanel::revokeAsksThenRevokes()
{
    TestDatabase t;
    const qint64 account = t.account();
    t.writeNow<CreatedSecret>([=](Store &s) {
        return s.createControlToken(account, QStringLiteral("ops"), {Scopes::TokensRead},
                                    QDateTime());
    });
    ControlTokenModel model(t.db());
    ControlTokensPanel panel(&model);
    panel.show();
    QTRY_COMPARE(model.rowCount(), 1);
    auto *revoke = panel.findChild<QPushButton *>("revokeTokenButton");
    QVERIFY(!revoke->isEnabled());
    panel.view()->selectRow(0);
    QVERIFY(revoke->isEnabled());
    QTest::mouseClick(revoke, Qt::LeftButton);
    auto *box = panel.findChild<QMessageBox *>("revokeConfirmation");
    QVERIFY(box);
    QTest::mouseClick(box->findChild<QPushButton *>("confirmButton"), Qt::LeftButton);
    QTRY_COMPARE(panel.view()->model()->index(0, ControlTokenModel::StatusColumn).data().toString(),
                 QStringLiteral("Revoked"));
    const auto tokens = t.readNow<QList<ControlTokenRecord>>(
        [=](Store &s) { return s.listControlTokens(account); });
    QVERIFY(tokens.value(0).isRevoked());
    QVERIFY(!revoke->isEnabled());
}

QTEST_MAIN(TestControlTokensPanel)
#include "tst_controltokenspanel.moc"
