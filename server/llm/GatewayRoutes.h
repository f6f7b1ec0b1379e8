#pragma once

#include "Router.h"

#include <QList>

class Gateway;

// POST /v1/chat/completions, /v1/responses and /v1/messages (spec 4.1 to 4.3): validated,
// resolved to a provider by model, then a GatewayCall relays and bills them. Each needs
// minimumReservation credits available before its upstream call (402 otherwise). The messages
// route answers errors in the messages protocol's envelope.
QList<RouteSpec> gatewayRoutes(Gateway &gateway, qint64 minimumReservation);
