#include "AddressRoutes.h"

#include "AddressApi.h"
#include "AddressUpstream.h"
#include "RequestContext.h"

#include <QMetaObject>
#include <QPointer>
#include <QThread>
#include <QThreadPool>

QList<RouteSpec> addressRoutes(QObject *parent, const AddressEngine &engine, qint64 price,
                               const AddressUpstreamConfig &config)
{
    AddressUpstream *upstream = config.enabled() ? new AddressUpstream(config, parent) : nullptr;
    // The engine's calls take from microseconds to tens of milliseconds (a 2,000-character
    // standardize): they run on this pool, never on the server thread, so one heavy request
    // cannot hold up every other connection. Its own pool, destroyed (after its tasks) with
    // the server.
    auto *pool = new QThreadPool(parent);
    pool->setMaxThreadCount(std::max(2, QThread::idealThreadCount()));
    QPointer<QObject> home(parent); // lives on the server thread
    QList<RouteSpec> routes;

    for (const QString &endpoint : AddressApi::endpoints()) {
        RouteSpec spec;
        spec.method = "POST";
        spec.pattern = QStringLiteral("/v1/address/") + endpoint;
        spec.family = QStringLiteral("address");
        spec.auth = AuthMode::ApiKey;
        spec.bucket = QStringLiteral("address");
        spec.reservation = price;
        spec.handler = [endpoint, price, upstream, pool, home, &engine](const ContextPtr &ctx) {
            const auto body = ctx->jsonBody();
            if (!body)
                return;
            pool->start([ctx, request = *body, endpoint, price, upstream, home, &engine] {
                const AddressApi::Reply r = AddressApi::call(engine, endpoint, request);
                // Back to the server thread to answer; the context is only touched there.
                QMetaObject::invokeMethod(
                    home.data(),
                    [ctx, r, endpoint, price, upstream] {
                        if (!r.ok()) {
                            ctx->respondError(r.status, r.error, {}, r.param);
                            return;
                        }
                        if (upstream && upstream->wants(endpoint, r)) {
                            upstream->forward(ctx, endpoint, r, price);
                            return;
                        }
                        if (r.billable)
                            ctx->usage().cost = price;
                        ctx->respondJson(200, r.body);
                    },
                    Qt::QueuedConnection);
            });
        };
        routes.append(std::move(spec));
    }
    return routes;
}
