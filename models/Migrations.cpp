#include "Migrations.h"

#include <QDateTime>
#include <QSqlError>
#include <QSqlQuery>
#include <QStringList>
#include <utility>

namespace {

// Dialect-neutral SQL: {ID} becomes the auto-increment primary key of each database, {BLOB} its
// binary type; times are integer milliseconds since the epoch and money integer units on both.
const Migrations::Component &core()
{
    static const Migrations::Component c{
        QStringLiteral("core"),
        {
            // 1: accounts, credentials, ledger, usage
            {
                "CREATE TABLE accounts (id {ID}, name TEXT NOT NULL UNIQUE, "
                "balance BIGINT NOT NULL DEFAULT 0, created_ms BIGINT NOT NULL)",
                "CREATE TABLE api_keys (id {ID}, account_id BIGINT NOT NULL REFERENCES "
                "accounts(id), "
                "name TEXT NOT NULL, prefix TEXT NOT NULL, secret_hash TEXT NOT NULL UNIQUE, "
                "tier TEXT NOT NULL DEFAULT 'default', created_ms BIGINT NOT NULL, "
                "last_used_ms BIGINT, revoked_ms BIGINT)",
                "CREATE INDEX api_keys_account ON api_keys(account_id)",
                "CREATE TABLE control_tokens (id {ID}, "
                "account_id BIGINT NOT NULL REFERENCES accounts(id), name TEXT NOT NULL, "
                "prefix TEXT NOT NULL, secret_hash TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL, "
                "created_ms BIGINT NOT NULL, expires_ms BIGINT, last_used_ms BIGINT, "
                "revoked_ms BIGINT)",
                "CREATE INDEX control_tokens_account ON control_tokens(account_id)",
                "CREATE TABLE ledger (id {ID}, account_id BIGINT NOT NULL REFERENCES accounts(id), "
                "kind TEXT NOT NULL CHECK (kind IN ('grant', 'charge', 'refund')), "
                "amount BIGINT NOT NULL, balance_after BIGINT NOT NULL, reason TEXT NOT NULL, "
                "request_id TEXT NOT NULL, created_ms BIGINT NOT NULL)",
                "CREATE INDEX ledger_account ON ledger(account_id, id)",
                // A request is charged (or refunded) at most once.
                "CREATE UNIQUE INDEX ledger_once ON ledger(kind, request_id) WHERE request_id <> "
                "''",
                "CREATE TABLE usage_records (id {ID}, "
                "account_id BIGINT NOT NULL REFERENCES accounts(id), key_id BIGINT, token_id "
                "BIGINT, "
                "time_ms BIGINT NOT NULL, endpoint TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', "
                "input_tokens BIGINT NOT NULL DEFAULT 0, output_tokens BIGINT NOT NULL DEFAULT 0, "
                "cache_read_tokens BIGINT NOT NULL DEFAULT 0, "
                "cache_write_tokens BIGINT NOT NULL DEFAULT 0, "
                "characters BIGINT NOT NULL DEFAULT 0, audio_ms BIGINT NOT NULL DEFAULT 0, "
                "requests BIGINT NOT NULL DEFAULT 1, cost BIGINT NOT NULL DEFAULT 0, "
                "status INTEGER NOT NULL, latency_ms INTEGER NOT NULL, request_id TEXT NOT NULL, "
                "estimated INTEGER NOT NULL DEFAULT 0)",
                "CREATE INDEX usage_account_time ON usage_records(account_id, time_ms)",
                "CREATE INDEX usage_request ON usage_records(request_id)",
                "INSERT INTO accounts (name, balance, created_ms) VALUES ('default', 0, {NOW})",
            },
            // 2: images billed by the image-task family (server/images)
            {
                "ALTER TABLE usage_records ADD COLUMN images BIGINT NOT NULL DEFAULT 0",
            },
            // 3: no query looks usage up by request id; the index cost every billed request a
            // page write (tests/bench/README.md, "The charge path")
            {
                "DROP INDEX IF EXISTS usage_request",
            },
            // 4: SQLite codes CHECK (kind IN (...)) as a temporary table built for every row
            // inserted (about a tenth of a settlement's work in callgrind); the same rule as
            // comparisons. SQLite cannot alter a constraint, so the table is rebuilt, ids and
            // AUTOINCREMENT sequence kept. PostgreSQL keeps its constraint (an array test).
            {
                "{SQLITE}CREATE TABLE ledger_new (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "account_id BIGINT NOT NULL REFERENCES accounts(id), kind TEXT NOT NULL CHECK "
                "(kind = 'grant' OR kind = 'charge' OR kind = 'refund'), amount BIGINT NOT NULL, "
                "balance_after BIGINT NOT NULL, reason TEXT NOT NULL, request_id TEXT NOT NULL, "
                "created_ms BIGINT NOT NULL)",
                "{SQLITE}INSERT INTO ledger_new (id, account_id, kind, amount, balance_after, "
                "reason, request_id, created_ms) SELECT id, account_id, kind, amount, "
                "balance_after, reason, request_id, created_ms FROM ledger ORDER BY id",
                "{SQLITE}DELETE FROM sqlite_sequence WHERE name = 'ledger_new'",
                "{SQLITE}UPDATE sqlite_sequence SET name = 'ledger_new' WHERE name = 'ledger'",
                "{SQLITE}DROP TABLE ledger",
                "{SQLITE}ALTER TABLE ledger_new RENAME TO ledger",
                "{SQLITE}CREATE INDEX ledger_account ON ledger(account_id, id)",
                "{SQLITE}CREATE UNIQUE INDEX ledger_once ON ledger(kind, request_id) WHERE "
                "request_id <> ''",
            },
            // 5: PostgreSQL checked each ledger entry's and usage record's account with a
            // trigger per row, about a quarter of a settlement batch's time there. Accounts are
            // never deleted, and the writes check the account themselves: a charge updates its
            // account first, a usage record is stored only when its account exists (Store.h).
            // SQLite's check is an index lookup, and dropping it would rebuild both tables.
            {
                "{POSTGRES}ALTER TABLE ledger DROP CONSTRAINT IF EXISTS ledger_account_id_fkey",
                "{POSTGRES}ALTER TABLE usage_records DROP CONSTRAINT IF EXISTS "
                "usage_records_account_id_fkey",
            },
            // 6: changes seen by every process (models/ChangeFeed.h). A change to credentials
            // or a grant bumps its topic's counter in the same transaction, whoever writes it
            // (the server, the window, the command line); PostgreSQL also notifies listeners.
            // A key's last use is not a change: the triggers name the columns that are. Steps 6
            // and 7 can run again over their own objects (a database adopted from before
            // migrations had components replays every step after the first).
            {
                "CREATE TABLE IF NOT EXISTS change_counters (topic TEXT PRIMARY KEY, n BIGINT NOT "
                "NULL)",
                "INSERT INTO change_counters (topic, n) VALUES ('keys', 0), ('tokens', 0), "
                "('credits', 0) ON CONFLICT (topic) DO NOTHING",
                "{SQLITE}CREATE TRIGGER IF NOT EXISTS keys_added AFTER INSERT ON api_keys BEGIN "
                "UPDATE "
                "change_counters SET n = n + 1 WHERE topic = 'keys'; END",
                "{SQLITE}CREATE TRIGGER IF NOT EXISTS keys_changed AFTER UPDATE OF account_id, "
                "name, tier, "
                "secret_hash, revoked_ms ON api_keys BEGIN UPDATE change_counters SET n = n + 1 "
                "WHERE topic = 'keys'; END",
                "{SQLITE}CREATE TRIGGER IF NOT EXISTS keys_removed AFTER DELETE ON api_keys BEGIN "
                "UPDATE "
                "change_counters SET n = n + 1 WHERE topic = 'keys'; END",
                "{SQLITE}CREATE TRIGGER IF NOT EXISTS tokens_added AFTER INSERT ON control_tokens "
                "BEGIN UPDATE "
                "change_counters SET n = n + 1 WHERE topic = 'tokens'; END",
                "{SQLITE}CREATE TRIGGER IF NOT EXISTS tokens_changed AFTER UPDATE OF account_id, "
                "name, scopes, "
                "secret_hash, expires_ms, revoked_ms ON control_tokens BEGIN UPDATE "
                "change_counters SET n = n + 1 WHERE topic = 'tokens'; END",
                "{SQLITE}CREATE TRIGGER IF NOT EXISTS tokens_removed AFTER DELETE ON "
                "control_tokens BEGIN "
                "UPDATE change_counters SET n = n + 1 WHERE topic = 'tokens'; END",
                "{SQLITE}CREATE TRIGGER IF NOT EXISTS credits_granted AFTER INSERT ON ledger WHEN "
                "NEW.kind = "
                "'grant' BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = 'credits'; "
                "END",
                "{POSTGRES}CREATE OR REPLACE FUNCTION switchyard_changed() RETURNS trigger "
                "LANGUAGE plpgsql "
                "AS $$ BEGIN UPDATE change_counters SET n = n + 1 WHERE topic = TG_ARGV[0]; "
                "PERFORM pg_notify('switchyard_changes', TG_ARGV[0]); RETURN NULL; END $$",
                "{POSTGRES}DROP TRIGGER IF EXISTS keys_changed ON api_keys",
                "{POSTGRES}CREATE TRIGGER keys_changed AFTER INSERT OR DELETE OR UPDATE OF "
                "account_id, name, tier, secret_hash, revoked_ms ON api_keys FOR EACH STATEMENT "
                "EXECUTE FUNCTION switchyard_changed('keys')",
                "{POSTGRES}DROP TRIGGER IF EXISTS tokens_changed ON control_tokens",
                "{POSTGRES}CREATE TRIGGER tokens_changed AFTER INSERT OR DELETE OR UPDATE OF "
                "account_id, name, scopes, secret_hash, expires_ms, revoked_ms ON control_tokens "
                "FOR EACH STATEMENT EXECUTE FUNCTION switchyard_changed('tokens')",
                "{POSTGRES}DROP TRIGGER IF EXISTS credits_granted ON ledger",
                "{POSTGRES}CREATE TRIGGER credits_granted AFTER INSERT ON ledger FOR EACH ROW "
                "WHEN (NEW.kind = 'grant') EXECUTE FUNCTION switchyard_changed('credits')",
            },
            // 7: state the instances on one PostgreSQL database share (server/SharedState.h):
            // who is alive, each instance's holds per account, the rate limits' token buckets.
            // Unlogged: nothing here is money (that is the ledger); a crash of the database
            // empties them, and each instance puts its holds back (SharedState re-asserts them).
            {
                "{POSTGRES}CREATE UNLOGGED TABLE IF NOT EXISTS shared_instances (instance TEXT "
                "PRIMARY KEY, seen_ms BIGINT NOT NULL)",
                "{POSTGRES}CREATE UNLOGGED TABLE IF NOT EXISTS shared_holds (account_id BIGINT "
                "NOT NULL, instance TEXT NOT NULL, held BIGINT NOT NULL, PRIMARY KEY "
                "(account_id, instance))",
                "{POSTGRES}CREATE UNLOGGED TABLE IF NOT EXISTS shared_rates (bucket TEXT "
                "PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, updated_ms DOUBLE PRECISION NOT "
                "NULL, allowed BOOLEAN NOT NULL)",
                // One round trip for a batch of a server's calls: the hand-backs first, then
                // for each request, in order, a row:
                // - its token (a NULL bucket takes none): RateLimiter's bucket of the limit a
                //   minute on the database's clock (one for every instance), refilled and taken
                //   in one statement under the row's lock; `allowed` says whether it had one;
                // - when allowed, its hold (an amount of 0 takes none): admitted when the
                //   balance less the holds of every instance seen within p_alive_ms covers it.
                //   Holds on one account are taken in turn (the advisory lock); the balance and
                //   the holds are read in one statement after it, so a settlement that commits
                //   meanwhile is seen whole or not at all.
                // Written inline: calling a function per step cost about 110 us a request
                // (pgbench, one client: 0.26 ms a call against 0.08 for SELECT 1).
                "{POSTGRES}CREATE OR REPLACE FUNCTION switchyard_admit(p_instance TEXT, "
                "p_alive_ms BIGINT, p_release_accounts BIGINT[], p_release_amounts BIGINT[], "
                "p_buckets TEXT[], p_limits INTEGER[], p_accounts BIGINT[], p_amounts BIGINT[]) "
                "RETURNS TABLE (allowed BOOLEAN, tokens DOUBLE PRECISION, admitted BOOLEAN, "
                "balance BIGINT, held BIGINT) LANGUAGE plpgsql AS $$\n"
                "#variable_conflict use_column\n"
                "DECLARE now_ms DOUBLE PRECISION := extract(epoch FROM clock_timestamp()) * "
                "1000; lim DOUBLE PRECISION; "
                "BEGIN "
                "IF cardinality(p_release_accounts) > 0 THEN "
                "UPDATE shared_holds AS h SET held = GREATEST(0, h.held - r.amount) FROM "
                "unnest(p_release_accounts, p_release_amounts) AS r(account, amount) WHERE "
                "h.account_id = r.account AND h.instance = p_instance; END IF; "
                "FOR i IN 1 .. COALESCE(cardinality(p_accounts), 0) LOOP "
                "allowed := TRUE; tokens := 0; admitted := FALSE; balance := 0; held := 0; "
                "IF p_buckets[i] IS NOT NULL THEN lim := p_limits[i]; "
                "INSERT INTO shared_rates AS r (bucket, tokens, updated_ms, allowed) VALUES "
                "(p_buckets[i], lim - 1, now_ms, lim >= 1) ON CONFLICT (bucket) DO UPDATE SET "
                "tokens = LEAST(lim, r.tokens + GREATEST(0, now_ms - r.updated_ms) * lim / "
                "60000.0) - CASE WHEN LEAST(lim, r.tokens + GREATEST(0, now_ms - r.updated_ms) * "
                "lim / 60000.0) >= 1 THEN 1 ELSE 0 END, updated_ms = GREATEST(r.updated_ms, "
                "now_ms), allowed = LEAST(lim, r.tokens + GREATEST(0, now_ms - r.updated_ms) * "
                "lim / 60000.0) >= 1 RETURNING r.allowed, r.tokens INTO allowed, tokens; "
                "END IF; "
                "IF allowed AND p_amounts[i] > 0 THEN "
                "PERFORM pg_advisory_xact_lock(-p_accounts[i]); "
                "SELECT a.balance, COALESCE((SELECT SUM(h.held) FROM shared_holds h JOIN "
                "shared_instances s ON s.instance = h.instance WHERE h.account_id = "
                "p_accounts[i] AND s.seen_ms >= now_ms - p_alive_ms), 0)::BIGINT INTO balance, "
                "held FROM accounts a WHERE a.id = p_accounts[i]; "
                "IF NOT FOUND THEN RAISE EXCEPTION 'unknown account %', p_accounts[i]; END IF; "
                "admitted := balance > 0 AND balance - held >= p_amounts[i]; "
                "IF admitted THEN INSERT INTO shared_holds AS h (account_id, instance, held) "
                "VALUES (p_accounts[i], p_instance, p_amounts[i]) ON CONFLICT (account_id, "
                "instance) DO UPDATE SET held = h.held + p_amounts[i]; "
                "held := held + p_amounts[i]; END IF; "
                "END IF; "
                "RETURN NEXT; "
                "END LOOP; "
                "END $$",
            },
            // 8: a usage record's quantities besides tokens are rows of usage_meters, one per
            // meter with a name the family chooses, so that a family billing a new unit needs
            // no column here. The three columns of the first families move there (a 0 is no
            // row: a meter a record lacks reads as 0) and are dropped. No foreign key: a meter
            // row is written with its record, by the same statement or transaction, and usage
            // records are never deleted. The primary key is also the lookup by record.
            // SQLite's DROP COLUMN rewrites the table in place: ids, the AUTOINCREMENT
            // sequence and the index on (account_id, time_ms) stay; none of the three columns
            // is in an index, a constraint, a trigger or a view.
            {
                "{SQLITE}CREATE TABLE usage_meters (usage_id BIGINT NOT NULL, meter TEXT NOT "
                "NULL, quantity BIGINT NOT NULL, PRIMARY KEY (usage_id, meter)) WITHOUT ROWID",
                "{POSTGRES}CREATE TABLE usage_meters (usage_id BIGINT NOT NULL, meter TEXT NOT "
                "NULL, quantity BIGINT NOT NULL, PRIMARY KEY (usage_id, meter))",
                "INSERT INTO usage_meters (usage_id, meter, quantity) SELECT id, 'audio_ms', "
                "audio_ms FROM usage_records WHERE audio_ms <> 0",
                "INSERT INTO usage_meters (usage_id, meter, quantity) SELECT id, 'characters', "
                "characters FROM usage_records WHERE characters <> 0",
                "INSERT INTO usage_meters (usage_id, meter, quantity) SELECT id, 'images', "
                "images FROM usage_records WHERE images <> 0",
                "ALTER TABLE usage_records DROP COLUMN audio_ms",
                "ALTER TABLE usage_records DROP COLUMN characters",
                "ALTER TABLE usage_records DROP COLUMN images",
            },
            // 9: a key's rules (KeyRules.h: budget, models, addresses, expiry) as compact JSON,
            // NULL for none; a change to them is a change to the key, seen by every instance
            // (the triggers of step 6, remade with the column). A key's spending in a budget
            // period is read by key and time.
            {
                "ALTER TABLE api_keys ADD COLUMN rules TEXT",
                "{SQLITE}DROP TRIGGER IF EXISTS keys_changed",
                "{SQLITE}CREATE TRIGGER keys_changed AFTER UPDATE OF account_id, name, tier, "
                "secret_hash, revoked_ms, rules ON api_keys BEGIN UPDATE change_counters SET n = "
                "n + 1 WHERE topic = 'keys'; END",
                "{POSTGRES}DROP TRIGGER IF EXISTS keys_changed ON api_keys",
                "{POSTGRES}CREATE TRIGGER keys_changed AFTER INSERT OR DELETE OR UPDATE OF "
                "account_id, name, tier, secret_hash, revoked_ms, rules ON api_keys FOR EACH "
                "STATEMENT EXECUTE FUNCTION switchyard_changed('keys')",
                "CREATE INDEX usage_key_time ON usage_records(key_id, time_ms)",
            },
            // 10: usage pages newest first (the API's cursor, CSV exports) seek by account and
            // id, whatever the depth; with only (account_id, time_ms) SQLite sorted every
            // matching row for each page.
            {
                "CREATE INDEX usage_account_id ON usage_records(account_id, id)",
            },
            // 11: keys' budgets shared by the instances as their balances are. A request of a
            // key with a budget passes the key, its budget and the period's bounds; its hold on
            // the budget is a row of shared_holds under minus the key's id (accounts' ids are
            // positive), so hand-backs, liveness and re-assertion treat both holds alike. The
            // key's hold is admitted when its settled spending in the period plus the live
            // holds on it plus the amount stay within the budget; then the account's credit is
            // asked as before, and both holds are taken or neither.
            // The settled spending is a counter per key and period (shared_key_spent): a sum
            // over the key's usage records cost 3.6 ms an admission at 10,000 records in the
            // period and 28 ms at 100,000, the counter about 0.2 ms whatever their number. It
            // is made from the records (usage_key_time) on the key's first admission of the
            // period; a trigger copies every later charge of a key with a budget into
            // shared_key_deltas in the settlement's own transaction (while instances share the
            // database: none copied when server.shared_state is "off" everywhere, as nothing
            // would fold them), and each admission folds
            // in (deletes and adds) the deltas it can see. Exact without the settlements
            // taking any lock: a charge is in the records and in the deltas from the same
            // commit, the making reads the one and deletes the other in one statement (one
            // snapshot), and a delta not yet visible is folded by a later admission.
            // Admissions take their keys' and accounts' locks at the start of a batch, in
            // ascending order (keys' range below -2^62), so batches never wait in a circle.
            // Unlogged like the holds: a crash of the database empties both tables together,
            // and the next admission makes the counter again. The step 7 function stays for
            // instances not yet upgraded.
            {
                "{POSTGRES}CREATE UNLOGGED TABLE IF NOT EXISTS shared_key_spent (key_id BIGINT "
                "NOT NULL, from_ms BIGINT NOT NULL, to_ms BIGINT NOT NULL, spent BIGINT NOT "
                "NULL, PRIMARY KEY (key_id, from_ms, to_ms))",
                "{POSTGRES}CREATE UNLOGGED TABLE IF NOT EXISTS shared_key_deltas (key_id BIGINT "
                "NOT NULL, time_ms BIGINT NOT NULL, cost BIGINT NOT NULL)",
                "{POSTGRES}CREATE INDEX IF NOT EXISTS shared_key_deltas_key ON "
                "shared_key_deltas(key_id)",
                "{POSTGRES}CREATE OR REPLACE FUNCTION switchyard_key_deltas() RETURNS trigger "
                "LANGUAGE plpgsql AS $$ BEGIN "
                "INSERT INTO shared_key_deltas (key_id, time_ms, cost) SELECT n.key_id, "
                "n.time_ms, n.cost FROM new_rows n JOIN api_keys a ON a.id = n.key_id WHERE "
                "n.cost <> 0 AND a.rules LIKE '%\"budget\"%' AND EXISTS (SELECT 1 FROM "
                "shared_instances); "
                "RETURN NULL; END $$",
                "{POSTGRES}DROP TRIGGER IF EXISTS usage_key_deltas ON usage_records",
                "{POSTGRES}CREATE TRIGGER usage_key_deltas AFTER INSERT ON usage_records "
                "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "
                "switchyard_key_deltas()",
                "{POSTGRES}CREATE OR REPLACE FUNCTION switchyard_admit(p_instance TEXT, "
                "p_alive_ms BIGINT, p_release_accounts BIGINT[], p_release_amounts BIGINT[], "
                "p_buckets TEXT[], p_limits INTEGER[], p_accounts BIGINT[], p_amounts BIGINT[], "
                "p_keys BIGINT[], p_budgets BIGINT[], p_from BIGINT[], p_to BIGINT[]) "
                "RETURNS TABLE (allowed BOOLEAN, tokens DOUBLE PRECISION, admitted BOOLEAN, "
                "balance BIGINT, held BIGINT, key_ok BOOLEAN, key_spent BIGINT, key_held "
                "BIGINT) LANGUAGE plpgsql AS $$\n"
                "#variable_conflict use_column\n"
                "DECLARE now_ms DOUBLE PRECISION := extract(epoch FROM clock_timestamp()) * "
                "1000; lim DOUBLE PRECISION; "
                "BEGIN "
                "IF cardinality(p_release_accounts) > 0 THEN "
                "UPDATE shared_holds AS h SET held = GREATEST(0, h.held - r.amount) FROM "
                "unnest(p_release_accounts, p_release_amounts) AS r(account, amount) WHERE "
                "h.account_id = r.account AND h.instance = p_instance; END IF; "
                "PERFORM pg_advisory_xact_lock(l) FROM (SELECT DISTINCT -4611686018427387904 - "
                "k AS l FROM unnest(p_keys, p_amounts) AS u(k, amount) WHERE k > 0 AND amount "
                "> 0 UNION SELECT DISTINCT -a FROM unnest(p_accounts, p_amounts) AS u(a, "
                "amount) WHERE amount > 0) x ORDER BY l; "
                "FOR i IN 1 .. COALESCE(cardinality(p_accounts), 0) LOOP "
                "allowed := TRUE; tokens := 0; admitted := FALSE; balance := 0; held := 0; "
                "key_ok := TRUE; key_spent := 0; key_held := 0; "
                "IF p_buckets[i] IS NOT NULL THEN lim := p_limits[i]; "
                "INSERT INTO shared_rates AS r (bucket, tokens, updated_ms, allowed) VALUES "
                "(p_buckets[i], lim - 1, now_ms, lim >= 1) ON CONFLICT (bucket) DO UPDATE SET "
                "tokens = LEAST(lim, r.tokens + GREATEST(0, now_ms - r.updated_ms) * lim / "
                "60000.0) - CASE WHEN LEAST(lim, r.tokens + GREATEST(0, now_ms - r.updated_ms) * "
                "lim / 60000.0) >= 1 THEN 1 ELSE 0 END, updated_ms = GREATEST(r.updated_ms, "
                "now_ms), allowed = LEAST(lim, r.tokens + GREATEST(0, now_ms - r.updated_ms) * "
                "lim / 60000.0) >= 1 RETURNING r.allowed, r.tokens INTO allowed, tokens; "
                "END IF; "
                "IF allowed AND p_amounts[i] > 0 AND p_keys[i] > 0 THEN "
                "PERFORM 1 FROM shared_key_spent c WHERE c.key_id = p_keys[i] AND c.from_ms = "
                "p_from[i] AND c.to_ms = p_to[i]; "
                "IF FOUND THEN "
                "WITH gone AS (DELETE FROM shared_key_deltas d WHERE d.key_id = p_keys[i] "
                "RETURNING d.time_ms, d.cost) UPDATE shared_key_spent c SET spent = c.spent + "
                "COALESCE((SELECT SUM(g.cost) FROM gone g WHERE g.time_ms >= p_from[i] AND "
                "(p_to[i] = 0 OR g.time_ms < p_to[i])), 0) WHERE c.key_id = p_keys[i] AND "
                "c.from_ms = p_from[i] AND c.to_ms = p_to[i] RETURNING c.spent INTO key_spent; "
                "ELSE "
                "WITH gone AS (DELETE FROM shared_key_deltas d WHERE d.key_id = p_keys[i] "
                "RETURNING 1) SELECT COALESCE(SUM(u.cost), 0)::BIGINT INTO key_spent FROM "
                "usage_records u WHERE u.key_id = p_keys[i] AND u.time_ms >= p_from[i] AND "
                "(p_to[i] = 0 OR u.time_ms < p_to[i]); "
                "DELETE FROM shared_key_spent c WHERE c.key_id = p_keys[i]; "
                "INSERT INTO shared_key_spent (key_id, from_ms, to_ms, spent) VALUES "
                "(p_keys[i], p_from[i], p_to[i], key_spent); "
                "END IF; "
                "SELECT COALESCE(SUM(h.held), 0)::BIGINT INTO key_held FROM shared_holds h JOIN "
                "shared_instances s ON s.instance = h.instance WHERE h.account_id = -p_keys[i] "
                "AND s.seen_ms >= now_ms - p_alive_ms; "
                "key_ok := key_spent + key_held + p_amounts[i] <= p_budgets[i]; "
                "END IF; "
                "IF allowed AND key_ok AND p_amounts[i] > 0 THEN "
                "SELECT a.balance, COALESCE((SELECT SUM(h.held) FROM shared_holds h JOIN "
                "shared_instances s ON s.instance = h.instance WHERE h.account_id = "
                "p_accounts[i] AND s.seen_ms >= now_ms - p_alive_ms), 0)::BIGINT INTO balance, "
                "held FROM accounts a WHERE a.id = p_accounts[i]; "
                "IF NOT FOUND THEN RAISE EXCEPTION 'unknown account %', p_accounts[i]; END IF; "
                "admitted := balance > 0 AND balance - held >= p_amounts[i]; "
                "IF admitted THEN INSERT INTO shared_holds AS h (account_id, instance, held) "
                "VALUES (p_accounts[i], p_instance, p_amounts[i]) ON CONFLICT (account_id, "
                "instance) DO UPDATE SET held = h.held + p_amounts[i]; "
                "held := held + p_amounts[i]; "
                "IF p_keys[i] > 0 THEN INSERT INTO shared_holds AS h (account_id, instance, "
                "held) VALUES (-p_keys[i], p_instance, p_amounts[i]) ON CONFLICT (account_id, "
                "instance) DO UPDATE SET held = h.held + p_amounts[i]; "
                "key_held := key_held + p_amounts[i]; END IF; "
                "END IF; "
                "END IF; "
                "RETURN NEXT; "
                "END LOOP; "
                "END $$",
            },
            // 12: alerts (server/Alerts.h): whether each one has fired since it last
            // recovered, so that instances sharing the database fire it once per crossing.
            // subject names the alert: "balance:<account>:<threshold>" or
            // "budget:<key>:<period start ms>:<percent>".
            {
                "CREATE TABLE alert_states (subject TEXT PRIMARY KEY, fired INTEGER NOT NULL, "
                "changed_ms BIGINT NOT NULL)",
            },
        }};
    return c;
}

void exec(QSqlQuery &q, const QString &sql)
{
    if (!q.exec(sql))
        throw StoreError(QStringLiteral("migration failed: %1 (%2)")
                             .arg(q.lastError().text(), sql.left(80))
                             .toStdString());
}

int appliedVersion(QSqlDatabase db, const QString &component)
{
    QSqlQuery q(db);
    q.prepare(QStringLiteral(
        "SELECT COALESCE(MAX(version), 0) FROM schema_components WHERE component = ?"));
    q.addBindValue(component);
    if (!q.exec())
        throw StoreError(
            QStringLiteral("migration failed: %1").arg(q.lastError().text()).toStdString());
    return q.next() ? q.value(0).toInt() : 0;
}

// Databases made before migrations had components kept one sequence in schema_migrations:
// version 1 the core, then each component that existed then (Component::legacyVersion). Such a
// component is recorded at its step 1 the first time it is migrated here, under the lock.
void adoptLegacyVersions(QSqlDatabase db, QSqlQuery &q, const QList<Migrations::Component> &all,
                         const QString &now)
{
    if (!db.tables().contains(QStringLiteral("schema_migrations")))
        return;
    exec(q, QStringLiteral("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
    const int legacy = q.next() ? q.value(0).toInt() : 0;
    for (const Migrations::Component &c : all) {
        const int v = c.name == core().name ? 1 : c.legacyVersion;
        if (v > 0 && v <= legacy && appliedVersion(db, c.name) == 0)
            exec(q, QStringLiteral("INSERT INTO schema_components (component, version, "
                                   "applied_ms) VALUES ('%1', 1, %2)")
                        .arg(c.name, now));
    }
}

} // namespace

namespace Migrations {

const Component &coreComponent()
{
    return core();
}

int latestVersion(const QList<Component> &families)
{
    qsizetype n = core().steps.size();
    for (const Component &c : families)
        n += c.steps.size();
    return int(n);
}

int apply(QSqlDatabase db, DatabaseConfig::Kind kind, const QList<Component> &families,
          int coreVersion)
{
    const bool pg = kind == DatabaseConfig::Kind::Postgres;
    const QString id = pg ? QStringLiteral("BIGSERIAL PRIMARY KEY")
                          : QStringLiteral("INTEGER PRIMARY KEY AUTOINCREMENT");
    const QString blob = pg ? QStringLiteral("BYTEA") : QStringLiteral("BLOB");
    QSqlQuery q(db);
    exec(q, QStringLiteral("CREATE TABLE IF NOT EXISTS schema_components (component TEXT NOT NULL, "
                           "version INTEGER NOT NULL, applied_ms BIGINT NOT NULL, "
                           "PRIMARY KEY (component, version))"));
    QList<Component> all{core()};
    if (coreVersion >= 0 && coreVersion < all.first().steps.size())
        all.first().steps.resize(coreVersion);
    all.append(families);
    auto begin = [&] {
        exec(q, pg ? QStringLiteral("BEGIN") : QStringLiteral("BEGIN IMMEDIATE"));
        if (pg) // several instances starting together take turns
            exec(q, QStringLiteral("SELECT pg_advisory_xact_lock(7262937)"));
    };
    {
        begin();
        try {
            adoptLegacyVersions(db, q, all, QString::number(QDateTime::currentMSecsSinceEpoch()));
            exec(q, QStringLiteral("COMMIT"));
        } catch (...) {
            q.exec(QStringLiteral("ROLLBACK"));
            throw;
        }
    }
    int applied = 0;
    for (const Component &c : all) {
        for (int version = appliedVersion(db, c.name) + 1; version <= c.steps.size(); ++version) {
            begin();
            try {
                if (appliedVersion(db, c.name) >= version) { // another instance got there first
                    exec(q, QStringLiteral("COMMIT"));
                    continue;
                }
                const QString now = QString::number(QDateTime::currentMSecsSinceEpoch());
                for (QString sql : c.steps.at(version - 1)) {
                    for (const auto &[prefix, only] :
                         {std::pair{QLatin1String("{SQLITE}"), false},
                          std::pair{QLatin1String("{POSTGRES}"), true}})
                        if (sql.startsWith(prefix)) {
                            sql = pg == only ? sql.mid(prefix.size()) : QString();
                            break;
                        }
                    if (sql.isEmpty())
                        continue;
                    sql.replace(QLatin1String("{ID}"), id)
                        .replace(QLatin1String("{BLOB}"), blob)
                        .replace(QLatin1String("{NOW}"), now);
                    exec(q, sql);
                }
                exec(q, QStringLiteral("INSERT INTO schema_components (component, version, "
                                       "applied_ms) VALUES ('%1', %2, %3)")
                            .arg(c.name)
                            .arg(version)
                            .arg(now));
                exec(q, QStringLiteral("COMMIT"));
            } catch (...) {
                q.exec(QStringLiteral("ROLLBACK"));
                throw;
            }
        }
        applied += appliedVersion(db, c.name);
    }
    return applied;
}

} // namespace Migrations
