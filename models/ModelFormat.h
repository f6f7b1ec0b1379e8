#pragma once

#include <QDateTime>
#include <QString>

// How the shared item models present values, so every table reads the same way.
namespace ModelFormat {

// Local time, to the second; an invalid time gives `missing`.
QString time(const QDateTime &t, const QString &missing = QString());

// Exact decimal credits with trailing zeros trimmed to at least two decimals ("12.50",
// "0.000001234"): all nine decimals stay available, short amounts stay readable.
QString credits(qint64 units);

} // namespace ModelFormat
