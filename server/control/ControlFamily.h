#pragma once

#include "ServiceFamily.h"

// /api/v1/*: credits, usage and API-key management for control tokens (the core's scopes,
// models/Scopes.h). No configuration, tables or hooks of its own: the core owns what it serves.
// Its commands, `switchyard-server keys|tokens|credits` (ControlCommands.cpp), manage the same
// credentials and credits on the database directly.
class ControlFamily : public ServiceFamily
{
public:
    QString name() const override { return QStringLiteral("control"); }
    QList<RouteSpec> routes(const ServerScope &scope) override;
    QList<FamilyCommand> commands() override;
};
