#include "Store.h"

#include "PgArrayLiteral.h"

#include "Secrets.h"
#include "UsageColumns.h"

#include <limits>
#include <QSqlError>
#include <QVariant>

namespace {

// Qt binds a null QString as SQL NULL; text columns here are NOT NULL, so bind "" instead.
QString text(const QString &s)
{
    return s.isNull() ? QStringLiteral("") : s;
}

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

QVariant msOrNull(const QDateTime &t)
{
    return t.isValid() ? QVariant(t.toMSecsSinceEpoch()) : QVariant(QMetaType::fromType<qint64>());
}

QDateTime timeOf(const QVariant &v)
{
    return v.isNull() ? QDateTime() : QDateTime::fromMSecsSinceEpoch(v.toLongLong(), Qt::UTC);
}

ApiKeyRecord keyFrom(const QSqlQuery &q)
{
    ApiKeyRecord r;
    r.id = q.value(0).toLongLong();
    r.accountId = q.value(1).toLongLong();
    r.name = q.value(2).toString();
    r.prefix = q.value(3).toString();
    r.tier = q.value(4).toString();
    r.created = timeOf(q.value(5));
    r.lastUsed = timeOf(q.value(6));
    r.revoked = timeOf(q.value(7));
    r.rules = KeyRules::fromStored(q.value(8).toByteArray());
    return r;
}

ControlTokenRecord tokenFrom(const QSqlQuery &q)
{
    ControlTokenRecord r;
    r.id = q.value(0).toLongLong();
    r.accountId = q.value(1).toLongLong();
    r.name = q.value(2).toString();
    r.prefix = q.value(3).toString();
    r.scopes = q.value(4).toString().split(u' ', Qt::SkipEmptyParts);
    r.created = timeOf(q.value(5));
    r.expires = timeOf(q.value(6));
    r.lastUsed = timeOf(q.value(7));
    r.revoked = timeOf(q.value(8));
    return r;
}

LedgerEntry ledgerFrom(const QSqlQuery &q)
{
    LedgerEntry e;
    e.id = q.value(0).toLongLong();
    e.accountId = q.value(1).toLongLong();
    e.kind = q.value(2).toString();
    e.amount = q.value(3).toLongLong();
    e.balanceAfter = q.value(4).toLongLong();
    e.reason = q.value(5).toString();
    e.requestId = q.value(6).toString();
    e.created = timeOf(q.value(7));
    return e;
}

UsageRecord usageFrom(const QSqlQuery &q)
{
    UsageRecord r;
    r.id = q.value(0).toLongLong();
    int i = 1;
    UsageColumns::forEach(r, [&](const UsageColumns::Column &, auto &member) {
        using T = std::decay_t<decltype(member)>;
        const QVariant v = q.value(i++);
        if constexpr (std::is_same_v<T, QString>)
            member = v.toString();
        else if constexpr (std::is_same_v<T, QDateTime>)
            member = timeOf(v);
        else if constexpr (std::is_same_v<T, bool>)
            member = v.toInt() != 0;
        else
            member = T(v.toLongLong()); // NULL ids read as 0
    });
    return r;
}

constexpr const char *kKeyColumns =
    "id, account_id, name, prefix, tier, created_ms, last_used_ms, revoked_ms, rules";

constexpr qint64 kFarFutureMs = 4'000'000'000'000'000;

} // namespace

Store::Store(QSqlDatabase db, DatabaseConfig::Kind kind) : m_db(std::move(db)), m_kind(kind) {}

void Store::releaseMemory()
{
    if (isPostgres())
        return;
    m_sqlite.reset();
    QSqlQuery q(m_db);
    if (!q.exec(QStringLiteral("PRAGMA shrink_memory")))
        throw StoreError(q.lastError().text().toStdString());
}

void Store::exec(QSqlQuery &q)
{
    if (!q.exec())
        throw StoreError(q.lastError().text().toStdString());
}

QSqlQuery &Store::prepared(const char *sql)
{
    auto it = m_prepared.find(sql);
    if (it == m_prepared.end()) {
        QSqlQuery q(m_db);
        // Rows are read once, in order: no result cache to fill (and clear) on every exec.
        q.setForwardOnly(true);
        if (!q.prepare(QString::fromUtf8(sql)))
            throw StoreError(q.lastError().text().toStdString());
        it = m_prepared.insert(sql, q);
    }
    return *it;
}

void Store::transaction(const std::function<void()> &body)
{
    QSqlQuery q(m_db);
    if (!q.exec(isPostgres() ? QStringLiteral("BEGIN") : QStringLiteral("BEGIN IMMEDIATE")))
        throw StoreError(q.lastError().text().toStdString());
    m_inTransaction = true;
    try {
        body();
    } catch (...) {
        m_inTransaction = false;
        q.exec(QStringLiteral("ROLLBACK"));
        throw;
    }
    m_inTransaction = false;
    if (!q.exec(QStringLiteral("COMMIT")))
        throw StoreError(q.lastError().text().toStdString());
}

qint64 Store::defaultAccountId()
{
    if (m_defaultAccount)
        return m_defaultAccount;
    QSqlQuery &q = prepared("SELECT id FROM accounts WHERE name = 'default'");
    exec(q);
    if (!q.next())
        throw StoreError("the default account is missing; was the schema migrated?");
    m_defaultAccount = q.value(0).toLongLong();
    q.finish();
    return m_defaultAccount;
}

namespace {

QVariant rulesValue(const KeyRules &rules)
{
    const QByteArray stored = rules.toStored();
    return stored.isEmpty() ? QVariant(QMetaType::fromType<QString>())
                            : QVariant(QString::fromUtf8(stored));
}

} // namespace

CreatedSecret Store::createApiKey(qint64 accountId, const QString &name, const QString &tier,
                                  const KeyRules &rules)
{
    const QString secret = Secrets::generate(Secrets::kApiKeyPrefix);
    QSqlQuery &q = prepared("INSERT INTO api_keys (account_id, name, prefix, secret_hash, tier, "
                            "created_ms, rules) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id");
    q.addBindValue(accountId);
    q.addBindValue(text(name));
    q.addBindValue(Secrets::displayPrefix(secret));
    q.addBindValue(QString::fromLatin1(Secrets::hash(secret)));
    q.addBindValue(tier.isEmpty() ? QStringLiteral("default") : tier);
    q.addBindValue(nowMs());
    q.addBindValue(rulesValue(rules));
    exec(q);
    q.next();
    CreatedSecret created{q.value(0).toLongLong(), secret};
    q.finish();
    return created;
}

bool Store::updateApiKey(qint64 accountId, qint64 id, const QString &name, const QString &tier,
                         const KeyRules &rules)
{
    QSqlQuery &q = prepared("UPDATE api_keys SET name = COALESCE(?, name), tier = ?, rules = ? "
                            "WHERE account_id = ? AND id = ?");
    q.addBindValue(name.isEmpty() ? QVariant(QMetaType::fromType<QString>())
                                  : QVariant(text(name)));
    q.addBindValue(tier.isEmpty() ? QStringLiteral("default") : tier);
    q.addBindValue(rulesValue(rules));
    q.addBindValue(accountId);
    q.addBindValue(id);
    exec(q);
    return q.numRowsAffected() > 0;
}

qint64 Store::keySpent(qint64 keyId, qint64 fromMs, qint64 toMs)
{
    QSqlQuery &q = prepared("SELECT COALESCE(SUM(cost), 0) FROM usage_records WHERE key_id = ? "
                            "AND time_ms >= ? AND time_ms < ?");
    q.addBindValue(keyId);
    q.addBindValue(fromMs);
    q.addBindValue(toMs > 0 ? toMs : kFarFutureMs);
    exec(q);
    const qint64 spent = q.next() ? q.value(0).toLongLong() : 0;
    q.finish();
    return spent;
}

QList<ApiKeyRecord> Store::listApiKeys(qint64 accountId)
{
    static const QByteArray sql =
        QByteArray("SELECT ") + kKeyColumns + " FROM api_keys WHERE account_id = ? ORDER BY id";
    QSqlQuery &q = prepared(sql.constData());
    q.addBindValue(accountId);
    exec(q);
    QList<ApiKeyRecord> out;
    while (q.next())
        out.append(keyFrom(q));
    return out;
}

std::optional<ApiKeyRecord> Store::apiKey(qint64 accountId, qint64 id)
{
    static const QByteArray sql =
        QByteArray("SELECT ") + kKeyColumns + " FROM api_keys WHERE account_id = ? AND id = ?";
    QSqlQuery &q = prepared(sql.constData());
    q.addBindValue(accountId);
    q.addBindValue(id);
    exec(q);
    std::optional<ApiKeyRecord> r;
    if (q.next())
        r = keyFrom(q);
    q.finish();
    return r;
}

std::optional<ApiKeyRecord> Store::findApiKeyByHash(const QByteArray &hash)
{
    static const QByteArray sql =
        QByteArray("SELECT ") + kKeyColumns + ", secret_hash FROM api_keys WHERE secret_hash = ?";
    QSqlQuery &q = prepared(sql.constData());
    q.addBindValue(QString::fromLatin1(hash));
    exec(q);
    std::optional<ApiKeyRecord> r;
    // The index finds the row; the final comparison is constant-time.
    if (q.next() && Secrets::constantTimeEquals(q.value(9).toString().toLatin1(), hash))
        r = keyFrom(q);
    q.finish();
    return r;
}

bool Store::revokeApiKey(qint64 accountId, qint64 id)
{
    QSqlQuery &q = prepared("UPDATE api_keys SET revoked_ms = ? WHERE account_id = ? AND id = ? "
                            "AND revoked_ms IS NULL");
    q.addBindValue(nowMs());
    q.addBindValue(accountId);
    q.addBindValue(id);
    exec(q);
    return q.numRowsAffected() > 0;
}

CreatedSecret Store::createControlToken(qint64 accountId, const QString &name,
                                        const QStringList &scopes, const QDateTime &expires)
{
    const QString secret = Secrets::generate(Secrets::kControlTokenPrefix);
    QSqlQuery &q =
        prepared("INSERT INTO control_tokens (account_id, name, prefix, secret_hash, scopes, "
                 "created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id");
    q.addBindValue(accountId);
    q.addBindValue(text(name));
    q.addBindValue(Secrets::displayPrefix(secret));
    q.addBindValue(QString::fromLatin1(Secrets::hash(secret)));
    q.addBindValue(scopes.join(u' '));
    q.addBindValue(nowMs());
    q.addBindValue(msOrNull(expires));
    exec(q);
    q.next();
    CreatedSecret created{q.value(0).toLongLong(), secret};
    q.finish();
    return created;
}

QList<ControlTokenRecord> Store::listControlTokens(qint64 accountId)
{
    QSqlQuery &q = prepared("SELECT id, account_id, name, prefix, scopes, created_ms, expires_ms, "
                            "last_used_ms, revoked_ms FROM control_tokens WHERE account_id = ? "
                            "ORDER BY id");
    q.addBindValue(accountId);
    exec(q);
    QList<ControlTokenRecord> out;
    while (q.next())
        out.append(tokenFrom(q));
    return out;
}

std::optional<ControlTokenRecord> Store::findControlTokenByHash(const QByteArray &hash)
{
    QSqlQuery &q = prepared("SELECT id, account_id, name, prefix, scopes, created_ms, expires_ms, "
                            "last_used_ms, revoked_ms, secret_hash FROM control_tokens "
                            "WHERE secret_hash = ?");
    q.addBindValue(QString::fromLatin1(hash));
    exec(q);
    std::optional<ControlTokenRecord> r;
    if (q.next() && Secrets::constantTimeEquals(q.value(9).toString().toLatin1(), hash))
        r = tokenFrom(q);
    q.finish();
    return r;
}

bool Store::revokeControlToken(qint64 accountId, qint64 id)
{
    QSqlQuery &q = prepared("UPDATE control_tokens SET revoked_ms = ? WHERE account_id = ? AND "
                            "id = ? AND revoked_ms IS NULL");
    q.addBindValue(nowMs());
    q.addBindValue(accountId);
    q.addBindValue(id);
    exec(q);
    return q.numRowsAffected() > 0;
}

void Store::touchApiKey(qint64 id, const QDateTime &when)
{
    QSqlQuery &q = prepared("UPDATE api_keys SET last_used_ms = ? WHERE id = ? AND "
                            "(last_used_ms IS NULL OR last_used_ms < ?)");
    q.addBindValue(when.toMSecsSinceEpoch());
    q.addBindValue(id);
    q.addBindValue(when.toMSecsSinceEpoch());
    exec(q);
}

void Store::touchControlToken(qint64 id, const QDateTime &when)
{
    QSqlQuery &q = prepared("UPDATE control_tokens SET last_used_ms = ? WHERE id = ? AND "
                            "(last_used_ms IS NULL OR last_used_ms < ?)");
    q.addBindValue(when.toMSecsSinceEpoch());
    q.addBindValue(id);
    q.addBindValue(when.toMSecsSinceEpoch());
    exec(q);
}

qint64 Store::balance(qint64 accountId)
{
    QSqlQuery &q = prepared("SELECT balance FROM accounts WHERE id = ?");
    q.addBindValue(accountId);
    exec(q);
    if (!q.next())
        throw StoreError("unknown account");
    const qint64 b = q.value(0).toLongLong();
    q.finish();
    return b;
}

Store::BalanceMark Store::balanceMark(qint64 accountId)
{
    QSqlQuery &q = prepared("SELECT balance, (SELECT COALESCE(MAX(id), 0) FROM ledger WHERE "
                            "account_id = accounts.id) FROM accounts WHERE id = ?");
    q.addBindValue(accountId);
    exec(q);
    if (!q.next())
        throw StoreError("unknown account");
    const BalanceMark mark{q.value(0).toLongLong(), q.value(1).toLongLong()};
    q.finish();
    return mark;
}

ChargeResult Store::applyLedger(qint64 accountId, const QString &kind, qint64 amount,
                                const QString &reason, const QString &requestId, qint64 floor)
{
    ChargeResult result;
    if (!requestId.isEmpty()) {
        QSqlQuery &dup = prepared("SELECT id, account_id, kind, amount, balance_after, reason, "
                                  "request_id, created_ms FROM ledger WHERE kind = ? AND "
                                  "request_id = ? AND request_id <> ''");
        dup.addBindValue(text(kind));
        dup.addBindValue(text(requestId));
        exec(dup);
        if (dup.next()) {
            result.status = ChargeResult::Status::Duplicate;
            result.entry = ledgerFrom(dup);
            dup.finish();
            return result;
        }
    }
    // The conditional update is atomic on both databases, so instances sharing one
    // PostgreSQL database cannot overdraw each other's view of the balance.
    QSqlQuery &upd = prepared( // Explicit casts: PostgreSQL would infer int4 for a bare "? >= 0".
        "UPDATE accounts SET balance = balance + CAST(? AS BIGINT) "
        "WHERE id = ? AND (CAST(? AS BIGINT) >= 0 OR "
        "balance + CAST(? AS BIGINT) >= CAST(? AS BIGINT)) RETURNING balance");
    upd.addBindValue(amount);
    upd.addBindValue(accountId);
    upd.addBindValue(amount);
    upd.addBindValue(amount);
    upd.addBindValue(floor);
    exec(upd);
    if (!upd.next()) {
        upd.finish();
        result.status = accountExists(accountId) ? ChargeResult::Status::Insufficient
                                                 : ChargeResult::Status::UnknownAccount;
        return result;
    }
    // SQLite gives a sum beyond 64 bits as a floating-point number, where PostgreSQL refuses
    // it: refused here too (the caller's transaction rolls the update back).
    if (upd.value(0).typeId() == QMetaType::Double) {
        upd.finish();
        throw StoreError("the entry would take the balance beyond its range");
    }
    const qint64 after = upd.value(0).toLongLong();
    upd.finish();
    const qint64 now = nowMs();
    QSqlQuery &ins = prepared("INSERT INTO ledger (account_id, kind, amount, balance_after, "
                              "reason, request_id, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?) "
                              "RETURNING id");
    ins.addBindValue(accountId);
    ins.addBindValue(text(kind));
    ins.addBindValue(amount);
    ins.addBindValue(after);
    ins.addBindValue(text(reason));
    ins.addBindValue(text(requestId));
    ins.addBindValue(now);
    exec(ins);
    ins.next();
    result.entry = LedgerEntry{ins.value(0).toLongLong(),
                               accountId,
                               kind,
                               amount,
                               after,
                               reason,
                               requestId,
                               QDateTime::fromMSecsSinceEpoch(now, Qt::UTC)};
    ins.finish();
    return result;
}

QList<LedgerEntry> Store::ledger(qint64 accountId, int limit, qint64 beforeId)
{
    QSqlQuery &q = prepared("SELECT id, account_id, kind, amount, balance_after, reason, "
                            "request_id, created_ms FROM ledger WHERE account_id = ? AND id < ? "
                            "ORDER BY id DESC LIMIT ?");
    q.addBindValue(accountId);
    // A plain range on the cursor (no cursor: every id), so that the index on (account_id, id)
    // finds a page at any depth at once.
    q.addBindValue(beforeId > 0 ? beforeId : std::numeric_limits<qint64>::max());
    q.addBindValue(limit);
    exec(q);
    QList<LedgerEntry> out;
    while (q.next())
        out.append(ledgerFrom(q));
    return out;
}

qint64 Store::ledgerSum(qint64 accountId)
{
    QSqlQuery &q = prepared(
        "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM ledger WHERE account_id = ?");
    q.addBindValue(accountId);
    exec(q);
    q.next();
    const qint64 sum = q.value(0).toLongLong();
    q.finish();
    return sum;
}

bool Store::accountExists(qint64 accountId)
{
    QSqlQuery &q = prepared("SELECT 1 FROM accounts WHERE id = ?");
    q.addBindValue(accountId);
    exec(q);
    const bool found = q.next();
    q.finish();
    return found;
}

qint64 Store::storedUsageId(const UsageRecord &r)
{
    if (r.requestId.isEmpty() || !r.time.isValid())
        return 0;
    QSqlQuery &q = prepared("SELECT id FROM usage_records WHERE account_id = ? AND time_ms = ? "
                            "AND request_id = ?");
    q.addBindValue(r.accountId);
    q.addBindValue(r.time.toMSecsSinceEpoch());
    q.addBindValue(text(r.requestId));
    exec(q);
    const qint64 id = q.next() ? q.value(0).toLongLong() : 0;
    q.finish();
    return id;
}

qint64 Store::insertUsage(const UsageRecord &r)
{
    // PostgreSQL: the record and its meters in one statement (atomic without a transaction);
    // SQLite: the meters after it, in a savepoint with it.
    static const QByteArray sql = [] {
        QByteArray marks = "?";
        for (int i = 1; i < UsageColumns::count(); ++i)
            marks += ", ?";
        return "INSERT INTO usage_records (" + UsageColumns::names() + ") VALUES (" + marks +
               ") RETURNING id";
    }();
    static const QByteArray pgSql = "WITH stored AS (" + sql +
                                    "), meter_rows AS (INSERT INTO usage_meters (usage_id, "
                                    "meter, quantity) SELECT s.id, m.meter, m.quantity FROM "
                                    "stored s, unnest(?::text[], ?::bigint[]) AS m(meter, "
                                    "quantity)) SELECT id FROM stored";
    if (!accountExists(r.accountId))
        throw StoreError(QStringLiteral("unknown account %1").arg(r.accountId).toStdString());
    const bool pg = isPostgres();
    const bool savepoint = !pg && !r.meters.isEmpty();
    const auto run = [this](const char *statement) {
        QSqlQuery t(m_db);
        if (!t.exec(QString::fromLatin1(statement)))
            throw StoreError(t.lastError().text().toStdString());
    };
    if (savepoint)
        run("SAVEPOINT usage_meters");
    try {
        QSqlQuery &q = prepared(pg ? pgSql.constData() : sql.constData());
        struct Sink
        {
            QSqlQuery &q;
            void bind(qint64 v) { q.addBindValue(v); }
            void bind(const QString &v) { q.addBindValue(text(v)); }
            void bindNull() { q.addBindValue(QVariant(QMetaType::fromType<qint64>())); }
        };
        UsageColumns::bind(r, nowMs(), Sink{q});
        if (pg) {
            const auto [names, quantities] = UsageColumns::meterArrays(r.meters);
            q.addBindValue(names);
            q.addBindValue(quantities);
        }
        exec(q);
        q.next();
        const qint64 id = q.value(0).toLongLong();
        q.finish();
        for (const UsageMeter &m : savepoint ? r.meters : QList<UsageMeter>()) {
            QSqlQuery &ins =
                prepared("INSERT INTO usage_meters (usage_id, meter, quantity) VALUES (?, ?, ?)");
            ins.addBindValue(id);
            ins.addBindValue(m.name);
            ins.addBindValue(m.quantity);
            exec(ins);
        }
        if (savepoint)
            run("RELEASE usage_meters");
        return id;
    } catch (...) {
        if (savepoint) {
            run("ROLLBACK TO usage_meters");
            run("RELEASE usage_meters");
        }
        throw;
    }
}

namespace {

// The values of "time_ms >= ? AND time_ms < ? AND (CAST(? AS BIGINT) = 0 OR key_id = ?) AND
// (CAST(? AS TEXT) = '' OR model = ?)", in that order.
void bindUsageFilters(QSqlQuery &q, const UsageQuery &uq)
{
    q.addBindValue(uq.from.isValid() ? uq.from.toMSecsSinceEpoch() : qint64(0));
    q.addBindValue(uq.to.isValid() ? uq.to.toMSecsSinceEpoch() : kFarFutureMs);
    q.addBindValue(uq.keyId);
    q.addBindValue(uq.keyId);
    q.addBindValue(text(uq.model));
    q.addBindValue(text(uq.model));
}

} // namespace

UsagePage Store::usage(const UsageQuery &uq)
{
    static const QByteArray sql =
        "SELECT id, " + UsageColumns::names() +
        " FROM usage_records WHERE account_id = ? AND id < ? AND "
        "time_ms >= ? AND time_ms < ? AND (CAST(? AS BIGINT) = 0 OR key_id = ?) AND "
        "(CAST(? AS TEXT) = '' OR model = ?) ORDER BY id DESC "
        "LIMIT ?";
    QSqlQuery &q = prepared(sql.constData());
    q.addBindValue(uq.accountId);
    // As the ledger's: a range the index on (account_id, id) serves, a page at any depth in one
    // seek (with a test that is always true for "no cursor", SQLite sorted every match for each
    // page: a million-row export took minutes).
    q.addBindValue(uq.beforeId > 0 ? uq.beforeId : std::numeric_limits<qint64>::max());
    bindUsageFilters(q, uq);
    q.addBindValue(uq.limit + 1);
    exec(q);
    UsagePage page;
    while (q.next())
        page.records.append(usageFrom(q));
    q.finish();
    if (page.records.size() > uq.limit) {
        page.hasMore = true;
        page.records.removeLast();
    }
    readMeters(page.records);
    return page;
}

QList<UsageSummaryRow> Store::usageSummary(const UsageQuery &uq, const QString &groupBy)
{
    // The group as text on both databases; a day from the record's milliseconds (UTC).
    QString group;
    if (groupBy == u"key")
        group = QStringLiteral("CAST(COALESCE(r.key_id, 0) AS TEXT)");
    else if (groupBy == u"model")
        group = QStringLiteral("r.model");
    else
        group = isPostgres() ? QStringLiteral("to_char(to_timestamp(r.time_ms / 1000.0) AT TIME "
                                              "ZONE 'UTC', 'YYYY-MM-DD')")
                             : QStringLiteral("strftime('%Y-%m-%d', r.time_ms / 1000, "
                                              "'unixepoch')");
    const QString where = QStringLiteral(
        "r.account_id = ? AND r.time_ms >= ? AND r.time_ms < ? AND (CAST(? AS BIGINT) = 0 OR "
        "r.key_id = ?) AND (CAST(? AS TEXT) = '' OR r.model = ?)");
    const auto bind = [&](QSqlQuery &q) {
        q.addBindValue(uq.accountId);
        bindUsageFilters(q, uq);
    };
    QSqlQuery q(m_db);
    q.setForwardOnly(true);
    q.prepare(QStringLiteral("SELECT %1 AS g, SUM(r.requests), SUM(r.cost), SUM(r.input_tokens), "
                             "SUM(r.output_tokens), SUM(r.cache_read_tokens), "
                             "SUM(r.cache_write_tokens) FROM usage_records r WHERE %2 GROUP BY g "
                             "ORDER BY g")
                  .arg(group, where));
    bind(q);
    exec(q);
    QList<UsageSummaryRow> rows;
    QHash<QString, qsizetype> at;
    while (q.next()) {
        UsageSummaryRow row;
        row.group = q.value(0).toString();
        row.requests = q.value(1).toLongLong();
        row.cost = q.value(2).toLongLong();
        row.inputTokens = q.value(3).toLongLong();
        row.outputTokens = q.value(4).toLongLong();
        row.cacheReadTokens = q.value(5).toLongLong();
        row.cacheWriteTokens = q.value(6).toLongLong();
        at.insert(row.group, rows.size());
        rows.append(row);
    }
    QSqlQuery m(m_db);
    m.setForwardOnly(true);
    m.prepare(QStringLiteral("SELECT %1 AS g, m.meter, SUM(m.quantity) FROM usage_records r JOIN "
                             "usage_meters m ON m.usage_id = r.id WHERE %2 GROUP BY g, m.meter "
                             "ORDER BY g, m.meter")
                  .arg(group, where));
    bind(m);
    exec(m);
    while (m.next()) {
        const qsizetype i = at.value(m.value(0).toString(), -1);
        if (i >= 0 && m.value(2).toLongLong() != 0)
            rows[i].meters.append({m.value(1).toString(), m.value(2).toLongLong()});
    }
    return rows;
}

void Store::readMeters(QList<UsageRecord> &records)
{
    if (records.isEmpty())
        return;
    // The page's ids are integers, written into the statement: one lookup of the primary key
    // each, a page at most.
    QHash<qint64, qsizetype> at;
    QString ids;
    for (qsizetype i = 0; i < records.size(); ++i) {
        at.insert(records[i].id, i);
        if (!ids.isEmpty())
            ids += u',';
        ids += QString::number(records[i].id);
    }
    QSqlQuery q(m_db);
    q.setForwardOnly(true);
    if (!q.exec(QStringLiteral("SELECT usage_id, meter, quantity FROM usage_meters WHERE "
                               "usage_id IN (%1) ORDER BY usage_id, meter")
                    .arg(ids)))
        throw StoreError(q.lastError().text().toStdString());
    while (q.next()) {
        const qsizetype i = at.value(q.value(0).toLongLong(), -1);
        if (i >= 0)
            records[i].meters.append({q.value(1).toString(), q.value(2).toLongLong()});
    }
}

QList<UsageBucket> Store::usageBuckets(qint64 accountId, const QDateTime &from, qint64 bucketMs)
{
    QSqlQuery &q =
        prepared("SELECT (time_ms / ?) * ?, COUNT(*), CAST(COALESCE(SUM(cost), 0) AS BIGINT) "
                 "FROM usage_records WHERE account_id = ? AND time_ms >= ? "
                 "GROUP BY 1 ORDER BY 1");
    q.addBindValue(bucketMs);
    q.addBindValue(bucketMs);
    q.addBindValue(accountId);
    q.addBindValue(from.toMSecsSinceEpoch());
    exec(q);
    QList<UsageBucket> out;
    while (q.next())
        out.append({timeOf(q.value(0)), q.value(1).toLongLong(), q.value(2).toLongLong()});
    return out;
}

void Store::saveCatalogCache(const QString &provider, const QByteArray &body, const QDateTime &when)
{
    QSqlQuery &q = prepared("INSERT INTO catalog_cache (provider, body, fetched_ms) VALUES (?, ?, "
                            "CAST(? AS BIGINT)) ON CONFLICT (provider) DO UPDATE SET "
                            "body = excluded.body, fetched_ms = excluded.fetched_ms");
    q.addBindValue(provider);
    q.addBindValue(QString::fromUtf8(body));
    q.addBindValue(when.toMSecsSinceEpoch());
    exec(q);
    q.finish();
}

QList<Store::CatalogCacheEntry> Store::catalogCache()
{
    QSqlQuery &q = prepared("SELECT provider, body, fetched_ms FROM catalog_cache");
    exec(q);
    QList<CatalogCacheEntry> out;
    while (q.next())
        out.append({q.value(0).toString(), q.value(1).toString().toUtf8(),
                    QDateTime::fromMSecsSinceEpoch(q.value(2).toLongLong(), Qt::UTC)});
    q.finish();
    return out;
}

QHash<QString, qint64> Store::changeCounters()
{
    QSqlQuery &q = prepared("SELECT topic, n FROM change_counters");
    exec(q);
    QHash<QString, qint64> counters;
    while (q.next())
        counters.insert(q.value(0).toString(), q.value(1).toLongLong());
    q.finish();
    return counters;
}

QList<Store::SharedAnswer> Store::sharedAdmit(const QString &instance, qint64 aliveMs,
                                              const QHash<qint64, qint64> &releases,
                                              const QList<SharedCall> &calls)
{
    ArrayLiteral releaseAccounts, releaseAmounts, buckets, limits, accounts, amounts, keys, budgets,
        froms, tos;
    for (auto it = releases.cbegin(); it != releases.cend(); ++it) {
        releaseAccounts.add(it.key());
        releaseAmounts.add(it.value());
    }
    for (const SharedCall &c : calls) {
        if (c.bucket.isEmpty())
            buckets.addNull();
        else
            buckets.add(c.bucket);
        limits.add(qint64(c.perMinute));
        accounts.add(c.accountId);
        amounts.add(c.amount);
        keys.add(c.keyId);
        budgets.add(c.budget);
        froms.add(c.fromMs);
        tos.add(c.toMs);
    }
    QSqlQuery &q =
        prepared("SELECT allowed, tokens, admitted, balance, held, key_ok, key_spent, key_held "
                 "FROM switchyard_admit(?, ?, ?::bigint[], ?::bigint[], ?::text[], "
                 "?::integer[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], "
                 "?::bigint[], ?::bigint[])");
    q.addBindValue(instance);
    q.addBindValue(aliveMs);
    for (ArrayLiteral *a : {&releaseAccounts, &releaseAmounts, &buckets, &limits, &accounts,
                            &amounts, &keys, &budgets, &froms, &tos})
        q.addBindValue(a->take());
    exec(q);
    QList<SharedAnswer> answers;
    answers.reserve(calls.size());
    while (q.next())
        answers.append({q.value(0).toBool(), q.value(1).toDouble(), q.value(2).toBool(),
                        q.value(3).toLongLong(), q.value(4).toLongLong(), q.value(5).toBool(),
                        q.value(6).toLongLong(), q.value(7).toLongLong()});
    q.finish();
    if (answers.size() != calls.size())
        throw StoreError("switchyard_admit answered a different number of rows");
    return answers;
}

bool Store::setAlertState(const QString &subject, bool fired, qint64 nowMs)
{
    QSqlQuery &q = prepared(
        "INSERT INTO alert_states (subject, fired, changed_ms) VALUES (?, ?, ?) ON CONFLICT "
        "(subject) DO UPDATE SET fired = excluded.fired, changed_ms = excluded.changed_ms WHERE "
        "alert_states.fired <> excluded.fired");
    q.addBindValue(subject);
    q.addBindValue(fired ? 1 : 0);
    q.addBindValue(nowMs);
    exec(q);
    const bool changed = q.numRowsAffected() > 0;
    q.finish();
    return changed;
}

int Store::pruneAlertStates(qint64 cutoffMs)
{
    QSqlQuery &q = prepared("DELETE FROM alert_states WHERE fired = 0 OR (subject LIKE "
                            "'budget:%' AND subject NOT LIKE 'budget:%:0:%' AND changed_ms < ?)");
    q.addBindValue(cutoffMs);
    exec(q);
    const int removed = q.numRowsAffected();
    q.finish();
    return removed;
}

void Store::sharedSetHolds(const QString &instance, const QHash<qint64, qint64> &held)
{
    // One transaction: no admission may see the instance without its holds.
    transaction([&] {
        QSqlQuery &gone = prepared("DELETE FROM shared_holds WHERE instance = ?");
        gone.addBindValue(instance);
        exec(gone);
        for (auto it = held.cbegin(); it != held.cend(); ++it) {
            if (it.value() <= 0)
                continue;
            QSqlQuery &q =
                prepared("INSERT INTO shared_holds (account_id, instance, held) VALUES (?, ?, ?)");
            q.addBindValue(it.key());
            q.addBindValue(instance);
            q.addBindValue(it.value());
            exec(q);
        }
    });
}

bool Store::sharedHeartbeat(const QString &instance)
{
    QSqlQuery &q = prepared(
        "INSERT INTO shared_instances AS i (instance, seen_ms) VALUES (?, (extract(epoch FROM "
        "clock_timestamp()) * 1000)::BIGINT) ON CONFLICT (instance) DO UPDATE SET seen_ms = "
        "EXCLUDED.seen_ms RETURNING (xmax = 0)");
    q.addBindValue(instance);
    exec(q);
    const bool fresh = q.next() && q.value(0).toBool();
    q.finish();
    return fresh;
}

int Store::sharedInstances(qint64 aliveMs)
{
    QSqlQuery &q = prepared("SELECT COUNT(*) FROM shared_instances WHERE seen_ms >= (extract("
                            "epoch FROM clock_timestamp()) * 1000)::BIGINT - ?");
    q.addBindValue(aliveMs);
    exec(q);
    const int n = q.next() ? q.value(0).toInt() : 0;
    q.finish();
    return n;
}

void Store::sharedSweep(qint64 deadMs)
{
    QSqlQuery &dead = prepared("DELETE FROM shared_instances WHERE seen_ms < (extract(epoch "
                               "FROM clock_timestamp()) * 1000)::BIGINT - ?");
    dead.addBindValue(deadMs);
    exec(dead);
    QSqlQuery &orphans = prepared("DELETE FROM shared_holds h WHERE NOT EXISTS (SELECT 1 FROM "
                                  "shared_instances i WHERE i.instance = h.instance)");
    exec(orphans);
    QSqlQuery &full = prepared("DELETE FROM shared_rates WHERE updated_ms < extract(epoch FROM "
                               "clock_timestamp()) * 1000 - 60000");
    exec(full);
    // Keys' spending counters of periods that ended a day ago, and deltas of keys that no
    // longer have a budget (a budget made again starts from the records).
    QSqlQuery &ended = prepared("DELETE FROM shared_key_spent WHERE to_ms <> 0 AND to_ms < "
                                "extract(epoch FROM clock_timestamp()) * 1000 - 86400000");
    exec(ended);
    QSqlQuery &unbudgeted = prepared(
        "DELETE FROM shared_key_deltas d WHERE NOT EXISTS (SELECT 1 FROM api_keys a WHERE a.id "
        "= d.key_id AND a.rules LIKE '%\"budget\"%')");
    exec(unbudgeted);
}

void Store::sharedLeave(const QString &instance)
{
    QSqlQuery &holds = prepared("DELETE FROM shared_holds WHERE instance = ?");
    holds.addBindValue(instance);
    exec(holds);
    QSqlQuery &me = prepared("DELETE FROM shared_instances WHERE instance = ?");
    me.addBindValue(instance);
    exec(me);
}
