#include "MemoryTrim.h"

#include <malloc.h>

void MemoryTrim::limitArenas()
{
    mallopt(M_ARENA_MAX, 4);
}

MemoryTrimmer::MemoryTrimmer(int intervalMs, QObject *parent) : QObject(parent)
{
    connect(&m_timer, &QTimer::timeout, this, [] { malloc_trim(0); });
    m_timer.start(intervalMs);
}
