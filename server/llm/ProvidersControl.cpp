#include "ProvidersControl.h"

#include "GatewayFamily.h"
#include "ProviderRegistry.h"

#include <QJsonArray>
#include <QJsonObject>

ProvidersControl::ProvidersControl(ProviderRegistry &registry, QObject *parent)
    : QObject(parent), m_registry(registry)
{
    connect(&m_registry, &ProviderRegistry::catalogRefreshed, this,
            &ProvidersControl::catalogRefreshed);
}

void ProvidersControl::catalogRefreshed(const QString &provider, int models, const QString &error)
{
    const QList<ContextPtr> waiting = m_pendingRefreshes.take(provider);
    for (const ContextPtr &ctx : waiting) {
        if (!error.isEmpty())
            ctx->respondError(
                502, QStringLiteral("Refreshing the %1 catalog failed: %2").arg(provider, error));
        else
            ctx->respondJson(200, QJsonObject{{"provider", provider}, {"models", models}});
    }
}

QList<RouteSpec> ProvidersControl::routes()
{
    QList<RouteSpec> routes;
    // GET /api/v1/providers: the providers with masked keys and live-catalog state.
    RouteSpec list;
    list.method = "GET";
    list.pattern = QStringLiteral("/api/v1/providers");
    list.family = QStringLiteral("control");
    list.auth = AuthMode::ControlToken;
    list.scope = GatewayScopes::ProvidersRead;
    list.bucket = QStringLiteral("control");
    list.handler = [this](const ContextPtr &ctx) {
        const auto s = m_registry.snapshot();
        QJsonArray data;
        for (const ProviderConfig &p : s->config.providers) {
            QJsonArray keys;
            for (const QString &k : p.allKeys())
                keys.append(ProviderConfig::maskKey(k));
            QJsonObject o{{"name", p.name},
                          {"type", providerTypeName(p.type)},
                          {"base_url", p.baseUrl},
                          {"keys", keys}};
            if (p.type == ProviderType::Catalog) {
                o.insert("catalog_models", int(s->live.value(p.name).size()));
                const QDateTime fetched = s->liveFetched.value(p.name);
                o.insert("catalog_fetched_at", fetched.isValid()
                                                   ? QJsonValue(fetched.toString(Qt::ISODate))
                                                   : QJsonValue());
            }
            data.append(o);
        }
        ctx->respondJson(200, QJsonObject{{"object", "list"}, {"data", data}});
    };
    routes.append(list);

    // POST /api/v1/providers/{name}/refresh: reload a live catalog now.
    RouteSpec refresh = list;
    refresh.method = "POST";
    refresh.pattern = QStringLiteral("/api/v1/providers/{name}/refresh");
    refresh.scope = GatewayScopes::ProvidersWrite;
    refresh.handler = [this](const ContextPtr &ctx) {
        const QString name = ctx->param(QStringLiteral("name"));
        const ProviderConfig *p = m_registry.snapshot()->config.provider(name);
        if (!p || p->type != ProviderType::Catalog) {
            ctx->respondError(404, QStringLiteral("No catalog provider named '%1'.").arg(name));
            return;
        }
        // The registry refreshes on its own thread and announces the outcome with a signal,
        // which reaches this thread queued (and never a deleted gateway).
        m_pendingRefreshes[name].append(ctx);
        ProviderRegistry *registry = &m_registry;
        QMetaObject::invokeMethod(registry, [registry, name] { registry->refreshCatalog(name); });
    };
    routes.append(refresh);
    return routes;
}
