#pragma once

#include "ServiceFamily.h"

#include <atomic>
#include <QStringList>

class JobQueue;
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
//
// POST /v1/probe/work (API key) runs on the family's executor (ServerScope::executor, one
// worker, kWorkCapacity requests at once): the job waits while holdWork is set, counts itself
// in workRuns and answers {"object": "probe.work"}, charged kStampPrice. The test holds the
// worker to fill the queue, see the busy answer and cancel a waiting request.
class ProbeFamily : public ServiceFamily
{
public:
    // The meter of the billed route: the labels it stamped.
    static inline const QString kStampsMeter = QStringLiteral("probe_stamps");
    // What one POST /v1/probe/stamp costs, in credit units (its reservation and its charge).
    static constexpr qint64 kStampPrice = 250;
    static constexpr int kMaxLabels = 8;
    static constexpr int kWorkCapacity = 2;
    static inline std::atomic_bool holdWork = false;
    static inline std::atomic<int> workRuns = 0;
    static inline std::atomic<JobQueue *> workQueue = nullptr; // the last server's

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
