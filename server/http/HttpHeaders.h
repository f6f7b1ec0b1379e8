#pragma once

#include <QByteArray>
#include <QList>
#include <QPair>

// Header fields in the order they were received or are to be sent: (name, value).
using HttpHeaders = QList<QPair<QByteArray, QByteArray>>;

// The first value of a header field, matched case-insensitively (empty when absent).
inline QByteArray headerValue(const HttpHeaders &headers, const QByteArray &name)
{
    for (const auto &h : headers)
        if (h.first.compare(name, Qt::CaseInsensitive) == 0)
            return h.second;
    return {};
}
