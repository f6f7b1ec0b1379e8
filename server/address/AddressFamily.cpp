#include "AddressFamily.h"

#include "address/AddressTables.h"
#include "AddressData.h"
#include "AddressEngine.h"
#include "AddressRoutes.h"
#include "ConfigFields.h"
#include "DatabaseService.h"
#include "JobQueue.h"

#include <QCommandLineParser>
#include <QDeadlineTimer>
#include <QMutex>
#include <QTextStream>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <stdexcept>

using AddressStore::DataVersion;

// The family's database side: the start-up load and reloads into its engine, and the version of
// the stored data the engine holds. Import jobs share it (and may outlive the family: the
// window's panel owns them), so it is reference-counted.
struct AddressFamily::Loader
{
    explicit Loader(std::shared_ptr<AddressEngine> e) : engine(std::move(e)) {}
    // The queue's jobs use this object: they end before it goes (the queue is its last member).

    std::optional<DatabaseConfig> config() const
    {
        QMutexLocker lock(&mutex);
        return m_config;
    }
    void setConfig(const DatabaseConfig &config)
    {
        QMutexLocker lock(&mutex);
        m_config = config;
    }
    DataVersion loaded() const
    {
        QMutexLocker lock(&mutex);
        return m_loaded;
    }
    void setLoaded(const DataVersion &version)
    {
        QMutexLocker lock(&mutex);
        m_loaded = version;
    }

    // Loads the stored data and installs it in the engine (unless an import installed newer
    // data meanwhile), on the pool with a connection of its own: not one of the service's
    // readers, which requests need, for a load that takes seconds for large data. Returns at
    // once; does nothing while a load runs (that one reads the newest rows anyway).
    void loadAsync()
    {
        const auto database = config();
        if (!database || loading.exchange(true))
            return;
        const quint64 generation = engine->generation();
        queue.post([this, database = *database, generation]() -> JobQueue::Continuation {
            DataVersion version;
            std::shared_ptr<const LocalData> data;
            const auto read = [&](Store &store) {
                // The version first: rows imported between the two reads make the next check
                // reload once more, never miss.
                version = AddressStore::dataVersion(store);
                data = AddressData::load(store);
            };
            try {
                AddressStore::withOwnConnection(database, QStringLiteral("address-load"), read);
                if (engine->installIf(generation, std::move(data)))
                    setLoaded(version);
            } catch (const std::exception &e) {
                qWarning("address data: cannot load the imported zip codes and POIs: %s", e.what());
            }
            loading = false;
            return nullptr;
        });
    }

    const std::shared_ptr<AddressEngine> engine;
    std::atomic_bool loading = false;
    // Until the load that runs has ended (msecs < 0: however long it takes).
    bool waitIdle(int msecs) const
    {
        const QDeadlineTimer deadline(msecs < 0 ? QDeadlineTimer::Forever : QDeadlineTimer(msecs));
        while (loading.load()) {
            if (deadline.hasExpired())
                return false;
            QThread::msleep(5);
        }
        return true;
    }

private:
    mutable QMutex mutex;                   // guards the two below
    std::optional<DatabaseConfig> m_config; // set by start()
    DataVersion m_loaded;                   // what the engine last installed from the database

public:
    // Loads run on a worker of their own (one per family, made with it), off every server.
    JobQueue queue{1, QStringLiteral("address-load")};
};

AddressFamily::AddressFamily()
    : m_engine(std::make_shared<AddressEngine>()), m_loader(std::make_shared<Loader>(m_engine))
{
}

AddressFamily::~AddressFamily()
{
    m_loader->waitIdle(-1);
}

void AddressFamily::configure(const QJsonObject &section, const ServerSettings &)
{
    const ConfigFields f(section, QStringLiteral("address"));
    m_price = f.credits(QStringLiteral("price_per_request"), m_price, QStringLiteral("0.0001"));
    if (f.has(QStringLiteral("reload_seconds"))) {
        const double seconds = f.number(QStringLiteral("reload_seconds"), 0, 0, 86'400,
                                        QStringLiteral("0: only at start"));
        // Rounded, not truncated (0.29 s is 290 ms); a positive value never turns into 0.
        m_reloadMs = seconds > 0 ? std::max(1, int(std::lround(seconds * 1000))) : 0;
    }
    m_warmUp = f.flag(QStringLiteral("warm_up"), m_warmUp);
    m_upstream = AddressUpstreamConfig::fromJson(f.section(QStringLiteral("upstream")).json());
}

QList<Migrations::Component> AddressFamily::migrations() const
{
    return {AddressTables::migrations()};
}

void AddressFamily::start(DatabaseService &db)
{
    // The imported zip codes and POIs, loaded on the loader's thread while the server comes up.
    m_loader->setConfig(db.config());
    m_loader->loadAsync();
}

QList<RouteSpec> AddressFamily::routes(const ServerScope &scope)
{
    if (m_reloadMs > 0) {
        // Every reloadMs, the stored data's version is read on a database reader (a cheap
        // query) and compared with what the engine holds: another process (the CLI, another
        // instance sharing the database) may have imported. The timer lives and dies with
        // this server; the family outlives it.
        auto *timer = new QTimer(scope.parent());
        Loader *loader = m_loader.get();
        QObject *context = scope.parent();
        DatabaseService *db = &scope.database();
        QObject::connect(timer, &QTimer::timeout, context, [db, context, loader] {
            db->read<DataVersion>(
                context, [](Store &store) { return AddressStore::dataVersion(store); },
                [loader](const DbResult<DataVersion> &r) {
                    if (r.ok() && !(r.value == loader->loaded()))
                        loader->loadAsync();
                });
        });
        timer->start(m_reloadMs);
    }
    if (m_warmUp)
        m_engine->warmUp();
    return addressRoutes(scope, *m_engine, m_price, m_upstream);
}

void AddressFamily::stop()
{
    m_loader->waitIdle(-1);
}

bool AddressFamily::waitForLoad(int msecs)
{
    return m_loader->waitIdle(msecs);
}

bool AddressFamily::canImport() const
{
    return m_loader->config().has_value();
}

AddressImportJob *AddressFamily::importCsv(AddressStore::Kind kind, const QString &path,
                                           bool replace, QObject *context)
{
    const auto database = m_loader->config();
    AddressImportJob::Read read = [kind, path, started = database.has_value()] {
        if (started)
            return AddressData::readFile(kind, path);
        AddressImportJob::Input input;
        input.report.kind = AddressStore::kindName(kind);
        input.report.fatal = QStringLiteral("the address services have no database yet");
        return input;
    };
    // Taken now: an install after this (a load, another import) is newer than what this import
    // would load, and is not replaced.
    const quint64 generation = m_engine->generation();
    AddressImportJob::Committed committed = [loader = m_loader, generation](Store &store) {
        // Loaded after the commit: the snapshot holds what the database holds, including rows
        // other instances wrote.
        const DataVersion version = AddressStore::dataVersion(store);
        if (loader->engine->installIf(generation, AddressData::load(store)))
            loader->setLoaded(version);
    };
    return AddressImportJob::start(database.value_or(DatabaseConfig()), kind, replace,
                                   std::move(read), std::move(committed), context);
}

namespace {

// Exit code of an import that wrote its good rows but rejected others.
constexpr int kPartialImport = 3;

int importCommand(const QStringList &args, CommandHost &host)
{
    const auto kind = AddressStore::parseKind(args.value(2));
    if (!kind)
        throw CommandUsageError("usage: switchyard-server address import zipcodes|pois FILE.csv "
                                "[--replace] [options]");
    QStringList rest = args.mid(2);
    rest[0] = QStringLiteral("address import ") + AddressStore::kindName(*kind);
    QCommandLineParser parser;
    const QCommandLineOption replace(
        QStringLiteral("replace"),
        QStringLiteral("Replace all imported %1 (default: append; a row whose key exists is "
                       "updated).")
            .arg(AddressStore::kindName(*kind)));
    parser.addOption(replace);
    parser.addPositionalArgument(QStringLiteral("FILE"), QStringLiteral("The CSV file."));
    const QString description =
        *kind == AddressStore::Kind::Zipcodes
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
    const AddressStore::ImportReport report =
        AddressData::importFile(host.store(), *kind, files.first(), parser.isSet(replace));
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
    const AddressStore::Counts c = AddressStore::counts(host.store());
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
