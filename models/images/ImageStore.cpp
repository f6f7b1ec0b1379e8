#include "ImageStore.h"

#include "DatabaseConfig.h"
#include "DatabaseService.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QSqlRecord>

namespace ImageStore {

namespace {

constexpr const char *kTaskColumns =
    "id, account_id, key_id, model, prompt, params, n, status, error, error_status, error_code, "
    "callback_url, base_url, price, held, cost, produced, request_id, owner, lease_until, "
    "created_ms, started_ms, completed_ms, purged";
constexpr const char *kDeliveryColumns =
    "id, task_id, account_id, url, status, attempts, scheduled, manual, next_ms, lease_owner, "
    "lease_until, last_status, last_error, created_ms, updated_ms, body";
constexpr const char *kActive = "('queued', 'in_progress', 'uploading')";

// A query on the store's connection, prepared, with positional values bound in order.
struct Sql
{
    QSqlQuery q;
    Sql(Store &store, const QString &sql) : q(store.database())
    {
        q.setForwardOnly(true);
        if (!q.prepare(sql))
            throw StoreError(
                QStringLiteral("%1 (%2)").arg(q.lastError().text(), sql.left(60)).toStdString());
    }
    Sql &operator<<(const QVariant &v)
    {
        q.addBindValue(v);
        return *this;
    }
    Sql &operator<<(const QString &s) // never NULL: every text column is NOT NULL
    {
        q.addBindValue(s.isNull() ? QStringLiteral("") : s);
        return *this;
    }
    Sql &run()
    {
        if (!q.exec())
            throw StoreError(q.lastError().text().toStdString());
        return *this;
    }
    bool next() { return q.next(); }
    QVariant at(int i) const { return q.value(i); }
    int affected() const { return q.numRowsAffected(); }
};

QString sql(const char *head, const char *columns, const char *tail)
{
    return QLatin1String(head) + QLatin1String(columns) + QLatin1String(tail);
}

Task taskFrom(const Sql &s)
{
    Task t;
    int i = 0;
    t.id = s.at(i++).toString();
    t.accountId = s.at(i++).toLongLong();
    t.keyId = s.at(i++).toLongLong();
    t.model = s.at(i++).toString();
    t.prompt = s.at(i++).toString();
    t.params = s.at(i++).toString().toUtf8();
    t.n = s.at(i++).toInt();
    t.status = s.at(i++).toString();
    t.error = s.at(i++).toString();
    t.errorStatus = s.at(i++).toInt();
    t.errorCode = s.at(i++).toString();
    t.callbackUrl = s.at(i++).toString();
    t.baseUrl = s.at(i++).toString();
    t.price = s.at(i++).toLongLong();
    t.held = s.at(i++).toLongLong();
    t.cost = s.at(i++).toLongLong();
    t.produced = s.at(i++).toInt();
    t.requestId = s.at(i++).toString();
    t.owner = s.at(i++).toString();
    t.leaseUntil = s.at(i++).toLongLong();
    t.createdMs = s.at(i++).toLongLong();
    t.startedMs = s.at(i++).toLongLong();
    t.completedMs = s.at(i++).toLongLong();
    t.purged = s.at(i++).toInt() != 0;
    return t;
}

Delivery deliveryFrom(const Sql &s)
{
    Delivery d;
    int i = 0;
    d.id = s.at(i++).toLongLong();
    d.taskId = s.at(i++).toString();
    d.accountId = s.at(i++).toLongLong();
    d.url = s.at(i++).toString();
    d.status = s.at(i++).toString();
    d.attempts = s.at(i++).toInt();
    d.scheduled = s.at(i++).toInt();
    d.manual = s.at(i++).toInt() != 0;
    d.nextMs = s.at(i++).toLongLong();
    d.leaseOwner = s.at(i++).toString();
    d.leaseUntil = s.at(i++).toLongLong();
    d.lastStatus = s.at(i++).toInt();
    d.lastError = s.at(i++).toString();
    d.createdMs = s.at(i++).toLongLong();
    d.updatedMs = s.at(i++).toLongLong();
    d.body = s.at(i++).toString().toUtf8();
    return d;
}

QList<Delivery> deliveriesFrom(Sql &s)
{
    QList<Delivery> out;
    while (s.next())
        out.append(deliveryFrom(s));
    return out;
}

} // namespace

bool isFinal(const QString &status)
{
    return status == QLatin1String(Status::Completed) || status == QLatin1String(Status::Partial) ||
           status == QLatin1String(Status::Failed);
}

// ---- tasks ---------------------------------------------------------------------------------

ChargeResult insertTask(MoneyJournal &journal, const Task &t, qint64 floor)
{
    ChargeResult hold;
    if (t.held > 0) {
        hold = journal.applyLedger(
            t.accountId, QStringLiteral("charge"), -t.held,
            QStringLiteral("image task %1: %2 image(s) held").arg(t.id).arg(t.n),
            t.id + QStringLiteral(":hold"), floor);
        if (hold.status != ChargeResult::Status::Committed)
            return hold;
    }
    Store &store = journal.store();
    Sql ins(store, QStringLiteral("INSERT INTO image_tasks (id, account_id, key_id, model, prompt, "
                                  "params, n, status, callback_url, base_url, price, held, "
                                  "request_id, owner, lease_until, created_ms) VALUES (?, ?, ?, ?, "
                                  "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    ins << t.id << t.accountId << t.keyId << t.model << t.prompt << QString::fromUtf8(t.params)
        << t.n << t.status << t.callbackUrl << t.baseUrl << t.price << t.held << t.requestId
        << t.owner << t.leaseUntil << t.createdMs;
    ins.run();
    return hold;
}

std::optional<Task> task(Store &store, const QString &id)
{
    Sql s(store, sql("SELECT ", kTaskColumns, " FROM image_tasks WHERE id = ?"));
    s << id;
    s.run();
    if (!s.next())
        return std::nullopt;
    return taskFrom(s);
}

bool setActive(Store &store, const QString &id, const QString &status, const QString &owner,
               qint64 leaseUntil, qint64 nowMs)
{
    Sql s(store, QStringLiteral("UPDATE image_tasks SET status = ?, lease_until = ?, "
                                "started_ms = CASE WHEN started_ms = 0 THEN ? ELSE started_ms END "
                                "WHERE id = ? AND owner = ? AND status IN ") +
                     QLatin1String(kActive));
    s << status << leaseUntil << nowMs << id << owner;
    return s.run().affected() > 0;
}

void renewLeases(Store &store, const QString &owner, qint64 leaseUntil)
{
    Sql s(store, QStringLiteral("UPDATE image_tasks SET lease_until = ? WHERE owner = ? AND "
                                "status IN ") +
                     QLatin1String(kActive));
    s << leaseUntil << owner;
    s.run();
}

bool finish(MoneyJournal &journal, const Final &f, std::optional<Delivery> *delivery)
{
    Store &store = journal.store();
    const auto current = task(store, f.taskId);
    if (!current || isFinal(current->status))
        return false;
    // The guard: only the owner, or anyone once the owner's lease ran out (recovery).
    Sql upd(store,
            QStringLiteral("UPDATE image_tasks SET status = ?, error = ?, "
                           "error_status = ?, error_code = ?, cost = ?, produced = ?, "
                           "completed_ms = ?, owner = '', lease_until = 0 WHERE id = ? "
                           "AND status IN ") +
                QLatin1String(kActive) +
                QStringLiteral(" AND (owner = ? OR (CAST(? AS TEXT) = '' AND lease_until < ?))"));
    const qint64 cost = current->price * f.files.size();
    upd << f.status << f.error << f.errorStatus << f.errorCode << cost << int(f.files.size())
        << f.nowMs << f.taskId << f.owner << f.owner << f.nowMs;
    if (upd.run().affected() == 0)
        return false;
    for (const ImageFile &file : f.files) {
        Sql ins(store, QStringLiteral("INSERT INTO image_files (id, task_id, idx, mime, bytes, "
                                      "data, expires_ms, revised_prompt) VALUES (?, ?, ?, ?, ?, "
                                      "?, ?, ?)"));
        ins << file.id << f.taskId << file.index << file.mime << qint64(file.data.size())
            << QVariant(file.data) << file.expiresMs << file.revisedPrompt;
        ins.run();
    }
    if (current->held > 0)
        journal.applyLedger(current->accountId, QStringLiteral("refund"), current->held,
                            QStringLiteral("image task %1: hold released").arg(f.taskId),
                            f.taskId + QStringLiteral(":release"), 0);
    if (cost > 0) {
        UsageRecord u = f.usage;
        u.cost = cost;
        u.setMeter(kImagesMeter, f.files.size());
        u.requests = 0; // the request itself has its own record
        journal.insertUsage(u);
        // At most the hold just released (no more files than n): the balance it leaves is at
        // least the one the hold left.
        journal.applyLedger(
            current->accountId, QStringLiteral("charge"), -cost,
            QStringLiteral("image task %1: %2 image(s)").arg(f.taskId).arg(f.files.size()),
            f.taskId, std::numeric_limits<qint64>::min());
    }
    if (!current->callbackUrl.isEmpty()) {
        Sql ins(store, QStringLiteral("INSERT INTO webhook_deliveries (task_id, account_id, url, "
                                      "status, next_ms, created_ms, updated_ms) VALUES (?, ?, ?, "
                                      "'pending', ?, ?, ?)"));
        ins << f.taskId << current->accountId << current->callbackUrl << f.deliveryDueMs << f.nowMs
            << f.nowMs;
        ins.run();
        if (delivery)
            *delivery = deliveryForTask(store, f.taskId);
    }
    return true;
}

void insertEvent(Store &store, const QString &eventId, qint64 accountId, const QString &url,
                 const QByteArray &body, qint64 nowMs)
{
    Sql ins(store, QStringLiteral("INSERT INTO webhook_deliveries (task_id, account_id, url, "
                                  "status, next_ms, created_ms, updated_ms, body) VALUES (?, ?, "
                                  "?, 'pending', ?, ?, ?, ?)"));
    ins << eventId << accountId << url << nowMs << nowMs << nowMs << QString::fromUtf8(body);
    ins.run();
}

QList<Task> abandoned(Store &store, qint64 nowMs, int limit)
{
    Sql s(store, sql("SELECT ", kTaskColumns, " FROM image_tasks WHERE status IN ") +
                     QLatin1String(kActive) +
                     QStringLiteral(" AND lease_until < ? ORDER BY created_ms LIMIT ?"));
    s << nowMs << limit;
    s.run();
    QList<Task> out;
    while (s.next())
        out.append(taskFrom(s));
    return out;
}

bool adopt(Store &store, const QString &id, const QString &owner, qint64 leaseUntil, qint64 nowMs)
{
    Sql s(store, QStringLiteral("UPDATE image_tasks SET owner = ?, lease_until = ? WHERE id = ? "
                                "AND status = 'queued' AND lease_until < ?"));
    s << owner << leaseUntil << id << nowMs;
    return s.run().affected() > 0;
}

QList<ImageFile> files(Store &store, const QString &taskId, bool withData)
{
    Sql s(store, QStringLiteral("SELECT id, task_id, idx, mime, bytes, %1, expires_ms, "
                                "revised_prompt FROM image_files WHERE task_id = ? ORDER BY idx")
                     .arg(withData ? QStringLiteral("data") : QStringLiteral("NULL")));
    s << taskId;
    s.run();
    QList<ImageFile> out;
    while (s.next()) {
        ImageFile f;
        f.id = s.at(0).toString();
        f.taskId = s.at(1).toString();
        f.index = s.at(2).toInt();
        f.mime = s.at(3).toString();
        f.bytes = s.at(4).toLongLong();
        f.data = s.at(5).toByteArray();
        f.expiresMs = s.at(6).toLongLong();
        f.revisedPrompt = s.at(7).toString();
        out.append(f);
    }
    return out;
}

std::optional<ImageFile> file(Store &store, const QString &id)
{
    Sql s(store, QStringLiteral("SELECT id, task_id, idx, mime, bytes, data, expires_ms, "
                                "revised_prompt FROM image_files WHERE id = ?"));
    s << id;
    s.run();
    if (!s.next())
        return std::nullopt;
    ImageFile f;
    f.id = s.at(0).toString();
    f.taskId = s.at(1).toString();
    f.index = s.at(2).toInt();
    f.mime = s.at(3).toString();
    f.bytes = s.at(4).toLongLong();
    f.data = s.at(5).toByteArray();
    f.expiresMs = s.at(6).toLongLong();
    f.revisedPrompt = s.at(7).toString();
    return f;
}

QPair<int, int> purge(Store &store, qint64 nowMs, qint64 retentionCutoffMs)
{
    Sql drop(store, QStringLiteral("UPDATE image_files SET data = NULL WHERE expires_ms < ? AND "
                                   "data IS NOT NULL"));
    drop << nowMs;
    const int dropped = drop.run().affected();
    Sql old(store, QStringLiteral("SELECT id FROM image_tasks WHERE purged = 0 AND "
                                  "completed_ms > 0 AND completed_ms < ?"));
    old << retentionCutoffMs;
    old.run();
    QStringList ids;
    while (old.next())
        ids.append(old.at(0).toString());
    for (const QString &id : ids) {
        for (const char *stmt : {"DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id "
                                 "FROM webhook_deliveries WHERE task_id = ?)",
                                 "DELETE FROM webhook_deliveries WHERE task_id = ?",
                                 "DELETE FROM image_files WHERE task_id = ?",
                                 "UPDATE image_tasks SET purged = 1, prompt = '' WHERE id = ?"}) {
            Sql s(store, QLatin1String(stmt));
            s << id;
            s.run();
        }
    }
    return {dropped, int(ids.size())};
}

// ---- settings ------------------------------------------------------------------------------

QString ensureSetting(Store &store, const QString &name, const QString &value)
{
    Sql ins(store, QStringLiteral("INSERT INTO image_settings (name, value, created_ms) VALUES "
                                  "(?, ?, ?) ON CONFLICT (name) DO NOTHING"));
    ins << name << value << QDateTime::currentMSecsSinceEpoch();
    ins.run();
    return setting(store, name).value_or(value);
}

std::optional<QString> setting(Store &store, const QString &name)
{
    Sql s(store, QStringLiteral("SELECT value FROM image_settings WHERE name = ?"));
    s << name;
    s.run();
    if (!s.next())
        return std::nullopt;
    return s.at(0).toString();
}

void setSetting(Store &store, const QString &name, const QString &value)
{
    removeSetting(store, name);
    Sql ins(store, QStringLiteral(
                       "INSERT INTO image_settings (name, value, created_ms) VALUES (?, ?, ?)"));
    ins << name << value << QDateTime::currentMSecsSinceEpoch();
    ins.run();
}

void removeSetting(Store &store, const QString &name)
{
    Sql s(store, QStringLiteral("DELETE FROM image_settings WHERE name = ?"));
    s << name;
    s.run();
}

// ---- deliveries ----------------------------------------------------------------------------

QList<Delivery> claim(Store &store, const QString &owner, qint64 nowMs, qint64 leaseUntil,
                      int limit)
{
    // Due: pending, its time come (or a manual attempt asked for), nobody's live lease.
    const QString pick =
        QStringLiteral("SELECT id FROM webhook_deliveries WHERE status = "
                       "'pending' AND (next_ms <= ? OR manual = 1) AND "
                       "lease_until <= ? ORDER BY next_ms LIMIT ?") +
        (store.isPostgres() ? QStringLiteral(" FOR UPDATE SKIP LOCKED") : QString());
    Sql s(store, QStringLiteral("UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ? "
                                "WHERE id IN (") +
                     pick + QStringLiteral(") RETURNING ") + QLatin1String(kDeliveryColumns));
    s << owner << leaseUntil << nowMs << nowMs << limit;
    s.run();
    return deliveriesFrom(s);
}

qint64 nextDue(Store &store, qint64 nowMs)
{
    // A manual attempt is due at once; anything else at its time, or when its lease ends.
    Sql s(store, QStringLiteral("SELECT MIN(CASE WHEN lease_until > due THEN lease_until ELSE "
                                "due END) FROM (SELECT lease_until, CASE WHEN manual = 1 THEN 0 "
                                "ELSE next_ms END AS due FROM webhook_deliveries WHERE status = "
                                "'pending') AS p"));
    s.run();
    if (!s.next() || s.at(0).isNull())
        return 0;
    return qMax(nowMs, s.at(0).toLongLong());
}

std::optional<Delivery> recordAttempt(Store &store, const Attempt &a, const QString &owner,
                                      bool scheduled, const QString &status, qint64 nextMs)
{
    Sql ins(store, QStringLiteral("INSERT INTO webhook_attempts (delivery_id, attempt, manual, "
                                  "started_ms, url, address, status, error, duration_ms, "
                                  "excerpt, instance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    ins << a.deliveryId << a.attempt << (a.manual ? 1 : 0) << a.startedMs << a.url << a.address
        << a.status << a.error << a.durationMs << a.excerpt << a.instance;
    ins.run();
    // A resend asked for while a scheduled attempt was in flight stays asked for: the delivery
    // stays pending with its manual flag, whatever that attempt came to.
    Sql upd(store, QStringLiteral("UPDATE webhook_deliveries SET status = CASE WHEN manual = 1 "
                                  "AND CAST(? AS INTEGER) = 0 THEN 'pending' ELSE ? END, "
                                  "attempts = ?, scheduled = scheduled + ?, manual = CASE WHEN "
                                  "CAST(? AS INTEGER) = 1 THEN 0 ELSE manual END, next_ms = ?, "
                                  "lease_owner = '', lease_until = 0, last_status = ?, "
                                  "last_error = ?, updated_ms = ? WHERE id = ? AND "
                                  "lease_owner = ?"));
    const int manual = a.manual ? 1 : 0;
    upd << manual << status << a.attempt << (scheduled ? 1 : 0) << manual << nextMs << a.status
        << a.error << (a.startedMs + a.durationMs) << a.deliveryId << owner;
    upd.run();
    return delivery(store, a.deliveryId);
}

QList<Delivery> deliveries(Store &store, const DeliveryQuery &dq)
{
    // LIKE with '!' as the escape, so that % and _ in the text match themselves.
    QString like = dq.text.trimmed().toLower();
    like.replace(u'!', QLatin1String("!!")).replace(u'%', QLatin1String("!%"));
    like.replace(u'_', QLatin1String("!_"));
    like = QLatin1Char('%') + like + QLatin1Char('%');
    Sql s(store, sql("SELECT ", kDeliveryColumns,
                     " FROM webhook_deliveries WHERE (CAST(? AS BIGINT) = 0 OR account_id = ?) "
                     "AND (CAST(? AS TEXT) = '' OR status = ?) AND (CAST(? AS TEXT) = '' OR "
                     "task_id = ?) AND (CAST(? AS TEXT) = '' OR LOWER(task_id) LIKE ? ESCAPE '!' "
                     "OR LOWER(url) LIKE ? ESCAPE '!') AND created_ms >= ? AND (CAST(? AS "
                     "BIGINT) = 0 OR created_ms < ?) AND (CAST(? AS BIGINT) = 0 OR id < ?) ORDER "
                     "BY id DESC LIMIT ?"));
    s << dq.accountId << dq.accountId << dq.status << dq.status << dq.taskId << dq.taskId
      << dq.text.trimmed() << like << like << dq.fromMs << dq.toMs << dq.toMs << dq.beforeId
      << dq.beforeId << dq.limit;
    s.run();
    return deliveriesFrom(s);
}

std::optional<Delivery> delivery(Store &store, qint64 id, qint64 accountId)
{
    Sql s(store, sql("SELECT ", kDeliveryColumns,
                     " FROM webhook_deliveries WHERE id = ? AND (CAST(? AS BIGINT) = 0 OR "
                     "account_id = ?)"));
    s << id << accountId << accountId;
    s.run();
    if (!s.next())
        return std::nullopt;
    return deliveryFrom(s);
}

std::optional<Delivery> deliveryForTask(Store &store, const QString &taskId)
{
    Sql s(store, sql("SELECT ", kDeliveryColumns,
                     " FROM webhook_deliveries WHERE task_id = ? ORDER BY id DESC LIMIT 1"));
    s << taskId;
    s.run();
    if (!s.next())
        return std::nullopt;
    return deliveryFrom(s);
}

QList<Attempt> attempts(Store &store, qint64 deliveryId)
{
    Sql s(store, QStringLiteral("SELECT id, delivery_id, attempt, manual, started_ms, url, "
                                "address, status, error, duration_ms, excerpt, instance FROM "
                                "webhook_attempts WHERE delivery_id = ? ORDER BY attempt, id"));
    s << deliveryId;
    s.run();
    QList<Attempt> out;
    while (s.next()) {
        Attempt a;
        int i = 0;
        a.id = s.at(i++).toLongLong();
        a.deliveryId = s.at(i++).toLongLong();
        a.attempt = s.at(i++).toInt();
        a.manual = s.at(i++).toInt() != 0;
        a.startedMs = s.at(i++).toLongLong();
        a.url = s.at(i++).toString();
        a.address = s.at(i++).toString();
        a.status = s.at(i++).toInt();
        a.error = s.at(i++).toString();
        a.durationMs = s.at(i++).toInt();
        a.excerpt = s.at(i++).toString();
        a.instance = s.at(i++).toString();
        out.append(a);
    }
    return out;
}

std::optional<Delivery> resend(Store &store, qint64 id, qint64 accountId, qint64 nowMs)
{
    Sql s(store, QStringLiteral("UPDATE webhook_deliveries SET status = 'pending', manual = 1, "
                                "updated_ms = ? WHERE id = ? AND (CAST(? AS BIGINT) = 0 OR "
                                "account_id = ?)"));
    s << nowMs << id << accountId << accountId;
    if (s.run().affected() == 0)
        return std::nullopt;
    return delivery(store, id);
}

qint64 pendingCount(Store &store)
{
    Sql s(store, QStringLiteral("SELECT COUNT(*) FROM webhook_deliveries WHERE status = "
                                "'pending'"));
    s.run();
    return s.next() ? s.at(0).toLongLong() : 0;
}

} // namespace ImageStore
