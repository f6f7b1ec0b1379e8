#pragma once

#include "HttpExchange.h"

// What the connection layer calls. Implemented by the request pipeline.
class HttpHandler
{
public:
    virtual ~HttpHandler() = default;
    // The head step: a request's head has arrived, none of its body has been read. The handler
    // decides, at once or later (a credential lookup may wait for the database), by one of:
    //  - exchange->readBody(limit, run): the body is read, then run() handles the request;
    //  - an answer through the exchange: a refusal. Its body is never read, and when it has one
    //    the connection closes after the answer.
    // Until then the connection reads nothing more from its client.
    virtual void head(const ExchangePtr &exchange) = 0;
    // A request refused at the protocol level (too large, malformed, the server's buffers
    // full); the connection closes after the answer. The request holds what could be parsed
    // (possibly only the path).
    virtual void reject(const ExchangePtr &exchange, int status, const QString &message) = 0;
};

// A handler that decides nothing at the head: every body is read, up to bodyLimit(), then the
// whole request goes to handle().
class PlainHttpHandler : public HttpHandler
{
public:
    void head(const ExchangePtr &exchange) override
    {
        exchange->readBody(bodyLimit(exchange->request()), [this, exchange] { handle(exchange); });
    }
    // Largest body accepted for a request with this head.
    virtual qint64 bodyLimit(const HttpRequest &head) const = 0;
    // A complete request. The handler answers through the exchange, now or later.
    virtual void handle(const ExchangePtr &exchange) = 0;
};
