#include "AddressRoutes.h"

#include "AddressApi.h"
#include "AddressUpstream.h"
#include "CompactJson.h"
#include "JobQueue.h"
#include "RequestContext.h"
#include "ServiceFamily.h"

#include <QThread>

QList<RouteSpec> addressRoutes(const ServerScope &scope, const AddressEngine &engine, qint64 price,
                               const AddressUpstreamConfig &config)
{
    AddressUpstream *upstream =
        config.enabled() ? new AddressUpstream(config, scope.parent()) : nullptr;
    // The engine's calls take from microseconds to tens of milliseconds (a 2,000-character
    // standardize): they run on these workers, never on the server thread, so one heavy request
    // cannot hold up every other connection. Destroyed (after its jobs) with the server. At
    // most kQueued requests wait for them; more are answered busy rather than held.
    constexpr int kQueued = 1024;
    JobQueue *queue = &scope.executor(QStringLiteral("address"),
                                      std::max(2, QThread::idealThreadCount()), kQueued);
    QList<RouteSpec> routes;

    for (const QString &endpoint : AddressApi::endpoints()) {
        RouteSpec spec;
        spec.method = "POST";
        spec.pattern = QStringLiteral("/v1/address/") + endpoint;
        spec.auth = AuthMode::ApiKey;
        spec.bucket = QStringLiteral("address");
        spec.reservation = price;
        spec.handler = [endpoint, price, upstream, queue, &engine](const ContextPtr &ctx) {
            // The server thread only hands the body over: parsing it, the call, encoding the
            // answer and freeing what they allocated all happen on the worker. Each of them
            // cost the server thread (every connection shares it) a share in perf, and memory
            // freed on another thread than the one that allocated it waits on that thread's
            // allocator lock (tests/bench/README.md, "The charge path").
            ctx->offload(
                *queue,
                [ctx, body = ctx->request().body, endpoint, price, upstream,
                 &engine]() -> JobQueue::Continuation {
                    QString problem;
                    const std::optional<QJsonObject> request =
                        RequestContext::parseJsonObject(body, &problem);
                    if (!request)
                        return [ctx, problem] { ctx->respondError(400, problem); };
                    AddressApi::Reply r = AddressApi::call(engine, endpoint, *request);
                    if (!r.ok())
                        return [ctx, status = r.status, error = r.error, param = r.param] {
                            ctx->respondError(status, error, {}, param);
                        };
                    // wants() reads only the configuration, fixed at start.
                    if (upstream && upstream->wants(endpoint, r))
                        return [ctx, r = std::move(r), endpoint, price, upstream] {
                            upstream->forward(ctx, endpoint, r, price);
                        };
                    // Back to the server thread to answer; the context is only touched there.
                    return
                        [ctx, bytes = CompactJson::encode(r.body), billable = r.billable, price] {
                            if (billable)
                                ctx->usage().cost = price;
                            ctx->respondRaw(200, QByteArrayLiteral("application/json"), bytes);
                        };
                },
                QStringLiteral("The address engines"));
        };
        routes.append(std::move(spec));
    }
    return routes;
}
