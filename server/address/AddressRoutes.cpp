#include "AddressRoutes.h"

#include "AddressApi.h"
#include "AddressUpstream.h"
#include "Pipeline.h"
#include "ServerSettings.h"

void registerAddressRoutes(Pipeline &pipeline, const ServerSettings &settings)
{
    const qint64 price = settings.addressPricePerRequest;
    AddressUpstream *upstream = settings.addressUpstream.enabled()
                                    ? new AddressUpstream(settings.addressUpstream, &pipeline)
                                    : nullptr;
    for (const QString &endpoint : AddressApi::endpoints()) {
        RouteSpec spec;
        spec.method = "POST";
        spec.pattern = QStringLiteral("/v1/address/") + endpoint;
        spec.family = QStringLiteral("address");
        spec.auth = AuthMode::ApiKey;
        spec.bucket = QStringLiteral("address");
        spec.reservation = price;
        spec.handler = [endpoint, price, upstream](const ContextPtr &ctx) {
            const auto body = ctx->jsonBody();
            if (!body)
                return;
            const AddressApi::Reply r = AddressApi::call(endpoint, *body);
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
        };
        pipeline.addRoute(spec);
    }
    AddressApi::warmUp();
}
