#pragma once

#include <optional>
#include <QString>
#include <QStringView>

// Credits are exact integers: 1 credit = 10^9 units ("nano-credits"). Prices are kept per
// 1M tokens (or per 1,000 characters, per minute) in units; a cost is rounded up to the next
// whole unit once per request, so nothing is ever billed below its exact value and never
// more than one unit above it.
namespace Money {

constexpr qint64 kUnitsPerCredit = 1'000'000'000;

// Parses a decimal credit amount ("12", "0.5", "-3.25") into units. At most 9 decimals;
// anything else (exponents, commas, overflow) is refused.
std::optional<qint64> parseCredits(QStringView text);

// Parses a decimal into an integer scaled by 10^decimals; refuses more decimals than that.
std::optional<qint64> parseScaled(QStringView text, int decimals);

// A catalog's per-token price ("0.0000025" credits per token) as units per 1M tokens, exact.
std::optional<qint64> parsePerTokenPrice(QStringView text);

// Formats units as a decimal credit amount with all nine decimals ("12.500000000").
QString formatCredits(qint64 units);

// cost = ceil(quantity * unitsPerMillion / 1'000'000), computed without overflow for any
// quantity and price that fit in 64 bits separately (the product goes through 128 bits).
qint64 costPerMillion(qint64 quantity, qint64 unitsPerMillion);

} // namespace Money
