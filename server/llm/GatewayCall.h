#pragma once

#include "ProviderRegistry.h"
#include "Relay.h"
#include "RequestContext.h"
#include "SseParser.h"
#include "upstream/KeyScrub.h"
#include "upstream/ProviderCall.h"

#include <functional>
#include <memory>
#include <QList>
#include <QSet>

class Gateway;

namespace LlmProtocol {
// The protocol a provider type speaks upstream.
Protocol upstreamOf(ProviderType type);
// The path under a provider's base URL, e.g. "/chat/completions".
QByteArray path(Protocol p);
// The catalog's endpoint name: chat.completions, responses or messages.
QString endpointName(Protocol p);
} // namespace LlmProtocol

// One gateway request: the upstream call (ProviderCall: keys in rotation, retries before
// anything reached the client, the upstream's failures mapped), the relay, billing, and what
// happens when either side goes away.
class GatewayCall : public ProviderCall::Receiver, public std::enable_shared_from_this<GatewayCall>
{
public:
    GatewayCall(Gateway &gateway, ContextPtr ctx, std::unique_ptr<Relay> relay, ResolvedModel model,
                QList<QByteArray> extraHeaders)
        : m_gateway(gateway), m_ctx(std::move(ctx)), m_relay(std::move(relay)),
          m_model(std::move(model)), m_extraHeaders(std::move(extraHeaders))
    {
    }

    // For a family that builds on one chat call (the decisions family's chat evaluator): the
    // whole answer of a successful non-streaming call goes to `handler` instead of the client,
    // with the request's usage() already filled and costed as the gateway bills the call; the
    // handler answers the request (an error status there leaves it unbilled, as any failed
    // request). Upstream failures are answered as for chat completions. Set before start().
    using AnswerHandler =
        std::function<void(const QByteArray &upstreamBody, const QByteArray &chatBody)>;
    void setAnswerHandler(AnswerHandler handler) { m_onAnswer = std::move(handler); }

    void start();

    void keepAlive(qint64 now, int periodMs);

    // ProviderCall::Receiver: a whole answer or a failure before any answer; a stream's start,
    // its pieces and its end.
    void answered(const UpstreamAnswer &answer) override;
    void started(int status, const HttpHeaders &headers) override;
    void received(const QByteArray &data) override;
    void ended(UpstreamError error, const QString &message) override;

private:
    const ProviderConfig &provider() const { return m_model.provider; }

    QString scrub(const QString &text) const { return KeyScrub::scrub(text, provider().allKeys()); }

    // Answers a failure in the route's envelope (Retry-After for a 429).
    void fail(UpstreamAnswer failure);
    void fail(int status, const QString &message, const QString &code = {});

    // Fills the usage record and cost from the relay. estimatedOk: a stream that did not
    // report usage is billed on an estimate (and marked so).
    void bill(bool streamBroken);

    void finishStream(bool complete, const QString &why);

    void abortUpstream();

    void clientLeft();

    Gateway &m_gateway;
    ContextPtr m_ctx;
    std::unique_ptr<Relay> m_relay;
    ResolvedModel m_model;
    QList<QByteArray> m_extraHeaders;
    ProviderCallPtr m_upstream;
    SseParser m_sse;
    qint64 m_lastWriteMs = 0;
    bool m_done = false;
    AnswerHandler m_onAnswer;
};
