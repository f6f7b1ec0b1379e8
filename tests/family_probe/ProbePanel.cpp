// Tools > Probe: the probe family's labels, read through the window's database service.
#include "DatabaseService.h"
#include "PanelRegistry.h"
#include "ProbeFamily.h"

#include <QLabel>
#include <QVBoxLayout>

namespace {

QWidget *makeProbePanel(const PanelHost &host)
{
    auto *panel = new QWidget;
    panel->setObjectName(QStringLiteral("probePanel"));
    auto *label = new QLabel(QObject::tr("Loading…"), panel);
    label->setObjectName(QStringLiteral("stampsLabel"));
    auto *layout = new QVBoxLayout(panel);
    layout->addWidget(label);
    host.database.read<QStringList>(
        label, [](Store &s) { return ProbeFamily::labels(s); },
        [label](const DbResult<QStringList> &r) {
            label->setText(r.ok() ? r.value.join(QStringLiteral(", ")) : r.error);
        });
    return panel;
}

} // namespace

void addPanels_probe(PanelRegistry &registry)
{
    registry.add(QStringLiteral("probe"),
                 {QObject::tr("Tools"), 390, QObject::tr("Probe"), makeProbePanel});
}
