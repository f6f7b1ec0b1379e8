#include "KeyScrub.h"

#include <QRegularExpression>

namespace KeyScrub {

QString scrub(QString text, const QStringList &knownKeys)
{
    for (const QString &k : knownKeys)
        if (!k.isEmpty())
            text.replace(k, QStringLiteral("[redacted]"));
    static const QRegularExpression keyLike(
        QStringLiteral("\\b(sk|pk|rk|key)[-_][A-Za-z0-9_\\-\\*\\.]{6,}"));
    text.replace(keyLike, QStringLiteral("[redacted]"));
    return text;
}

} // namespace KeyScrub
