#pragma once

#include "ServiceFamily.h"

// /api/v1/*: credits, usage and API-key management for control tokens (the core's scopes,
// models/Scopes.h). No configuration or tables of its own: the core owns what it serves; the
// usage API shows the meters the families register (ServiceFamily::meters()).
// Its commands, `switchyard-server keys|tokens|credits` (ControlCommands.cpp), manage the same
// credentials and credits on the database directly.
class ControlFamily : public ServiceFamily
{
public:
    QString name() const override { return QStringLiteral("control"); }
    // Learns every family's usage meters, which the usage API shows.
    void link(const QList<ServiceFamily *> &families) override;
    QList<RouteSpec> routes(const ServerScope &scope) override;
    QList<FamilyCommand> commands() override;

private:
    QList<MeterSpec> m_meters; // set before any server is built, read-only after
};
