#include "Gateway.h"

#include "Pipeline.h"
#include "ProviderRegistry.h"
#include "RequestValidation.h"
#include "upstream/UpstreamClient.h"

#include "Scopes.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QRegularExpression>

namespace {

constexpr qsizetype kMaxUpstreamBody = 32 * 1024 * 1024;
constexpr qsizetype kMaxErrorBody = 64 * 1024;
constexpr qsizetype kMaxSseEvent = 4 * 1024 * 1024;

Protocol protocolOf(ProviderType type)
{
    return type == ProviderType::Anthropic ? Protocol::Messages : Protocol::Chat;
}

QByteArray pathOf(Protocol p)
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

QByteArray headerValue(const HttpHeaders &headers, const QByteArray &lowerName)
{
    for (const auto &h : headers)
        if (h.first == lowerName)
            return h.second;
    return {};
}

} // namespace

// One gateway request: the upstream call (with key rotation), the relay, billing, and what
// happens when either side goes away.
class GatewayCall : public std::enable_shared_from_this<GatewayCall>
{
public:
    GatewayCall(Gateway &gateway, ContextPtr ctx, std::unique_ptr<Relay> relay, ResolvedModel model,
                QList<QByteArray> extraHeaders)
        : m_gateway(gateway), m_ctx(std::move(ctx)), m_relay(std::move(relay)),
          m_model(std::move(model)), m_extraHeaders(std::move(extraHeaders))
    {
    }

    void start()
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

    void keepAlive(qint64 now, int periodMs)
    {
        if (periodMs > 0 && m_ctx->isStreaming() && now - m_lastWriteMs >= periodMs) {
            m_ctx->writeStream(QByteArrayLiteral(": keep-alive\n\n"));
            m_lastWriteMs = now;
        }
    }

private:
    const ProviderConfig &provider() const { return m_model.provider; }

    void attempt(const QString &key)
    {
        m_key = key;
        if (!key.isEmpty())
            m_tried.insert(key);
        const ProviderConfig &p = provider();
        UpstreamRequest req;
        req.url = (p.baseUrl.toUtf8() + pathOf(m_relay->upstreamProtocol()));
        req.body = m_relay->upstreamBody();
        req.headers = {"Content-Type: application/json"};
        if (m_relay->isStreaming())
            req.headers.append("Accept: text/event-stream");
        if (m_relay->upstreamProtocol() == Protocol::Messages) {
            if (!key.isEmpty())
                req.headers.append("x-api-key: " + key.toUtf8());
        } else if (!key.isEmpty()) {
            req.headers.append("Authorization: Bearer " + key.toUtf8());
        }
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

    void onHead(int status, const HttpHeaders &headers)
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

    void onData(const QByteArray &data)
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
                fail(502, QStringLiteral("The upstream answer exceeded %1 MiB.")
                              .arg(kMaxUpstreamBody >> 20));
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

    void onDone(UpstreamError error, const QString &message)
    {
        m_call.reset();
        if (m_done)
            return;
        if (m_ctx->isStreaming()) {
            QString why;
            if (error == UpstreamError::Timeout)
                why =
                    QStringLiteral("The upstream provider timed out mid-stream (%1).").arg(message);
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
            fail(502, QStringLiteral("The upstream provider '%1' failed: %2.")
                          .arg(provider().name, message));
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
            m_ctx->respondRaw(200, "application/json", body);
            return;
        }
        upstreamError();
    }

    // Maps an upstream error status to the client's: the message where it is safe, never a key.
    void upstreamError()
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
            fail(502, QStringLiteral("The upstream provider '%1' answered HTTP %2.")
                          .arg(name)
                          .arg(m_status));
        }
    }

    QString scrub(QString text) const
    {
        for (const QString &k : provider().allKeys())
            if (!k.isEmpty())
                text.replace(k, QStringLiteral("[redacted]"));
        static const QRegularExpression keyLike(
            QStringLiteral("\\b(sk|pk|rk|key)[-_][A-Za-z0-9_\\-\\*\\.]{6,}"));
        text.replace(keyLike, QStringLiteral("[redacted]"));
        return text;
    }

    void fail(int status, const QString &message, HttpHeaders extra = {})
    {
        m_done = true;
        const ErrorStyle style = m_ctx->errorStyle();
        m_ctx->respondRaw(status, "application/json",
                          ErrorEnvelope::body(style, status, message,
                                              status == 502 || status == 504
                                                  ? (style == ErrorStyle::Messages
                                                         ? QStringLiteral("api_error")
                                                         : QStringLiteral("upstream_error"))
                                                  : QString()),
                          std::move(extra));
    }

    // Fills the usage record and cost from the relay. estimatedOk: a stream that did not
    // report usage is billed on an estimate (and marked so).
    void bill(bool streamBroken)
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

    void finishStream(bool complete, const QString &why)
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

    void abortUpstream()
    {
        if (m_call) {
            m_call->abort();
            m_call.reset();
        }
    }

    void clientLeft()
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

    Gateway &m_gateway;
    ContextPtr m_ctx;
    std::unique_ptr<Relay> m_relay;
    ResolvedModel m_model;
    QList<QByteArray> m_extraHeaders;
    QSet<QString> m_tried;
    QString m_key;
    UpstreamCallPtr m_call;
    int m_status = 0;
    HttpHeaders m_headers;
    QByteArray m_body;
    QByteArray m_errorBody;
    SseParser m_sse;
    qint64 m_lastWriteMs = 0;
    bool m_done = false;
};

Gateway::Gateway(ProviderRegistry &registry, qint64 maxUnsent, QObject *parent)
    : QObject(parent), m_registry(registry), m_maxUnsent(maxUnsent),
      m_client(new UpstreamClient(this))
{
    m_clock.start();
    m_keepAlive.setInterval(1000);
    connect(&m_registry, &ProviderRegistry::catalogRefreshed, this, &Gateway::catalogRefreshed);
    connect(&m_keepAlive, &QTimer::timeout, this, &Gateway::sendKeepAlives);
}

Gateway::~Gateway() = default;

void Gateway::catalogRefreshed(const QString &provider, int models, const QString &error)
{
    const QList<ContextPtr> waiting = m_pendingRefreshes.take(provider);
    for (const ContextPtr &ctx : waiting) {
        if (!error.isEmpty())
            ctx->respondError(
                502, QStringLiteral("Refreshing the %1 catalog failed: %2").arg(provider, error));
        else
            ctx->respondJson(200, QJsonObject{{"provider", provider}, {"models", models}});
    }
}

void Gateway::streamStarted(const std::shared_ptr<GatewayCall> &call)
{
    m_streams.insert(call.get(), call);
    if (!m_keepAlive.isActive() && m_registry.snapshot()->config.keepAliveMs > 0) {
        // Often enough to keep each stream's silence close to keepalive_ms.
        m_keepAlive.start(qBound(50, m_registry.snapshot()->config.keepAliveMs / 4, 1000));
    }
}

void Gateway::streamEnded(GatewayCall *call)
{
    m_streams.remove(call);
    if (m_streams.isEmpty())
        m_keepAlive.stop();
}

void Gateway::sendKeepAlives()
{
    const int period = m_registry.snapshot()->config.keepAliveMs;
    const qint64 now = nowMs();
    const auto streams = m_streams;
    for (const auto &weak : streams)
        if (auto call = weak.lock())
            call->keepAlive(now, period);
}

void Gateway::installControl(Pipeline &pipeline)
{
    // GET /api/v1/providers: the providers with masked keys and live-catalog state.
    RouteSpec list;
    list.method = "GET";
    list.pattern = QStringLiteral("/api/v1/providers");
    list.family = QStringLiteral("control");
    list.auth = AuthMode::ControlToken;
    list.scope = Scopes::ProvidersRead;
    list.bucket = QStringLiteral("control");
    list.handler = [this](const ContextPtr &ctx) {
        const auto s = m_registry.snapshot();
        QJsonArray data;
        for (const ProviderConfig &p : s->config.providers) {
            QJsonArray keys;
            for (const QString &k : p.allKeys())
                keys.append(ProviderConfig::maskKey(k));
            QJsonObject o{{"name", p.name},
                          {"type", providerTypeName(p.type)},
                          {"base_url", p.baseUrl},
                          {"keys", keys}};
            if (p.type == ProviderType::Catalog) {
                o.insert("catalog_models", int(s->live.value(p.name).size()));
                const QDateTime fetched = s->liveFetched.value(p.name);
                o.insert("catalog_fetched_at", fetched.isValid()
                                                   ? QJsonValue(fetched.toString(Qt::ISODate))
                                                   : QJsonValue());
            }
            data.append(o);
        }
        ctx->respondJson(200, QJsonObject{{"object", "list"}, {"data", data}});
    };
    pipeline.addRoute(list);

    // POST /api/v1/providers/{name}/refresh: reload a live catalog now.
    RouteSpec refresh = list;
    refresh.method = "POST";
    refresh.pattern = QStringLiteral("/api/v1/providers/{name}/refresh");
    refresh.scope = Scopes::ProvidersWrite;
    refresh.handler = [this](const ContextPtr &ctx) {
        const QString name = ctx->param(QStringLiteral("name"));
        const ProviderConfig *p = m_registry.snapshot()->config.provider(name);
        if (!p || p->type != ProviderType::Catalog) {
            ctx->respondError(404, QStringLiteral("No catalog provider named '%1'.").arg(name));
            return;
        }
        // The registry refreshes on its own thread and announces the outcome with a signal,
        // which reaches this thread queued (and never a deleted gateway).
        m_pendingRefreshes[name].append(ctx);
        ProviderRegistry *registry = &m_registry;
        QMetaObject::invokeMethod(registry, [registry, name] { registry->refreshCatalog(name); });
    };
    pipeline.addRoute(refresh);
}

void Gateway::install(Pipeline &pipeline, qint64 minimumReservation)
{
    auto route = [&](const char *path, Protocol protocol, const char *bucket) {
        RouteSpec spec;
        spec.method = "POST";
        spec.pattern = QLatin1String(path);
        spec.family = QStringLiteral("llm");
        spec.auth = AuthMode::ApiKey;
        spec.bucket = QLatin1String(bucket);
        spec.reservation = minimumReservation;
        spec.handler = [this, protocol](const ContextPtr &ctx) {
            const auto body = ctx->jsonBody();
            if (!body)
                return;
            std::optional<RequestValidation::Problem> problem;
            QList<QByteArray> extra;
            if (protocol == Protocol::Messages) {
                const QByteArray version = ctx->request().header("anthropic-version");
                static const QRegularExpression date(QStringLiteral("^\\d{4}-\\d{2}-\\d{2}$"));
                if (version.isEmpty()) {
                    ctx->respondError(400, QStringLiteral("The anthropic-version header is "
                                                          "required, e.g. anthropic-version: "
                                                          "2023-06-01."));
                    return;
                }
                if (!date.match(QString::fromLatin1(version)).hasMatch()) {
                    ctx->respondError(400, QStringLiteral("anthropic-version must be a date such "
                                                          "as 2023-06-01."));
                    return;
                }
                extra.append("anthropic-version: " + version);
                const QByteArray beta = ctx->request().header("anthropic-beta");
                if (!beta.isEmpty())
                    extra.append("anthropic-beta: " + beta);
                problem = RequestValidation::messages(*body);
            } else if (protocol == Protocol::Responses) {
                problem = RequestValidation::responses(*body);
            } else {
                problem = RequestValidation::chat(*body);
            }
            if (problem) {
                ctx->respondError(400, problem->message, {}, problem->param);
                return;
            }
            const auto snapshot = m_registry.snapshot();
            ResolvedModel model = ProviderRegistry::resolve(
                *snapshot, body->value("model").toString(), endpointName(protocol));
            if (!model.error.isEmpty()) {
                ctx->respondError(400, model.error, {}, QStringLiteral("model"),
                                  QStringLiteral("model_not_found"));
                return;
            }
            const Protocol upstream = protocolOf(model.provider.type);
            if (protocol == Protocol::Responses && upstream != Protocol::Chat) {
                ctx->respondError(400,
                                  QStringLiteral("The model '%1' is not served on "
                                                 "/v1/responses.")
                                      .arg(model.entry.id),
                                  {}, QStringLiteral("model"));
                return;
            }
            // The responses protocol goes to an OpenAI upstream as responses.
            const Protocol upstreamProtocol =
                protocol == Protocol::Responses ? Protocol::Responses : upstream;
            if (upstreamProtocol == Protocol::Messages && protocol == Protocol::Chat &&
                extra.isEmpty())
                extra.append("anthropic-version: 2023-06-01");
            std::unique_ptr<Relay> relay =
                Relay::create(protocol, upstreamProtocol, model.entry.id);
            if (!relay) {
                ctx->respondError(400,
                                  QStringLiteral("The model '%1' is served by a provider "
                                                 "that speaks %2, which this endpoint "
                                                 "cannot translate to yet.")
                                      .arg(model.entry.id, endpointName(upstreamProtocol)),
                                  {}, QStringLiteral("model"));
                return;
            }
            if (const QString error = relay->prepare(*body, model.entry.upstreamModel);
                !error.isEmpty()) {
                ctx->respondError(400, error);
                return;
            }
            auto call = std::make_shared<GatewayCall>(*this, ctx, std::move(relay),
                                                      std::move(model), std::move(extra));
            call->start();
        };
        pipeline.addRoute(spec);
    };
    installControl(pipeline);
    route("/v1/chat/completions", Protocol::Chat, "chat");
    route("/v1/responses", Protocol::Responses, "responses");
    route("/v1/messages", Protocol::Messages, "messages");
}
