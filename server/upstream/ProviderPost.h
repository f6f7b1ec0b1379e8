#pragma once

#include "http/HttpHeaders.h"
#include "upstream/UpstreamClient.h"
#include "upstream/UpstreamProvider.h"

#include <functional>
#include <memory>
#include <QByteArray>
#include <QSet>
#include <QString>

// What one POST to an upstream provider came to, mapped as every family maps its upstreams:
// the status and message a client gets (server/upstream/README.md, "Upstream errors").
struct UpstreamAnswer
{
    int status = 0;         // 200: `body` is the answer; else the status to answer with
    QByteArray contentType; // success: the upstream's Content-Type
    QByteArray body;        // success: the whole answer
    QString message;        // failure: for the client, upstream keys scrubbed
    QString type;           // failure: the envelope's type (upstream_error, ...)
    QString code;           // failure: the envelope's code (upstream_rate_limited, ...)
    QByteArray retryAfter;  // 429: seconds, for the Retry-After header
    bool ok() const { return status == 200; }
};

// One whole-body POST to a provider, with its keys in rotation: the key comes from the
// family's KeyRotation (Authorization: Bearer; none when the provider has no key); a 429 or
// 5xx rests that key and, when the provider has another, the call is made once more with it.
// The answer is collected up to maxAnswerBytes (502 upstream_too_large beyond). Failures map to
//   connect failure 502 upstream_unreachable; timeout or 408/504 504 upstream_timeout;
//   429 429 upstream_rate_limited (Retry-After kept); 401/403 502 upstream_auth_failed (names
//   "<configPath>.<provider>.keys"); other 5xx 502 upstream_failed; other 4xx 400
//   upstream_rejected (invalid_request_error) with the upstream's message.
// Callbacks run on the client's thread; `done` runs exactly once, never after abort().
class ProviderPost : public std::enable_shared_from_this<ProviderPost>
{
public:
    using Done = std::function<void(const UpstreamAnswer &)>;

    struct Request
    {
        QByteArray url; // the provider's baseUrl plus the path
        QByteArray contentType;
        QByteArray body;
        QString configPath; // where the provider is configured, e.g. "audio.providers"
        qsizetype maxAnswerBytes = 64 * 1024 * 1024;
    };

    static std::shared_ptr<ProviderPost> start(UpstreamClient &client, KeyRotation &keys,
                                               const UpstreamProvider &provider, Request request,
                                               Done done);
    // Stops the call; `done` does not run.
    void abort();

    // The message of an upstream error body: OpenAI's error.message, a top-level message or
    // FastAPI's detail, else a short excerpt without markup.
    static QString errorMessage(const QByteArray &body);

private:
    ProviderPost() = default;
    void attempt(const QString &key);
    void onHead(int status, const HttpHeaders &headers);
    void onData(const QByteArray &data);
    void onDone(UpstreamError error, const QString &message);
    void fail(int status, const QString &message, const QString &type, const QString &code,
              const QByteArray &retryAfter = {});
    void finish(const UpstreamAnswer &answer);
    QString scrub(const QString &text) const;

    UpstreamClient *m_client = nullptr;
    KeyRotation *m_keys = nullptr;
    UpstreamProvider m_provider;
    Request m_request;
    Done m_done;
    QStringList m_tried; // a few keys: a set would allocate room for 48 on its first insert
    QString m_key;
    UpstreamCallPtr m_call;
    int m_status = 0;
    HttpHeaders m_headers;
    QByteArray m_answer;
    bool m_tooLarge = false;
    bool m_finished = false;
};

using ProviderPostPtr = std::shared_ptr<ProviderPost>;
