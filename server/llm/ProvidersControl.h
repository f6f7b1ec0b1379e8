#pragma once

#include "RequestContext.h"
#include "Router.h"

#include <QHash>
#include <QList>
#include <QObject>

class ProviderRegistry;

// The providers' control API on /api/v1 (control tokens): GET /api/v1/providers lists them with
// masked keys and live-catalog state (providers:read); POST /api/v1/providers/{name}/refresh
// reloads a live catalog now and answers when it is done (providers:write). One per server, on
// its thread; the registry refreshes on its own thread and reports back with a signal.
class ProvidersControl : public QObject
{
    Q_OBJECT
public:
    ProvidersControl(ProviderRegistry &registry, QObject *parent = nullptr);
    QList<RouteSpec> routes();

private:
    void catalogRefreshed(const QString &provider, int models, const QString &error);

    ProviderRegistry &m_registry;
    QHash<QString, QList<ContextPtr>> m_pendingRefreshes;
};
