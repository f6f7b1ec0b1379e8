#pragma once

#include "ErrorEnvelope.h"
#include "Migrations.h"
#include "Router.h"
#include "ServerSettings.h"
#include "UsageMeters.h"

#include <functional>
#include <memory>
#include <QCommandLineOption>
#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <stdexcept>
#include <vector>

class DatabaseService;
class JobQueue;
class KeyBudgets;
class Metrics;
class Pipeline;
class QCommandLineParser;
class QObject;
class QTextStream;
class Store;
class UpstreamClient;
class WebhookOutbox;

// What a family may use of the server its routes are built for, and nothing else: the host
// interface. The server makes it before it asks the families for their routes and keeps it for
// its own life, so a handler may keep a reference to it. It lives on the server thread, and
// everything it offers is used there.
class ServerScope
{
public:
    ServerScope(const ServerScope &) = delete;
    ServerScope &operator=(const ServerScope &) = delete;
    ~ServerScope();

    // Parent of what a family makes for this server (upstream clients, watchers, its own
    // per-server state): it lives on the server thread and is destroyed with that server.
    QObject *parent() const { return m_parent; }

    // Money. A request holds its worst case (its route's reservation, RequestContext::reserve)
    // and is settled by the pipeline when it answers (RequestContext::usage). Money that is not
    // a request's own settlement (a hold that outlives the request, a charge after the answer,
    // a refund) is written through the one money path, database().writeMoney(), in one
    // transaction with the family's own rows; once committed, the balance it left is told here.
    //
    // Tells this server's credit gate the balance a ledger entry committed outside a request's
    // settlement left, before the request's hold in memory goes: the next request admitted
    // sees it. Its floor is what this instance's other requests hold (held()).
    void noteBalance(qint64 accountId, qint64 balanceAfter, qint64 ledgerId) const;
    // The credit units the requests in progress on this server hold on an account.
    qint64 held(qint64 accountId) const;
    // Keys' budgets (KeyBudgets.h): the clock and zone their periods are reckoned by, and
    // what this server's requests hold on each key.
    KeyBudgets &budgets() const;

    // Storage: the database service, for the family's own tables (SQL in models/<family>/)
    // and the money path above.
    DatabaseService &database() const { return m_db; }

    // Executors: the queue of `workers` threads named `name` (shown by top and perf) that at
    // most `capacity` requests hold at once (JobQueue.h), made on first use for this server and
    // shared by every later call with that name; jobs run off the server thread, their
    // continuations on it. RequestContext::offload() runs a request's work there, answering
    // busy when it is full. Destroyed with the server.
    JobQueue &executor(const QString &name, int workers, int capacity) const;

    // Upstream calls: this server's upstream client (on the server's event loop), made on
    // first use.
    UpstreamClient &upstream() const;

    // Metrics: the server's registry behind GET /metrics (collectors, gauges, counters).
    Metrics &metrics() const;

    // Offers the family's webhook outbox for the core's own webhooks (alerts.webhook_url): a
    // family that keeps one calls this from routes(). It must outlive the server.
    void provideOutbox(WebhookOutbox *outbox) const;
    // Registries: the rate-limit tiers an API key may name (the configuration's and
    // "default").
    QStringList rateTiers() const;

private:
    friend class Server;
    ServerScope(Pipeline &pipeline, DatabaseService &db, QObject *parent);

    Pipeline &m_pipeline;
    DatabaseService &m_db;
    QObject *m_parent;
    mutable QHash<QString, JobQueue *> m_executors;
    mutable UpstreamClient *m_upstream = nullptr;
};

// A path prefix and the error envelope of answers under it that no route claims (404, or
// limits hit before routing): the path and what lies below it. The longest prefix wins;
// anything else gets the core's OpenAI-style envelope.
struct ErrorPrefix
{
    QString prefix;
    ErrorStyle style;
};

// A rate-limit bucket a family's routes take tokens from (RouteSpec::bucket), with its
// default limit in requests per minute: every tier that does not set the bucket (the config
// file's rate_limits) gets it. A bucket no family registers falls back to its tier's "default".
struct RateBucket
{
    QString name;
    int perMinute = 0; // 0: unlimited
};

// What `switchyard-server FAMILY ...` commands get from the command line program.
class CommandHost
{
public:
    virtual ~CommandHost() = default;
    virtual QTextStream &out() = 0; // results (what a script captures)
    virtual QTextStream &err() = 0; // messages and errors
    // Adds the options every command takes (--data-dir, --database), then `options` (listed
    // after them in --help), to parser and parses args (args[0] is the command's own name, e.g.
    // "geo import"). Returns false after printing --help (exit 0); throws
    // CommandUsageError for bad arguments (exit 2).
    virtual bool parse(QCommandLineParser &parser, const QStringList &args,
                       const QString &description,
                       const QList<QCommandLineOption> &options = {}) = 0;
    // Scopes a control token may carry: the core's and every family's of this program.
    virtual QStringList scopes() = 0;
    // The usage meters this program's families register (UsageMeters::catalog).
    virtual QList<MeterSpec> meters() = 0;
    // The database the parsed options name, opened on this thread and migrated (the core and
    // every family's tables). Valid until the command returns.
    virtual Store &store() = 0;
};

// A command's misuse: printed with the usage, exit code 2.
struct CommandUsageError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

// A subcommand a family adds to switchyard-server: `switchyard-server NAME ARGS...`.
struct FamilyCommand
{
    QString name;     // e.g. "geo"
    QString synopsis; // for the top-level help, e.g. "import|status"
    QString summary;  // one line, e.g. "import the data the geo services search"
    // args[0] is the name; returns the exit code. Throws CommandUsageError or std::exception.
    std::function<int(const QStringList &args, CommandHost &host)> run;
};

// A service family of the contract (one of its groups of endpoints): one folder under
// server/ that plugs into the core through this interface and one line in
// server/CMakeLists.txt (SWITCHYARD_FAMILIES). server/README.md, "Adding a service family",
// walks through it with a worked example.
//
// Life cycle, all owned by one Services object (server/Services.h) per process or test:
//   1. configure(): the family's section of the config file, on the main thread, before the
//      database opens; a bad value throws std::runtime_error naming the field.
//   2. link(): after every family is configured, before start(): a family that builds on
//      another finds it here (a family that evaluates over another's upstream finds it);
//      a combination that cannot work throws std::runtime_error naming the field.
//   3. migrations(): the family's tables, applied with the core's at database start.
//   4. start(): after the database started, before any server is built (start-up loads).
//   5. routes(): for every server built (tests build several per process), on its thread.
//   6. stop(): after every server stopped, before the database stops.
// The family object itself is long-lived and shared: the window's panels reach the family's
// JSON API and state through it (Services::family<T>()). It must hold no process-wide state:
// two Services in one process are two independent families.
class ServiceFamily
{
public:
    virtual ~ServiceFamily() = default;

    // Stable name: the config file section it reads and the component of its migrations.
    virtual QString name() const = 0;
    // section: the family's part of the config file (empty when absent); server: the server-wide
    // settings (the config file's path, stream limits).
    virtual void configure(const QJsonObject &section, const ServerSettings &server)
    {
        Q_UNUSED(section);
        Q_UNUSED(server);
    }
    // Every family of this Services object (this one included), each already configured. A
    // pointer kept here stays valid for the family's life: the families live and die together.
    virtual void link(const QList<ServiceFamily *> &families) { Q_UNUSED(families); }
    virtual QList<Migrations::Component> migrations() const { return {}; }
    // Control-token scopes the family's routes require (tokens can be created with them).
    virtual QStringList scopes() const { return {}; }
    // Envelopes of unclaimed paths under the family's prefixes (see ErrorPrefix).
    virtual QList<ErrorPrefix> errorPrefixes() const { return {}; }
    // The rate-limit buckets its routes use, with their default limits (see RateBucket).
    virtual QList<RateBucket> rateBuckets() const { return {}; }
    // How the meters its usage records carry are shown (UsageMeters.h): each name from the
    // constant the family's code sets it with. A meter without a description still shows,
    // under its own name.
    virtual QList<MeterSpec> meters() const { return {}; }
    virtual void start(DatabaseService &db) { Q_UNUSED(db); }
    // The family's routes for one server, as data; handlers may capture the scope, objects
    // made with scope.parent() and the family itself (which outlives every server). The
    // server labels a route with the family's name unless RouteSpec::family says otherwise.
    virtual QList<RouteSpec> routes(const ServerScope &scope) = 0;
    virtual void stop() {}
    virtual QList<FamilyCommand> commands() { return {}; }
    // The models the family serves, as items of GET /v1/models (OpenAI's list item: id, object
    // "model", owned_by, plus the family's own fields such as endpoints and pricing). Called for
    // every listing, on a server thread: must be thread-safe.
    virtual QJsonArray models() const { return {}; }
};

using FamilyList = std::vector<std::unique_ptr<ServiceFamily>>;

// Every meter the families register, in name order (UsageMeters::catalog): what the usage API
// and the Usage panel show.
inline QList<MeterSpec> metersOf(const QList<ServiceFamily *> &families)
{
    QList<MeterSpec> specs;
    for (const ServiceFamily *f : families)
        specs.append(f->meters());
    return UsageMeters::catalog(specs);
}

// Every family this build has, in the order of SWITCHYARD_FAMILIES (generated at configure
// time from server/CMakeLists.txt): a new list of new objects on each call.
FamilyList createFamilies();
