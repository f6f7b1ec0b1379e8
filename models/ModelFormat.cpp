#include "ModelFormat.h"

#include "Money.h"

namespace ModelFormat {

QString time(const QDateTime &t, const QString &missing)
{
    return t.isValid() ? t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")) : missing;
}

QString credits(qint64 units)
{
    QString text = Money::formatCredits(units);
    const qsizetype minLength = text.indexOf(u'.') + 3;
    qsizetype length = text.size();
    while (length > minLength && text.at(length - 1) == u'0')
        --length;
    text.truncate(length);
    return text;
}

} // namespace ModelFormat
