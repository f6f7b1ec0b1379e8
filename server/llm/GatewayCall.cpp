#include "GatewayCall.h"

#include "Gateway.h"
#include "MessagesEnvelope.h"
#include "upstream/ProviderAuth.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

namespace {

constexpr qsizetype kMaxUpstreamBody = 32 * 1024 * 1024;
constexpr qsizetype kMaxErrorBody = 64 * 1024;
constexpr qsizetype kMaxSseEvent = 4 * 1024 * 1024;

// The message of an upstream error body (OpenAI or messages shape), else a short excerpt.
QString upstreamMessage(const QByteArray &body)
{
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    const QJsonValue error = o.value("error");
    QString message = error.isObject() ? error.toObject().value("message").toString()
                                       : error.toString(o.value("message").toString());
    if (message.isEmpty()) {
        message = QString::fromUtf8(body.left(200)).simplified();
        static const QRegularExpression markup(QStringLiteral("<[^>]*>"));
        message.remove(markup);
    }
    return message.left(500);
}

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
    attempt(m_gateway.registry().pickKey(m_model.provider, m_tried));
}

void GatewayCall::keepAlive(qint64 now, int periodMs)
{
    if (periodMs > 0 && m_ctx->isStreaming() && now - m_lastWriteMs >= periodMs) {
        m_ctx->writeStream(QByteArrayLiteral(": keep-alive\n\n"));
        m_lastWriteMs = now;
    }
}

void GatewayCall::attempt(const QString &key)
{
    m_key = key;
    if (!key.isEmpty() && !m_tried.contains(key))
        m_tried.append(key);
    const ProviderConfig &p = provider();
    UpstreamRequest req;
    req.url = (p.baseUrl.toUtf8() + LlmProtocol::path(m_relay->upstreamProtocol()));
    req.body = m_relay->upstreamBody();
    req.headers = {"Content-Type: application/json"};
    if (m_relay->isStreaming())
        req.headers.append("Accept: text/event-stream");
    const ProviderAuth auth = m_relay->upstreamProtocol() == Protocol::Messages
                                  ? ProviderAuth::XApiKey
                                  : ProviderAuth::Bearer;
    if (const QByteArray header = authHeader(auth, key); !header.isEmpty())
        req.headers.append(header);
    req.headers.append(m_extraHeaders);
    const bool messages = m_relay->upstreamProtocol() == Protocol::Messages;
    req.connectTimeoutMs = p.connectTimeoutMs;
    req.totalTimeoutMs = messages ? p.messagesTimeoutMs : p.totalTimeoutMs;
    req.firstByteTimeoutMs = p.firstByteTimeoutMs;
    req.idleTimeoutMs = p.idleTimeoutMs;
    m_status = 0;
    m_errorBody.clear();
    m_body.clear();

    m_call = m_gateway.client().start(req);
    std::weak_ptr<GatewayCall> weak = shared_from_this();
    m_call->onHead = [weak](int status, const HttpHeaders &headers) {
        if (auto self = weak.lock())
            self->onHead(status, headers);
    };
    m_call->onData = [weak](const QByteArray &data) {
        if (auto self = weak.lock())
            self->onData(data);
    };
    // The call keeps this request alive until the upstream answers.
    auto self = shared_from_this();
    m_call->onDone = [self](UpstreamError error, const QString &message) {
        self->onDone(error, message);
    };
}

void GatewayCall::onHead(int status, const HttpHeaders &headers)
{
    m_status = status;
    m_headers = headers;
    if (status == 429 || status >= 500) {
        // This key is rate limited or its upstream failed: rest it, try the next one.
        if (!m_key.isEmpty())
            m_gateway.registry().restKey(provider(), m_key);
        const QString next = m_gateway.registry().pickKey(provider(), m_tried);
        if (!next.isEmpty()) {
            m_call->abort();
            m_call.reset();
            attempt(next);
        }
        return;
    }
    if (status >= 200 && status < 300 && m_relay->isStreaming()) {
        m_ctx->startStream(200);
        m_lastWriteMs = m_gateway.nowMs();
        m_gateway.streamStarted(shared_from_this());
    }
}

void GatewayCall::onData(const QByteArray &data)
{
    if (m_done)
        return;
    if (m_status < 200 || m_status >= 300) {
        if (m_errorBody.size() < kMaxErrorBody)
            m_errorBody.append(data.left(kMaxErrorBody - m_errorBody.size()));
        return;
    }
    if (!m_ctx->isStreaming()) {
        m_body.append(data);
        if (m_body.size() > kMaxUpstreamBody) {
            abortUpstream();
            fail(
                502,
                QStringLiteral("The upstream answer exceeded %1 MiB.").arg(kMaxUpstreamBody >> 20));
        }
        return;
    }
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

void GatewayCall::onDone(UpstreamError error, const QString &message)
{
    m_call.reset();
    if (m_done)
        return;
    if (m_ctx->isStreaming()) {
        QString why;
        if (error == UpstreamError::Timeout)
            why = QStringLiteral("The upstream provider timed out mid-stream (%1).").arg(message);
        else if (error != UpstreamError::None)
            why = QStringLiteral("The upstream connection failed mid-stream: %1.").arg(message);
        else
            why = QStringLiteral("The upstream provider ended the stream early.");
        finishStream(false, why);
        return;
    }
    switch (error) {
    case UpstreamError::None:
        break;
    case UpstreamError::ConnectFailed:
        fail(502, QStringLiteral("Could not reach the upstream provider '%1': %2.")
                      .arg(provider().name, message));
        return;
    case UpstreamError::Timeout:
        fail(504, QStringLiteral("The upstream provider '%1' did not answer in time (%2).")
                      .arg(provider().name, message));
        return;
    case UpstreamError::Broken:
    case UpstreamError::Failed:
        fail(
            502,
            QStringLiteral("The upstream provider '%1' failed: %2.").arg(provider().name, message));
        return;
    }
    if (m_status >= 200 && m_status < 300) {
        QByteArray body;
        if (!m_relay->convertBody(m_body, &body)) {
            fail(502, QStringLiteral("The upstream provider '%1' sent a malformed answer.")
                          .arg(provider().name));
            return;
        }
        m_done = true;
        bill(false);
        if (m_onAnswer)
            return m_onAnswer(m_body, body);
        m_ctx->respondRaw(200, "application/json", body);
        return;
    }
    upstreamError();
}

void GatewayCall::upstreamError()
{
    const QString detail = scrub(upstreamMessage(m_errorBody));
    const QString name = provider().name;
    if (m_status == 429) {
        QByteArray retry = headerValue(m_headers, "retry-after");
        bool ok = false;
        retry.toInt(&ok);
        fail(429,
             QStringLiteral("The upstream provider '%1' is rate limiting requests: %2")
                 .arg(name, detail),
             {{"Retry-After", ok ? retry : QByteArray("1")}});
    } else if (m_status == 401 || m_status == 403) {
        fail(502, QStringLiteral("The upstream provider '%1' refused the gateway's "
                                 "credentials (HTTP %2); the operator should check its keys.")
                      .arg(name)
                      .arg(m_status));
    } else if (m_status == 408 || m_status == 504) {
        fail(504, QStringLiteral("The upstream provider '%1' timed out (HTTP %2): %3")
                      .arg(name)
                      .arg(m_status)
                      .arg(detail));
    } else if (m_status >= 500) {
        fail(502, QStringLiteral("The upstream provider '%1' failed (HTTP %2): %3")
                      .arg(name)
                      .arg(m_status)
                      .arg(detail));
    } else if (m_status == 413) {
        fail(413, QStringLiteral("The upstream provider '%1' refused the request as too "
                                 "large: %2")
                      .arg(name, detail));
    } else if (m_status >= 400) {
        fail(400, QStringLiteral("The upstream provider '%1' rejected the request: %2")
                      .arg(name, detail));
    } else {
        fail(
            502,
            QStringLiteral("The upstream provider '%1' answered HTTP %2.").arg(name).arg(m_status));
    }
}

void GatewayCall::fail(int status, const QString &message, HttpHeaders extra)
{
    m_done = true;
    const ErrorStyle style = m_ctx->errorStyle();
    m_ctx->respondRaw(
        status, "application/json",
        ErrorEnvelope::body(style, status, message,
                            status == 502 || status == 504
                                ? (style == messagesErrorStyle() ? QStringLiteral("api_error")
                                                                 : QStringLiteral("upstream_error"))
                                : QString()),
        std::move(extra));
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
    if (m_call) {
        m_call->abort();
        m_call.reset();
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
