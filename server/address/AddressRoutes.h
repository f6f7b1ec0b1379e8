#pragma once

#include "AddressUpstreamConfig.h"
#include "Router.h"

#include <QList>

class AddressEngine;
class ServerScope;

// POST /v1/address/*: thin HTTP routes over an address engine (server/address), billed per
// request (price, credit units) through the pipeline; the optional upstream is asked what the
// local engine cannot answer. The engine's calls run on the server's "address" executor, the
// upstream client is made with scope.parent(); the engine must outlive them.
QList<RouteSpec> addressRoutes(const ServerScope &scope, const AddressEngine &engine, qint64 price,
                               const AddressUpstreamConfig &upstream);
