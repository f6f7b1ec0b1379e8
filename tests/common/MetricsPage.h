#pragma once

#include "HttpClient.h"

#include <QHash>

// GET /metrics asked on a connection of its own that closes after the answer (the page counts
// that connection among the open ones, so an idle server shows 1): each series ("name" or
// "name{labels}") and its value as written. Empty when the page is refused.
inline QHash<QByteArray, QByteArray> metricsPage(quint16 port)
{
    QHash<QByteArray, QByteArray> series;
    HttpClient c(port);
    const HttpReply r = c.request("GET", "/metrics", {{"Connection", "close"}});
    if (r.status != 200)
        return series;
    for (const QByteArray &line : r.body.split('\n')) {
        const qsizetype space = line.lastIndexOf(' ');
        if (space > 0 && !line.startsWith('#'))
            series.insert(line.left(space), line.mid(space + 1));
    }
    return series;
}

// One series of the page as a number; -1 when the page does not have it.
inline double metric(quint16 port, const QByteArray &series)
{
    return metricsPage(port).value(series, "-1").toDouble();
}
