#pragma once

#include "http/HttpHeaders.h"
#include "upstream/HostResolver.h"
#include "upstream/UrlGuard.h"

#include <functional>
#include <memory>
#include <QByteArray>
#include <QElapsedTimer>
#include <QHash>
#include <QHostAddress>
#include <QObject>
#include <QPointer>

class QTimer;
class UpstreamCall;
class UpstreamClient;
class GuardedFetch;

enum class FetchError
{
    None,
    Refused,          // the guard refused the URL, a redirect hop or a dialled address
    Resolve,          // the host did not resolve
    Connect,          // no connection (refused, unreachable, TLS)
    Timeout,          // the policy's total time (or connect time) ran out
    TooLarge,         // the body exceeded the policy's maxBytes
    TooManyRedirects, // more redirects than the policy's maxRedirects
    Http,             // the final answer was not 2xx (a 3xx too when redirects are not followed)
    Broken,           // the connection dropped mid-answer
    Stopped,          // onHead or onData returned false
    Failed            // anything else libcurl reports
};

struct FetchRequest
{
    QString url;
    QByteArray method = "GET"; // GET downloads; POST delivers a callback
    QList<QByteArray> headers; // "Name: value"
    QByteArray body;
};

struct FetchOutcome
{
    FetchError error = FetchError::None;
    QString message; // for the record; never an address that a name resolved to
    int status = 0;  // the final answer's status, Http errors included
    HttpHeaders headers;
    QByteArray url; // the URL that gave the final answer (or was refused), canonical when checked
    int redirects = 0;
    qint64 bytes = 0;            // body bytes handed to onData
    QHostAddress refusedAddress; // the address behind a Refused, for the operator's log only
    // The IP address dialled for the final hop ("127.0.0.1"), for the operator's delivery log;
    // empty when that hop made no connection (refused by the guard, a connect failure). A
    // TLS failure or a timeout after connecting still names it.
    QString address;
    bool ok() const { return error == FetchError::None; }
};

// One guarded fetch in flight. Callbacks run on the fetcher's thread, never from inside
// start(): onHead once for a 2xx answer (false stops the fetch), onData for each piece of body
// as it arrives (false stops; when unset, the fetch ends at the head and the body is not
// read: a callback delivery needs only the status), onDone exactly once. With the policy's
// errorBodyBytes, onData also gets up to that much of a non-2xx answer's body before onDone
// reports FetchError::Http. After abort() none
// runs again.
class GuardedFetchCall
{
public:
    std::function<bool(int status, const HttpHeaders &headers)> onHead;
    std::function<bool(const QByteArray &chunk)> onData;
    std::function<void(const FetchOutcome &outcome)> onDone;

    ~GuardedFetchCall();
    void abort();
    bool isFinished() const { return m_finished; }

private:
    friend class GuardedFetch;
    QPointer<GuardedFetch> m_fetch;
    UrlPolicy m_policy;
    QString m_url; // the hop being made, as given (the request's URL or a resolved Location)
    QByteArray m_method;
    QList<QByteArray> m_headers;
    QByteArray m_body;
    UrlGuard::GuardedUrl m_current;
    QList<QHostAddress> m_pinned;
    std::shared_ptr<UpstreamCall> m_upstream;
    QPointer<QTimer> m_deadline;
    QElapsedTimer m_clock;
    FetchOutcome m_outcome;
    int m_hop = 0; // bumped for every hop: answers for an older hop are ignored
    bool m_connectRefused = false;
    bool m_errorBody = false; // reading a non-2xx answer's body (policy errorBodyBytes)
    QString m_errorMessage;   // that answer's FetchError::Http message
    bool m_finished = false;
};

using GuardedFetchCallPtr = std::shared_ptr<GuardedFetchCall>;

// Fetches user-supplied URLs through the guard (UrlGuard.h), on the thread's event loop and
// never blocking it. For every hop: the URL is checked (scheme, user info, port, host), the
// name resolved through the HostResolver and every address checked; libcurl is then pinned
// to exactly those addresses (CURLOPT_RESOLVE in a DNS cache of the request's own, with curl's
// own resolution vetoed), and an open-socket check refuses any address dialled that is not
// one of them or not allowed, so an answer that changes between check and connect cannot get
// through. Redirects are followed by hand, each hop checked again, at most policy.maxRedirects.
// The body streams to onData, bounded by maxBytes; the whole fetch is bounded by
// totalTimeoutMs. Connections are fresh and closed after each hop, on a libcurl client of the
// fetcher's own: a guarded fetch never reuses a connection another request opened. No cookies,
// proxies, decompression or signals, as in UpstreamClient.
class GuardedFetch : public QObject
{
    Q_OBJECT
public:
    // With the system resolver.
    explicit GuardedFetch(QObject *parent = nullptr);
    explicit GuardedFetch(std::shared_ptr<HostResolver> resolver, QObject *parent = nullptr);
    ~GuardedFetch() override;

    // Starts the fetch; set the callbacks on the returned object before control returns to the
    // event loop. A URL the guard refuses ends with Refused, without any connection.
    GuardedFetchCallPtr start(const FetchRequest &request, const UrlPolicy &policy);

    // The submission-time check, resolution included, without connecting: done(None, "") when
    // the URL is acceptable now, done(Refused, reason) or done(Resolve, message) otherwise.
    // done runs later, never from inside preflight(), and not once context is destroyed.
    void preflight(const QString &url, const UrlPolicy &policy, QObject *context,
                   std::function<void(FetchError error, const QString &message)> done);

private:
    friend class GuardedFetchCall;
    void startHop(const GuardedFetchCallPtr &call);
    void connectHop(const GuardedFetchCallPtr &call);
    void onHead(const GuardedFetchCallPtr &call, int status, const HttpHeaders &headers);
    void onData(const GuardedFetchCallPtr &call, const QByteArray &chunk);
    void finish(GuardedFetchCall *call, FetchError error, const QString &message);
    void release(GuardedFetchCall *call);

    std::shared_ptr<HostResolver> m_resolver;
    UpstreamClient *m_client;
    QHash<GuardedFetchCall *, GuardedFetchCallPtr> m_calls;
};
