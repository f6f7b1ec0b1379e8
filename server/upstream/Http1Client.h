#pragma once

#include "Http1Response.h"

#include <memory>
#include <QByteArray>
#include <QHash>
#include <QString>
#include <sys/socket.h>
#include <vector>

class QSocketNotifier;
class UpstreamCall;
class UpstreamClient;
struct UpstreamRequest;
struct Http1Connection;
enum class UpstreamError; // UpstreamClient.h

// What a call served by Http1Client carries besides UpstreamCall's own members.
struct Http1Exchange
{
    QByteArray origin; // "address port": the pool's key
    sockaddr_storage address{};
    socklen_t addressLength = 0;
    QString ip;          // the address, printed as CURLINFO_PRIMARY_IP prints it
    QByteArray request;  // the bytes to send: head and body
    bool noBody = false; // a HEAD request
    int connectTimeoutMs = 0;
    int totalTimeoutMs = 0;
    bool retried = false; // sent again once after a reused connection turned out closed
    Http1Connection *connection = nullptr;
};

// UpstreamClient's own HTTP/1.1 client for the calls that need nothing else: plain http to an IP
// literal (a local model server, the fake upstreams of the tests and benchmarks), with none of
// the guarded-fetch options. libcurl serves everything else (names, https, HTTP/2, guarded
// fetches). perf put libcurl's multi interface at about a third of the server thread's time per
// chat completion: a socket callback, a timer callback and notifier changes for each transfer.
// Here a connection is one socket with a read notifier that stays enabled for its life, idle or
// not (an idle connection the peer closes is dropped at once), and a write notifier used only
// while connecting or when the kernel takes part of a request.
//
// Connections are kept per origin for reuse (at most kMaxIdle idle ones; all of them go when the
// owner drops its cache). A request sent on a reused connection that the peer closes before any
// byte of an answer is sent once more on a new connection, as libcurl does. Deadlines are the
// owner's: it reads connecting() and the exchange's limits in its sweep.
class Http1Client
{
public:
    explicit Http1Client(UpstreamClient *owner);
    ~Http1Client();
    Http1Client(const Http1Client &) = delete;
    Http1Client &operator=(const Http1Client &) = delete;

    // The exchange for a request this client serves, or null when libcurl must serve it (not
    // plain http, not an IP literal, a guarded-fetch option, a header holding a line break).
    static std::unique_ptr<Http1Exchange> plan(const UpstreamRequest &request);

    // Starts the call's exchange: on an idle connection to its origin, else a new one. Called
    // from the event loop, never from inside another call's callback.
    void begin(UpstreamCall *call);
    // The call is over (aborted, expired, or its connection broke): a connection still serving
    // it (the response not read to its end) is closed. A complete response has already put
    // its connection back in the pool.
    void detach(UpstreamCall *call);
    void setPaused(UpstreamCall *call, bool paused);
    // Whether the call's connection is still being made, and since when (the owner's clock).
    bool connecting(const UpstreamCall *call, qint64 *sinceMs) const;

    void dropIdle(); // closes every idle connection
    int idleCount() const { return m_idleCount; }

    static constexpr int kMaxIdle = 256;

private:
    Http1Connection *open(UpstreamCall *call, int *error);
    void attach(Http1Connection *c, UpstreamCall *call);
    void connected(Http1Connection *c);
    void send(Http1Connection *c);
    void onReadable(Http1Connection *c);
    void onWritable(Http1Connection *c);
    // Parses and hands on what arrived; false when the connection no longer serves the call
    // (complete, failed or closed: c may be gone).
    bool deliver(Http1Connection *c, const char *p, const char *end);
    void resume(Http1Connection *c);
    void ended(Http1Connection *c, int error);
    void complete(Http1Connection *c, bool leftovers);
    void failCall(Http1Connection *c, UpstreamError kind, QString message); // a copy: c goes
    void retryOrFail(Http1Connection *c, UpstreamError kind, QString message);
    void close(Http1Connection *c);
    Http1Connection *takeIdle(const QByteArray &origin);

    UpstreamClient *m_owner;
    QHash<QByteArray, std::vector<Http1Connection *>> m_idle; // most recently used last
    int m_idleCount = 0;
    std::vector<Http1Connection *> m_all;
    std::unique_ptr<char[]> m_buffer; // one read's bytes
};
