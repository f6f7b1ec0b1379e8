#pragma once

#include "ErrorEnvelope.h"
#include "http/HttpExchange.h"
#include "JobQueue.h"
#include "Records.h"
#include "RequestError.h"
#include "Router.h"
#include "SettlementTicket.h"

#include <functional>
#include <optional>
#include <QElapsedTimer>
#include <QJsonObject>
#include <QJsonValue>
#include <QPointer>

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
    KeyRules rules; // an API key's
};

// Everything a handler needs for one request. Handlers answer exactly once through
// respondJson/respondError/respondRaw; the pipeline then meters, settles and logs.
class RequestContext : public std::enable_shared_from_this<RequestContext>
{
public:
    RequestContext(Pipeline &pipeline, ExchangePtr exchange);
    // A request that ends without an answer (its family dropped it when the client left) hands
    // back the credit it still holds, on the server thread: held for good, it would count
    // against its account until a restart.
    ~RequestContext();
    RequestContext(const RequestContext &) = delete;
    RequestContext &operator=(const RequestContext &) = delete;

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
    // The same check on any bytes, from any thread: nullopt with that 400's sentence in *error.
    static std::optional<QJsonObject> parseJsonObject(const QByteArray &body, QString *error);

    void respondJson(int status, const QJsonValue &body, HttpHeaders extra = {});
    void respondRaw(int status, const QByteArray &contentType, const QByteArray &body,
                    HttpHeaders extra = {});
    void respondError(int status, const QString &message, const QString &type = {},
                      const QString &param = {}, const QString &code = {}, HttpHeaders extra = {});
    void respondError(const RequestError &error, HttpHeaders extra = {})
    {
        respondError(error.status, error.message, error.type, error.param, error.code,
                     std::move(extra));
    }
    // 499, for a client that left: the request's usage is recorded, unbilled, and its hold
    // goes back.
    void respondClientLeft();
    // The API key's models rule (KeyRules::models): false, after answering 403
    // model_not_allowed, when the key may not use `model`. A family asks once it knows the
    // model (what `auto` resolved to), before any upstream call or engine work.
    bool allowsModel(const QString &model);
    // 503 `engine_busy` with Retry-After, in the route's envelope: every slot of `queue` is
    // taken. `what` names the engines in the message ("The audio engines").
    void respondBusy(const JobQueue &queue, const QString &what);
    // Runs `job` on `queue` (ServerScope::executor) in one of its slots, its continuation back
    // on the server thread; respondBusy() when none is free. A client that leaves while the
    // job waits cancels it: the job never runs and the request ends as 499, unbilled.
    // F: a callable returning the continuation (JobQueue::Continuation).
    template <class F> void offload(JobQueue &queue, F job, const QString &what)
    {
        // One function made per request (the queue adds none): the billed address path.
        if (!queue.tryPost([self = shared_from_this(),
                            job = std::move(job)]() mutable -> JobQueue::Continuation {
                if (self->m_exchange->hasLeft()) // cancelled while it waited
                    return [self] { self->respondClientLeft(); };
                return job();
            }))
            respondBusy(queue, what);
    }

    // Holds `amount` more credit units for this request, on top of the route's reservation,
    // for work whose size shows only in the body (minutes of media, items asked for). Admitted
    // by the same rule as the route's reservation (CreditGate) and released at settlement.
    // then() runs on the server thread when admitted; otherwise the request is answered 402
    // (or 503 when the credit store is unavailable) and then() never runs. Keyless requests
    // (public routes) are not metered: then() runs at once.
    void reserve(qint64 amount, std::function<void()> then);
    // The credit units this request holds in memory (the route's reservation and reserve()'s).
    qint64 held() const { return m_reserved; }
    // Hands that hold back now, for work whose hold has become durable: a ledger entry the
    // credit gate already knows of (an image task's), which would otherwise count twice
    // against the account for as long as the request waits for its answer. The key's budget
    // hold stays until the request ends (the budget has no durable hold of its own).
    void releaseHold();

    // Streaming: the head now (with X-Request-Id and rate headers), then pieces as they come.
    // finishStream() settles usage() first when it has a cost, then writes `tail` (the
    // protocol's final event) and ends, so a client that saw the end of a billed stream is
    // always in the ledger. If settlement fails, `failedTail` goes out instead, or, when it is
    // empty, the connection is dropped. The head is SSE unless `extra` has a Content-Type.
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
    // For the destructor: a context may outlive the pipeline (a settlement's callback dropped
    // after the server has gone).
    QPointer<Pipeline> m_pipelineAlive;
    ExchangePtr m_exchange;
    QString m_requestId;
    const RouteSpec *m_route = nullptr;
    QHash<QString, QString> m_params;
    Identity m_identity;
    ErrorStyle m_style;
    QElapsedTimer m_timer;
    UsageRecord m_usage;
    HttpHeaders m_rateHeaders;
    qint64 m_reserved = 0;
    qint64 m_budgetHeld = 0; // of m_identity's key budget
    // Taken when an API key is accepted (every such request settles or records usage), handed
    // over with the record; dropped with the context if it ends without one.
    SettlementTicket m_settlement;
    bool m_answered = false;
};
