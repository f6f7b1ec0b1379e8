#pragma once

#include "ServiceFamily.h"

#include <QStringList>

class PanelRegistry;
class Store;

// A test-only service family that plugs into the program through the registries alone: a
// table of its own (labels), a command that stamps a label into it (`switchyard-server probe
// stamp LABEL | list`), a route that lists them (GET /v1/probe/stamps, public), a billed route
// with a usage meter of its own (POST /v1/probe/stamp, below) and a panel that shows the labels
// (Tools > Probe). Nothing outside tests/family_probe names it but the one line that includes
// probe.cmake.
//
// POST /v1/probe/stamp {"labels": ["a", ...]} (API key; 1 to kMaxLabels non-empty strings)
// answers {"object": "probe.stamp", "labels": [...], "stamps": n} and stores nothing. It holds
// kStampPrice before it runs and is charged exactly that on success, whatever n is; its usage
// record carries n under kStampsMeter. A bad body is 400 (param "labels"), unbilled.
class ProbeFamily : public ServiceFamily
{
public:
    // The meter of the billed route: the labels it stamped.
    static inline const QString kStampsMeter = QStringLiteral("probe_stamps");
    // What one POST /v1/probe/stamp costs, in credit units (its reservation and its charge).
    static constexpr qint64 kStampPrice = 250;
    static constexpr int kMaxLabels = 8;

    QString name() const override { return QStringLiteral("probe"); }
    QList<Migrations::Component> migrations() const override;
    // kStampsMeter: "Stamps" in the Usage panel, "probe_stamp_count" in the usage API.
    QList<MeterSpec> meters() const override;
    QList<RouteSpec> routes(const ServerScope &scope) override;
    QList<FamilyCommand> commands() override;

    // The stamped labels, sorted (on the thread of store's connection).
    static QStringList labels(Store &store);
};

// The family's window part, as a family of the build registers it (ui/<family>/Panels.cpp).
void addPanels_probe(PanelRegistry &registry);
