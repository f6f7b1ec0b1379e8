#pragma once

#include "ServiceFamily.h"

// /api/v1/*: credits, usage and API-key management for control tokens (the core's scopes,
// models/Scopes.h). No configuration, tables or hooks of its own: the core owns what it serves.
class ControlFamily : public ServiceFamily
{
public:
    QString name() const override { return QStringLiteral("control"); }
    QList<RouteSpec> routes(const ServerScope &scope) override;
};
