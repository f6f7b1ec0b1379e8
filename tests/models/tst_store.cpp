#include "address/AddressTables.h"
#include "DatabaseService.h"
#include "gateway/GatewayTables.h"
#include "Migrations.h"
#include "Secrets.h"
#include "Store.h"
#include "TestSupport.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QTest>

class TestStore : public QObject
{
    Q_OBJECT

    // A migrated database made to look as the code before components left it: no
    // schema_components, the old core's usage table (no images column, core step 2), and
    // schema_migrations with `rows` (version, applied_ms).
    static bool backToLegacy(QSqlQuery &q, const char *rows)
    {
        return q.exec(QStringLiteral("DROP TABLE schema_components")) &&
               q.exec(QStringLiteral("ALTER TABLE usage_records DROP COLUMN images")) &&
               q.exec(QStringLiteral("CREATE TABLE schema_migrations (version INTEGER PRIMARY "
                                     "KEY, applied_ms BIGINT NOT NULL)")) &&
               q.exec(QStringLiteral("INSERT INTO schema_migrations VALUES ") +
                      QLatin1String(rows));
    }

    static Store open(const TestDatabase &t)
    {
        QSqlDatabase db = t.config().open(QStringLiteral("test"));
        Migrations::apply(db, t.config().kind());
        return Store(db, t.config().kind());
    }

    // q.exec(sql), with the database's error as a warning when it fails.
    static bool run(QSqlQuery &q, const QString &sql)
    {
        if (q.exec(sql))
            return true;
        qWarning("%s: %s", qPrintable(sql), qPrintable(q.lastError().text()));
        return false;
    }

private slots:
    void migrationsAreIdempotent_data() { addBackendRows(); }
    void migrationsAreIdempotent()
    {
        SY_OPEN_DB(t);
        QSqlDatabase db = t.config().open(QStringLiteral("test"));
        QCOMPARE(Migrations::apply(db, t.config().kind()), Migrations::latestVersion());
        QCOMPARE(Migrations::apply(db, t.config().kind()), Migrations::latestVersion());
        QSqlQuery q(db);
        QVERIFY(q.exec(QStringLiteral("SELECT COUNT(*) FROM accounts WHERE name = 'default'")));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toInt(), 1); // seeded once, not per start
    }

    // Components apply their own steps; a family's tables come with its component only.
    void migrationsByComponent_data() { addBackendRows(); }
    void migrationsByComponent()
    {
        SY_OPEN_DB(t);
        QSqlDatabase db = t.config().open(QStringLiteral("test"));
        const Migrations::Component extra{
            QStringLiteral("extra"),
            {{"CREATE TABLE extra_one (id {ID}, v TEXT)"}, {"CREATE TABLE extra_two (id {ID})"}}};
        QCOMPARE(Migrations::apply(db, t.config().kind()), Migrations::latestVersion());
        QVERIFY(!db.tables().contains(QStringLiteral("extra_one")));
        QCOMPARE(Migrations::apply(db, t.config().kind(), {extra}),
                 Migrations::latestVersion({extra}));
        QCOMPARE(Migrations::latestVersion({extra}), Migrations::latestVersion() + 2);
        QVERIFY(db.tables().contains(QStringLiteral("extra_one")));
        QVERIFY(db.tables().contains(QStringLiteral("extra_two")));
        // Again: nothing is applied twice.
        QCOMPARE(Migrations::apply(db, t.config().kind(), {extra}),
                 Migrations::latestVersion({extra}));
        // A failing step leaves its component where it was, the others untouched.
        const Migrations::Component broken{QStringLiteral("broken"), {{"CREATE TABLE nope ("}}};
        QVERIFY_THROWS_EXCEPTION(StoreError,
                                 Migrations::apply(db, t.config().kind(), {extra, broken}));
        QSqlQuery q(db);
        QVERIFY(q.exec(
            QStringLiteral("SELECT COUNT(*) FROM schema_components WHERE component = 'broken'")));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toInt(), 0);
    }

    // A database migrated before components (one sequence in schema_migrations: 1 core,
    // 2 gateway, 3 address) is adopted without running those steps again.
    void legacyMigrationsAreAdopted_data() { addBackendRows(); }
    void legacyMigrationsAreAdopted()
    {
        SY_OPEN_DB(t);
        QSqlDatabase db = t.config().open(QStringLiteral("test"));
        QSqlQuery q(db);
        // What the old code left: the core's tables and version rows 1 and 2.
        Migrations::apply(db, t.config().kind(), {});
        QVERIFY(q.exec(QStringLiteral("CREATE TABLE catalog_cache (provider TEXT PRIMARY KEY, "
                                      "body TEXT NOT NULL, fetched_ms BIGINT NOT NULL)")));
        QVERIFY(backToLegacy(q, "(1, 0), (2, 0)"));
        // Each component says which legacy version stood for its step 1.
        const Migrations::Component gateway{
            QStringLiteral("gateway"),
            {{"CREATE TABLE catalog_cache (provider TEXT PRIMARY KEY)"}}, // would fail if rerun
            2};
        const Migrations::Component address{
            QStringLiteral("address"), {{"CREATE TABLE address_probe (id {ID})"}}, 3};
        QCOMPARE(Migrations::apply(db, t.config().kind(), {gateway, address}),
                 Migrations::latestVersion({gateway, address}));
        QVERIFY(db.tables().contains(QStringLiteral("address_probe"))); // 3 was not applied
        QVERIFY(q.exec(QStringLiteral("SELECT COUNT(*) FROM accounts WHERE name = 'default'")));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toInt(), 1);
    }

    // The families' real components on a database the previous schema made (legacy versions
    // 1, 2 and 3: the core, the gateway's and the address family's first steps): a program
    // with only some of the families (the address import's) adopts what it knows; the one with
    // all of them adopts the rest later, and no first step runs twice (each would fail: its
    // CREATE TABLE has no IF NOT EXISTS). Every later step is applied once.
    void legacyComponentsAdoptedWhenFirstMigrated_data() { addBackendRows(); }
    void legacyComponentsAdoptedWhenFirstMigrated()
    {
        SY_OPEN_DB(t);
        QSqlDatabase db = t.config().open(QStringLiteral("test"));
        QSqlQuery q(db);
        const Migrations::Component gateway = GatewayTables::migrations();
        const Migrations::Component address = AddressTables::migrations();
        QCOMPARE(gateway.legacyVersion, 2);
        QCOMPARE(address.legacyVersion, 3);
        auto firstStep = [](Migrations::Component c) {
            c.steps = {c.steps.first()};
            return c;
        };
        // What the old code left: each component's first step and version rows 1 to 3.
        Migrations::apply(db, t.config().kind(), {firstStep(gateway), firstStep(address)});
        QVERIFY(backToLegacy(q, "(1, 0), (2, 0), (3, 0)"));
        auto versionOf = [&q](const char *component) {
            q.exec(QStringLiteral("SELECT COALESCE(MAX(version), 0) FROM schema_components "
                                  "WHERE component = '%1'")
                       .arg(QLatin1String(component)));
            return q.next() ? q.value(0).toInt() : -1;
        };
        QCOMPARE(Migrations::apply(db, t.config().kind(), {address}),
                 Migrations::latestVersion({address}));
        QCOMPARE(versionOf("address"), int(address.steps.size()));
        QCOMPARE(versionOf("gateway"), 0); // not known to that program: not touched
        QCOMPARE(Migrations::apply(db, t.config().kind(), {gateway, address}),
                 Migrations::latestVersion({gateway, address}));
        QCOMPARE(versionOf("gateway"), int(gateway.steps.size()));
        QCOMPARE(versionOf("core"), int(Migrations::coreComponent().steps.size()));
        QVERIFY(q.exec(QStringLiteral("SELECT COUNT(*) FROM change_counters WHERE topic = "
                                      "'catalogs'"))); // the gateway's step 2 ran
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toInt(), 1);
        // Once more: nothing left to apply, nothing fails.
        QCOMPARE(Migrations::apply(db, t.config().kind(), {gateway, address}),
                 Migrations::latestVersion({gateway, address}));
    }

    // Core step 4 rebuilds SQLite's ledger with its kind check as comparisons (an IN list cost a
    // temporary table per row inserted): rows, ids, the AUTOINCREMENT sequence and both
    // indexes survive; PostgreSQL's ledger is left as it was.
    void ledgerRebuiltWithItsRowsAndSequence_data() { addBackendRows(); }
    void ledgerRebuiltWithItsRowsAndSequence()
    {
        SY_OPEN_DB(t);
        QSqlDatabase db = t.config().open(QStringLiteral("test"));
        const bool pg = t.config().kind() == DatabaseConfig::Kind::Postgres;
        Migrations::apply(db, t.config().kind());
        QSqlQuery q(db);
        const auto exec = [&q](const QString &sql) { QVERIFY(run(q, sql)); };
        if (!pg) { // back to step 3's table
            exec(QStringLiteral("DROP TABLE ledger"));
            exec(QStringLiteral(
                "CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, account_id BIGINT NOT "
                "NULL REFERENCES accounts(id), kind TEXT NOT NULL CHECK (kind IN ('grant', "
                "'charge', 'refund')), amount BIGINT NOT NULL, balance_after BIGINT NOT NULL, "
                "reason TEXT NOT NULL, request_id TEXT NOT NULL, created_ms BIGINT NOT NULL)"));
            exec(QStringLiteral("CREATE INDEX ledger_account ON ledger(account_id, id)"));
            exec(QStringLiteral("CREATE UNIQUE INDEX ledger_once ON ledger(kind, request_id) "
                                "WHERE request_id <> ''"));
            exec(QStringLiteral(
                "DELETE FROM schema_components WHERE component = 'core' AND version >= 4"));
        }
        exec(QStringLiteral("INSERT INTO ledger (account_id, kind, amount, balance_after, reason, "
                            "request_id, created_ms) VALUES (1, 'grant', 10, 10, 'g', '', 1), "
                            "(1, 'charge', -3, 7, 'c', 'req_a', 2), "
                            "(1, 'charge', -1, 6, 'c', 'req_b', 3)"));
        exec(QStringLiteral("DELETE FROM ledger WHERE request_id = 'req_b'")); // the last id
        QCOMPARE(Migrations::apply(db, t.config().kind()), Migrations::latestVersion());

        exec(QStringLiteral("SELECT id, kind, amount FROM ledger ORDER BY id"));
        QList<QString> rows;
        while (q.next())
            rows.append(
                QStringLiteral("%1 %2 %3")
                    .arg(q.value(0).toString(), q.value(1).toString(), q.value(2).toString()));
        QCOMPARE(rows, (QList<QString>{"1 grant 10", "2 charge -3"}));
        // Ids are never reused: the next is above the deleted one.
        exec(QStringLiteral("INSERT INTO ledger (account_id, kind, amount, balance_after, reason, "
                            "request_id, created_ms) VALUES (1, 'refund', 1, 7, 'r', 'req_c', 4)"));
        exec(QStringLiteral("SELECT MAX(id) FROM ledger"));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toLongLong(), 4);
        // The check and the once-per-request index still hold.
        QVERIFY(!q.exec(QStringLiteral("INSERT INTO ledger (account_id, kind, amount, "
                                       "balance_after, reason, request_id, created_ms) VALUES "
                                       "(1, 'bonus', 1, 8, 'x', '', 5)")));
        QVERIFY(!q.exec(QStringLiteral("INSERT INTO ledger (account_id, kind, amount, "
                                       "balance_after, reason, request_id, created_ms) VALUES "
                                       "(1, 'charge', -1, 6, 'x', 'req_a', 5)")));
        if (!pg) {
            exec(QStringLiteral("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND "
                                "tbl_name = 'ledger' AND name IN ('ledger_account', "
                                "'ledger_once')"));
            QVERIFY(q.next());
            QCOMPARE(q.value(0).toInt(), 2);
            exec(QStringLiteral("SELECT sql FROM sqlite_master WHERE name = 'ledger'"));
            QVERIFY(q.next());
            QVERIFY(!q.value(0).toString().contains(QLatin1String(" IN (")));
            exec(QStringLiteral("SELECT COUNT(*) FROM sqlite_master WHERE name = 'ledger_new'"));
            QVERIFY(q.next());
            QCOMPARE(q.value(0).toInt(), 0);
        }
    }

    // Core step 5 drops PostgreSQL's per-row account checks on the ledger and usage records
    // (from a database at step 4, which had them) and keeps the others; SQLite keeps all.
    // Without them the store itself refuses a record for an account that does not exist.
    void accountChecksOfStep5_data() { addBackendRows(); }
    void accountChecksOfStep5()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        QSqlDatabase db = s.database();
        const bool pg = s.isPostgres();
        QSqlQuery q(db);
        const auto exec = [&q](const QString &sql) { QVERIFY(run(q, sql)); };
        const auto referencing = [&](const char *table) {
            const QString sql =
                pg ? QStringLiteral("SELECT COUNT(*) FROM pg_constraint WHERE contype = 'f' AND "
                                    "conrelid = '%1'::regclass AND confrelid = "
                                    "'accounts'::regclass")
                   : QStringLiteral("SELECT COUNT(*) FROM pragma_foreign_key_list('%1') WHERE "
                                    "\"table\" = 'accounts'");
            if (!q.exec(sql.arg(QLatin1String(table))) || !q.next())
                return -1;
            return q.value(0).toInt();
        };
        if (pg) { // back to step 4
            exec(QStringLiteral("ALTER TABLE ledger ADD CONSTRAINT ledger_account_id_fkey FOREIGN "
                                "KEY (account_id) REFERENCES accounts(id)"));
            exec(QStringLiteral("ALTER TABLE usage_records ADD CONSTRAINT "
                                "usage_records_account_id_fkey FOREIGN KEY (account_id) "
                                "REFERENCES accounts(id)"));
            exec(QStringLiteral(
                "DELETE FROM schema_components WHERE component = 'core' AND version >= 5"));
            QCOMPARE(referencing("ledger"), 1);
            QCOMPARE(Migrations::apply(db, t.config().kind()), Migrations::latestVersion());
        }
        QCOMPARE(referencing("ledger"), pg ? 0 : 1);
        QCOMPARE(referencing("usage_records"), pg ? 0 : 1);
        QCOMPARE(referencing("api_keys"), 1);
        QCOMPARE(referencing("control_tokens"), 1);

        UsageRecord u;
        u.accountId = s.defaultAccountId() + 999;
        u.endpoint = "/v1/x";
        u.status = 200;
        u.requestId = "orphan";
        QVERIFY_THROWS_EXCEPTION(StoreError, s.insertUsage(u));
        ChargeResult r;
        s.transaction([&] { r = s.applyLedger(u.accountId, "grant", 5, "x", "", 0); });
        QCOMPARE(r.status, ChargeResult::Status::UnknownAccount);
        exec(QStringLiteral("SELECT (SELECT COUNT(*) FROM usage_records) + (SELECT COUNT(*) FROM "
                            "ledger)"));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toInt(), 0);
    }

    // What a settlement retried after a lost connection looks for before storing a usage
    // record alone again.
    void storedUsageIsFound_data() { addBackendRows(); }
    void storedUsageIsFound()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        UsageRecord u;
        u.accountId = s.defaultAccountId();
        u.endpoint = "/v1/x";
        u.status = 200;
        u.requestId = "req_stored";
        u.time = QDateTime::fromMSecsSinceEpoch(1'700'000'000'123, Qt::UTC);
        QCOMPARE(s.storedUsageId(u), qint64(0));
        const qint64 id = s.insertUsage(u);
        QVERIFY(id > 0);
        QCOMPARE(s.storedUsageId(u), id);
        UsageRecord other = u;
        other.requestId = "req_other";
        QCOMPARE(s.storedUsageId(other), qint64(0));
        other = u;
        other.time = u.time.addMSecs(1);
        QCOMPARE(s.storedUsageId(other), qint64(0));
        other = u;
        other.accountId = u.accountId + 1;
        QCOMPARE(s.storedUsageId(other), qint64(0));
        other = u;
        other.requestId.clear(); // an empty id names no record
        s.insertUsage(other);
        QCOMPARE(s.storedUsageId(other), qint64(0));
    }

    void apiKeysAreStoredHashed_data() { addBackendRows(); }
    void apiKeysAreStoredHashed()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        const qint64 account = s.defaultAccountId();
        const CreatedSecret c =
            s.createApiKey(account, QStringLiteral("ci"), QStringLiteral("default"));
        QVERIFY(Secrets::looksValid(c.secret, Secrets::kApiKeyPrefix));
        QSqlQuery q(s.database());
        QVERIFY(q.exec(QStringLiteral("SELECT secret_hash, prefix FROM api_keys")));
        QVERIFY(q.next());
        QVERIFY(q.value(0).toString() != c.secret);
        QCOMPARE(q.value(0).toString().toLatin1(), Secrets::hash(c.secret));
        QVERIFY(c.secret.startsWith(q.value(1).toString().chopped(3)));
        QVERIFY(q.value(1).toString().size() < 16);

        const auto found = s.findApiKeyByHash(Secrets::hash(c.secret));
        QVERIFY(found);
        QCOMPARE(found->id, c.id);
        QCOMPARE(found->name, QStringLiteral("ci"));
        QVERIFY(!found->isRevoked());
        QVERIFY(!s.findApiKeyByHash(Secrets::hash(c.secret + QStringLiteral("x"))));

        QVERIFY(s.revokeApiKey(account, c.id));
        QVERIFY(!s.revokeApiKey(account, c.id)); // already revoked
        QVERIFY(!s.revokeApiKey(account, c.id + 100));
        QVERIFY(s.findApiKeyByHash(Secrets::hash(c.secret))->isRevoked());

        const QDateTime used = QDateTime::currentDateTimeUtc();
        s.touchApiKey(c.id, used);
        s.touchApiKey(c.id, used.addSecs(-100)); // older: ignored
        QCOMPARE(s.apiKey(account, c.id)->lastUsed.toMSecsSinceEpoch(), used.toMSecsSinceEpoch());
    }

    void controlTokens_data() { addBackendRows(); }
    void controlTokens()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        const qint64 account = s.defaultAccountId();
        const QDateTime expiry = QDateTime::currentDateTimeUtc().addDays(3);
        const CreatedSecret c = s.createControlToken(
            account, QStringLiteral("ops"),
            {QStringLiteral("credits:read"), QStringLiteral("usage:read")}, expiry);
        QVERIFY(c.secret.startsWith(u"lpc_"));
        const auto found = s.findControlTokenByHash(Secrets::hash(c.secret));
        QVERIFY(found);
        QCOMPARE(found->scopes, (QStringList{"credits:read", "usage:read"}));
        QCOMPARE(found->expires.toMSecsSinceEpoch(), expiry.toMSecsSinceEpoch());
        QVERIFY(!found->isExpired(QDateTime::currentDateTimeUtc()));
        QVERIFY(found->isExpired(expiry.addSecs(1)));
        QCOMPARE(s.listControlTokens(account).size(), 1);
        QVERIFY(s.revokeControlToken(account, c.id));
        QVERIFY(s.findControlTokenByHash(Secrets::hash(c.secret))->isRevoked());
    }

    void ledgerKeepsBalanceConsistent_data() { addBackendRows(); }
    void ledgerKeepsBalanceConsistent()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        const qint64 a = s.defaultAccountId();
        ChargeResult r;
        s.transaction([&] { r = s.applyLedger(a, "grant", 1000, "seed", "", 0); });
        QCOMPARE(r.status, ChargeResult::Status::Committed);
        QCOMPARE(r.entry.balanceAfter, qint64(1000));

        s.transaction([&] { r = s.applyLedger(a, "charge", -300, "chat", "req_1", 0); });
        QCOMPARE(r.status, ChargeResult::Status::Committed);
        QCOMPARE(r.entry.balanceAfter, qint64(700));

        // The same request is never charged twice.
        s.transaction([&] { r = s.applyLedger(a, "charge", -300, "chat", "req_1", 0); });
        QCOMPARE(r.status, ChargeResult::Status::Duplicate);
        QCOMPARE(r.entry.amount, qint64(-300));
        QCOMPARE(s.balance(a), qint64(700));

        // A refund of that request is a different entry.
        s.transaction([&] { r = s.applyLedger(a, "refund", 100, "partial", "req_1", 0); });
        QCOMPARE(r.status, ChargeResult::Status::Committed);

        // A strict charge (floor 0) that would overdraw writes nothing.
        s.transaction([&] { r = s.applyLedger(a, "charge", -5000, "big", "req_2", 0); });
        QCOMPARE(r.status, ChargeResult::Status::Insufficient);
        QCOMPARE(s.balance(a), qint64(800));
        // A settlement of delivered work may go below zero when its floor allows.
        s.transaction([&] { r = s.applyLedger(a, "charge", -900, "late", "req_3", -1000); });
        QCOMPARE(r.status, ChargeResult::Status::Committed);
        QCOMPARE(s.balance(a), qint64(-100));

        QCOMPARE(s.ledgerSum(a), s.balance(a));
        const auto entries = s.ledger(a, 10);
        QCOMPARE(entries.size(), 4);
        QCOMPARE(entries.first().requestId, QStringLiteral("req_3")); // newest first
        QCOMPARE(s.ledger(a, 10, entries[1].id).size(), 2);

        s.transaction([&] { r = s.applyLedger(a + 999, "grant", 5, "x", "", 0); });
        QCOMPARE(r.status, ChargeResult::Status::UnknownAccount);
    }

    void usageQueries_data() { addBackendRows(); }
    void usageQueries()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        const qint64 a = s.defaultAccountId();
        const qint64 k1 = s.createApiKey(a, "one", "default").id;
        const qint64 k2 = s.createApiKey(a, "two", "default").id;
        const QDateTime base = QDateTime::fromSecsSinceEpoch(1'800'000'000, Qt::UTC);
        for (int i = 0; i < 30; ++i) {
            UsageRecord u;
            u.accountId = a;
            u.keyId = i % 3 == 0 ? k2 : k1;
            u.time = base.addSecs(i * 3600);
            u.endpoint = "/v1/chat/completions";
            u.model = i % 2 ? "m-odd" : "m-even";
            u.inputTokens = i;
            u.cost = 10 * i;
            u.status = 200;
            u.requestId = QStringLiteral("req_%1").arg(i);
            s.insertUsage(u);
        }
        UsageQuery q;
        q.accountId = a;
        q.limit = 7;
        UsagePage p = s.usage(q);
        QCOMPARE(p.records.size(), 7);
        QVERIFY(p.hasMore);
        QCOMPARE(p.records.first().requestId, QStringLiteral("req_29"));
        // Paging through returns every record exactly once.
        QSet<QString> seen;
        for (;;) {
            for (const auto &r : p.records)
                seen.insert(r.requestId);
            if (!p.hasMore)
                break;
            q.beforeId = p.records.last().id;
            p = s.usage(q);
        }
        QCOMPARE(seen.size(), 30);

        UsageQuery f;
        f.accountId = a;
        f.keyId = k2;
        f.model = "m-even";
        f.from = base.addSecs(6 * 3600);
        f.to = base.addSecs(25 * 3600);
        p = s.usage(f);
        // key two: i % 3 == 0; even: i % 2 == 0; 6 <= i < 25 -> 6, 12, 18, 24
        QCOMPARE(p.records.size(), 4);
        QCOMPARE(p.records.last().inputTokens, qint64(6));
        QCOMPARE(p.records.first().cost, qint64(240));

        const auto buckets = s.usageBuckets(a, base, 24 * 3600 * 1000LL);
        qint64 requests = 0;
        for (const auto &b : buckets)
            requests += b.requests;
        QCOMPARE(requests, qint64(30));
    }
};

QTEST_GUILESS_MAIN(TestStore)
#include "tst_store.moc"
