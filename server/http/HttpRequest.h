#pragma once

#include <QByteArray>
#include <QHostAddress>
#include <QList>
#include <QPair>
#include <QString>
#include <QUrlQuery>

// One parsed HTTP/1.1 request. Header names are stored lowercased (HTTP header names are
// case-insensitive, so X-API-Key and x-api-key are the same header).
struct HttpRequest
{
    QByteArray method;
    QByteArray target; // as sent: path and query
    QString path;      // percent-decoded path
    QUrlQuery query;
    int versionMinor = 1; // HTTP/1.x
    QList<QPair<QByteArray, QByteArray>> headers;
    // The body as the head declares it: its Content-Length, -1 when chunked (its length known
    // only once read), 0 without one. Set when the head is read, before the body is.
    qint64 bodyLength = 0;
    QByteArray body;
    QHostAddress peer;

    QByteArray header(const QByteArray &lowercaseName) const
    {
        for (const auto &h : headers)
            if (h.first == lowercaseName)
                return h.second;
        return {};
    }
    bool hasHeader(const QByteArray &lowercaseName) const
    {
        for (const auto &h : headers)
            if (h.first == lowercaseName)
                return true;
        return false;
    }
};
