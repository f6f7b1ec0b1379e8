#include "Cli.h"

#include "AppOptions.h"
#include "DatabaseService.h"
#include "MemoryTrim.h"
#include "Migrations.h"
#include "ServerHost.h"
#include "Services.h"
#include "Store.h"

#include <csignal>
#include <optional>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QSocketNotifier>
#include <QTextStream>
#include <sys/socket.h>
#include <unistd.h>

namespace {

const char *kTopHelp = "Usage: switchyard-server COMMAND [options]\n"
                       "\n"
                       "Commands:\n"
                       "  serve                 run the HTTP API (headless)\n";

const char *kTopHelpEnd =
    "\nEvery command takes --data-dir DIR or --database URL; run COMMAND --help for details.\n";

// serve, then each family's commands, e.g. "  keys create|update|list|revoke  manage ...".
QString topHelp(const FamilyList &families)
{
    QString help = QString::fromLatin1(kTopHelp);
    for (const auto &f : families)
        for (const FamilyCommand &c : f->commands())
            help += QStringLiteral("  %1 %2").arg(c.name, c.synopsis).leftJustified(31) +
                    c.summary + u'\n';
    return help + QString::fromLatin1(kTopHelpEnd);
}

// Every command's options, parsed in this one place: the description, --help, the options
// every command takes (with the listening ones for serve), then the command's own. Prints the
// help on out and returns nothing for --help; throws CommandUsageError for bad arguments.
std::optional<AppOptions> parseOptions(QCommandLineParser &parser, const QStringList &args,
                                       const QString &description, bool withListen,
                                       const QList<QCommandLineOption> &options, QTextStream &out)
{
    parser.setApplicationDescription(description);
    parser.addHelpOption();
    AppOptions::addTo(parser, withListen);
    parser.addOptions(options);
    if (!parser.parse(args))
        throw CommandUsageError(parser.errorText().toStdString());
    if (parser.isSet(QStringLiteral("help"))) {
        out << parser.helpText();
        out.flush();
        return std::nullopt;
    }
    AppOptions parsed = AppOptions::from(parser, withListen);
    parsed.secureFiles();
    return parsed;
}

// Opens the database on this thread and migrates it (the core's and every family's tables), for
// the one-shot commands.
struct DirectStore
{
    DirectStore(const AppOptions &o, const QList<Migrations::Component> &migrations)
        : config(o.database())
    {
        QSqlDatabase db = config.open(QStringLiteral("cli"));
        Migrations::apply(db, config.kind(), migrations);
        store.emplace(db, config.kind());
    }
    DatabaseConfig config;
    std::optional<Store> store;
};

// What a family's command gets: the streams, the option parsing and the database.
class CliCommandHost : public CommandHost
{
public:
    CliCommandHost(const FamilyList &families, QTextStream &out, QTextStream &err)
        : m_families(families), m_out(out), m_err(err)
    {
    }
    QTextStream &out() override { return m_out; }
    QTextStream &err() override { return m_err; }
    bool parse(QCommandLineParser &parser, const QStringList &args, const QString &description,
               const QList<QCommandLineOption> &options) override
    {
        auto parsed = parseOptions(parser, args, description, false, options, m_out);
        if (parsed)
            m_options = *parsed;
        return parsed.has_value();
    }
    QStringList scopes() override { return Services::scopesOf(m_families); }
    QList<MeterSpec> meters() override
    {
        QList<ServiceFamily *> all;
        for (const auto &f : m_families)
            all.append(f.get());
        return metersOf(all);
    }
    Store &store() override
    {
        if (!m_store)
            m_store.emplace(m_options, Services::migrationsOf(m_families));
        return *m_store->store;
    }

private:
    const FamilyList &m_families;
    QTextStream &m_out;
    QTextStream &m_err;
    AppOptions m_options;
    std::optional<DirectStore> m_store;
};

int signalPipe[2] = {-1, -1};

void onSignal(int)
{
    const char c = 1;
    [[maybe_unused]] auto n = ::write(signalPipe[1], &c, 1);
}

int serve(const QStringList &args, FamilyList families, QTextStream &out, QTextStream &err)
{
    QCommandLineParser parser;
    const auto options =
        parseOptions(parser, args, QStringLiteral("Run the Switchyard HTTP API without a window."),
                     true, {}, out);
    if (!options)
        return 0;
    const QList<Migrations::Component> migrations = Services::migrationsOf(families);
    Services services(options->settings(), options->database(), std::move(families));
    services.start();
    MemoryTrimmer trimmer;
    QString error;
    if (!services.listen(options->listenAddress, options->listenPort, &error)) {
        err << "error: cannot listen on " << options->listenAddress.toString() << ":"
            << options->listenPort << ": " << error << "\n";
        return 1;
    }
    // Signals arrive through a socket pair so that shutdown runs on the event loop.
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, signalPipe) != 0)
        throw std::runtime_error("socketpair failed");
    QSocketNotifier notifier(signalPipe[0], QSocketNotifier::Read);
    QObject::connect(&notifier, &QSocketNotifier::activated, qApp, [&] {
        char c;
        [[maybe_unused]] auto n = ::read(signalPipe[0], &c, 1);
        notifier.setEnabled(false);
        err << "Shutting down: finishing requests in progress...\n";
        err.flush();
        QCoreApplication::quit();
    });
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    const QString url = services.host()->url().toString();
    err << "Switchyard is listening on " << url
        << " (data: " << services.database().config().describe() << ")\n";
    const bool fresh = DirectStore(*options, migrations)
                           .store->listApiKeys(services.database().defaultAccountId())
                           .isEmpty();
    if (fresh) {
        const QString where = options->databaseUrl.isEmpty()
                                  ? QStringLiteral("--data-dir '%1'").arg(options->dataDir)
                                  : QStringLiteral("--database '...'");
        err << "First steps:\n"
            << "  switchyard-server keys create --name first " << where << "\n"
            << "  switchyard-server credits grant --amount 10 " << where << "\n"
            << "  switchyard-server tokens create --scopes credits:read,usage:read " << where
            << "\n"
            << "  curl " << url << "/v1/models\n";
    }
    err.flush();
    const int rc = QCoreApplication::exec();
    services.stop();
    err << "Stopped.\n";
    return rc;
}

} // namespace

int runCli(const QStringList &arguments)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    return runCli(arguments, createFamilies(), out, err);
}

int runCli(const QStringList &arguments, FamilyList families, QTextStream &out, QTextStream &err)
{
    const QStringList args = arguments.mid(1);
    const QString command = args.value(0);
    try {
        if (command.isEmpty() || command == u"--help" || command == u"-h" || command == u"help") {
            (command.isEmpty() ? err : out) << topHelp(families);
            return command.isEmpty() ? 2 : 0;
        }
        if (command == u"--version") {
            out << "switchyard-server " << QCoreApplication::applicationVersion() << "\n";
            return 0;
        }
        if (command == u"serve")
            return serve(args, std::move(families), out, err);
        for (const auto &f : families) {
            for (const FamilyCommand &c : f->commands()) {
                if (command == c.name) {
                    CliCommandHost host(families, out, err);
                    return c.run(args, host);
                }
            }
        }
        err << "error: unknown command '" << command << "'\n\n" << topHelp(families);
        return 2;
    } catch (const CommandUsageError &e) {
        err << "error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception &e) {
        err << "error: " << e.what() << "\n";
        return 1;
    }
}
