#pragma once

#include "AddressUpstreamConfig.h"
#include "Router.h"

#include <QList>

class QObject;

// POST /v1/address/*: thin HTTP routes over the offline address engine (server/address),
// billed per request (price, credit units) through the pipeline; the optional upstream is
// asked what the local engine cannot answer. Objects the routes need (the upstream client, the
// engine's thread pool) are made with `parent`, which lives on the server thread.
QList<RouteSpec> addressRoutes(QObject *parent, qint64 price,
                               const AddressUpstreamConfig &upstream);
