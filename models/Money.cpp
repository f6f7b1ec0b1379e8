#include "Money.h"

#include <limits>

namespace Money {

std::optional<qint64> parseScaled(QStringView text, int decimals)
{
    if (decimals < 0 || decimals > 18)
        return std::nullopt;
    qint64 one = 1;
    for (int i = 0; i < decimals; ++i)
        one *= 10;
    text = text.trimmed();
    if (text.isEmpty())
        return std::nullopt;
    bool negative = false;
    if (text.front() == u'-' || text.front() == u'+') {
        negative = text.front() == u'-';
        text = text.mid(1);
    }
    const qsizetype dot = text.indexOf(u'.');
    const QStringView whole = dot < 0 ? text : text.left(dot);
    const QStringView frac = dot < 0 ? QStringView() : text.mid(dot + 1);
    if (whole.isEmpty() && frac.isEmpty())
        return std::nullopt;
    if (frac.size() > decimals || (dot >= 0 && frac.isEmpty()))
        return std::nullopt;
    __int128 units = 0;
    for (QChar c : whole) {
        if (c < u'0' || c > u'9')
            return std::nullopt;
        units = units * 10 + (c.unicode() - u'0');
        if (units > std::numeric_limits<qint64>::max() / one + 1)
            return std::nullopt;
    }
    units *= one;
    qint64 scale = one / 10;
    for (QChar c : frac) {
        if (c < u'0' || c > u'9')
            return std::nullopt;
        units += static_cast<__int128>(c.unicode() - u'0') * scale;
        scale /= 10;
    }
    if (units > std::numeric_limits<qint64>::max())
        return std::nullopt;
    return negative ? -static_cast<qint64>(units) : static_cast<qint64>(units);
}

std::optional<qint64> parseCredits(QStringView text)
{
    return parseScaled(text, 9);
}

std::optional<qint64> parsePerTokenPrice(QStringView text)
{
    // credits per token -> units per 1M tokens: 9 + 6 decimal places.
    return parseScaled(text, 15);
}

QString formatCredits(qint64 units)
{
    const bool negative = units < 0;
    // Work in unsigned 128-bit so that the minimum value formats too.
    unsigned __int128 magnitude =
        negative ? static_cast<unsigned __int128>(-(static_cast<__int128>(units))) : units;
    const auto whole = static_cast<quint64>(magnitude / kUnitsPerCredit);
    const auto frac = static_cast<quint64>(magnitude % kUnitsPerCredit);
    return QStringLiteral("%1%2.%3")
        .arg(negative ? QStringLiteral("-") : QString())
        .arg(whole)
        .arg(frac, 9, 10, QLatin1Char('0'));
}

qint64 costPerMillion(qint64 quantity, qint64 unitsPerMillion)
{
    if (quantity <= 0 || unitsPerMillion <= 0)
        return 0;
    const __int128 product = static_cast<__int128>(quantity) * unitsPerMillion;
    const __int128 cost = (product + 999'999) / 1'000'000;
    if (cost > std::numeric_limits<qint64>::max())
        return std::numeric_limits<qint64>::max();
    return static_cast<qint64>(cost);
}

} // namespace Money
