#pragma once

#include "ServiceFamily.h"

class SocialFamily;

// GET /v1/social-media/video/extract?url= (README.md, "Video extract"): the URL's platform
// detected (VideoExtract.h), a short link resolved through the outbound URL guard when only
// Switchyard can resolve it (each redirect hop checked, at most 3, never followed blindly),
// the upstream's actions for that platform called in turn, and one standardized answer.
// Price: the family's price per successful call, reserved first; nothing on failure.
// Errors, in the social envelope: no url 400; an unsupported URL 400 listing the supported
// hosts; a short link that is refused or does not resolve 400 with the reason; a platform not
// enabled 403; upstream timeout 504 and unreachable 503 as server/social/README.md words them; an
// upstream error or an answer without a video 502.
QList<RouteSpec> extractRoutes(SocialFamily &family, const ServerScope &scope);
