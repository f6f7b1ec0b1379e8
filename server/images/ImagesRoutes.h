#pragma once

#include "ServiceFamily.h"

class ImagesFamily;

// The family's routes for one server (server/images/README.md): the task API, the signed image
// links, and the webhook control API.
QList<RouteSpec> imagesRoutes(ImagesFamily &family, const ServerScope &scope);
QList<RouteSpec> webhookControlRoutes(ImagesFamily &family, const ServerScope &scope);
