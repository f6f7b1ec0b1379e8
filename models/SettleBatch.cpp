// Store::settleBatch: the group-committing writer's settlements in a few statements per batch.
// Measured with callgrind on 2,000 billed requests (tests/bench/README.md, "The charge path"):
// per settlement, the duplicate SELECT, UPDATE ... RETURNING, two INSERT ... RETURNING and
// their bindings cost about 300,000 instructions one by one, most of it SQLite opening
// ephemeral tables for RETURNING and starting and ending each statement.
#include "Store.h"

#include <array>
#include <QHash>
#include <QMap>
#include <QSqlError>
#include <QVariant>

namespace {

// Rows per multi-row statement: powers of two up to kMaxRows, so that a batch of any size is a
// few statements each prepared once per connection (256 usage rows bind 4,864 values, within
// SQLite's 32,766 and PostgreSQL's 65,535).
constexpr int kSizes = 9;
constexpr qsizetype kMaxRows = qsizetype(1) << (kSizes - 1);

using Texts = std::array<QByteArray, kSizes>;

QByteArray rowsOf(int columns, qsizetype rows)
{
    QByteArray row = "(?";
    for (int c = 1; c < columns; ++c)
        row += ", ?";
    row += ')';
    QByteArray out = row;
    for (qsizetype r = 1; r < rows; ++r)
        out += ", " + row;
    return out;
}

// The statement texts of every size, built once; their addresses key Store's prepared cache.
Texts texts(const QByteArray &head, int columns, const QByteArray &tail)
{
    Texts t;
    for (int i = 0; i < kSizes; ++i)
        t[i] = head + rowsOf(columns, qsizetype(1) << i) + tail;
    return t;
}

const Texts &duplicateTexts()
{
    static const Texts t = [] {
        Texts out;
        for (int i = 0; i < kSizes; ++i) {
            QByteArray list = "?";
            for (qsizetype r = 1; r < (qsizetype(1) << i); ++r)
                list += ", ?";
            out[i] = "SELECT id, account_id, kind, amount, balance_after, reason, request_id, "
                     "created_ms FROM ledger WHERE kind = 'charge' AND request_id <> '' AND "
                     "request_id IN (" +
                     list + ')';
        }
        return out;
    }();
    return t;
}

const Texts &ledgerTexts(bool postgres)
{
    static const QByteArray head = "INSERT INTO ledger (account_id, kind, amount, balance_after, "
                                   "reason, request_id, created_ms) VALUES ";
    // SQLite gives a multi-row insert consecutive rowids in row order (the table is written by
    // this one writer), read from last_insert_rowid(): RETURNING would cost an ephemeral table.
    static const Texts sqlite = texts(head, 7, {});
    static const Texts pg = texts(head, 7, " RETURNING id");
    return postgres ? pg : sqlite;
}

const Texts &usageTexts(bool postgres)
{
    static const QByteArray head =
        "INSERT INTO usage_records (account_id, key_id, token_id, time_ms, endpoint, model, "
        "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, characters, "
        "audio_ms, requests, cost, status, latency_ms, request_id, estimated, images) VALUES ";
    static const Texts sqlite = texts(head, 19, {});
    static const Texts pg = texts(head, 19, " RETURNING id");
    return postgres ? pg : sqlite;
}

QString text(const QString &s)
{
    return s.isNull() ? QStringLiteral("") : s;
}

QVariant idOrNull(qint64 id)
{
    return id ? QVariant(id) : QVariant(QMetaType::fromType<qint64>());
}

// Splits n rows into chunks of the prepared sizes: (size index, first row).
QList<QPair<int, qsizetype>> chunks(qsizetype n)
{
    QList<QPair<int, qsizetype>> out;
    qsizetype at = 0;
    for (int i = kSizes - 1; i >= 0; --i) {
        const qsizetype size = qsizetype(1) << i;
        while (n - at >= size) {
            out.append({i, at});
            at += size;
        }
    }
    return out;
}

} // namespace

void Store::settleBatch(QList<Settlement> &batch)
{
    const bool pg = isPostgres();
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    enum Role
    {
        Charge,    // a charge and its usage record
        UsageOnly, // cost 0: the usage record alone
        Duplicate, // charged before: nothing stored
        Failed     // refused alone (an unknown account)
    };
    QList<Role> role(batch.size(), UsageOnly);
    QList<qsizetype> duplicateOf(batch.size(), -1); // an earlier charge of this batch

    // Duplicates: charged by an earlier batch, or earlier in this one.
    QList<qsizetype> charges;
    QHash<QString, qsizetype> firstCharge;
    for (qsizetype i = 0; i < batch.size(); ++i) {
        Settlement &s = batch[i];
        s.charge = {};
        s.error.clear();
        if (s.usage.cost <= 0)
            continue;
        role[i] = Charge;
        if (s.usage.requestId.isEmpty()) {
            charges.append(i);
            continue;
        }
        const auto first = firstCharge.constFind(s.usage.requestId);
        if (first != firstCharge.cend()) {
            role[i] = Duplicate;
            duplicateOf[i] = *first;
            continue;
        }
        firstCharge.insert(s.usage.requestId, i);
        charges.append(i);
    }
    if (!firstCharge.isEmpty()) {
        const QStringList ids = firstCharge.keys();
        for (const auto &[size, at] : chunks(ids.size())) {
            QSqlQuery &q = prepared(duplicateTexts()[size].constData());
            for (qsizetype r = 0; r < (qsizetype(1) << size); ++r)
                q.addBindValue(ids[at + r]);
            exec(q);
            while (q.next()) {
                const qsizetype i = firstCharge.value(q.value(6).toString(), -1);
                if (i < 0)
                    continue;
                role[i] = Duplicate;
                Settlement &s = batch[i];
                s.charge.status = ChargeResult::Status::Duplicate;
                s.charge.entry =
                    LedgerEntry{q.value(0).toLongLong(),
                                q.value(1).toLongLong(),
                                q.value(2).toString(),
                                q.value(3).toLongLong(),
                                q.value(4).toLongLong(),
                                q.value(5).toString(),
                                q.value(6).toString(),
                                QDateTime::fromMSecsSinceEpoch(q.value(7).toLongLong(), Qt::UTC)};
            }
            q.finish();
        }
        charges.removeIf([&role](qsizetype i) { return role[i] != Charge; });
    }

    // One balance update per account; each entry's balance_after follows in batch order.
    QMap<qint64, qint64> total;
    for (qsizetype i : charges)
        total[batch[i].usage.accountId] -= batch[i].usage.cost;
    QHash<qint64, qint64> running; // account -> balance before the next entry
    for (auto it = total.cbegin(); it != total.cend(); ++it) {
        QSqlQuery &upd = prepared("UPDATE accounts SET balance = balance + ? WHERE id = ?");
        upd.addBindValue(it.value());
        upd.addBindValue(it.key());
        exec(upd);
        if (upd.numRowsAffected() != 1)
            continue; // no such account: its settlements fail below
        QSqlQuery &bal = prepared("SELECT balance FROM accounts WHERE id = ?");
        bal.addBindValue(it.key());
        exec(bal);
        bal.next();
        running.insert(it.key(), bal.value(0).toLongLong() - it.value());
        bal.finish();
    }
    for (qsizetype i = 0; i < batch.size(); ++i) {
        const auto acc = running.find(batch[i].usage.accountId);
        if (role[i] == Charge && acc == running.end()) {
            role[i] = Failed;
            batch[i].charge.status = ChargeResult::Status::UnknownAccount;
            batch[i].error = QStringLiteral("unknown account %1").arg(batch[i].usage.accountId);
        } else if (role[i] == Charge) {
            Settlement &s = batch[i];
            *acc -= s.usage.cost;
            s.charge.entry = LedgerEntry{0,
                                         s.usage.accountId,
                                         QStringLiteral("charge"),
                                         -s.usage.cost,
                                         *acc,
                                         s.usage.endpoint,
                                         s.usage.requestId,
                                         QDateTime::fromMSecsSinceEpoch(now, Qt::UTC)};
        }
    }
    charges.removeIf([&role](qsizetype i) { return role[i] != Charge; });

    // The ledger entries, then the usage records, each in a few multi-row inserts.
    const auto insertRows = [this, pg](const Texts &sql, const QList<qsizetype> &items,
                                       const std::function<void(QSqlQuery &, qsizetype)> &bind,
                                       const std::function<void(qsizetype, qint64)> &setId) {
        for (const auto &[size, at] : chunks(items.size())) {
            const qsizetype rows = qsizetype(1) << size;
            QSqlQuery &q = prepared(sql[size].constData());
            for (qsizetype r = 0; r < rows; ++r)
                bind(q, items[at + r]);
            exec(q);
            if (pg) {
                for (qsizetype r = 0; r < rows && q.next(); ++r)
                    setId(items[at + r], q.value(0).toLongLong());
            } else {
                const qint64 last = q.lastInsertId().toLongLong();
                for (qsizetype r = 0; r < rows; ++r)
                    setId(items[at + r], last - rows + 1 + r);
            }
            q.finish();
        }
    };
    insertRows(
        ledgerTexts(pg), charges,
        [&batch](QSqlQuery &q, qsizetype i) {
            const LedgerEntry &e = batch[i].charge.entry;
            q.addBindValue(e.accountId);
            q.addBindValue(e.kind);
            q.addBindValue(e.amount);
            q.addBindValue(e.balanceAfter);
            q.addBindValue(text(e.reason));
            q.addBindValue(text(e.requestId));
            q.addBindValue(e.created.toMSecsSinceEpoch());
        },
        [&batch](qsizetype i, qint64 id) { batch[i].charge.entry.id = id; });

    QList<qsizetype> usage;
    for (qsizetype i = 0; i < batch.size(); ++i)
        if (role[i] == Charge || role[i] == UsageOnly)
            usage.append(i);
    insertRows(
        usageTexts(pg), usage,
        [&batch, now](QSqlQuery &q, qsizetype i) {
            const UsageRecord &r = batch[i].usage;
            q.addBindValue(r.accountId);
            q.addBindValue(idOrNull(r.keyId));
            q.addBindValue(idOrNull(r.tokenId));
            q.addBindValue(r.time.isValid() ? r.time.toMSecsSinceEpoch() : now);
            q.addBindValue(text(r.endpoint));
            q.addBindValue(text(r.model));
            q.addBindValue(r.inputTokens);
            q.addBindValue(r.outputTokens);
            q.addBindValue(r.cacheReadTokens);
            q.addBindValue(r.cacheWriteTokens);
            q.addBindValue(r.characters);
            q.addBindValue(r.audioMs);
            q.addBindValue(r.requests);
            q.addBindValue(r.cost);
            q.addBindValue(r.status);
            q.addBindValue(r.latencyMs);
            q.addBindValue(text(r.requestId));
            q.addBindValue(r.estimated ? 1 : 0);
            q.addBindValue(r.images);
        },
        [&batch](qsizetype i, qint64 id) { batch[i].usage.id = id; });

    // A repeat within the batch reports the entry its first charge made.
    for (qsizetype i = 0; i < batch.size(); ++i)
        if (duplicateOf[i] >= 0) {
            batch[i].charge.status = ChargeResult::Status::Duplicate;
            batch[i].charge.entry = batch[duplicateOf[i]].charge.entry;
        }
}
