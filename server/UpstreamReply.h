#pragma once

#include "RequestContext.h"
#include "upstream/ProviderCall.h"

// Answers a request with an upstream failure as ProviderCall mapped it: the status, the
// family's error envelope with the message, type and code, and Retry-After for a 429.
void respondUpstreamFailure(const ContextPtr &ctx, const UpstreamAnswer &answer);
