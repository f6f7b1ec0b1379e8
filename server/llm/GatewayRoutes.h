#pragma once

#include "Router.h"

#include <QList>

class Gateway;

// POST /v1/chat/completions, /v1/responses and /v1/messages: validated,
// resolved to a provider by model, then a GatewayCall relays and bills them. Each holds its worst
// case (CostBound::text, at least minimumReservation, the route's reservation) before its
// upstream call: 402 when the available balance cannot cover it, 400 naming the field when its
// output bound exceeds the model's max_output_tokens. The messages route answers errors in the
// messages protocol's envelope.
QList<RouteSpec> gatewayRoutes(Gateway &gateway, qint64 minimumReservation);
