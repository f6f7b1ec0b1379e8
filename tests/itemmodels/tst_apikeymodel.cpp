#include "ApiKeyModel.h"
#include "TestDatabase.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

class TestApiKeyModel : public QObject
{
    Q_OBJECT
private slots:
    void loadsExistingKeys();
    void createAndRevokeUpdateLive();
    void writesElsewhereAppearOnAnnouncement();
    void lastUsedFollowsUsage();
};

void TestApiKeyModel::loadsExistingKeys()
{
    TestDatabase t;
    const qint64 account = t.account();
    const CreatedSecret a = t.writeNow<CreatedSecret>(
        [=](Store &s) { return s.createApiKey(account, QStringLiteral("alpha"), QString()); });
    t.writeNow<CreatedSecret>(
        [=](Store &s) { return s.createApiKey(account, QStringLiteral("beta"), "bulk"); });

    ApiKeyModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_VERIFY(model.isLoaded());
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), int(ApiKeyModel::ColumnCount));
    QCOMPARE(model.index(0, ApiKeyModel::NameColumn).data().toString(), QStringLiteral("alpha"));
    QCOMPARE(model.index(0, ApiKeyModel::TierColumn).data().toString(), QStringLiteral("default"));
    QCOMPARE(model.index(1, ApiKeyModel::TierColumn).data().toString(), QStringLiteral("bulk"));
    QCOMPARE(model.index(0, ApiKeyModel::StatusColumn).data().toString(), QStringLiteral("Active"));
    QCOMPARE(model.index(0, ApiKeyModel::LastUsedColumn).data().toString(),
             QStringLiteral("Never"));
    QCOMPARE(model.index(0, 0).data(ApiKeyModel::IdRole).toLongLong(), a.id);
    QCOMPARE(model.rowOfId(a.id), 0);

    const QString prefix = model.index(0, ApiKeyModel::PrefixColumn).data().toString();
    QCOMPARE(prefix, a.secret.left(9) + QStringLiteral("..."));
    QVERIFY(!modelContains(model, a.secret));
}

void TestApiKeyModel::createAndRevokeUpdateLive()
{
    TestDatabase t;
    ApiKeyModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_VERIFY(model.isLoaded());
    QCOMPARE(model.rowCount(), 0);

    std::optional<DbResult<CreatedSecret>> created;
    model.createKey(QStringLiteral("ci"), QString(), this,
                    [&](const DbResult<CreatedSecret> &r) { created = r; });
    QTRY_VERIFY(created.has_value());
    QVERIFY2(created->ok(), qPrintable(created->error));
    QVERIFY(created->value.secret.startsWith(QStringLiteral("sk-")));
    QTRY_COMPARE(model.rowCount(), 1);
    QCOMPARE(model.index(0, ApiKeyModel::NameColumn).data().toString(), QStringLiteral("ci"));
    QVERIFY(!modelContains(model, created->value.secret));

    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    std::optional<DbResult<bool>> revoked;
    model.revokeKey(created->value.id, this, [&](const DbResult<bool> &r) { revoked = r; });
    QTRY_VERIFY(revoked.has_value());
    QVERIFY(revoked->ok());
    QVERIFY(revoked->value);
    QTRY_COMPARE(model.index(0, ApiKeyModel::StatusColumn).data().toString(),
                 QStringLiteral("Revoked"));
    QVERIFY(!changed.isEmpty()); // updated in place, not by a reset
    QCOMPARE(model.rowCount(), 1);

    const qint64 account = t.account();
    const auto stored = t.readNow<std::optional<ApiKeyRecord>>(
        [=, id = created->value.id](Store &s) { return s.apiKey(account, id); });
    QVERIFY(stored && stored->isRevoked());

    // Revoking twice reports that nothing was live to revoke.
    revoked.reset();
    model.revokeKey(created->value.id, this, [&](const DbResult<bool> &r) { revoked = r; });
    QTRY_VERIFY(revoked.has_value());
    QVERIFY(revoked->ok());
    QVERIFY(!revoked->value);
}

void TestApiKeyModel::writesElsewhereAppearOnAnnouncement()
{
    TestDatabase t;
    ApiKeyModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_VERIFY(model.isLoaded());
    const qint64 account = t.account();
    for (int i = 0; i < 3; ++i)
        t.writeNow<CreatedSecret>([=](Store &s) {
            return s.createApiKey(account, QStringLiteral("k%1").arg(i), QString());
        });
    t.db().announceApiKeysChanged();
    QTRY_COMPARE(model.rowCount(), 3);
    QCOMPARE(model.index(2, ApiKeyModel::NameColumn).data().toString(), QStringLiteral("k2"));
}

void TestApiKeyModel::lastUsedFollowsUsage()
{
    TestDatabase t;
    const qint64 account = t.account();
    const CreatedSecret key = t.writeNow<CreatedSecret>(
        [=](Store &s) { return s.createApiKey(account, QStringLiteral("used"), QString()); });
    ApiKeyModel model(t.db());
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_COMPARE(model.rowCount(), 1);

    t.db().touchApiKey(key.id);
    UsageRecord usage;
    usage.accountId = account;
    usage.keyId = key.id;
    usage.endpoint = QStringLiteral("/v1/chat/completions");
    usage.status = 200;
    t.db().recordUsage(usage);
    QTRY_VERIFY(model.index(0, ApiKeyModel::LastUsedColumn).data().toString() !=
                QStringLiteral("Never"));
    QVERIFY(model.index(0, ApiKeyModel::LastUsedColumn).data(ApiKeyModel::SortRole).toLongLong() >
            0);
}

QTEST_GUILESS_MAIN(TestApiKeyModel)
#include "tst_apikeymodel.moc"
