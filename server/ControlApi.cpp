#include "ControlApi.h"

#include <QUrlQuery>

namespace ControlApi {

QJsonValue timeJson(const QDateTime &t)
{
    return t.isValid() ? QJsonValue(t.toUTC().toString(Qt::ISODateWithMs)) : QJsonValue();
}

QJsonValue timeJsonMs(qint64 ms)
{
    return ms > 0 ? timeJson(QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC)) : QJsonValue();
}

std::optional<QDateTime> parseTime(const QString &text)
{
    bool ok = false;
    const qint64 seconds = text.toLongLong(&ok);
    if (ok)
        return QDateTime::fromSecsSinceEpoch(seconds, Qt::UTC);
    QDateTime t = QDateTime::fromString(text, Qt::ISODateWithMs);
    if (!t.isValid())
        t = QDateTime::fromString(text, Qt::ISODate);
    if (!t.isValid())
        return std::nullopt;
    return t;
}

std::optional<qint64> parseId(const QString &text)
{
    bool ok = false;
    const qint64 id = text.toLongLong(&ok);
    if (!ok || id <= 0)
        return std::nullopt;
    return id;
}

void storeUnavailable(const ContextPtr &ctx, const QString &error)
{
    qWarning("store error on %s: %s", qPrintable(ctx->request().path), qPrintable(error));
    ctx->respondError(503, QStringLiteral("The data store is unavailable; try again shortly."));
}

bool limitParam(const ContextPtr &ctx, int fallback, int *limit)
{
    const QUrlQuery &q = ctx->request().query;
    *limit = fallback;
    if (!q.hasQueryItem("limit"))
        return true;
    bool ok = false;
    *limit = q.queryItemValue("limit").toInt(&ok);
    if (ok && *limit >= 1 && *limit <= 1000)
        return true;
    ctx->respondError(400, QStringLiteral("'limit' must be an integer from 1 to 1000."), {},
                      QStringLiteral("limit"));
    return false;
}

bool cursorParam(const ContextPtr &ctx, qint64 *before)
{
    const QUrlQuery &q = ctx->request().query;
    *before = 0;
    if (!q.hasQueryItem("cursor"))
        return true;
    const auto id = parseId(q.queryItemValue("cursor"));
    if (id) {
        *before = *id;
        return true;
    }
    ctx->respondError(400, QStringLiteral("'cursor' is not a valid cursor."), {},
                      QStringLiteral("cursor"));
    return false;
}

bool timeParam(const ContextPtr &ctx, const char *name, QDateTime *out)
{
    const QUrlQuery &q = ctx->request().query;
    const QString key = QLatin1String(name);
    if (!q.hasQueryItem(key))
        return true;
    const auto t = parseTime(q.queryItemValue(key, QUrl::FullyDecoded));
    if (t) {
        *out = *t;
        return true;
    }
    ctx->respondError(
        400, QStringLiteral("'%1' must be an RFC 3339 time or Unix seconds.").arg(key), {}, key);
    return false;
}

} // namespace ControlApi
