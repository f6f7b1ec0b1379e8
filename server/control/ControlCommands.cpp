#include "ControlFamily.h"

#include "ControlApi.h"
#include "CsvExport.h"
#include "Money.h"
#include "Store.h"

#include <QCommandLineParser>
#include <QFile>
#include <QTextStream>

// switchyard-server keys|tokens|credits: the operator's credentials and credits, straight on
// the database the options name (no server needs to run).

namespace {

QString when(const QDateTime &t)
{
    return t.isValid() ? t.toUTC().toString(Qt::ISODate) : QStringLiteral("-");
}

// One action of a command, `switchyard-server COMMAND ACTION [options]`. run() opens the
// database (host.store()) once it has checked the values it was given.
struct Action
{
    QString name;
    QString description; // for --help
    QList<QCommandLineOption> options;
    std::function<int(const QCommandLineParser &parser, CommandHost &host)> run;
    bool takesId = false; // one positional ID
};

// Parses and runs the action that args[1] names (args[0] is the command); else a usage error.
int dispatch(const QStringList &args, CommandHost &host, const QList<Action> &actions,
             const char *usage)
{
    for (const Action &action : actions) {
        if (action.name != args.value(1))
            continue;
        QCommandLineParser parser;
        if (action.takesId)
            parser.addPositionalArgument(QStringLiteral("ID"), QStringLiteral("The id to act on."));
        QStringList rest = args.mid(1);
        rest[0] = args.value(0) + QLatin1Char(' ') + action.name;
        if (!host.parse(parser, rest, action.description, action.options))
            return 0;
        return action.run(parser, host);
    }
    throw CommandUsageError(usage);
}

qint64 idArgument(const QCommandLineParser &parser)
{
    const QStringList pos = parser.positionalArguments();
    bool ok = false;
    const qint64 id = pos.size() == 1 ? pos.first().toLongLong(&ok) : 0;
    if (!ok || id <= 0)
        throw CommandUsageError("expected exactly one numeric ID (see the list command)");
    return id;
}

// `COMMAND revoke ID`: revoke(account, id) is false when nothing active has that id.
Action revokeAction(const QString &description, const QString &what,
                    bool (Store::*revoke)(qint64, qint64))
{
    return {QStringLiteral("revoke"),
            description,
            {},
            [what, revoke](const QCommandLineParser &parser, CommandHost &host) {
                Store &store = host.store();
                const qint64 id = idArgument(parser);
                if (!(store.*revoke)(store.defaultAccountId(), id)) {
                    host.err() << "error: no active " << what << " with id " << id << "\n";
                    return 1;
                }
                host.err() << "Revoked " << what << " " << id << ".\n";
                return 0;
            },
            true};
}

// A created secret: the message on stderr, the value alone on stdout (what a script captures).
void printSecret(CommandHost &host, const QString &message, const QString &secret)
{
    host.err() << message << ". It is shown only this once:\n";
    host.err().flush();
    host.out() << secret << "\n";
}

// The rule options of `keys create` and `keys update`, and what they make of a key's rules.
struct RuleOptions
{
    QCommandLineOption budget{QStringLiteral("budget"),
                              QStringLiteral("Spending budget: AMOUNT/day|week|month|total in "
                                             "credits, e.g. 5/day (none: remove)."),
                              QStringLiteral("BUDGET")};
    QCommandLineOption models{QStringLiteral("models"),
                              QStringLiteral("Allowed model IDs or globs, comma-separated, e.g. "
                                             "'vendorB-*,gpt-image-1' (none: any model)."),
                              QStringLiteral("LIST")};
    QCommandLineOption allowIp{QStringLiteral("allow-ip"),
                               QStringLiteral("An address or CIDR the key may be used from; "
                                              "repeat for more (none: any address)."),
                               QStringLiteral("CIDR")};
    QCommandLineOption expires{QStringLiteral("expires"),
                               QStringLiteral("Expiry: 30d, 12h, a date (2027-01-31, midnight "
                                              "UTC) or an RFC 3339 time (never: remove)."),
                               QStringLiteral("WHEN")};
    QList<QCommandLineOption> all() const { return {budget, models, allowIp, expires}; }

    // The options given, over `rules`; a usage error names the bad value.
    KeyRules apply(const QCommandLineParser &parser, KeyRules rules) const
    {
        QString error;
        if (parser.isSet(budget)) {
            const QString v = parser.value(budget).trimmed();
            if (v == u"none") {
                rules.budget.reset();
            } else if (const auto b = KeyRules::budgetFromText(v, &error)) {
                rules.budget = b;
            } else {
                throw CommandUsageError(("--budget: " + error).toStdString());
            }
        }
        if (parser.isSet(models)) {
            QStringList list;
            for (const QString &m : parser.value(models).split(u',', Qt::SkipEmptyParts))
                if (!list.contains(m.trimmed()))
                    list.append(m.trimmed());
            if (list == QStringList{QStringLiteral("none")})
                list.clear();
            for (const QString &m : list)
                if (!KeyRules::validGlob(m))
                    throw CommandUsageError(
                        ("--models: '" + m + "' is not a model ID or glob").toStdString());
            rules.models = list;
        }
        if (parser.isSet(allowIp)) {
            QStringList list = parser.values(allowIp);
            if (list == QStringList{QStringLiteral("none")})
                list.clear();
            for (const QString &cidr : list)
                if (!KeyRules::validCidr(cidr))
                    throw CommandUsageError(
                        ("--allow-ip: '" + cidr + "' is not an address or CIDR").toStdString());
            list.removeDuplicates();
            rules.allowedIps = list;
        }
        if (parser.isSet(expires)) {
            const QString v = parser.value(expires).trimmed();
            if (v == u"never") {
                rules.expires = {};
            } else if (const auto t =
                           KeyRules::expiryFromText(v, QDateTime::currentDateTimeUtc(), &error)) {
                rules.expires = *t;
            } else {
                throw CommandUsageError(("--expires: " + error).toStdString());
            }
        }
        return rules;
    }
};

// A key's rules in one column of `keys list`.
QString rulesText(const ApiKeyRecord &k)
{
    QStringList parts;
    const KeyRules &r = k.rules;
    if (r.budget)
        parts << QStringLiteral("budget %1/%2")
                     .arg(Money::formatCredits(r.budget->amount),
                          KeyRules::periodName(r.budget->period));
    if (!r.models.isEmpty())
        parts << QStringLiteral("models %1").arg(r.models.join(u','));
    if (!r.allowedIps.isEmpty())
        parts << QStringLiteral("from %1").arg(r.allowedIps.join(u','));
    if (r.expires.isValid())
        parts << QStringLiteral("expires %1").arg(when(r.expires));
    return parts.isEmpty() ? QStringLiteral("-") : parts.join(QStringLiteral("; "));
}

int keys(const QStringList &args, CommandHost &host)
{
    const QCommandLineOption name(QStringLiteral("name"), QStringLiteral("A name for the key."),
                                  QStringLiteral("NAME"));
    const QCommandLineOption tier(QStringLiteral("tier"),
                                  QStringLiteral("Rate-limit tier (default: default)."),
                                  QStringLiteral("TIER"), QStringLiteral("default"));
    const RuleOptions rules;
    const Action create{
        QStringLiteral("create"),
        QStringLiteral("Create an API key; the full key is printed once."),
        QList<QCommandLineOption>{name, tier} + rules.all(),
        [name, tier, rules](const QCommandLineParser &parser, CommandHost &host) {
            const QString keyName = parser.value(name).trimmed();
            if (keyName.isEmpty())
                throw CommandUsageError("--name is required");
            const KeyRules keyRules = rules.apply(parser, {});
            Store &store = host.store();
            const CreatedSecret c =
                store.createApiKey(store.defaultAccountId(), keyName, parser.value(tier), keyRules);
            printSecret(host, QStringLiteral("Created API key %1 (\"%2\")").arg(c.id).arg(keyName),
                        c.secret);
            return 0;
        }};
    const QCommandLineOption newName(QStringLiteral("name"), QStringLiteral("A new name."),
                                     QStringLiteral("NAME"));
    const QCommandLineOption newTier(QStringLiteral("tier"), QStringLiteral("A new tier."),
                                     QStringLiteral("TIER"));
    const Action update{
        QStringLiteral("update"),
        QStringLiteral("Change an API key's name, tier or rules; running servers see it at once."),
        QList<QCommandLineOption>{newName, newTier} + rules.all(),
        [newName, newTier, rules](const QCommandLineParser &parser, CommandHost &host) {
            const qint64 id = idArgument(parser);
            if (parser.isSet(newName) && parser.value(newName).trimmed().isEmpty())
                throw CommandUsageError("--name may not be empty");
            Store &store = host.store();
            const auto key = store.apiKey(store.defaultAccountId(), id);
            if (!key) {
                host.err() << "error: no API key with id " << id << "\n";
                return 1;
            }
            const KeyRules keyRules = rules.apply(parser, key->rules);
            store.updateApiKey(store.defaultAccountId(), id, parser.value(newName).trimmed(),
                               parser.isSet(newTier) ? parser.value(newTier) : key->tier, keyRules);
            host.err() << "Updated API key " << id << ": "
                       << rulesText(*store.apiKey(store.defaultAccountId(), id)) << "\n";
            return 0;
        },
        true};
    const Action list{QStringLiteral("list"),
                      QStringLiteral("List API keys (never their values)."),
                      {},
                      [](const QCommandLineParser &, CommandHost &host) {
                          Store &store = host.store();
                          const QDateTime now = QDateTime::currentDateTimeUtc();
                          host.out()
                              << "ID\tNAME\tPREFIX\tTIER\tCREATED\tLAST USED\tSTATUS\tRULES\n";
                          for (const ApiKeyRecord &k : store.listApiKeys(store.defaultAccountId()))
                              host.out()
                                  << k.id << '\t' << k.name << '\t' << k.prefix << '\t' << k.tier
                                  << '\t' << when(k.created) << '\t' << when(k.lastUsed) << '\t'
                                  << (k.isRevoked()            ? "revoked"
                                      : k.rules.isExpired(now) ? "expired"
                                                               : "active")
                                  << '\t' << rulesText(k) << '\n';
                          return 0;
                      }};
    return dispatch(args, host,
                    {create, update, list,
                     revokeAction(QStringLiteral("Revoke an API key; it stops working at once."),
                                  QStringLiteral("API key"), &Store::revokeApiKey)},
                    "usage: switchyard-server keys create|update|list|revoke [options]");
}

// --scopes as a list of known scopes, trimmed, without repeats; a usage error otherwise.
QStringList scopesOption(const QString &value, const QStringList &known)
{
    const QStringList list = value.split(u',', Qt::SkipEmptyParts);
    if (list.isEmpty())
        throw CommandUsageError("--scopes is required, e.g. --scopes credits:read,usage:read");
    QStringList trimmed;
    for (const QString &s : list) {
        if (!known.contains(s.trimmed()))
            throw CommandUsageError(
                ("unknown scope '" + s + "'; known: " + known.join(u", ")).toStdString());
        trimmed.append(s.trimmed());
    }
    trimmed.removeDuplicates();
    return trimmed;
}

int tokens(const QStringList &args, CommandHost &host)
{
    const QStringList known = host.scopes();
    const QCommandLineOption scopes(
        QStringLiteral("scopes"),
        QStringLiteral("Comma-separated scopes: %1.").arg(known.join(u", ")),
        QStringLiteral("LIST"));
    const QCommandLineOption expires(QStringLiteral("expires"),
                                     QStringLiteral("Expire after this many days."),
                                     QStringLiteral("DAYS"));
    const QCommandLineOption name(QStringLiteral("name"), QStringLiteral("A name for the token."),
                                  QStringLiteral("NAME"), QStringLiteral("token"));
    const Action create{
        QStringLiteral("create"),
        QStringLiteral("Create a control token; printed once."),
        {scopes, expires, name},
        [=](const QCommandLineParser &parser, CommandHost &host) {
            const QStringList chosen = scopesOption(parser.value(scopes), known);
            QDateTime expiry;
            if (parser.isSet(expires)) {
                bool ok = false;
                const int days = parser.value(expires).toInt(&ok);
                if (!ok || days <= 0 || days > 36500)
                    throw CommandUsageError("--expires must be a number of days from 1 to 36500");
                expiry = QDateTime::currentDateTimeUtc().addDays(days);
            }
            Store &store = host.store();
            const CreatedSecret c = store.createControlToken(store.defaultAccountId(),
                                                             parser.value(name), chosen, expiry);
            printSecret(host,
                        QStringLiteral("Created control token %1 with scopes %2%3")
                            .arg(c.id)
                            .arg(chosen.join(u','),
                                 expiry.isValid() ? ", expiring " + when(expiry) : QString()),
                        c.secret);
            return 0;
        }};
    const Action list{QStringLiteral("list"),
                      QStringLiteral("List control tokens."),
                      {},
                      [](const QCommandLineParser &, CommandHost &host) {
                          Store &store = host.store();
                          const QDateTime now = QDateTime::currentDateTimeUtc();
                          host.out() << "ID\tNAME\tPREFIX\tSCOPES\tCREATED\tEXPIRES\tSTATUS\n";
                          for (const ControlTokenRecord &t :
                               store.listControlTokens(store.defaultAccountId()))
                              host.out() << t.id << '\t' << t.name << '\t' << t.prefix << '\t'
                                         << t.scopes.join(u',') << '\t' << when(t.created) << '\t'
                                         << when(t.expires) << '\t'
                                         << (t.isRevoked()      ? "revoked"
                                             : t.isExpired(now) ? "expired"
                                                                : "active")
                                         << '\n';
                          return 0;
                      }};
    return dispatch(args, host,
                    {create, list,
                     revokeAction(QStringLiteral("Revoke a control token."),
                                  QStringLiteral("control token"), &Store::revokeControlToken)},
                    "usage: switchyard-server tokens create|list|revoke [options]");
}

int credits(const QStringList &args, CommandHost &host)
{
    const QCommandLineOption amount(QStringLiteral("amount"),
                                    QStringLiteral("Credits to add, up to 9 decimals."),
                                    QStringLiteral("X"));
    const QCommandLineOption note(QStringLiteral("note"),
                                  QStringLiteral("Reason recorded in the ledger."),
                                  QStringLiteral("TEXT"), QStringLiteral("grant"));
    const Action grant{
        QStringLiteral("grant"),
        QStringLiteral("Add credits to the balance."),
        {amount, note},
        [amount, note](const QCommandLineParser &parser, CommandHost &host) {
            const auto units = Money::parseCredits(parser.value(amount));
            if (!units || *units <= 0)
                throw CommandUsageError("--amount must be a positive number of credits with at "
                                        "most 9 decimals, e.g. --amount 10 or --amount 0.5");
            Store &store = host.store();
            ChargeResult r;
            store.transaction([&] {
                r = store.applyLedger(store.defaultAccountId(), QStringLiteral("grant"), *units,
                                      parser.value(note), QString(), 0);
            });
            host.out() << "Granted " << Money::formatCredits(*units) << " credits; balance "
                       << Money::formatCredits(r.entry.balanceAfter) << "\n";
            return 0;
        }};
    const Action balance{QStringLiteral("balance"),
                         QStringLiteral("Print the credit balance."),
                         {},
                         [](const QCommandLineParser &, CommandHost &host) {
                             Store &store = host.store();
                             host.out()
                                 << Money::formatCredits(store.balance(store.defaultAccountId()))
                                 << "\n";
                             return 0;
                         }};
    return dispatch(args, host, {grant, balance},
                    "usage: switchyard-server credits grant|balance [options]");
}

// usage export --csv FILE: every usage record matching the filters, as the API's CSV export
// writes it, page by page (memory stays flat however many rows).
int usage(const QStringList &args, CommandHost &host)
{
    const QCommandLineOption csv(QStringLiteral("csv"),
                                 QStringLiteral("The file to write (- for stdout)."),
                                 QStringLiteral("FILE"));
    const QCommandLineOption from(QStringLiteral("from"),
                                  QStringLiteral("Records at or after (RFC 3339 or a date)."),
                                  QStringLiteral("TIME"));
    const QCommandLineOption to(QStringLiteral("to"),
                                QStringLiteral("Records before (RFC 3339 or a date)."),
                                QStringLiteral("TIME"));
    const QCommandLineOption key(QStringLiteral("key"), QStringLiteral("One API key's records."),
                                 QStringLiteral("ID"));
    const QCommandLineOption model(QStringLiteral("model"), QStringLiteral("One model's records."),
                                   QStringLiteral("MODEL"));
    const Action exportCsv{
        QStringLiteral("export"),
        QStringLiteral("Export usage records as CSV (RFC 4180), newest first."),
        {csv, from, to, key, model},
        [&](const QCommandLineParser &parser, CommandHost &host) {
            if (!parser.isSet(csv) || parser.value(csv).isEmpty())
                throw CommandUsageError("--csv FILE is required");
            UsageQuery q;
            const auto time = [&](const QCommandLineOption &option, QDateTime *out) {
                if (!parser.isSet(option))
                    return;
                const QString v = parser.value(option);
                auto t = ControlApi::parseTime(v);
                if (!t && QDate::fromString(v, Qt::ISODate).isValid())
                    t = QDateTime(QDate::fromString(v, Qt::ISODate), QTime(0, 0), Qt::UTC);
                if (!t || !t->isValid())
                    throw CommandUsageError(("--" + option.names().first() +
                                             " must be a date, an RFC 3339 time or Unix seconds")
                                                .toStdString());
                *out = *t;
            };
            time(from, &q.from);
            time(to, &q.to);
            if (parser.isSet(key)) {
                bool ok = false;
                q.keyId = parser.value(key).toLongLong(&ok);
                if (!ok || q.keyId <= 0)
                    throw CommandUsageError("--key must be an API key id");
            }
            q.model = parser.value(model);
            const QString path = parser.value(csv);
            const bool toStdout = path == u"-";
            QFile file(toStdout ? QString() : path);
            if (toStdout ? !file.open(stdout, QIODevice::WriteOnly)
                         : !file.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
                host.err() << "error: cannot write " << path << ": " << file.errorString() << "\n";
                return 1;
            }
            Store &store = host.store();
            q.accountId = store.defaultAccountId();
            const QList<MeterSpec> meters = host.meters();
            qint64 rows = 0;
            bool written = file.write(CsvExport::usageHeader(meters)) >= 0;
            for (qint64 cursor = 0; written;) {
                const CsvExport::Page page = CsvExport::usagePage(store, q, cursor, meters);
                written = file.write(page.bytes) == page.bytes.size();
                rows += page.rows;
                if (!(cursor = page.next))
                    break;
            }
            if (!written || !file.flush()) {
                host.err() << "error: cannot write " << path << ": " << file.errorString() << "\n";
                return 1;
            }
            host.err() << "Exported " << rows << " usage records"
                       << (toStdout ? QString() : QStringLiteral(" to ") + path) << ".\n";
            return 0;
        }};
    return dispatch(args, host, {exportCsv},
                    "usage: switchyard-server usage export --csv FILE [options]");
}

} // namespace

QList<FamilyCommand> ControlFamily::commands()
{
    return {{QStringLiteral("keys"), QStringLiteral("create|update|list|revoke"),
             QStringLiteral("manage API keys (sk-)"), keys},
            {QStringLiteral("tokens"), QStringLiteral("create|list|revoke"),
             QStringLiteral("manage control tokens (lpc_)"), tokens},
            {QStringLiteral("credits"), QStringLiteral("grant|balance"),
             QStringLiteral("manage the credit balance"), credits},
            {QStringLiteral("usage"), QStringLiteral("export"),
             QStringLiteral("export usage records as CSV"), usage}};
}
