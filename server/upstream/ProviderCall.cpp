#include "upstream/ProviderCall.h"

#include "upstream/KeyScrub.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

namespace {

// What is kept of an error answer: its message is all a client sees of it.
constexpr qsizetype kMaxErrorBytes = 64 * 1024;

bool success(int status)
{
    return status >= 200 && status < 300;
}

UpstreamAnswer failed(int status, const QString &message, const QString &code,
                      const QString &type = {})
{
    UpstreamAnswer a;
    a.status = status;
    a.message = message;
    a.type = type.isEmpty() && (status == 502 || status == 504) ? QStringLiteral("upstream_error")
                                                                : type;
    a.code = code;
    return a;
}

} // namespace

void ProviderCall::Receiver::started(int, const HttpHeaders &) {}
void ProviderCall::Receiver::received(const QByteArray &) {}
void ProviderCall::Receiver::ended(UpstreamError, const QString &) {}

std::shared_ptr<ProviderCall> ProviderCall::start(UpstreamClient &client, KeyRotation &keys,
                                                  const UpstreamProvider &provider, Request request,
                                                  std::shared_ptr<Receiver> receiver)
{
    auto call = std::shared_ptr<ProviderCall>(new ProviderCall);
    call->m_client = &client;
    call->m_keys = &keys;
    call->m_provider = provider;
    call->m_request = std::move(request);
    call->m_receiver = std::move(receiver);
    call->attempt(keys.pick(provider));
    return call;
}

std::shared_ptr<ProviderCall> ProviderCall::start(UpstreamClient &client, KeyRotation &keys,
                                                  const UpstreamProvider &provider, Request request,
                                                  Done done)
{
    request.mode = Mode::Whole;
    auto call = start(client, keys, provider, std::move(request), std::shared_ptr<Receiver>());
    call->m_done = std::move(done);
    return call;
}

ProviderCall::~ProviderCall()
{
    stopUpstream();
}

void ProviderCall::abort()
{
    m_finished = true;
    // Drops what the receiver holds (the request waiting for it).
    m_receiver.reset();
    m_done = nullptr;
    stopUpstream();
}

void ProviderCall::setPaused(bool paused)
{
    if (m_call)
        m_call->setPaused(paused);
}

void ProviderCall::stopUpstream()
{
    if (m_call) {
        m_call->abort();
        m_call.reset();
    }
}

void ProviderCall::attempt(const QString &key)
{
    m_key = key;
    if (!key.isEmpty() && !m_tried.contains(key))
        m_tried.append(key);
    UpstreamRequest req;
    req.method = m_request.method;
    req.url = m_request.url;
    req.body = m_request.body;
    req.headers = m_request.headers;
    if (const QByteArray auth = authHeader(m_request.auth, key); !auth.isEmpty())
        req.headers.append(auth);
    m_provider.applyTimeouts(req);
    if (m_request.totalTimeoutMs > 0)
        req.totalTimeoutMs = m_request.totalTimeoutMs;
    m_status = 0;
    m_headers.clear();
    m_answer.clear();

    m_call = m_client->start(req);
    // The upstream call holds this one until it ends; after its abort() nothing of it runs, so
    // the head and data callbacks need no hold of their own.
    m_call->onHead = [this](int status, const HttpHeaders &headers) { onHead(status, headers); };
    m_call->onData = [this](const QByteArray &data) { onData(data); };
    m_call->onDone = [self = shared_from_this()](UpstreamError error, const QString &message) {
        self->onDone(error, message);
    };
}

bool ProviderCall::retry()
{
    // This key is rate limited or its upstream failed: it rests, and the next key (if the
    // provider has one not tried yet) gets the same request.
    if (m_key.isEmpty())
        return false;
    m_keys->rest(m_provider, m_key);
    if (m_request.maxKeys > 0 && m_tried.size() >= m_request.maxKeys)
        return false;
    const QString next = m_keys->pick(m_provider, m_tried);
    if (next.isEmpty())
        return false;
    stopUpstream();
    attempt(next);
    return true;
}

void ProviderCall::onHead(int status, const HttpHeaders &headers)
{
    // Stopping the upstream call drops its hold on this one; the receiver may drop its own.
    auto keep = shared_from_this();
    if ((status == 429 || status >= 500) && retry())
        return;
    m_status = status;
    m_headers = headers;
    // The operator's key refused: the failure says so whatever the answer's body (a relay
    // hands on a 403, which a pass-through upstream may mean for the client).
    if (status == 401 || (status == 403 && m_request.mode != Mode::Relay)) {
        stopUpstream();
        return answer(failure(status, headers, {}, m_provider, m_request.configPath));
    }
    if (m_request.mode == Mode::Whole || (m_request.mode == Mode::Stream && !success(status)))
        return; // collected; an error answer is mapped at its end
    m_started = true;
    // Held for the call: the receiver may abort this call, which drops the call's hold on it.
    if (auto receiver = m_receiver)
        receiver->started(status, headers);
}

void ProviderCall::onData(const QByteArray &data)
{
    if (m_finished)
        return;
    if (m_started) {
        auto keep = shared_from_this();
        if (auto receiver = m_receiver)
            receiver->received(data);
        return;
    }
    if (!success(m_status)) {
        if (m_answer.size() < kMaxErrorBytes)
            m_answer.append(data.left(kMaxErrorBytes - m_answer.size()));
        return;
    }
    if (m_answer.size() + data.size() > m_request.maxAnswerBytes) {
        auto keep = shared_from_this();
        stopUpstream();
        answer(failed(502,
                      QStringLiteral("The upstream provider '%1' sent an answer over %2 MiB.")
                          .arg(m_provider.name)
                          .arg(m_request.maxAnswerBytes >> 20),
                      QStringLiteral("upstream_too_large")));
        return;
    }
    m_answer.append(data);
}

void ProviderCall::onDone(UpstreamError error, const QString &message)
{
    m_call.reset();
    if (m_finished)
        return;
    if (m_started) {
        m_finished = true;
        auto receiver = std::move(m_receiver);
        if (receiver)
            receiver->ended(error, message.isEmpty()
                                       ? message
                                       : KeyScrub::scrub(message, m_provider.allKeys()));
        return;
    }
    if (error != UpstreamError::None)
        return answer(transportFailure(error, message, m_provider));
    if (!success(m_status))
        return answer(failure(m_status, m_headers, m_answer, m_provider, m_request.configPath));
    UpstreamAnswer a;
    a.status = 200;
    a.contentType = headerValue(m_headers, "content-type");
    a.body = std::move(m_answer);
    answer(a);
}

void ProviderCall::answer(const UpstreamAnswer &a)
{
    if (m_finished)
        return;
    m_finished = true;
    auto keep = shared_from_this();
    auto receiver = std::move(m_receiver);
    Done done = std::move(m_done);
    m_done = nullptr;
    if (receiver)
        receiver->answered(a);
    else if (done)
        done(a);
}

UpstreamAnswer ProviderCall::transportFailure(UpstreamError error, const QString &message,
                                              const UpstreamProvider &provider)
{
    const QString &name = provider.name;
    const QString why = KeyScrub::scrub(message, provider.allKeys());
    switch (error) {
    case UpstreamError::ConnectFailed:
        return failed(
            502, QStringLiteral("Could not reach the upstream provider '%1': %2.").arg(name, why),
            QStringLiteral("upstream_unreachable"));
    case UpstreamError::Timeout:
        return failed(504,
                      QStringLiteral("The upstream provider '%1' did not answer in time (%2).")
                          .arg(name, why),
                      QStringLiteral("upstream_timeout"));
    case UpstreamError::None:
    case UpstreamError::Broken:
    case UpstreamError::Failed:
        break;
    }
    return failed(502, QStringLiteral("The upstream provider '%1' failed: %2.").arg(name, why),
                  QStringLiteral("upstream_failed"));
}

UpstreamAnswer ProviderCall::failure(int status, const HttpHeaders &headers, const QByteArray &body,
                                     const UpstreamProvider &provider, const QString &configPath)
{
    const QString &name = provider.name;
    const QString detail = KeyScrub::scrub(errorMessage(body), provider.allKeys());
    if (status == 429) {
        UpstreamAnswer a =
            failed(429,
                   QStringLiteral("The upstream provider '%1' is rate limiting requests: %2")
                       .arg(name, detail),
                   QStringLiteral("upstream_rate_limited"));
        bool ok = false;
        const int seconds = headerValue(headers, "retry-after").trimmed().toInt(&ok);
        a.retryAfter = ok && seconds >= 0 ? QByteArray::number(seconds) : QByteArray("1");
        return a;
    }
    if (status == 401 || status == 403) // not the client's fault: the operator's key was refused
        return failed(502,
                      QStringLiteral("The upstream provider '%1' refused Switchyard's credentials "
                                     "(HTTP %2); the operator should check %3.%1.keys.")
                          .arg(name)
                          .arg(status)
                          .arg(configPath),
                      QStringLiteral("upstream_auth_failed"));
    if (status == 408 || status == 504)
        return failed(504,
                      QStringLiteral("The upstream provider '%1' timed out (HTTP %2): %3")
                          .arg(name)
                          .arg(status)
                          .arg(detail),
                      QStringLiteral("upstream_timeout"));
    if (status >= 500)
        return failed(502,
                      QStringLiteral("The upstream provider '%1' failed (HTTP %2): %3")
                          .arg(name)
                          .arg(status)
                          .arg(detail),
                      QStringLiteral("upstream_failed"));
    if (status == 413)
        return failed(413,
                      QStringLiteral("The upstream provider '%1' refused the request as too "
                                     "large: %2")
                          .arg(name, detail),
                      QStringLiteral("upstream_rejected"));
    if (status >= 400)
        return failed(
            400,
            QStringLiteral("The upstream provider '%1' rejected the request (HTTP %2): %3")
                .arg(name)
                .arg(status)
                .arg(detail),
            QStringLiteral("upstream_rejected"), QStringLiteral("invalid_request_error"));
    return failed(
        502, QStringLiteral("The upstream provider '%1' answered HTTP %2.").arg(name).arg(status),
        QStringLiteral("upstream_failed"));
}

QString ProviderCall::errorMessage(const QByteArray &body)
{
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    QString message;
    const QJsonValue error = o.value("error");
    if (error.isObject())
        message = error.toObject().value("message").toString();
    // fish-speech: {"statusCode", "message", "error": "Bad Request"}; FastAPI-style: detail.
    if (message.isEmpty())
        message = o.value("message").toString();
    if (message.isEmpty() && o.value("detail").isString())
        message = o.value("detail").toString();
    if (message.isEmpty() && !o.value("detail").isUndefined())
        message = QString::fromUtf8(QJsonDocument(QJsonObject{{"detail", o.value("detail")}})
                                        .toJson(QJsonDocument::Compact));
    if (message.isEmpty())
        message = error.toString();
    if (message.isEmpty()) {
        message = QString::fromUtf8(body.left(300)).simplified();
        static const QRegularExpression markup(QStringLiteral("<[^>]*>"));
        message.remove(markup);
        message = message.simplified();
    }
    if (message.isEmpty())
        message = QStringLiteral("(no message)");
    return message.left(500);
}
