#pragma once

#include "ErrorEnvelope.h"
#include "Migrations.h"
#include "Router.h"
#include "ServerSettings.h"

#include <functional>
#include <memory>
#include <QCommandLineOption>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <stdexcept>
#include <vector>

class DatabaseService;
class Pipeline;
class QCommandLineParser;
class QObject;
class QTextStream;
class Store;

// What a family's routes get when a server is built. Called on the server thread; objects a
// family makes for one server (upstream clients, thread pools, watchers) take `parent` as their
// parent: it lives on the server thread and is destroyed with that server.
struct ServerScope
{
    Pipeline &pipeline;
    DatabaseService &database;
    QObject *parent;
};

// A path prefix and the error envelope of answers under it that no route claims (404, or
// limits hit before routing), e.g. {"/v1/messages", Messages}: the path and what lies below it.
// The longest prefix wins; anything else gets the OpenAI shape.
struct ErrorPrefix
{
    QString prefix;
    ErrorStyle style;
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
    // "address import"). Returns false after printing --help (exit 0); throws
    // CommandUsageError for bad arguments (exit 2).
    virtual bool parse(QCommandLineParser &parser, const QStringList &args,
                       const QString &description,
                       const QList<QCommandLineOption> &options = {}) = 0;
    // Scopes a control token may carry: the core's and every family's of this program.
    virtual QStringList scopes() = 0;
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
    QString name;     // e.g. "address"
    QString synopsis; // for the top-level help, e.g. "import|status"
    QString summary;  // one line, e.g. "import zip codes and POIs for the address services"
    // args[0] is the name; returns the exit code. Throws CommandUsageError or std::exception.
    std::function<int(const QStringList &args, CommandHost &host)> run;
};

// A service family of the contract (text gateway, address, audio, ...): one folder under
// server/ that plugs into the core through this interface and one line in
// server/CMakeLists.txt (SWITCHYARD_FAMILIES). server/README.md, "Adding a service family",
// walks through it with the address family as the example.
//
// Life cycle, all owned by one Services object (server/Services.h) per process or test:
//   1. configure(): the family's section of the config file, on the main thread, before the
//      database opens; a bad value throws std::runtime_error naming the field.
//   2. link(): after every family is configured, before start(): a family that builds on
//      another finds it here (the decisions family's chat evaluator finds the text gateway);
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
    virtual void start(DatabaseService &db) { Q_UNUSED(db); }
    // The family's routes for one server, as data; handlers may capture objects made with
    // scope.parent and the family itself (which outlives every server).
    virtual QList<RouteSpec> routes(const ServerScope &scope) = 0;
    virtual void stop() {}
    virtual QList<FamilyCommand> commands() { return {}; }
    // The models the family serves, as items of GET /v1/models (OpenAI's list item: id, object
    // "model", owned_by, plus the family's own fields such as endpoints and pricing). Called for
    // every listing, on a server thread: must be thread-safe.
    virtual QJsonArray models() const { return {}; }
};

using FamilyList = std::vector<std::unique_ptr<ServiceFamily>>;

// Every family this build has, in the order of SWITCHYARD_FAMILIES (generated at configure
// time from server/CMakeLists.txt): a new list of new objects on each call.
FamilyList createFamilies();
