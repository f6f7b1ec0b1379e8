#pragma once

#include "ServiceFamily.h"

class SocialFamily;

// The family's routes (SocialFamily.h lists them), for one server.
QList<RouteSpec> socialRoutes(SocialFamily &family, const ServerScope &scope);
