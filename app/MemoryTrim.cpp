#include "MemoryTrim.h"

#ifdef SWITCHYARD_JEMALLOC
#include <jemalloc/jemalloc.h>

// Read by jemalloc when it starts. No time-based decay: it purges from whichever thread is
// allocating, the server thread included, and at concurrency 1 it added about 0.13 ms to a
// billed request's p99 (tests/bench/README.md); the trimmer's purge gives the pages back
// instead. A purge frees them at once (MADV_DONTNEED), not as muzzy pages (MADV_FREE), which
// would still count in the RSS until the kernel needs them.
const char *malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:0"; // declared by jemalloc.h
#else
#include <malloc.h>
#endif

void MemoryTrim::prepare()
{
#ifndef SWITCHYARD_JEMALLOC
    mallopt(M_ARENA_MAX, 4);
#endif
}

void MemoryTrim::release()
{
#ifdef SWITCHYARD_JEMALLOC
    mallctl("arena." QT_STRINGIFY(MALLCTL_ARENAS_ALL) ".purge", nullptr, nullptr, nullptr, 0);
#else
    malloc_trim(0);
#endif
}

bool MemoryTrim::jemalloc()
{
#ifdef SWITCHYARD_JEMALLOC
    const char *version = nullptr;
    size_t size = sizeof version;
    return mallctl("version", &version, &size, nullptr, 0) == 0 && version;
#else
    return false;
#endif
}

MemoryTrimmer::MemoryTrimmer(int intervalMs, QObject *parent) : QObject(parent)
{
    connect(&m_timer, &QTimer::timeout, this, [] { MemoryTrim::release(); });
    m_timer.start(intervalMs);
}
