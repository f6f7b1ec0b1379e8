#pragma once

#include "HttpExchange.h"

// What the connection layer calls. Implemented by the request pipeline.
class HttpHandler
{
public:
    virtual ~HttpHandler() = default;
    // Largest body accepted for a request with these headers (decided before reading it).
    virtual qint64 bodyLimit(const HttpRequest &head) const = 0;
    // A complete request. The handler answers through the exchange, now or later.
    virtual void handle(const ExchangePtr &exchange) = 0;
    // A request refused at the protocol level (too large, malformed); the connection closes
    // after the answer. The request holds what could be parsed (possibly only the path).
    virtual void reject(const ExchangePtr &exchange, int status, const QString &message) = 0;
};
