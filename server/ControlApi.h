#pragma once

#include "RequestContext.h"

#include <optional>
#include <QDateTime>
#include <QJsonValue>
#include <QString>

// What every family's control routes (/api/v1/...) share: time fields, query parsing with the
// 400s that name the parameter, and the 503 of an unavailable store.
namespace ControlApi {

// RFC 3339 UTC with milliseconds, or null for an invalid time.
QJsonValue timeJson(const QDateTime &t);
QJsonValue timeJsonMs(qint64 ms); // 0: null
// RFC 3339 times or Unix seconds.
std::optional<QDateTime> parseTime(const QString &text);
// A positive integer id.
std::optional<qint64> parseId(const QString &text);
void storeUnavailable(const ContextPtr &ctx, const QString &error);

// The query's list parameters: limit (1 to 1,000, default `fallback`), cursor (an id: items
// below it), from and to (times). Each returns false after answering 400 naming the parameter.
bool limitParam(const ContextPtr &ctx, int fallback, int *limit);
bool cursorParam(const ContextPtr &ctx, qint64 *before);
bool timeParam(const ContextPtr &ctx, const char *name, QDateTime *out);

} // namespace ControlApi
