#pragma once

#include "ServiceFamily.h"

#include <QStringList>

class PanelRegistry;
class Store;

// A test-only service family that plugs into the program through the registries alone: a
// table of its own (labels), a command that stamps a label into it (`switchyard-server probe
// stamp LABEL | list`), a route that lists them (GET /v1/probe/stamps, public) and a panel that
// shows them (Tools > Probe). Nothing outside tests/family_probe names it but the one line that
// includes probe.cmake.
class ProbeFamily : public ServiceFamily
{
public:
    QString name() const override { return QStringLiteral("probe"); }
    QList<Migrations::Component> migrations() const override;
    QList<RouteSpec> routes(const ServerScope &scope) override;
    QList<FamilyCommand> commands() override;

    // The stamped labels, sorted (on the thread of store's connection).
    static QStringList labels(Store &store);
};

// The family's window part, as a family of the build registers it (ui/<family>/Panels.cpp).
void addPanels_probe(PanelRegistry &registry);
