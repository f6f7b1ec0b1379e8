#include "GatewayCall.h"

#include "Gateway.h"
#include "MessagesEnvelope.h"
#include "UpstreamReply.h"

namespace {

constexpr qsizetype kMaxUpstreamBody = 32 * 1024 * 1024;
constexpr qsizetype kMaxSseEvent = 4 * 1024 * 1024;

} // namespace

namespace LlmProtocol {

Protocol upstreamOf(ProviderType type)
{
    return type == ProviderType::Anthropic ? Protocol::Messages : Protocol::Chat;
}

QByteArray path(Protocol p)
{
    switch (p) {
    case Protocol::Chat:
        return "/chat/completions";
    case Protocol::Responses:
        return "/responses";
    case Protocol::Messages:
        return "/messages";
    }
    return {};
}

QString endpointName(Protocol p)
{
    switch (p) {
    case Protocol::Chat:
        return QStringLiteral("chat.completions");
    case Protocol::Responses:
        return QStringLiteral("responses");
    case Protocol::Messages:
        return QStringLiteral("messages");
    }
    return {};
}

} // namespace LlmProtocol

void GatewayCall::start()
{
    if (m_ctx->clientGone()) { // left during authentication or admission
        fail(499, QStringLiteral("The client closed the request."));
        return;
    }
    std::weak_ptr<GatewayCall> weak = shared_from_this();
    m_ctx->exchange()->onClosed([weak] {
        if (auto self = weak.lock())
            self->clientLeft();
    });
    m_ctx->usage().model = m_model.entry.id;
    const ProviderConfig &p = provider();
    const Protocol upstream = m_relay->upstreamProtocol();
    ProviderCall::Request req;
    req.url = p.baseUrl.toUtf8() + LlmProtocol::path(upstream);
    req.body = m_relay->upstreamBody();
    req.headers = {"Content-Type: application/json"};
    if (m_relay->isStreaming())
        req.headers.append("Accept: text/event-stream");
    req.headers.append(m_extraHeaders);
    req.auth = upstream == Protocol::Messages ? ProviderAuth::XApiKey : ProviderAuth::Bearer;
    req.configPath = QStringLiteral("gateway.providers");
    req.mode = m_relay->isStreaming() ? ProviderCall::Mode::Stream : ProviderCall::Mode::Whole;
    req.maxAnswerBytes = kMaxUpstreamBody;
    req.totalTimeoutMs = upstream == Protocol::Messages ? p.messagesTimeoutMs : p.totalTimeoutMs;
    m_upstream = ProviderCall::start(m_gateway.client(), m_gateway.registry().keys(), p,
                                     std::move(req), shared_from_this());
}

void GatewayCall::keepAlive(qint64 now, int periodMs)
{
    if (periodMs > 0 && m_ctx->isStreaming() && now - m_lastWriteMs >= periodMs) {
        m_ctx->writeStream(QByteArrayLiteral(": keep-alive\n\n"));
        m_lastWriteMs = now;
    }
}

void GatewayCall::answered(const UpstreamAnswer &answer)
{
    m_upstream.reset();
    if (m_done)
        return;
    if (!answer.ok())
        return fail(answer);
    QByteArray body;
    if (!m_relay->convertBody(answer.body, &body))
        return fail(502,
                    QStringLiteral("The upstream provider '%1' sent a malformed answer.")
                        .arg(provider().name),
                    QStringLiteral("upstream_malformed"));
    m_done = true;
    bill(false);
    if (m_onAnswer)
        return m_onAnswer(answer.body, body);
    m_ctx->respondRaw(200, "application/json", body);
}

void GatewayCall::started(int, const HttpHeaders &)
{
    m_ctx->startStream(200);
    m_lastWriteMs = m_gateway.nowMs();
    m_gateway.streamStarted(shared_from_this());
}

void GatewayCall::received(const QByteArray &data)
{
    if (m_done)
        return;
    m_sse.feed(data);
    SseEvent event;
    QByteArray out;
    while (!m_relay->isFinished() && m_sse.next(&event))
        m_relay->onEvent(event, &out);
    if (!out.isEmpty()) {
        m_ctx->writeStream(out);
        m_lastWriteMs = m_gateway.nowMs();
        // A client that stopped reading would make the server hold the whole stream.
        if (m_ctx->exchange()->unsentBytes() > m_gateway.maxUnsent()) {
            qWarning("request %s: the client stopped reading; dropping it",
                     qPrintable(m_ctx->requestId()));
            m_ctx->exchange()->abortConnection(); // reaches clientLeft()
            return;
        }
    }
    if (m_relay->isFinished()) {
        finishStream(true, {});
    } else if (m_sse.buffered() > kMaxSseEvent) {
        abortUpstream();
        finishStream(
            false,
            QStringLiteral("The upstream sent an event over %1 MiB.").arg(kMaxSseEvent >> 20));
    }
}

void GatewayCall::ended(UpstreamError error, const QString &message)
{
    m_upstream.reset();
    if (m_done)
        return;
    QString why;
    if (error == UpstreamError::Timeout)
        why = QStringLiteral("The upstream provider timed out mid-stream (%1).").arg(message);
    else if (error != UpstreamError::None)
        why = QStringLiteral("The upstream connection failed mid-stream: %1.").arg(message);
    else
        why = QStringLiteral("The upstream provider ended the stream early.");
    finishStream(false, why);
}

void GatewayCall::fail(UpstreamAnswer failure)
{
    m_done = true;
    // The messages protocol has its own closed set of error types: its envelope's for the
    // status (api_error for 502 and 504).
    if (m_ctx->errorStyle() == messagesErrorStyle())
        failure.type.clear();
    respondUpstreamFailure(m_ctx, failure);
}

void GatewayCall::fail(int status, const QString &message, const QString &code)
{
    UpstreamAnswer failure;
    failure.status = status;
    failure.message = message;
    failure.code = code;
    if (status == 502 || status == 504)
        failure.type = QStringLiteral("upstream_error");
    fail(failure);
}

void GatewayCall::bill(bool streamBroken)
{
    bool estimated = false;
    const TokenUsage u = m_relay->finalUsage(&estimated);
    UsageRecord &r = m_ctx->usage();
    r.model = m_model.entry.id;
    r.inputTokens = u.input;
    r.outputTokens = u.output;
    r.cacheReadTokens = u.cacheRead;
    r.cacheWriteTokens = u.cacheWrite;
    r.estimated = estimated;
    // A stream that failed before producing anything is not charged.
    const bool produced = m_relay->usage().haveOutput || !streamBroken || u.output > 0;
    r.cost = produced ? u.cost(m_model.entry.price) : 0;
}

void GatewayCall::finishStream(bool complete, const QString &why)
{
    if (m_done)
        return;
    m_done = true;
    m_gateway.streamEnded(this);
    // An upstream error event counts as a failure even when a final event followed it.
    if (!m_relay->heldError().isEmpty())
        complete = false;
    bill(!complete);
    QByteArray tail;
    if (complete)
        tail = m_relay->tail();
    else if (!m_relay->heldError().isEmpty())
        tail = scrub(QString::fromUtf8(m_relay->heldError())).toUtf8();
    else
        tail = m_relay->errorEvent(why, m_relay->clientProtocol() == Protocol::Messages
                                            ? QStringLiteral("api_error")
                                            : QStringLiteral("upstream_error"));
    if (!complete)
        m_ctx->setStreamStatus(502);
    m_ctx->finishStream(tail, m_relay->errorEvent(QStringLiteral("Billing could not be "
                                                                 "recorded; try again."),
                                                  QStringLiteral("api_error")));
}

void GatewayCall::abortUpstream()
{
    if (m_upstream) {
        m_upstream->abort();
        m_upstream.reset();
    }
}

void GatewayCall::clientLeft()
{
    abortUpstream();
    if (m_done)
        return;
    if (m_ctx->isStreaming()) {
        // Billed on what was produced so far (estimated where the upstream did not say).
        m_done = true;
        m_gateway.streamEnded(this);
        bill(true);
        m_ctx->setStreamStatus(499);
        m_ctx->finishStream({});
        return;
    }
    fail(499, QStringLiteral("The client closed the request."));
}
