#pragma once

#include "PgArrayLiteral.h"
#include "Records.h"

#include <QByteArray>
#include <type_traits>
#include <utility>

// The usage record's stored columns, listed once, in the order every statement names them:
// SQLite's multi-row insert (SettleBatch.cpp), the PostgreSQL settlement's arrays
// (SettleBatchPostgres.cpp), the single-row insert and the reads (Store.cpp). A column added to
// UsageRecord goes here and in a migration; the statements and their bindings follow. A
// record's meters are rows of usage_meters (usage_id, meter, quantity), written by the same
// statements (PostgreSQL) or the same batch (SQLite).
namespace UsageColumns {

struct Column
{
    const char *name;
    const char *pgType;      // the element type of its array in the PostgreSQL settlement
    bool nullIfZero = false; // an id that is 0 is stored as SQL NULL
};

// Calls f(column, member) for every stored column of `r` (const or not), in order; `id` is
// not among them (the database draws it).
template <class Record, class F> void forEach(Record &r, F &&f)
{
    static_assert(std::is_same_v<std::remove_const_t<Record>, UsageRecord>);
    f(Column{"account_id", "bigint"}, r.accountId);
    f(Column{"key_id", "bigint", true}, r.keyId);
    f(Column{"token_id", "bigint", true}, r.tokenId);
    f(Column{"time_ms", "bigint"}, r.time);
    f(Column{"endpoint", "text"}, r.endpoint);
    f(Column{"model", "text"}, r.model);
    f(Column{"input_tokens", "bigint"}, r.inputTokens);
    f(Column{"output_tokens", "bigint"}, r.outputTokens);
    f(Column{"cache_read_tokens", "bigint"}, r.cacheReadTokens);
    f(Column{"cache_write_tokens", "bigint"}, r.cacheWriteTokens);
    f(Column{"requests", "bigint"}, r.requests);
    f(Column{"cost", "bigint"}, r.cost);
    f(Column{"status", "int"}, r.status);
    f(Column{"latency_ms", "int"}, r.latencyMs);
    f(Column{"request_id", "text"}, r.requestId);
    f(Column{"estimated", "int"}, r.estimated);
}

// Hands each column's value to `sink` in order: sink.bind(qint64), sink.bind(const QString &),
// sink.bindNull() (an id of 0), the interface of SQLite's SettleStatement. A record without a
// time is stored at nowMs; `estimated` as 0 or 1.
template <class Sink> void bind(const UsageRecord &r, qint64 nowMs, Sink &&sink)
{
    forEach(r, [&](const Column &c, const auto &v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, QString>)
            sink.bind(v);
        else if constexpr (std::is_same_v<T, QDateTime>)
            sink.bind(qint64(v.isValid() ? v.toMSecsSinceEpoch() : nowMs));
        else if constexpr (std::is_same_v<T, bool>)
            sink.bind(qint64(v ? 1 : 0));
        else if (c.nullIfZero && v == 0)
            sink.bindNull();
        else
            sink.bind(qint64(v));
    });
}

inline int count()
{
    int n = 0;
    const UsageRecord none;
    forEach(none, [&n](const Column &, const auto &) { ++n; });
    return n;
}

// A record's meters as PostgreSQL array literals: the names, then the quantities.
inline std::pair<QString, QString> meterArrays(const QList<UsageMeter> &meters)
{
    ArrayLiteral names, quantities;
    for (const UsageMeter &m : meters) {
        names.add(m.name);
        quantities.add(m.quantity);
    }
    return {names.take(), quantities.take()};
}

// "account_id, key_id, ...", each name after `prefix`.
inline QByteArray names(const char *prefix = "")
{
    QByteArray out;
    const UsageRecord none;
    forEach(none, [&](const Column &c, const auto &) {
        if (!out.isEmpty())
            out += ", ";
        out += QByteArray(prefix) + c.name;
    });
    return out;
}

} // namespace UsageColumns
