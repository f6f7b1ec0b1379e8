#pragma once

#include "http/HttpHeaders.h"
#include "Http1Client.h"

#include <functional>
#include <memory>
#include <QByteArray>
#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QObject>
#include <QTimer>
#include <vector>

class QHostAddress;
class QSocketNotifier;
class UpstreamClient;

enum class UpstreamError
{
    None,
    ConnectFailed, // refused, unreachable, DNS, TLS handshake
    Timeout,       // connect, first byte, idle or total deadline
    Broken,        // the connection dropped mid-response
    Failed         // anything else curl reports
};

struct UpstreamRequest
{
    QByteArray method = "POST";
    QByteArray url;
    QList<QByteArray> headers; // "Name: value"
    QByteArray body;
    int connectTimeoutMs = 10'000;
    int firstByteTimeoutMs = 60'000;
    int idleTimeoutMs = 60'000;
    int totalTimeoutMs = 600'000;

    // For guarded fetches (GuardedFetch.h); the defaults leave a request exactly as before.
    // pinnedResolve: CURLOPT_RESOLVE entries ("host:port:addr[,addr]") kept in a DNS cache of
    // the request's own; when set, curl resolves no name itself, so a host outside the pins
    // fails the call (ConnectFailed) without a DNS query. allowConnect: asked for every address
    // curl is about to dial; false refuses it (curl tries the next address, then fails with
    // ConnectFailed). freshConnection: a new connection, closed after the call, never reused.
    // protocols: CURLOPT_PROTOCOLS_STR, e.g. "http,https". caFile: a PEM bundle of CA
    // certificates (CURLOPT_CAINFO) that verifies the peer instead of the system's CAs (the
    // system's directory is not consulted either); empty: the system's.
    QList<QByteArray> pinnedResolve;
    std::function<bool(const QHostAddress &address, quint16 port)> allowConnect;
    bool freshConnection = false;
    QByteArray protocols;
    QByteArray caFile;
};

// One upstream HTTP call in flight. Callbacks run on the client's thread, in order: onHead
// once (status >= 200), onData for each piece of body as it arrives, onDone once. After
// abort() none of them runs again.
class UpstreamCall
{
public:
    std::function<void(int status, const HttpHeaders &headers)> onHead;
    std::function<void(const QByteArray &data)> onData;
    std::function<void(UpstreamError error, const QString &message)> onDone;

    ~UpstreamCall();
    void abort();
    bool isFinished() const { return m_finished; }
    // Flow control for a relay whose client reads slower than the upstream sends: while paused,
    // no onData runs, curl stops reading the socket (the upstream's sending blocks on TCP) and
    // the idle deadline is suspended; the first byte and total deadlines still apply.
    void setPaused(bool paused);
    bool isPaused() const { return m_paused; }
    // The IP address the call's connection was made to (CURLINFO_PRIMARY_IP, "127.0.0.1" or
    // "::1"), read live while the call runs and kept once it is finished or aborted; empty
    // while no connection has been made, and when none was (refused, unreachable, vetoed by
    // allowConnect).
    QString primaryIp() const;

private:
    friend class UpstreamClient;
    friend class Http1Client;
    UpstreamClient *m_client = nullptr;
    std::unique_ptr<Http1Exchange> m_http1; // set when Http1Client serves the call, not libcurl
    void *m_easy = nullptr;
    QList<QByteArray> m_headerStorage;
    void *m_headerList = nullptr;
    void *m_resolveList = nullptr;
    void *m_share = nullptr;
    std::function<bool(const QHostAddress &, quint16)> m_allowConnect;
    QByteArray m_protocols;
    QByteArray m_caFile;
    QByteArray m_body;
    QString m_primaryIp; // kept when the handle goes
    int m_status = 0;
    HttpHeaders m_headers;
    bool m_headDelivered = false;
    bool m_finished = false;
    bool m_paused = false;
    qint64 m_startedMs = 0;
    qint64 m_lastActivityMs = 0;
    int m_firstByteTimeoutMs = 0;
    int m_idleTimeoutMs = 0;
    QString m_deadlineMessage;
};

using UpstreamCallPtr = std::shared_ptr<UpstreamCall>;

// The upstream HTTP client: libcurl's multi interface driven by this thread's event loop
// (QSocketNotifier + QTimer), and Http1Client for plain http to an IP literal (see there). One
// client per thread; connections are pooled and reused per host,
// with no per-host cap (Qt 6.4's QNetworkAccessManager stops at 6), HTTP/2 over TLS where the
// upstream offers it; at most 256 idle ones are kept, none after 30 s without a call. No redirects,
// cookies, proxies from the environment or decompression: bytes are relayed as the upstream sent
// them.
class UpstreamClient : public QObject
{
    Q_OBJECT
public:
    explicit UpstreamClient(QObject *parent = nullptr);
    ~UpstreamClient() override;

    // Starts the call; the callbacks must be set on the returned object before control returns
    // to the event loop (they are never called synchronously from start()).
    UpstreamCallPtr start(const UpstreamRequest &request);

    // How long the client waits without a call before it drops its cached connections and kept
    // notifiers (default kIdleDropMs); tests shorten it.
    void setIdleDropMs(int ms) { m_idleDrop.setInterval(ms); }
    // Notifiers kept, disabled, for the next socket (at most kSpareSockets; none once idle).
    int keptNotifiers() const { return int(m_spareSockets.size()); }
    static constexpr size_t kSpareSockets = 64;
    // Whether Http1Client serves the calls it can (the default); false sends every call through
    // libcurl (tests run both).
    void setOwnHttp1(bool on) { m_ownHttp1 = on; }
    // Idle plain-HTTP connections kept by Http1Client.
    int idleHttp1Connections() const { return m_http1.idleCount(); }

private:
    friend class UpstreamCall;
    friend class Http1Client;
    struct Socket;
    static int socketCallback(void *easy, int fd, int what, void *clientp, void *socketp);
    static int timerCallback(void *multi, long timeoutMs, void *clientp);
    static size_t headerCallback(char *data, size_t size, size_t count, void *userp);
    static size_t writeCallback(char *data, size_t size, size_t count, void *userp);
    static bool connectAllowed(UpstreamCall *call, const void *sockaddr);

    void socketAction(int fd, int events);
    void drainMessages();
    void finish(UpstreamCall *call, UpstreamError error, const QString &message);
    void release(UpstreamCall *call);
    void deliverHead(UpstreamCall *call);
    void sweepDeadlines();
    void addStarted();

    void setUpEasy(UpstreamCall *call, const UpstreamRequest &request);
    void initMulti();
    void dropSpareSockets();

    static constexpr int kIdleDropMs = 30'000;
    void *m_multi = nullptr;
    QTimer m_idleDrop;
    QTimer m_curlTimer;
    QTimer m_sweep;
    QElapsedTimer m_clock;
    QHash<UpstreamCall *, UpstreamCallPtr> m_calls;
    std::vector<std::weak_ptr<UpstreamCall>> m_starting; // to add to the multi handle
    std::vector<Socket *> m_spareSockets;                // notifiers disabled, for the next socket
    bool m_ownHttp1 = true;
    Http1Client m_http1{this}; // last: its connections' notifiers go before the client does
};
