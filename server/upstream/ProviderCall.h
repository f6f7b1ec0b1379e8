#pragma once

#include "http/HttpHeaders.h"
#include "upstream/ProviderAuth.h"
#include "upstream/UpstreamClient.h"
#include "upstream/UpstreamProvider.h"

#include <functional>
#include <memory>
#include <QByteArray>
#include <QString>
#include <QStringList>

// What a call to an upstream provider came to, as a client is to see it: the answer, or the
// failure mapped once for every family (server/upstream/README.md, "Upstream errors").
struct UpstreamAnswer
{
    int status = 0;         // 200: the answer; else the status to answer the client with
    QByteArray contentType; // success: the upstream's Content-Type
    QByteArray body;        // success of a whole-body call: the whole answer
    QString message;        // failure: for the client, naming the provider, its keys scrubbed
    QString type;           // failure: the envelope's type; empty: the envelope's for the status
    QString code;           // failure: upstream_unreachable, upstream_rate_limited, ...
    QByteArray retryAfter;  // 429: whole seconds, for the Retry-After header
    bool ok() const { return status == 200; }
};

// The one way a family calls an upstream provider (the text gateway, audio, images, decisions,
// social). One call is:
//   a key     from the family's KeyRotation (sent as ProviderAuth says; none when the provider
//             has no key);
//   attempts  an answer whose head is 429 or 5xx rests that key for the provider's restMs and,
//             while the provider has a key not tried yet (at most maxKeys keys, 0: all), the
//             call is made again with the next key. Only at the head: nothing has reached the
//             client then; once an answer is handed on, nothing is retried. A connection that
//             fails is not retried (another key would not reach it either);
//   timeouts  the provider's connect, first-byte, idle and total (Request::totalTimeoutMs
//             replaces the total);
//   failures  mapped by failure() and transportFailure() below, the provider's keys scrubbed
//             from every message (KeyScrub);
//   delivery  Mode::Whole collects the answer (up to maxAnswerBytes); Mode::Stream hands on a
//             2xx answer as it arrives; Mode::Relay hands on any answer as it arrives except
//             one the call retried and 401 (the operator's key, a failure), for a pass-through;
//   the end   abort() stops it (the client left): nothing more is delivered.
// Callbacks run on the client's thread, never from inside start(). The call keeps itself and its
// receiver alive until it has delivered its end (answered() or ended()) or is aborted.
class ProviderCall : public std::enable_shared_from_this<ProviderCall>
{
public:
    enum class Mode
    {
        Whole,
        Stream,
        Relay
    };

    struct Request
    {
        QByteArray method = "POST";
        QByteArray url;            // the provider's baseUrl plus the path (and query)
        QList<QByteArray> headers; // "Name: value", all but the key's
        QByteArray body;
        ProviderAuth auth = ProviderAuth::Bearer;
        QString configPath; // where the provider's keys are set, e.g. "audio.providers"
        Mode mode = Mode::Whole;
        qsizetype maxAnswerBytes = 64 * 1024 * 1024; // Whole: more is 502 upstream_too_large
        int totalTimeoutMs = 0;                      // 0: the provider's
        int maxKeys = 0;                             // keys tried at most; 0: every key
    };

    // Who hears of the call. Whole: answered() once, with the answer or the failure. Stream and
    // Relay: answered() once with a failure before any answer, or started(), received() for each
    // piece, then ended() once: UpstreamError::None when the answer arrived whole, else how it
    // was cut (the message scrubbed).
    class Receiver
    {
    public:
        virtual ~Receiver() = default;
        virtual void answered(const UpstreamAnswer &answer) = 0;
        virtual void started(int status, const HttpHeaders &headers);
        virtual void received(const QByteArray &data);
        virtual void ended(UpstreamError error, const QString &message);
    };
    using Done = std::function<void(const UpstreamAnswer &)>;

    static std::shared_ptr<ProviderCall> start(UpstreamClient &client, KeyRotation &keys,
                                               const UpstreamProvider &provider, Request request,
                                               std::shared_ptr<Receiver> receiver);
    // A whole-body call (Mode::Whole) whose answer goes to `done`.
    static std::shared_ptr<ProviderCall> start(UpstreamClient &client, KeyRotation &keys,
                                               const UpstreamProvider &provider, Request request,
                                               Done done);
    ~ProviderCall();

    // Stops the call; the receiver hears nothing more.
    void abort();
    // Whether the call has delivered its end or was aborted.
    bool isFinished() const { return m_finished; }
    // Flow control for a stream whose client reads slower than the upstream sends
    // (UpstreamCall::setPaused).
    void setPaused(bool paused);

    // ---- the error mapper (pure), every family's ----
    // The failure for an upstream answer of `status` (not 2xx) with its headers and (the start
    // of) its body:
    //   429        429 upstream_rate_limited, Retry-After as sent (whole seconds, else 1)
    //   401, 403   502 upstream_auth_failed: the operator's key, naming <configPath>.<name>.keys
    //   408, 504   504 upstream_timeout
    //   other 5xx  502 upstream_failed
    //   413        413 upstream_rejected
    //   other 4xx  400 upstream_rejected (invalid_request_error) with the upstream's message
    //   else       502 upstream_failed
    // 502 and 504 have the type upstream_error; the rest the envelope's type for the status.
    static UpstreamAnswer failure(int status, const HttpHeaders &headers, const QByteArray &body,
                                  const UpstreamProvider &provider, const QString &configPath);
    // The failure for a call that got no answer: no connection 502 upstream_unreachable, a
    // timeout 504 upstream_timeout, a broken answer 502 upstream_failed.
    static UpstreamAnswer transportFailure(UpstreamError error, const QString &message,
                                           const UpstreamProvider &provider);
    // The message of an upstream error body: OpenAI's and the messages protocol's error.message,
    // a top-level message or FastAPI's detail, else a short excerpt without markup.
    static QString errorMessage(const QByteArray &body);

private:
    ProviderCall() = default;
    void attempt(const QString &key);
    void onHead(int status, const HttpHeaders &headers);
    void onData(const QByteArray &data);
    void onDone(UpstreamError error, const QString &message);
    bool retry();
    void answer(const UpstreamAnswer &answer);
    void stopUpstream();

    UpstreamClient *m_client = nullptr;
    KeyRotation *m_keys = nullptr;
    UpstreamProvider m_provider;
    Request m_request;
    std::shared_ptr<Receiver> m_receiver;
    Done m_done;
    QStringList m_tried; // a few keys: a set would allocate room for 48 on its first insert
    QString m_key;
    UpstreamCallPtr m_call;
    int m_status = 0;
    HttpHeaders m_headers;
    QByteArray m_answer;    // Whole: the answer; any mode: the start of an error answer
    bool m_started = false; // an answer is being handed on
    bool m_finished = false;
};

using ProviderCallPtr = std::shared_ptr<ProviderCall>;
