#pragma once

#include "address/AddressStore.h"
#include "AddressUpstreamConfig.h"
#include "ServiceFamily.h"

#include <memory>

class AddressEngine;
class QObject;

// The Chinese address services as a service family; server/address/README.md has
// every endpoint's shapes, the configuration, the billing rule, the tables and the commands.
//   config     the "address" section: price_per_request (credits, default "0.0001"),
//              reload_seconds (default 30; 0: only at start; fractions allowed), warm_up
//              (default false: the engine's tables, about 45 MiB, are built when a request
//              first needs them; true: all of them right after start), upstream
//              (AddressUpstreamConfig.h);
//   tables     imported zip codes and POIs (models/address/AddressTables.h, AddressStore.h);
//   start      loads the imported data into the family's engine on a thread of its own;
//   routes     POST /v1/address/{name} for the sixteen endpoints (AddressRoutes.h), answered
//              by the family's engine; each server watches the database for data another
//              process imported (every reload_seconds);
//   stop       waits for a running load;
//   commands   switchyard-server address import zipcodes|pois FILE.csv [--replace] | status.
//
// Each family object owns its engine (AddressEngine: the engines, the installed data, the
// search index): two Services in one process never share imported data.
class AddressFamily : public ServiceFamily
{
public:
    AddressFamily();
    ~AddressFamily() override; // waits for a running load

    QString name() const override { return QStringLiteral("address"); }
    void configure(const QJsonObject &section, const ServerSettings &server) override;
    QList<Migrations::Component> migrations() const override;
    void start(DatabaseService &db) override;
    QList<RouteSpec> routes(const ServerScope &scope) override;
    void stop() override;
    QList<FamilyCommand> commands() override;

    qint64 pricePerRequest() const { return m_price; }
    int reloadMs() const { return m_reloadMs; }
    const AddressUpstreamConfig &upstream() const { return m_upstream; }

    // The engine this family's servers answer from; the window's address tool calls it too.
    // Shared so that work in flight (a pool task, an import) keeps it alive.
    std::shared_ptr<AddressEngine> engine() const { return m_engine; }

    // True after start(): importCsv() has a database to write to.
    bool canImport() const;
    // Imports a CSV file into the family's database on a thread of its own
    // (AddressImportJob: progress and the report as signals on the caller's thread); after rows
    // were written, loads the stored data into this family's engine (unless a newer install
    // happened meanwhile). Before start() the job reports a fatal error. The job is a child of
    // context.
    AddressImportJob *importCsv(AddressStore::Kind kind, const QString &path, bool replace,
                                QObject *context);

    // Blocks until no load of the stored data (at start, or a reload) is running; false if
    // msecs (-1: no limit) passed first.
    bool waitForLoad(int msecs = -1);

private:
    struct Loader;

    qint64 m_price = 100'000; // 0.0001 credits
    int m_reloadMs = 30'000;
    bool m_warmUp = false;
    AddressUpstreamConfig m_upstream; // disabled by default
    std::shared_ptr<AddressEngine> m_engine;
    std::shared_ptr<Loader> m_loader;
};
