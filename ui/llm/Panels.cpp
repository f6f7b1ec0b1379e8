// The text gateway's panel (the family named "gateway", in server/llm): its upstream providers,
// edited through the family's registry.
#include "llm/GatewayFamily.h"
#include "PanelRegistry.h"
#include "ProvidersPanel.h"

void addPanels_llm(PanelRegistry &registry)
{
    registry.add(
        QStringLiteral("gateway"),
        {QObject::tr("Settings"), 120, QObject::tr("Providers"), [](const PanelHost &host) {
             return new ProvidersPanel(&host.familyAs<GatewayFamily>().registry());
         }});
}
