#pragma once

#include "ErrorEnvelope.h"
#include "http/HttpExchange.h"
#include "Records.h"
#include "Router.h"

#include <optional>
#include <QElapsedTimer>
#include <QJsonObject>
#include <QJsonValue>

class Pipeline;

// Who made the request, once authenticated.
struct Identity
{
    AuthMode kind = AuthMode::Public;
    qint64 accountId = 0;
    qint64 keyId = 0;
    qint64 tokenId = 0;
    QString tier = QStringLiteral("default");
    QStringList scopes;
};

// Everything a handler needs for one request. Handlers answer exactly once through
// respondJson/respondError/respondRaw; the pipeline then meters, settles and logs.
class RequestContext : public std::enable_shared_from_this<RequestContext>
{
public:
    RequestContext(Pipeline &pipeline, ExchangePtr exchange);

    const HttpRequest &request() const { return m_exchange->request(); }
    const ExchangePtr &exchange() const { return m_exchange; }
    const QString &requestId() const { return m_requestId; }
    const RouteSpec *route() const { return m_route; }
    QString param(const QString &name) const { return m_params.value(name); }
    const Identity &identity() const { return m_identity; }
    ErrorStyle errorStyle() const { return m_style; }
    bool isAnswered() const { return m_answered; }
    qint64 elapsedMs() const { return m_timer.elapsed(); }

    // What the request consumed; a cost > 0 is charged (and committed) before the response
    // leaves, so a client never holds a billed answer that the ledger lacks.
    UsageRecord &usage() { return m_usage; }

    // The body as a JSON object, or nullopt after answering 400 naming the problem.
    std::optional<QJsonObject> jsonBody();

    void respondJson(int status, const QJsonValue &body, HttpHeaders extra = {});
    void respondRaw(int status, const QByteArray &contentType, const QByteArray &body,
                    HttpHeaders extra = {});
    void respondError(int status, const QString &message, const QString &type = {},
                      const QString &param = {}, const QString &code = {});

    // Streaming: the head now (with X-Request-Id and rate headers), then pieces as they come.
    // finishStream() settles usage() first when it has a cost, then writes `tail` (the
    // protocol's final event) and ends, so a client that saw the end of a billed stream is
    // always in the ledger. If settlement fails, `failedTail` goes out instead.
    void startStream(int status, HttpHeaders extra = {});
    void writeStream(const QByteArray &bytes);
    void finishStream(const QByteArray &tail, const QByteArray &failedTail = {});
    bool isStreaming() const { return m_streaming; }
    // The status a stream's usage record carries when it did not end normally (499, 502).
    void setStreamStatus(int status) { m_streamStatus = status; }
    bool clientGone() const { return !m_exchange->isOpen(); }

private:
    friend class Pipeline;
    bool m_streaming = false;
    int m_streamStatus = 200;
    Pipeline &m_pipeline;
    ExchangePtr m_exchange;
    QString m_requestId;
    const RouteSpec *m_route = nullptr;
    QHash<QString, QString> m_params;
    Identity m_identity;
    ErrorStyle m_style = ErrorStyle::OpenAI;
    QElapsedTimer m_timer;
    UsageRecord m_usage;
    HttpHeaders m_rateHeaders;
    qint64 m_reserved = 0;
    bool m_answered = false;
};
