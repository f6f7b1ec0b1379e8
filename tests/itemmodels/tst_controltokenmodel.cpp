#include "ControlTokenModel.h"
#include "Scopes.h"
#include "TestDatabase.h"

#include <QAbstractItemModelTester>
#include <QTest>

class TestControlTokenModel : public QObject
{
    Q_OBJECT
private slots:
    void createListAndRevoke();
    void refusesUnknownOrNoScopes();
    void showsExpiredTokens();
};

void TestControlTokenModel::createListAndRevoke()
{
    TestDatabase t;
    ControlTokenModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_VERIFY(model.isLoaded());

    const QStringList scopes{Scopes::UsageRead, Scopes::CreditsRead};
    const QDateTime expires = QDateTime::currentDateTimeUtc().addDays(7);
    std::optional<DbResult<CreatedSecret>> created;
    model.createToken(QStringLiteral("reporting"), scopes, expires, this,
                      [&](const DbResult<CreatedSecret> &r) { created = r; });
    QTRY_VERIFY(created.has_value());
    QVERIFY2(created->ok(), qPrintable(created->error));
    QVERIFY(created->value.secret.startsWith(QStringLiteral("lpc_")));

    QTRY_COMPARE(model.rowCount(), 1);
    QCOMPARE(model.index(0, ControlTokenModel::NameColumn).data().toString(),
             QStringLiteral("reporting"));
    QCOMPARE(model.index(0, ControlTokenModel::ScopesColumn).data().toString(),
             QStringLiteral("usage:read, credits:read"));
    QCOMPARE(model.index(0, ControlTokenModel::StatusColumn).data().toString(),
             QStringLiteral("Active"));
    QCOMPARE(model.index(0, ControlTokenModel::ExpiresColumn)
                     .data(ControlTokenModel::SortRole)
                     .toLongLong() /
                 1000,
             expires.toMSecsSinceEpoch() / 1000);
    QCOMPARE(model.index(0, ControlTokenModel::PrefixColumn).data().toString(),
             created->value.secret.left(10) + QStringLiteral("..."));
    QVERIFY(!modelContains(model, created->value.secret));

    // A token that never expires.
    model.createToken(QString(), {Scopes::TokensRead}, QDateTime(), this,
                      [](const DbResult<CreatedSecret> &) {});
    QTRY_COMPARE(model.rowCount(), 2);
    QCOMPARE(model.index(1, ControlTokenModel::ExpiresColumn).data().toString(),
             QStringLiteral("Never"));

    std::optional<DbResult<bool>> revoked;
    model.revokeToken(created->value.id, this, [&](const DbResult<bool> &r) { revoked = r; });
    QTRY_VERIFY(revoked.has_value());
    QVERIFY(revoked->ok() && revoked->value);
    QTRY_COMPARE(model.index(0, ControlTokenModel::StatusColumn).data().toString(),
                 QStringLiteral("Revoked"));
    QCOMPARE(model.index(1, ControlTokenModel::StatusColumn).data().toString(),
             QStringLiteral("Active"));
}

void TestControlTokenModel::refusesUnknownOrNoScopes()
{
    TestDatabase t;
    ControlTokenModel model(t.db());
    QTRY_VERIFY(model.isLoaded());
    std::optional<DbResult<CreatedSecret>> result;
    model.createToken(QStringLiteral("bad"), {QStringLiteral("root:all")}, QDateTime(), this,
                      [&](const DbResult<CreatedSecret> &r) { result = r; });
    QTRY_VERIFY(result.has_value());
    QVERIFY(!result->ok());
    QVERIFY(result->error.contains(QStringLiteral("root:all")));

    result.reset();
    model.createToken(QStringLiteral("none"), {}, QDateTime(), this,
                      [&](const DbResult<CreatedSecret> &r) { result = r; });
    QTRY_VERIFY(result.has_value());
    QVERIFY(!result->ok());

    const qint64 account = t.account();
    const auto stored = t.readNow<QList<ControlTokenRecord>>(
        [=](Store &s) { return s.listControlTokens(account); });
    QVERIFY(stored.isEmpty());
}

void TestControlTokenModel::showsExpiredTokens()
{
    TestDatabase t;
    const qint64 account = t.account();
    t.writeNow<CreatedSecret>([=](Store &s) {
        return s.createControlToken(account, QStringLiteral("old"), {Scopes::UsageRead},
                                    QDateTime::currentDateTimeUtc().addSecs(-60));
    });
    ControlTokenModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_COMPARE(model.rowCount(), 1);
    QCOMPARE(model.index(0, ControlTokenModel::StatusColumn).data().toString(),
             QStringLiteral("Expired"));
}

QTEST_GUILESS_MAIN(TestControlTokenModel)
#include "tst_controltokenmodel.moc"
