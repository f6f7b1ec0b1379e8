// The social-data family's panel: its catalog and the operator's platform rules.
#include "PanelRegistry.h"
#include "SocialDataPanel.h"

void addPanels_social(PanelRegistry &registry)
{
    registry.add(
        QStringLiteral("social"),
        {QObject::tr("Settings"), 130, QObject::tr("Social data"), [](const PanelHost &host) {
             return new SocialDataPanel(&host.familyAs<SocialFamily>());
         }});
}
