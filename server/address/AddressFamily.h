#pragma once

#include "AddressUpstreamConfig.h"
#include "ServiceFamily.h"

// The Chinese address services (spec 4.7) as a service family; server/address/README.md has
// every endpoint's shapes.
//   config     the "address" section: price_per_request (credits, default "0.0001"),
//              reload_seconds (default 30; 0: only at start; fractions allowed), upstream
//              (AddressUpstreamConfig.h);
//   tables     imported zip codes and POIs (models/address/AddressTables.h);
//   start      loads the imported data on a pool thread;
//   routes     POST /v1/address/{name} for the sixteen endpoints (AddressRoutes.h), each server
//              watching the database for data another process imported;
//   commands   switchyard-server address import zipcodes|pois FILE.csv [--replace] | status.
class AddressFamily : public ServiceFamily
{
public:
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

private:
    qint64 m_price = 100'000; // 0.0001 credits
    int m_reloadMs = 30'000;
    AddressUpstreamConfig m_upstream; // disabled by default
};
