#include "MemoryTrim.h"

#include <malloc.h>

#ifdef SWITCHYARD_JEMALLOC
#include <jemalloc/jemalloc.h>

#include <cstdio>

// Read by jemalloc when it starts. Pages unused for about five seconds go back to the system
// on their own while the program allocates (the default is ten); muzzy pages (MADV_FREE, still
// counted in the RSS until the kernel needs them) are not kept at all.
const char *malloc_conf = "dirty_decay_ms:5000,muzzy_decay_ms:0"; // declared by jemalloc.h
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
    char name[64];
    std::snprintf(name, sizeof name, "arena.%u.purge", unsigned(MALLCTL_ARENAS_ALL));
    mallctl(name, nullptr, nullptr, nullptr, 0);
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
