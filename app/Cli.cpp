#include "Cli.h"

#include "AppOptions.h"
#include "DatabaseService.h"
#include "MemoryTrim.h"
#include "Migrations.h"
#include "Money.h"
#include "ServerHost.h"
#include "Services.h"
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

using UsageError = CommandUsageError;

const char *kTopHelp = "Usage: switchyard-server COMMAND [options]\n"
                       "\n"
                       "Commands:\n"
                       "  serve                 run the HTTP API (headless)\n"
                       "  keys create|list|revoke      manage API keys (sk-)\n"
                       "  tokens create|list|revoke    manage control tokens (lpc_)\n"
                       "  credits grant|balance        manage the credit balance\n";

const char *kTopHelpEnd =
    "\nEvery command takes --data-dir DIR or --database URL; run COMMAND --help for details.\n";

// The built-in commands, then each family's, e.g. "  address import|status   import ...".
QString topHelp(const FamilyList &families)
{
    QString help = QString::fromLatin1(kTopHelp);
    for (const auto &f : families)
        for (const FamilyCommand &c : f->commands())
            help += QStringLiteral("  %1 %2").arg(c.name, c.synopsis).leftJustified(31) +
                    c.summary + u'\n';
    return help + QString::fromLatin1(kTopHelpEnd);
}

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
    p.options.secureFiles();
    return true;
}

// Opens the database on this thread and migrates it (the core's and every family's tables), for
// the one-shot admin commands.
struct DirectStore
{
    explicit DirectStore(const AppOptions &o) : config(o.database())
    {
        QSqlDatabase db = config.open(QStringLiteral("cli"));
        Migrations::apply(db, config.kind(), Services::migrationsOf(createFamilies()));
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
        const QStringList known = Services::scopesOf(createFamilies());
        const QCommandLineOption scopes(
            QStringLiteral("scopes"),
            QStringLiteral("Comma-separated scopes: %1.").arg(known.join(u", ")),
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
            if (!known.contains(s.trimmed()))
                throw UsageError(
                    ("unknown scope '" + s + "'; known: " + known.join(u", ")).toStdString());
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

// What a family's command gets: the same option parsing, streams and database as the built-in
// commands.
class CliCommandHost : public CommandHost
{
public:
    QTextStream &out() override { return ::out(); }
    QTextStream &err() override { return ::err(); }
    bool parse(QCommandLineParser &parser, const QStringList &args,
               const QString &description) override
    {
        parser.setApplicationDescription(description);
        parser.addHelpOption();
        AppOptions::addTo(parser, false);
        if (!parser.parse(args))
            throw UsageError(parser.errorText().toStdString());
        if (parser.isSet(QStringLiteral("help"))) {
            ::out() << parser.helpText();
            ::out().flush();
            return false;
        }
        m_options = AppOptions::from(parser, false);
        m_options.secureFiles();
        return true;
    }
    Store &store() override
    {
        if (!m_store)
            m_store.emplace(m_options);
        return *m_store->store;
    }

private:
    AppOptions m_options;
    std::optional<DirectStore> m_store;
};

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
    Services services(p.options.settings(), p.options.database());
    services.start();
    MemoryTrimmer trimmer;
    QString error;
    if (!services.listen(p.options.listenAddress, p.options.listenPort, &error)) {
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

    const QString url = services.host()->url().toString();
    err() << "Switchyard is listening on " << url
          << " (data: " << services.database().config().describe() << ")\n";
    const bool fresh =
        DirectStore(p.options).store->listApiKeys(services.database().defaultAccountId()).isEmpty();
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
    services.stop();
    err() << "Stopped.\n";
    return rc;
}

} // namespace

int runCli(const QStringList &arguments)
{
    const QStringList args = arguments.mid(1);
    const QString command = args.value(0);
    try {
        const FamilyList families = createFamilies();
        if (command.isEmpty() || command == u"--help" || command == u"-h" || command == u"help") {
            (command.isEmpty() ? err() : out()) << topHelp(families);
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
        for (const auto &f : families) {
            for (const FamilyCommand &c : f->commands()) {
                if (command == c.name) {
                    CliCommandHost host;
                    return c.run(args, host);
                }
            }
        }
        err() << "error: unknown command '" << command << "'\n\n" << topHelp(families);
        return 2;
    } catch (const UsageError &e) {
        err() << "error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception &e) {
        err() << "error: " << e.what() << "\n";
        return 1;
    }
}
