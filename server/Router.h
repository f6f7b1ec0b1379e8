#pragma once

#include "ErrorEnvelope.h"

#include <functional>
#include <memory>
#include <QByteArray>
#include <QHash>
#include <QList>
#include <QString>
#include <QStringList>

class RequestContext;
using ContextPtr = std::shared_ptr<RequestContext>;

enum class AuthMode
{
    Public,
    ApiKey,
    ControlToken
};

// One endpoint as a service family registers it: what it needs from the pipeline.
struct RouteSpec
{
    QByteArray method;
    // Literal segments and {name} placeholders: /api/v1/api-keys/{id}; a last {name+} takes
    // the rest of the path, one or more segments (empty ones dropped), joined by '/'. The
    // first route registered that matches wins.
    QString pattern;
    // Metrics label; empty: the registering family's name. The core's routes say "public".
    QString family;
    AuthMode auth = AuthMode::ApiKey;
    QString scope;                              // required control-token scope
    QString bucket = QStringLiteral("default"); // rate-limit bucket
    qint64 reservation = 0; // credit units that must be available before the handler runs
    bool upload = false;    // multipart body: the upload limit applies instead of the JSON one
    qint64 bodyLimit = 0;   // this route's own body limit (0: the server's JSON or upload one)
    QString tooLarge;       // the 413 message for a body over the limit (empty: a generic one)
    ErrorStyle errorStyle;  // the envelope of this route's errors (default: the core's)
    // A GET route answers HEAD as GET without the body. False: HEAD gets 405 before the
    // credential, the rate limit and the credit hold (a paid upstream call for an answer
    // without its content).
    bool head = true;
    std::function<void(const ContextPtr &)> handler;
};

// Routes in registration order, found through a tree of path segments: a request visits only
// the routes whose literal segments it has, then the first match in registration order wins,
// as a linear scan would decide (tests/server/tst_router.cpp checks both against each other).
class Router
{
public:
    struct Match
    {
        const RouteSpec *route = nullptr;
        QHash<QString, QString> params;
        QStringList allowedMethods; // when the path exists but not for this method
    };

    void add(RouteSpec spec);
    Match match(const QByteArray &method, const QString &path) const;
    // The route a path would reach, ignoring the method (used before the body is read).
    const RouteSpec *anyForPath(const QString &path) const;

private:
    struct Entry
    {
        QStringList segments;
        std::unique_ptr<RouteSpec> spec;
    };
    // A request's path as views of its segments: looking a route up copies no segment. The
    // literal children are a sorted vector searched by comparison, not a QHash: under billed
    // load (perf of the server thread, tests/bench/thread-costs.sh) the two lookups a request
    // makes (its body limit, then its route) took 11% of the thread with QStringList and QHash,
    // most of it hashing segments and copying them, and 3.4% this way.
    using Segments = QList<QStringView>;
    struct Node
    {
        std::vector<std::pair<QString, int>> literal; // segment -> node, sorted by segment
        int param = -1;                               // {name}: any one non-empty segment
        std::vector<int> rest; // entries ending in {name+} here: one or more segments
        std::vector<int> end;  // entries whose pattern ends here
        // The literal child for a segment, or -1; where a new one would go in *at.
        int child(QStringView segment, size_t *at = nullptr) const;
    };
    static bool matches(const QStringList &pattern, const Segments &path,
                        QHash<QString, QString> *params);
    // Indexes of the entries that may match, ascending (each still checked with matches()).
    std::vector<int> candidates(const Segments &path) const;
    void collect(int node, const Segments &path, qsizetype depth, std::vector<int> &out) const;
    std::vector<Entry> m_entries;
    std::vector<Node> m_nodes{Node{}};
};
