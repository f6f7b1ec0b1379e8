#include "AddressRoutes.h"

#include "AddressApi.h"
#include "AddressUpstream.h"
#include "JobQueue.h"
#include "RequestContext.h"

#include <QJsonDocument>
#include <QThread>

QList<RouteSpec> addressRoutes(QObject *parent, const AddressEngine &engine, qint64 price,
                               const AddressUpstreamConfig &config)
{
    AddressUpstream *upstream = config.enabled() ? new AddressUpstream(config, parent) : nullptr;
    // The engine's calls take from microseconds to tens of milliseconds (a 2,000-character
    // standardize): they run on these workers, never on the server thread, so one heavy request
    // cannot hold up every other connection. Destroyed (after its jobs) with the server.
    auto *queue =
        new JobQueue(std::max(2, QThread::idealThreadCount()), QStringLiteral("address"), parent);
    QList<RouteSpec> routes;

    for (const QString &endpoint : AddressApi::endpoints()) {
        RouteSpec spec;
        spec.method = "POST";
        spec.pattern = QStringLiteral("/v1/address/") + endpoint;
        spec.family = QStringLiteral("address");
        spec.auth = AuthMode::ApiKey;
        spec.bucket = QStringLiteral("address");
        spec.reservation = price;
        spec.handler = [endpoint, price, upstream, queue, &engine](const ContextPtr &ctx) {
            const auto body = ctx->jsonBody();
            if (!body)
                return;
            queue->post([ctx, request = *body, endpoint, price, upstream, &engine] {
                const AddressApi::Reply r = AddressApi::call(engine, endpoint, request);
                // Encoded here rather than on the server thread, which every connection shares
                // (about a sixth of its work per transfer-coord request, in callgrind).
                const QByteArray bytes =
                    r.ok() ? QJsonDocument(r.body).toJson(QJsonDocument::Compact) : QByteArray();
                // Back to the server thread to answer; the context is only touched there.
                return [ctx, r, bytes, endpoint, price, upstream] {
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
                    ctx->respondRaw(200, "application/json", bytes);
                };
            });
        };
        routes.append(std::move(spec));
    }
    return routes;
}
