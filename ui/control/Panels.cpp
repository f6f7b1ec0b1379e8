// The control family's panels: the account's credentials and credits, over the window's
// shared models.
#include "ApiKeysPanel.h"
#include "ControlTokensPanel.h"
#include "CreditsPanel.h"
#include "PanelRegistry.h"
#include "UsagePanel.h"

void addPanels_control(PanelRegistry &registry)
{
    const QString family = QStringLiteral("control");
    registry.add(family, {QObject::tr("Settings"), 100, QObject::tr("API Keys"),
                          [](const PanelHost &host) { return new ApiKeysPanel(&host.apiKeys); }});
    registry.add(family, {QObject::tr("Settings"), 110, QObject::tr("Control Tokens"),
                          [](const PanelHost &host) {
                              return new ControlTokensPanel(&host.controlTokens);
                          }});
    registry.add(family, {QObject::tr("Billing"), 200, QObject::tr("Credits"),
                          [](const PanelHost &host) { return new CreditsPanel(&host.ledger); }});
    registry.add(family,
                 {QObject::tr("Billing"), 210, QObject::tr("Usage"), [](const PanelHost &host) {
                      return new UsagePanel(&host.usage, &host.usageBuckets, &host.apiKeys);
                  }});
}
