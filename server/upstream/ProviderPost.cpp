#include "upstream/ProviderPost.h"

#include "upstream/KeyScrub.h"
#include "upstream/ProviderAuth.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

namespace {

constexpr qsizetype kMaxErrorBytes = 64 * 1024;

} // namespace

std::shared_ptr<ProviderPost> ProviderPost::start(UpstreamClient &client, KeyRotation &keys,
                                                  const UpstreamProvider &provider, Request request,
                                                  Done done)
{
    auto call = std::shared_ptr<ProviderPost>(new ProviderPost);
    call->m_client = &client;
    call->m_keys = &keys;
    call->m_provider = provider;
    call->m_request = std::move(request);
    call->m_done = std::move(done);
    call->attempt(keys.pick(provider));
    return call;
}

void ProviderPost::abort()
{
    m_finished = true;
    m_done = nullptr; // drops what the callback holds (the request waiting for it)
    if (m_call) {
        m_call->abort();
        m_call.reset();
    }
}

void ProviderPost::attempt(const QString &key)
{
    m_key = key;
    if (!key.isEmpty() && !m_tried.contains(key))
        m_tried.append(key);
    UpstreamRequest req;
    req.url = m_request.url;
    req.body = m_request.body;
    // "Expect:" off: curl would wait for a 100 Continue before a large upload, and some
    // servers never send one.
    req.headers = {"Content-Type: " + m_request.contentType, "Expect:"};
    if (const QByteArray auth = authHeader(ProviderAuth::Bearer, key); !auth.isEmpty())
        req.headers.append(auth);
    m_provider.applyTimeouts(req);
    m_status = 0;
    m_headers.clear();
    m_answer.clear();
    m_tooLarge = false;

    m_call = m_client->start(req);
    std::weak_ptr<ProviderPost> weak = shared_from_this();
    m_call->onHead = [weak](int status, const HttpHeaders &headers) {
        if (auto self = weak.lock())
            self->onHead(status, headers);
    };
    m_call->onData = [weak](const QByteArray &data) {
        if (auto self = weak.lock())
            self->onData(data);
    };
    // The upstream call keeps this one alive until it ends.
    auto self = shared_from_this();
    m_call->onDone = [self](UpstreamError error, const QString &message) {
        self->onDone(error, message);
    };
}

void ProviderPost::onHead(int status, const HttpHeaders &headers)
{
    m_status = status;
    m_headers = headers;
    if (status != 429 && status < 500)
        return;
    // This key is rate limited or its upstream failed: it rests, and the next key (if the
    // provider has one) gets one more try.
    if (!m_key.isEmpty())
        m_keys->rest(m_provider, m_key);
    if (m_tried.size() >= 2 || m_key.isEmpty())
        return;
    const QString next = m_keys->pick(m_provider, m_tried);
    if (next.isEmpty())
        return;
    m_call->abort();
    m_call.reset();
    attempt(next);
}

void ProviderPost::onData(const QByteArray &data)
{
    if (m_finished || m_tooLarge)
        return;
    const bool success = m_status >= 200 && m_status < 300;
    const qsizetype limit = success ? m_request.maxAnswerBytes : kMaxErrorBytes;
    if (m_answer.size() + data.size() > limit) {
        if (success) {
            m_tooLarge = true;
            m_call->abort();
            m_call.reset();
            fail(502,
                 QStringLiteral("The upstream provider '%1' sent an answer over %2 MiB.")
                     .arg(m_provider.name)
                     .arg(m_request.maxAnswerBytes >> 20),
                 QStringLiteral("upstream_error"), QStringLiteral("upstream_too_large"));
            return;
        }
        m_answer.append(data.left(limit - m_answer.size()));
        return;
    }
    m_answer.append(data);
}

void ProviderPost::onDone(UpstreamError error, const QString &message)
{
    m_call.reset();
    if (m_finished)
        return;
    const QString name = m_provider.name;
    const QString upstreamError = QStringLiteral("upstream_error");
    switch (error) {
    case UpstreamError::None:
        break;
    case UpstreamError::ConnectFailed:
        return fail(502,
                    QStringLiteral("Could not reach the upstream provider '%1': %2.")
                        .arg(name, scrub(message)),
                    upstreamError, QStringLiteral("upstream_unreachable"));
    case UpstreamError::Timeout:
        return fail(504,
                    QStringLiteral("The upstream provider '%1' did not answer in time (%2).")
                        .arg(name, scrub(message)),
                    upstreamError, QStringLiteral("upstream_timeout"));
    case UpstreamError::Broken:
    case UpstreamError::Failed:
        return fail(
            502, QStringLiteral("The upstream provider '%1' failed: %2.").arg(name, scrub(message)),
            upstreamError, QStringLiteral("upstream_failed"));
    }
    if (m_status >= 200 && m_status < 300) {
        UpstreamAnswer a;
        a.status = 200;
        a.contentType = headerValue(m_headers, "content-type");
        a.body = m_answer;
        return finish(a);
    }
    const QString detail = scrub(errorMessage(m_answer));
    const QString invalid = QStringLiteral("invalid_request_error");
    if (m_status == 429) {
        QByteArray retry = headerValue(m_headers, "retry-after").trimmed();
        bool ok = false;
        const int seconds = retry.toInt(&ok);
        fail(429,
             QStringLiteral("The upstream provider '%1' is rate limiting requests: %2")
                 .arg(name, detail),
             QStringLiteral("rate_limit_error"), QStringLiteral("upstream_rate_limited"),
             ok && seconds >= 0 ? QByteArray::number(seconds) : QByteArray("1"));
    } else if (m_status == 401 || m_status == 403) {
        // Not the client's fault: the operator's key was refused.
        fail(502,
             QStringLiteral("The upstream provider '%1' refused Switchyard's credentials (HTTP "
                            "%2); the operator should check %3.%1.keys.")
                 .arg(name)
                 .arg(m_status)
                 .arg(m_request.configPath),
             upstreamError, QStringLiteral("upstream_auth_failed"));
    } else if (m_status == 408 || m_status == 504) {
        fail(504,
             QStringLiteral("The upstream provider '%1' timed out (HTTP %2): %3")
                 .arg(name)
                 .arg(m_status)
                 .arg(detail),
             upstreamError, QStringLiteral("upstream_timeout"));
    } else if (m_status >= 500) {
        fail(502,
             QStringLiteral("The upstream provider '%1' failed (HTTP %2): %3")
                 .arg(name)
                 .arg(m_status)
                 .arg(detail),
             upstreamError, QStringLiteral("upstream_failed"));
    } else if (m_status >= 400) {
        fail(400,
             QStringLiteral("The upstream provider '%1' rejected the request (HTTP %2): %3")
                 .arg(name)
                 .arg(m_status)
                 .arg(detail),
             invalid, QStringLiteral("upstream_rejected"));
    } else {
        fail(502,
             QStringLiteral("The upstream provider '%1' answered HTTP %2.").arg(name).arg(m_status),
             upstreamError, QStringLiteral("upstream_failed"));
    }
}

void ProviderPost::fail(int status, const QString &message, const QString &type,
                        const QString &code, const QByteArray &retryAfter)
{
    UpstreamAnswer a;
    a.status = status;
    a.message = message;
    a.type = type;
    a.code = code;
    a.retryAfter = retryAfter;
    finish(a);
}

void ProviderPost::finish(const UpstreamAnswer &answer)
{
    if (m_finished)
        return;
    m_finished = true;
    Done done = std::move(m_done);
    m_done = nullptr;
    if (done)
        done(answer);
}

QString ProviderPost::scrub(const QString &text) const
{
    return KeyScrub::scrub(text, m_provider.allKeys());
}

QString ProviderPost::errorMessage(const QByteArray &body)
{
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    const QJsonObject o = doc.object();
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
