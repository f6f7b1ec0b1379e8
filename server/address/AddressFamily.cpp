#include "AddressFamily.h"

#include "address/AddressTables.h"
#include "AddressDataStore.h"
#include "AddressRoutes.h"
#include "Money.h"

#include <QCommandLineParser>
#include <QTextStream>
#include <stdexcept>

void AddressFamily::configure(const QJsonObject &section, const ServerSettings &)
{
    if (section.contains("price_per_request")) {
        const auto units = Money::parseCredits(section.value("price_per_request").toString());
        if (!units || *units < 0)
            throw std::runtime_error("config: address.price_per_request must be a decimal string "
                                     "of credits, e.g. \"0.0001\"");
        m_price = *units;
    }
    if (section.contains("reload_seconds")) {
        const QJsonValue v = section.value("reload_seconds");
        const double seconds = v.toDouble(-1);
        if (!v.isDouble() || seconds < 0 || seconds > 86'400)
            throw std::runtime_error("config: address.reload_seconds must be 0 (only at start) to "
                                     "86400");
        m_reloadMs = int(seconds * 1000);
    }
    if (section.contains("upstream")) {
        if (!section.value("upstream").isObject())
            throw std::runtime_error("config: address.upstream must be an object");
        m_upstream = AddressUpstreamConfig::fromJson(section.value("upstream").toObject());
    }
}

QList<Migrations::Component> AddressFamily::migrations() const
{
    return {AddressTables::migrations()};
}

void AddressFamily::start(DatabaseService &db)
{
    // The imported zip codes and POIs, loaded on a pool thread while the server comes up.
    AddressDataStore::loadAsync(db);
}

void AddressFamily::stop()
{
    // The start-up load uses the database, which stops next.
    AddressDataStore::waitForLoad();
}

QList<RouteSpec> AddressFamily::routes(const ServerScope &scope)
{
    AddressDataStore::watch(scope.database, scope.parent, m_reloadMs);
    return addressRoutes(scope.parent, m_price, m_upstream);
}

namespace {

// Exit code of an import that wrote its good rows but rejected others.
constexpr int kPartialImport = 3;

int importCommand(const QStringList &args, CommandHost &host)
{
    const auto kind = AddressDataStore::parseKind(args.value(2));
    if (!kind)
        throw CommandUsageError("usage: switchyard-server address import zipcodes|pois FILE.csv "
                                "[--replace] [options]");
    QStringList rest = args.mid(2);
    rest[0] = QStringLiteral("address import ") + AddressDataStore::kindName(*kind);
    QCommandLineParser parser;
    const QCommandLineOption replace(
        QStringLiteral("replace"),
        QStringLiteral("Replace all imported %1 (default: append; a row whose key exists is "
                       "updated).")
            .arg(AddressDataStore::kindName(*kind)));
    parser.addOption(replace);
    parser.addPositionalArgument(QStringLiteral("FILE"), QStringLiteral("The CSV file."));
    const QString description =
        *kind == AddressDataStore::Kind::Zipcodes
            ? QStringLiteral("Import zip codes from a UTF-8 CSV file with the header "
                             "zipcode,province,city,district,town,road (or a divcode column "
                             "instead of the region names).")
            : QStringLiteral("Import points of interest from a UTF-8 CSV file with the header "
                             "name,province,city,district,town,address,lon,lat,coord,"
                             "category,aliases.");
    if (!host.parse(parser, rest,
                    description + QStringLiteral(" Rows with errors are listed and skipped; exit "
                                                 "code %1 when some were.")
                                      .arg(kPartialImport)))
        return 0;
    const QStringList files = parser.positionalArguments();
    if (files.size() != 1)
        throw CommandUsageError("expected exactly one CSV file");
    const ImportReport report =
        AddressDataStore::importFile(host.store(), *kind, files.first(), parser.isSet(replace));
    if (!report.ok()) {
        host.err() << "error: " << report.fatal << "\n";
        return 1;
    }
    constexpr int kListed = 20;
    for (const auto &e : report.errors.mid(0, kListed))
        host.err() << files.first() << ":" << e.line << ": " << e.reason << "\n";
    if (report.errors.size() > kListed)
        host.err() << "... and " << report.errors.size() - kListed << " more rows with errors\n";
    host.err().flush();
    host.out() << report.summary() << "\n";
    return report.errors.isEmpty() ? 0 : kPartialImport;
}

int statusCommand(const QStringList &args, CommandHost &host)
{
    QStringList rest = args.mid(1);
    rest[0] = QStringLiteral("address status");
    QCommandLineParser parser;
    if (!host.parse(parser, rest,
                    QStringLiteral("Count the imported zip codes and points of interest.")))
        return 0;
    const AddressDataStore::Counts c = AddressDataStore::counts(host.store());
    host.out() << "DATA\tROWS\n"
               << "zipcodes\t" << c.zipcodes << "\n"
               << "zipcode roads\t" << c.zipRoads << "\n"
               << "pois\t" << c.pois << "\n";
    return 0;
}

} // namespace

QList<FamilyCommand> AddressFamily::commands()
{
    FamilyCommand address;
    address.name = QStringLiteral("address");
    address.synopsis = QStringLiteral("import|status");
    address.summary = QStringLiteral("import zip codes and POIs for the address services");
    address.run = [](const QStringList &args, CommandHost &host) {
        const QString action = args.value(1);
        if (action == u"import")
            return importCommand(args, host);
        if (action == u"status")
            return statusCommand(args, host);
        throw CommandUsageError("usage: switchyard-server address import zipcodes|pois FILE.csv "
                                "[--replace] | address status [options]");
    };
    return {address};
}

std::unique_ptr<ServiceFamily> makeFamily_address()
{
    return std::make_unique<AddressFamily>();
}
