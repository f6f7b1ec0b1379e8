#pragma once

#include "AddressUpstreamConfig.h"
#include "Router.h"

#include <QList>

class AddressEngine;
class QObject;

// POST /v1/address/*: thin HTTP routes over an address engine (server/address), billed per
// request (price, credit units) through the pipeline; the optional upstream is asked what the
// local engine cannot answer. Objects the routes need (the upstream client, the thread pool the
// engine's calls run on) are made with `parent`, which lives on the server thread; the engine
// must outlive them.
QList<RouteSpec> addressRoutes(QObject *parent, const AddressEngine &engine, qint64 price,
                               const AddressUpstreamConfig &upstream);
