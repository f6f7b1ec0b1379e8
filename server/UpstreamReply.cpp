#include "UpstreamReply.h"

#include "ErrorEnvelope.h"

void respondUpstreamFailure(const ContextPtr &ctx, const UpstreamAnswer &a)
{
    HttpHeaders extra;
    if (!a.retryAfter.isEmpty())
        extra.append(qMakePair(QByteArray("Retry-After"), a.retryAfter));
    ctx->respondRaw(a.status, "application/json",
                    ErrorEnvelope::body(ctx->errorStyle(), a.status, a.message, a.type, {}, a.code),
                    std::move(extra));
}
