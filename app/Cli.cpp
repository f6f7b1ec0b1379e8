#include "Cli.h"

#include "address/AddressDataStore.h"
#include "AppOptions.h"
#include "DatabaseService.h"
#include "llm/ProviderRegistry.h"
#include "Migrations.h"
#include "Money.h"
#include "Scopes.h"
#include "ServerHost.h"
#include "Store.h"

#include <csignal>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QSocketNotifier>
#include <QTextStream>
#include <sys/socket.h>
#include <unistd.h>

namespace {

QTextStream &out()
{
    static QTextStream s(stdout);
    return s;
}

QTextStream &err()
{
    static QTextStream s(stderr);
    return s;
}

struct UsageError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

const char *kTopHelp =
    "Usage: switchyard-server COMMAND [options]\n"
    "\n"
    "Commands:\n"
    "  serve                 run the HTTP API (headless)\n"
    "  keys create|list|revoke      manage API keys (sk-)\n"
    "  tokens create|list|revoke    manage control tokens (lpc_)\n"
    "  credits grant|balance        manage the credit balance\n"
    "  address import|status        import zip codes and POIs for the address services\n"
    "\n"
    "Every command takes --data-dir DIR or --database URL; run COMMAND --help for details.\n";

// Parses a subcommand's options; prints help and exits 0 on --help.
struct Parsed
{
    QCommandLineParser parser;
    AppOptions options;
};

bool parse(Parsed &p, const QStringList &args, const QString &description, bool withListen,
           const QList<QCommandLineOption> &extra, const QString &positional = {},
           const QString &positionalHelp = QStringLiteral("The id to act on."))
{
    p.parser.setApplicationDescription(description);
    p.parser.addHelpOption();
    AppOptions::addTo(p.parser, withListen);
    p.parser.addOptions(extra);
    if (!positional.isEmpty())
        p.parser.addPositionalArgument(positional, positionalHelp);
    if (!p.parser.parse(args))
        throw UsageError(p.parser.errorText().toStdString());
    if (p.parser.isSet(QStringLiteral("help"))) {
        out() << p.parser.helpText();
        out().flush();
        return false;
    }
    p.options = AppOptions::from(p.parser, withListen);
    return true;
}

// Opens the database on this thread and migrates it, for the one-shot admin commands.
struct DirectStore
{
    explicit DirectStore(const AppOptions &o) : config(o.database())
    {
        QSqlDatabase db = config.open(QStringLiteral("cli"));
        Migrations::apply(db, config.kind());
        store.emplace(db, config.kind());
        account = store->defaultAccountId();
    }
    DatabaseConfig config;
    std::optional<Store> store;
    qint64 account = 0;
};

qint64 parseIdArgument(const QCommandLineParser &parser)
{
    const QStringList pos = parser.positionalArguments();
    bool ok = false;
    const qint64 id = pos.size() == 1 ? pos.first().toLongLong(&ok) : 0;
    if (!ok || id <= 0)
        throw UsageError("expected exactly one numeric ID (see the list command)");
    return id;
}

QString when(const QDateTime &t)
{
    return t.isValid() ? t.toUTC().toString(Qt::ISODate) : QStringLiteral("-");
}

int keys(const QStringList &args)
{
    const QString action = args.value(1);
    QStringList rest = args.mid(1);
    rest[0] = QStringLiteral("keys ") + action;
    Parsed p;
    if (action == u"create") {
        const QCommandLineOption name(QStringLiteral("name"), QStringLiteral("A name for the key."),
                                      QStringLiteral("NAME"));
        const QCommandLineOption tier(QStringLiteral("tier"),
                                      QStringLiteral("Rate-limit tier (default: default)."),
                                      QStringLiteral("TIER"), QStringLiteral("default"));
        if (!parse(p, rest, QStringLiteral("Create an API key; the full key is printed once."),
                   false, {name, tier}))
            return 0;
        if (p.parser.value(name).trimmed().isEmpty())
            throw UsageError("--name is required");
        DirectStore ds(p.options);
        const CreatedSecret c = ds.store->createApiKey(ds.account, p.parser.value(name).trimmed(),
                                                       p.parser.value(tier));
        err() << "Created API key " << c.id << " (\"" << p.parser.value(name).trimmed()
              << "\"). It is shown only this once:\n";
        err().flush();
        out() << c.secret << "\n";
        return 0;
    }
    if (action == u"list") {
        if (!parse(p, rest, QStringLiteral("List API keys (never their values)."), false, {}))
            return 0;
        DirectStore ds(p.options);
        out() << "ID\tNAME\tPREFIX\tTIER\tCREATED\tLAST USED\tSTATUS\n";
        for (const ApiKeyRecord &k : ds.store->listApiKeys(ds.account))
            out() << k.id << '\t' << k.name << '\t' << k.prefix << '\t' << k.tier << '\t'
                  << when(k.created) << '\t' << when(k.lastUsed) << '\t'
                  << (k.isRevoked() ? "revoked" : "active") << '\n';
        return 0;
    }
    if (action == u"revoke") {
        if (!parse(p, rest, QStringLiteral("Revoke an API key; it stops working at once."), false,
                   {}, QStringLiteral("ID")))
            return 0;
        DirectStore ds(p.options);
        const qint64 id = parseIdArgument(p.parser);
        if (!ds.store->revokeApiKey(ds.account, id)) {
            err() << "error: no active API key with id " << id << "\n";
            return 1;
        }
        err() << "Revoked API key " << id << ".\n";
        return 0;
    }
    throw UsageError("usage: switchyard-server keys create|list|revoke [options]");
}

int tokens(const QStringList &args)
{
    const QString action = args.value(1);
    QStringList rest = args.mid(1);
    rest[0] = QStringLiteral("tokens ") + action;
    Parsed p;
    if (action == u"create") {
        const QCommandLineOption scopes(
            QStringLiteral("scopes"),
            QStringLiteral("Comma-separated scopes: %1.").arg(Scopes::all().join(u", ")),
            QStringLiteral("LIST"));
        const QCommandLineOption expires(QStringLiteral("expires"),
                                         QStringLiteral("Expire after this many days."),
                                         QStringLiteral("DAYS"));
        const QCommandLineOption name(QStringLiteral("name"),
                                      QStringLiteral("A name for the token."),
                                      QStringLiteral("NAME"), QStringLiteral("token"));
        if (!parse(p, rest, QStringLiteral("Create a control token; printed once."), false,
                   {scopes, expires, name}))
            return 0;
        const QStringList list = p.parser.value(scopes).split(u',', Qt::SkipEmptyParts);
        if (list.isEmpty())
            throw UsageError("--scopes is required, e.g. --scopes credits:read,usage:read");
        for (const QString &s : list)
            if (!Scopes::isKnown(s.trimmed()))
                throw UsageError(("unknown scope '" + s + "'; known: " + Scopes::all().join(u", "))
                                     .toStdString());
        QDateTime expiry;
        if (p.parser.isSet(expires)) {
            bool ok = false;
            const int days = p.parser.value(expires).toInt(&ok);
            if (!ok || days <= 0 || days > 36500)
                throw UsageError("--expires must be a number of days from 1 to 36500");
            expiry = QDateTime::currentDateTimeUtc().addDays(days);
        }
        QStringList trimmed;
        for (const QString &s : list)
            trimmed.append(s.trimmed());
        trimmed.removeDuplicates();
        DirectStore ds(p.options);
        const CreatedSecret c =
            ds.store->createControlToken(ds.account, p.parser.value(name), trimmed, expiry);
        err() << "Created control token " << c.id << " with scopes " << trimmed.join(u',')
              << (expiry.isValid() ? ", expiring " + when(expiry) : QString())
              << ". It is shown only this once:\n";
        err().flush();
        out() << c.secret << "\n";
        return 0;
    }
    if (action == u"list") {
        if (!parse(p, rest, QStringLiteral("List control tokens."), false, {}))
            return 0;
        DirectStore ds(p.options);
        const QDateTime now = QDateTime::currentDateTimeUtc();
        out() << "ID\tNAME\tPREFIX\tSCOPES\tCREATED\tEXPIRES\tSTATUS\n";
        for (const ControlTokenRecord &t : ds.store->listControlTokens(ds.account))
            out() << t.id << '\t' << t.name << '\t' << t.prefix << '\t' << t.scopes.join(u',')
                  << '\t' << when(t.created) << '\t' << when(t.expires) << '\t'
                  << (t.isRevoked()      ? "revoked"
                      : t.isExpired(now) ? "expired"
                                         : "active")
                  << '\n';
        return 0;
    }
    if (action == u"revoke") {
        if (!parse(p, rest, QStringLiteral("Revoke a control token."), false, {},
                   QStringLiteral("ID")))
            return 0;
        DirectStore ds(p.options);
        const qint64 id = parseIdArgument(p.parser);
        if (!ds.store->revokeControlToken(ds.account, id)) {
            err() << "error: no active control token with id " << id << "\n";
            return 1;
        }
        err() << "Revoked control token " << id << ".\n";
        return 0;
    }
    throw UsageError("usage: switchyard-server tokens create|list|revoke [options]");
}

int credits(const QStringList &args)
{
    const QString action = args.value(1);
    QStringList rest = args.mid(1);
    rest[0] = QStringLiteral("credits ") + action;
    Parsed p;
    if (action == u"grant") {
        const QCommandLineOption amount(QStringLiteral("amount"),
                                        QStringLiteral("Credits to add, up to 9 decimals."),
                                        QStringLiteral("X"));
        const QCommandLineOption note(QStringLiteral("note"),
                                      QStringLiteral("Reason recorded in the ledger."),
                                      QStringLiteral("TEXT"), QStringLiteral("grant"));
        if (!parse(p, rest, QStringLiteral("Add credits to the balance."), false, {amount, note}))
            return 0;
        const auto units = Money::parseCredits(p.parser.value(amount));
        if (!units || *units <= 0)
            throw UsageError("--amount must be a positive number of credits with at most 9 "
                             "decimals, e.g. --amount 10 or --amount 0.5");
        DirectStore ds(p.options);
        ChargeResult r;
        ds.store->transaction([&] {
            r = ds.store->applyLedger(ds.account, QStringLiteral("grant"), *units,
                                      p.parser.value(note), QString(), 0);
        });
        out() << "Granted " << Money::formatCredits(*units) << " credits; balance "
              << Money::formatCredits(r.entry.balanceAfter) << "\n";
        return 0;
    }
    if (action == u"balance") {
        if (!parse(p, rest, QStringLiteral("Print the credit balance."), false, {}))
            return 0;
        DirectStore ds(p.options);
        out() << Money::formatCredits(ds.store->balance(ds.account)) << "\n";
        return 0;
    }
    throw UsageError("usage: switchyard-server credits grant|balance [options]");
}

// Exit code of an import that wrote its good rows but rejected others.
constexpr int kPartialImport = 3;

int address(const QStringList &args)
{
    const QString action = args.value(1);
    Parsed p;
    if (action == u"import") {
        const auto kind = AddressDataStore::parseKind(args.value(2));
        if (!kind)
            throw UsageError("usage: switchyard-server address import zipcodes|pois FILE.csv "
                             "[--replace] [options]");
        QStringList rest = args.mid(2);
        rest[0] = QStringLiteral("address import ") + AddressDataStore::kindName(*kind);
        const QCommandLineOption replace(
            QStringLiteral("replace"),
            QStringLiteral("Replace all imported %1 (default: append; a row whose key exists is "
                           "updated).")
                .arg(AddressDataStore::kindName(*kind)));
        const QString description =
            *kind == AddressDataStore::Kind::Zipcodes
                ? QStringLiteral("Import zip codes from a UTF-8 CSV file with the header "
                                 "zipcode,province,city,district,town,road (or a divcode column "
                                 "instead of the region names).")
                : QStringLiteral("Import points of interest from a UTF-8 CSV file with the header "
                                 "name,province,city,district,town,address,lon,lat,coord,"
                                 "category,aliases.");
        if (!parse(p, rest,
                   description + QStringLiteral(" Rows with errors are listed and skipped; exit "
                                                "code %1 when some were.")
                                     .arg(kPartialImport),
                   false, {replace}, QStringLiteral("FILE"), QStringLiteral("The CSV file.")))
            return 0;
        const QStringList files = p.parser.positionalArguments();
        if (files.size() != 1)
            throw UsageError("expected exactly one CSV file");
        DirectStore ds(p.options);
        const ImportReport report =
            AddressDataStore::importFile(*ds.store, *kind, files.first(), p.parser.isSet(replace));
        if (!report.ok()) {
            err() << "error: " << report.fatal << "\n";
            return 1;
        }
        constexpr int kListed = 20;
        for (const auto &e : report.errors.mid(0, kListed))
            err() << files.first() << ":" << e.line << ": " << e.reason << "\n";
        if (report.errors.size() > kListed)
            err() << "... and " << report.errors.size() - kListed << " more rows with errors\n";
        err().flush();
        out() << report.summary() << "\n";
        return report.errors.isEmpty() ? 0 : kPartialImport;
    }
    if (action == u"status") {
        QStringList rest = args.mid(1);
        rest[0] = QStringLiteral("address status");
        if (!parse(p, rest, QStringLiteral("Count the imported zip codes and points of interest."),
                   false, {}))
            return 0;
        DirectStore ds(p.options);
        const AddressDataStore::Counts c = AddressDataStore::counts(*ds.store);
        out() << "DATA\tROWS\n"
              << "zipcodes\t" << c.zipcodes << "\n"
              << "zipcode roads\t" << c.zipRoads << "\n"
              << "pois\t" << c.pois << "\n";
        return 0;
    }
    throw UsageError("usage: switchyard-server address import zipcodes|pois FILE.csv [--replace] "
                     "| address status [options]");
}

int signalPipe[2] = {-1, -1};

void onSignal(int)
{
    const char c = 1;
    [[maybe_unused]] auto n = ::write(signalPipe[1], &c, 1);
}

int serve(const QStringList &args)
{
    Parsed p;
    QStringList rest = args;
    if (!parse(p, rest, QStringLiteral("Run the Switchyard HTTP API without a window."), true, {}))
        return 0;
    const ServerSettings settings = p.options.settings();
    DatabaseService db(p.options.database(settings));
    db.start();
    ProviderRegistry registry(settings.gateway, settings.configPath);
    registry.startCatalogSync(&db);
    ServerHost host(db, settings, &registry);
    QString error;
    if (!host.start(p.options.listenAddress, p.options.listenPort, &error)) {
        err() << "error: cannot listen on " << p.options.listenAddress.toString() << ":"
              << p.options.listenPort << ": " << error << "\n";
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
        err() << "Shutting down: finishing requests in progress...\n";
        err().flush();
        QCoreApplication::quit();
    });
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    const QString url = host.url().toString();
    err() << "Switchyard is listening on " << url << " (data: " << db.config().describe() << ")\n";
    const bool fresh = DirectStore(p.options).store->listApiKeys(db.defaultAccountId()).isEmpty();
    if (fresh) {
        const QString where = p.options.databaseUrl.isEmpty()
                                  ? QStringLiteral("--data-dir '%1'").arg(p.options.dataDir)
                                  : QStringLiteral("--database '...'");
        err() << "First steps:\n"
              << "  switchyard-server keys create --name first " << where << "\n"
              << "  switchyard-server credits grant --amount 10 " << where << "\n"
              << "  switchyard-server tokens create --scopes credits:read,usage:read " << where
              << "\n"
              << "  curl " << url << "/v1/models\n";
    }
    err().flush();
    const int rc = QCoreApplication::exec();
    host.stop();
    db.stop();
    err() << "Stopped.\n";
    return rc;
}

} // namespace

int runCli(const QStringList &arguments)
{
    const QStringList args = arguments.mid(1);
    const QString command = args.value(0);
    try {
        if (command.isEmpty() || command == u"--help" || command == u"-h" || command == u"help") {
            (command.isEmpty() ? err() : out()) << kTopHelp;
            return command.isEmpty() ? 2 : 0;
        }
        if (command == u"--version") {
            out() << "switchyard-server " << QCoreApplication::applicationVersion() << "\n";
            return 0;
        }
        if (command == u"serve")
            return serve(args);
        if (command == u"keys")
            return keys(args);
        if (command == u"tokens")
            return tokens(args);
        if (command == u"credits")
            return credits(args);
        if (command == u"address")
            return address(args);
        err() << "error: unknown command '" << command << "'\n\n" << kTopHelp;
        return 2;
    } catch (const UsageError &e) {
        err() << "error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception &e) {
        err() << "error: " << e.what() << "\n";
        return 1;
    }
}
