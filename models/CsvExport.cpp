#include "CsvExport.h"

#include "Money.h"
#include "Store.h"

namespace CsvExport {

namespace {

QString time(const QDateTime &t)
{
    return t.isValid() ? t.toUTC().toString(Qt::ISODateWithMs) : QString();
}

QString field(const MeterSpec &m)
{
    return m.field.isEmpty() ? m.name : m.field;
}

} // namespace

QByteArray row(const QStringList &fields)
{
    QByteArray out;
    for (qsizetype i = 0; i < fields.size(); ++i) {
        if (i)
            out += ',';
        const QByteArray f = fields[i].toUtf8();
        if (f.contains(',') || f.contains('"') || f.contains('\n') || f.contains('\r')) {
            out += '"';
            out += QByteArray(f).replace('"', "\"\"");
            out += '"';
        } else {
            out += f;
        }
    }
    out += "\r\n";
    return out;
}

QString scaled(qint64 quantity, qint64 scale)
{
    if (scale <= 1)
        return QString::number(quantity);
    int places = 0;
    for (qint64 s = scale; s > 1; s /= 10)
        ++places;
    const bool negative = quantity < 0;
    const quint64 magnitude = negative ? 0 - quint64(quantity) : quint64(quantity);
    QString fraction = QString::number(magnitude % quint64(scale)).rightJustified(places, u'0');
    while (fraction.endsWith(u'0'))
        fraction.chop(1);
    QString text = QString::number(magnitude / quint64(scale));
    if (!fraction.isEmpty())
        text += u'.' + fraction;
    return negative ? u'-' + text : text;
}

QByteArray usageHeader(const QList<MeterSpec> &meters)
{
    QStringList h{
        "id",           "time",          "api_key_id",        "endpoint",           "model",
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "requests"};
    for (const MeterSpec &m : meters)
        h << field(m);
    h << "cost"
      << "cost_units"
      << "status"
      << "latency_ms"
      << "request_id"
      << "estimated";
    return row(h);
}

QByteArray usageRow(const UsageRecord &u, const QList<MeterSpec> &meters)
{
    QStringList r{QString::number(u.id),
                  time(u.time),
                  u.keyId ? QString::number(u.keyId) : QString(),
                  u.endpoint,
                  u.model,
                  QString::number(u.inputTokens),
                  QString::number(u.outputTokens),
                  QString::number(u.cacheReadTokens),
                  QString::number(u.cacheWriteTokens),
                  QString::number(u.requests)};
    for (const MeterSpec &m : meters)
        r << scaled(u.meter(m.name), m.fieldScale);
    r << Money::formatCredits(u.cost) << QString::number(u.cost) << QString::number(u.status)
      << QString::number(u.latencyMs) << u.requestId
      << (u.estimated ? QStringLiteral("true") : QStringLiteral("false"));
    return row(r);
}

QByteArray ledgerHeader()
{
    return row({"id", "created_at", "kind", "amount", "amount_units", "balance_after",
                "balance_after_units", "reason", "request_id"});
}

QByteArray ledgerRow(const LedgerEntry &e)
{
    return row({QString::number(e.id), time(e.created), e.kind, Money::formatCredits(e.amount),
                QString::number(e.amount), Money::formatCredits(e.balanceAfter),
                QString::number(e.balanceAfter), e.reason, e.requestId});
}

Page usagePage(Store &store, const UsageQuery &query, qint64 cursor, const QList<MeterSpec> &meters)
{
    UsageQuery q = query;
    q.beforeId = cursor;
    q.limit = kPageRows;
    const UsagePage p = store.usage(q);
    Page out;
    for (const UsageRecord &u : p.records)
        out.bytes += usageRow(u, meters);
    out.rows = int(p.records.size());
    out.next = p.hasMore ? p.records.last().id : 0;
    return out;
}

Page ledgerPage(Store &store, qint64 accountId, qint64 cursor, const QDateTime &from,
                const QDateTime &to)
{
    const QList<LedgerEntry> entries = store.ledger(accountId, kPageRows + 1, cursor);
    Page out;
    for (qsizetype i = 0; i < qMin<qsizetype>(kPageRows, entries.size()); ++i) {
        const LedgerEntry &e = entries[i];
        if ((!from.isValid() || e.created >= from) && (!to.isValid() || e.created < to)) {
            out.bytes += ledgerRow(e);
            ++out.rows;
        }
    }
    if (entries.size() > kPageRows)
        out.next = entries[kPageRows - 1].id;
    return out;
}

} // namespace CsvExport
