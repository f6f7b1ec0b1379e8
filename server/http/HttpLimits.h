#pragma once

#include <QtGlobal>

// The bounds of one server's connections: ServerSettings' fields of the same names say more.
struct HttpLimits
{
    int maxHeaderBytes = 64 * 1024;
    int maxHeaderCount = 100;
    int idleTimeoutMs = 60'000;   // between requests; and for an answer's unsent bytes to move
    int headerTimeoutMs = 15'000; // for a head, once it has begun
    int bodyTimeoutMs = 60'000;   // the longest a body may stall
    qint64 minBodyRate = 1024;    // bytes a second, on average, after bodyTimeoutMs (0: none)
    qint64 maxBufferedBytes = qint64(256) << 20; // all connections' buffers together
    int maxConnectionsPerClient = 0;             // by client address (0: no cap)
};

// What the connections of one server hold, against HttpLimits::maxBufferedBytes. On the server's
// thread; each connection adds and takes back its own share.
struct HttpBufferBudget
{
    qint64 cap = qint64(256) << 20;
    qint64 held = 0;
    quint64 refusals = 0;       // requests answered 503 because taking more would pass the cap
    quint64 droppedStreams = 0; // streams dropped because their unsent bytes passed it
    quint64 stalledReaders = 0; // clients dropped for taking no bytes for idle_timeout_ms

    bool allows(qint64 more) const { return more <= cap - held; }
};
