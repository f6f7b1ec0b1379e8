// The image-task family's panel: its webhook outbox.
#include "PanelRegistry.h"
#include "WebhookDeliveriesPanel.h"

void addPanels_images(PanelRegistry &registry)
{
    registry.add(QStringLiteral("images"),
                 {QObject::tr("Activity"), 400, QObject::tr("Webhook deliveries"),
                  [](const PanelHost &host) {
                      return new WebhookDeliveriesPanel(&host.familyAs<ImagesFamily>());
                  }});
}
