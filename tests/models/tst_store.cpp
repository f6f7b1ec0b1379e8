#include "address/AddressTables.h"
#include "DatabaseService.h"
#include "gateway/GatewayTables.h"
#include "Migrations.h"
#include "Secrets.h"
#include "Store.h"
#include "TestSupport.h"

#include <array>
#include <QSqlError>
#include <QSqlQuery>
#include <QSqlRecord>
#include <QTest>

class TestStore : public QObject
{
    Q_OBJECT

    // A database migrated to core step 1 (the old core's tables) made to look as the code
    // before components left it: no schema_components, and schema_migrations with `rows`
    // (version, applied_ms).
    static bool backToLegacy(QSqlQuery &q, const char *rows)
    {
        return q.exec(QStringLiteral("DROP TABLE schema_components")) &&
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
        // What the old code left: the core's first step and version rows 1 and 2.
        Migrations::apply(db, t.config().kind(), {}, 1);
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
        Migrations::apply(db, t.config().kind(), {firstStep(gateway), firstStep(address)}, 1);
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
        Migrations::apply(db, t.config().kind(), {}, 3); // as step 3 left it
        QSqlQuery q(db);
        const auto exec = [&q](const QString &sql) { QVERIFY(run(q, sql)); };
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
        QSqlDatabase db = t.config().open(QStringLiteral("test"));
        const bool pg = t.config().kind() == DatabaseConfig::Kind::Postgres;
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
        Migrations::apply(db, t.config().kind(), {}, 4); // as step 4 left it: every check
        QCOMPARE(referencing("ledger"), 1);
        QCOMPARE(referencing("usage_records"), 1);
        QCOMPARE(Migrations::apply(db, t.config().kind()), Migrations::latestVersion());
        Store s(db, t.config().kind());
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

    // Core step 8 moves the usage columns of the first families (characters, audio_ms, images)
    // into usage_meters and drops them: from a database as step 7 left it, every record keeps
    // its id and other columns, each non-zero quantity becomes a meter row and a zero none, the
    // index and the id sequence stay, and the store reads the records back with their meters.
    void usageMetersMigratedFromColumns_data() { addBackendRows(); }
    void usageMetersMigratedFromColumns()
    {
        SY_OPEN_DB(t);
        QSqlDatabase db = t.config().open(QStringLiteral("test"));
        const bool pg = t.config().kind() == DatabaseConfig::Kind::Postgres;
        QCOMPARE(Migrations::apply(db, t.config().kind(), {}, 7), 7);
        QSqlQuery q(db);
        const auto exec = [&q](const QString &sql) { QVERIFY(run(q, sql)); };
        // (characters, audio_ms, images) per record; the last record is deleted, so that the
        // next id shows whether the sequence was kept.
        const QList<std::array<qint64, 3>> quantities{{0, 0, 0},
                                                      {1234, 0, 0},
                                                      {0, 61'250, 0},
                                                      {0, 0, 3},
                                                      {7, 8, 9},
                                                      {0, 0, 0},
                                                      {4'000'000'000'000, 0, 1},
                                                      {5, 0, 0}};
        for (qsizetype i = 0; i < quantities.size(); ++i)
            exec(QStringLiteral(
                     "INSERT INTO usage_records (account_id, key_id, token_id, time_ms, "
                     "endpoint, model, input_tokens, output_tokens, cache_read_tokens, "
                     "cache_write_tokens, characters, audio_ms, requests, cost, status, "
                     "latency_ms, request_id, estimated, images) VALUES (1, %1, %2, %3, "
                     "'/v1/e%4', 'm%4', %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, 'req_%4', "
                     "%15, %16)")
                     .arg(i % 2 ? QStringLiteral("NULL") : QString::number(100 + i))
                     .arg(i % 2 ? QString::number(200 + i) : QStringLiteral("NULL"))
                     .arg(1'700'000'000'000 + i)
                     .arg(i)
                     .arg(i * 3)
                     .arg(i * 5)
                     .arg(i * 7)
                     .arg(i * 11)
                     .arg(quantities[i][0])
                     .arg(quantities[i][1])
                     .arg(i % 3)
                     .arg(i * 13)
                     .arg(200 + i)
                     .arg(i * 17)
                     .arg(i % 2)
                     .arg(quantities[i][2]));
        exec(QStringLiteral("DELETE FROM usage_records WHERE request_id = 'req_7'"));
        const QString kept = QStringLiteral(
            "SELECT id, account_id, key_id, token_id, time_ms, endpoint, model, input_tokens, "
            "output_tokens, cache_read_tokens, cache_write_tokens, requests, cost, status, "
            "latency_ms, request_id, estimated FROM usage_records ORDER BY id");
        const auto rows = [&] {
            QStringList out;
            if (!run(q, kept))
                return out;
            while (q.next()) {
                QStringList row;
                for (int c = 0; c < q.record().count(); ++c)
                    row.append(q.value(c).isNull() ? QStringLiteral("NULL")
                                                   : q.value(c).toString());
                out.append(row.join(u'|'));
            }
            return out;
        };
        const QStringList before = rows();
        QCOMPARE(before.size(), 7);

        QCOMPARE(Migrations::apply(db, t.config().kind()), Migrations::latestVersion());
        QCOMPARE(rows(), before);
        const QSqlRecord columns = db.record(QStringLiteral("usage_records"));
        for (const char *gone : {"characters", "audio_ms", "images"})
            QVERIFY2(columns.indexOf(QLatin1String(gone)) < 0, gone);
        QMap<QString, qint64> meters; // "request meter" -> quantity
        exec(QStringLiteral("SELECT r.request_id, m.meter, m.quantity FROM usage_meters m JOIN "
                            "usage_records r ON r.id = m.usage_id"));
        while (q.next())
            meters.insert(q.value(0).toString() + u' ' + q.value(1).toString(),
                          q.value(2).toLongLong());
        QMap<QString, qint64> want;
        for (qsizetype i = 0; i < 7; ++i)
            for (int m = 0; m < 3; ++m)
                if (quantities[i][m] != 0)
                    want.insert(QStringLiteral("req_%1 %2")
                                    .arg(i)
                                    .arg(QLatin1String(m == 0   ? "characters"
                                                       : m == 1 ? "audio_ms"
                                                                : "images")),
                                quantities[i][m]);
        QCOMPARE(meters, want);
        exec(QStringLiteral("SELECT COUNT(*) FROM usage_meters"));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toInt(), want.size()); // none for another record or a zero

        // The index on (account_id, time_ms) and the sequence survive.
        exec(pg ? QStringLiteral("SELECT COUNT(*) FROM pg_indexes WHERE tablename = "
                                 "'usage_records' AND indexname = 'usage_account_time'")
                : QStringLiteral("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND "
                                 "tbl_name = 'usage_records' AND name = 'usage_account_time'"));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toInt(), 1);
        if (!pg) {
            exec(QStringLiteral("PRAGMA foreign_key_check"));
            QVERIFY(!q.next());
        }
        Store s(db, t.config().kind());
        UsageRecord u;
        u.accountId = s.defaultAccountId();
        u.endpoint = QStringLiteral("/v1/after");
        u.status = 200;
        u.requestId = QStringLiteral("req_after");
        u.setMeter(QStringLiteral("pages"), 12);
        QCOMPARE(s.insertUsage(u), qint64(9)); // 8 was taken and deleted

        UsageQuery all;
        all.accountId = s.defaultAccountId();
        const UsagePage page = s.usage(all);
        QCOMPARE(page.records.size(), 8);
        QCOMPARE(page.records.first().meters, (QList<UsageMeter>{{"pages", 12}}));
        for (const UsageRecord &r : page.records.mid(1)) {
            const qsizetype i = r.requestId.mid(4).toInt();
            QCOMPARE(r.meter(u"characters"), quantities[i][0]);
            QCOMPARE(r.meter(u"audio_ms"), quantities[i][1]);
            QCOMPARE(r.meter(u"images"), quantities[i][2]);
            QCOMPARE(r.inputTokens, qint64(i * 3));
            QCOMPARE(r.cost, qint64(i * 13));
        }
        QCOMPARE(page.records.last().meters, QList<UsageMeter>()); // req_0 had none
    }

    // A record's meters are stored with it and read back with it, by the single-row insert
    // and by settlement batches of one and of many, with and without meters mixed; a meter
    // of 0 is no meter.
    void usageMetersRoundTrip_data() { addBackendRows(); }
    void usageMetersRoundTrip()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        const qint64 a = s.defaultAccountId();
        s.transaction([&] { s.applyLedger(a, "grant", 1'000'000, "seed", "", 0); });
        const auto record = [a](int i) {
            UsageRecord u;
            u.accountId = a;
            u.endpoint = QStringLiteral("/v1/m");
            u.model = QStringLiteral("m%1").arg(i);
            u.status = 200;
            u.cost = i % 2 ? 10 : 0;
            u.requestId = QStringLiteral("req_m%1").arg(i);
            u.time = QDateTime::fromMSecsSinceEpoch(1'700'000'000'000 + i, Qt::UTC);
            if (i % 3 == 0) // none: 3 alone, 6 in a batch with others
                return u;
            u.setMeter(QStringLiteral("zeta"), i);
            if (i % 2 == 0)
                u.setMeter(QStringLiteral("alpha"), -i * 1'000'000'000'000LL); // any integer
            u.setMeter(QStringLiteral("gone"), 5);
            u.setMeter(QStringLiteral("gone"), 0);
            return u;
        };
        QCOMPARE(record(2).meters.size(), 2);
        QCOMPARE(record(2).meters.first().name, QStringLiteral("alpha")); // in name order
        QCOMPARE(record(2).meter(u"zeta"), 2);
        QCOMPARE(record(2).meter(u"gone"), 0);
        QMap<QString, UsageRecord> written;
        UsageRecord single = record(1);
        single.id = s.insertUsage(single);
        written.insert(single.model, single);
        for (int size : {1, 1, 5}) {
            QList<Store::Settlement> batch;
            for (int k = 0; k < size; ++k)
                batch.append({record(written.size() + 1 + k), {}, {}});
            s.transaction([&] { s.settleBatch(batch); });
            for (const Store::Settlement &st : batch) {
                QVERIFY2(
                    st.error.isEmpty(),
                    qPrintable(st.error +
                               QStringLiteral(" batch of %1, %2").arg(size).arg(st.usage.model)));
                QVERIFY(st.usage.id > 0);
                written.insert(st.usage.model, st.usage);
            }
        }
        QCOMPARE(written.size(), 8);
        UsageQuery all;
        all.accountId = a;
        const UsagePage page = s.usage(all);
        QCOMPARE(page.records.size(), written.size());
        for (const UsageRecord &got : page.records) {
            const UsageRecord &want = written.value(got.model);
            QCOMPARE(got.id, want.id);
            QCOMPARE(got.meters, want.meters);
        }
        QSqlQuery q(s.database());
        QVERIFY(q.exec(QStringLiteral("SELECT COUNT(*) FROM usage_meters WHERE quantity = 0 OR "
                                      "meter = 'gone'")));
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
