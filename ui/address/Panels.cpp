// The address family's panel: the testing tool on the family's engine, and its import.
#include "address/AddressFamily.h"
#include "AddressPanel.h"
#include "PanelRegistry.h"

void addPanels_address(PanelRegistry &registry)
{
    registry.add(
        QStringLiteral("address"),
        {QObject::tr("Tools"), 300, QObject::tr("Address testing"),
         [](const PanelHost &host) { return new AddressPanel(host.familyAs<AddressFamily>()); }});
}
