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
    void rulesSpendAndRefusal();
};

// A key's rules in the table: the budget's spending in its period (and the bar's fraction),
// the expiry, and a key its rules refuse marked on every cell; edited through the model.
void TestApiKeyModel::rulesSpendAndRefusal()
{
    TestDatabase t;
    const qint64 account = t.account();
    KeyRules rules;
    rules.budget = KeyRules::Budget{1000, KeyRules::Period::Day};
    const CreatedSecret key = t.writeNow<CreatedSecret>([=](Store &s) {
        return s.createApiKey(account, QStringLiteral("budgeted"), QString(), rules);
    });
    const QDateTime now =
        QDateTime::fromString(QStringLiteral("2026-12-02T10:00:00Z"), Qt::ISODate);
    const auto charge = [&](qint64 cost, const QDateTime &when) {
        UsageRecord u;
        u.accountId = account;
        u.keyId = key.id;
        u.time = when;
        u.endpoint = QStringLiteral("/v1/test");
        u.cost = cost;
        u.status = 200;
        t.writeNow<qint64>([u](Store &s) { return s.insertUsage(u); });
    };
    charge(400, now.addSecs(-3600));
    charge(999, now.addDays(-1)); // yesterday's: another period
    ApiKeyModel model(t.db());
    model.setClock([now] { return now; });
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QTRY_COMPARE(model.spent(key.id), qint64(400));
    const QModelIndex budget = model.index(0, ApiKeyModel::BudgetColumn);
    QCOMPARE(budget.data().toString(), QStringLiteral("0.0000004 of 0.000001 / day"));
    QCOMPARE(budget.data(ApiKeyModel::SpentFractionRole).toDouble(), 0.4);
    QCOMPARE(model.index(0, ApiKeyModel::ExpiresColumn).data().toString(), QStringLiteral("Never"));
    QVERIFY(!model.index(0, 0).data(ApiKeyModel::RefusedRole).toBool());
    QCOMPARE(model.index(0, ApiKeyModel::StatusColumn).data().toString(), QStringLiteral("Active"));

    // Spent in full: refused until the day ends, shown on every cell.
    charge(600, now.addSecs(-60));
    t.db().announceApiKeysChanged();
    QTRY_COMPARE(model.spent(key.id), qint64(1000));
    QTRY_VERIFY(model.index(0, ApiKeyModel::NameColumn).data(ApiKeyModel::RefusedRole).toBool());
    QCOMPARE(model.index(0, ApiKeyModel::StatusColumn).data().toString(),
             QStringLiteral("Refused"));
    QVERIFY(model.index(0, ApiKeyModel::StatusColumn)
                .data(Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("key_budget_exceeded")));

    // Edited: no budget, an expiry already past.
    KeyRules edited;
    edited.expires = now.addSecs(-1);
    std::optional<DbResult<bool>> updated;
    model.updateKey(key.id, QStringLiteral("renamed"), QStringLiteral("default"), edited, this,
                    [&](const DbResult<bool> &r) { updated = r; });
    QTRY_VERIFY(updated.has_value() && updated->ok() && updated->value);
    QTRY_COMPARE(model.index(0, ApiKeyModel::NameColumn).data().toString(),
                 QStringLiteral("renamed"));
    QCOMPARE(model.index(0, ApiKeyModel::BudgetColumn).data().toString(), QStringLiteral("None"));
    QVERIFY(
        !model.index(0, ApiKeyModel::BudgetColumn).data(ApiKeyModel::SpentFractionRole).isValid());
    QVERIFY(model.index(0, ApiKeyModel::ExpiresColumn).data().toString() != u"Never");
    QVERIFY(model.index(0, 0).data(ApiKeyModel::RefusedRole).toBool());
    QVERIFY(model.index(0, ApiKeyModel::StatusColumn)
                .data(Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("key_expired")));
}

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
    model.createKey(QStringLiteral("ci"), QString(), {}, this,
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
