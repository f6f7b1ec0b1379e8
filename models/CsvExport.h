#pragma once

#include "Records.h"
#include "UsageMeters.h"

class Store;
struct UsageQuery;

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

// Usage records and ledger entries as CSV (RFC 4180: comma-separated, CRLF line ends, a field
// with a comma, a quote or a line break in double quotes with its quotes doubled), a header row
// first. Amounts are exact decimals of credits (9 places) and units; meters are exact (a scaled
// meter such as audio seconds as a decimal, never a float). The same bytes come from
// GET /api/v1/usage?format=csv, `switchyard-server usage export --csv` and the window's
// Export CSV.
namespace CsvExport {

QByteArray row(const QStringList &fields);

// `meters`: the program's meter descriptions (UsageMeters::catalog), one column each, by
// its API field name.
QByteArray usageHeader(const QList<MeterSpec> &meters);
QByteArray usageRow(const UsageRecord &u, const QList<MeterSpec> &meters);

QByteArray ledgerHeader();
QByteArray ledgerRow(const LedgerEntry &e);

// One page of an export, newest first: its rows as CSV and the cursor of the next page (0: this
// was the last). Read on the store's thread; every export (the API's stream, the command line,
// the window) pages through these.
struct Page
{
    QByteArray bytes;
    int rows = 0;
    qint64 next = 0;
};
constexpr int kPageRows = 1000;
// The usage records `query` matches (its cursor and limit ignored) older than `cursor` (0: the
// newest).
Page usagePage(Store &store, const UsageQuery &query, qint64 cursor,
               const QList<MeterSpec> &meters);
// The account's ledger entries older than `cursor`, those within [from, to) (invalid: open).
Page ledgerPage(Store &store, qint64 accountId, qint64 cursor, const QDateTime &from = {},
                const QDateTime &to = {});

// quantity / scale as an exact decimal ("1.5" for 1500 / 1000); scale a power of ten.
QString scaled(qint64 quantity, qint64 scale);

} // namespace CsvExport
