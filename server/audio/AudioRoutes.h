#pragma once

#include "Router.h"

#include <QList>

class AudioFamily;
class ServerScope;

// The audio family's routes for one server: POST /v1/audio/transcriptions, POST
// /v1/audio/speech, GET /v1/audio/voices. Parsing and validation happen on the server thread;
// decoding, recognition and synthesis on the family's pool (AudioWorkers); answers go back to
// the server thread. Objects made per server (the file_uri fetcher) take scope.parent().
QList<RouteSpec> audioRoutes(AudioFamily &family, const ServerScope &scope);
