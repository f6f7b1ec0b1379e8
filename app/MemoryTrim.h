#pragma once

#include <QObject>
#include <QTimer>

// The programs' allocator, and memory freed after a burst given back to the system.
//
// Both programs allocate through jemalloc (SWITCHYARD_JEMALLOC, on by default). Under wrk, in
// pairs of runs of the same code linked both ways (tests/bench/paired-builds.sh), jemalloc
// answered a median 0.6-9.5% more billed requests (of a family with a worker pool), with 1.7-3.2 µs
// less of the server's CPU per request, and GET /healthz about the same; malloc and free had been
// about a tenth of the server thread, and a family's workers and the writer free blocks the server
// thread allocated (tests/bench/README.md, "The charge path").
//
// Either allocator keeps freed memory for reuse: after 1,000 streams had ended, or an overload
// had passed, the server's RSS stayed where the burst had taken it. A MemoryTrimmer gives it
// back every intervalMs from the thread it lives on (release()): jemalloc purges every arena's
// unused pages, glibc's malloc_trim(0) those of its heaps (a few milliseconds at most, for a
// heap of a few hundred megabytes). With glibc, prepare() caps the arenas at four: with two,
// the server thread, a family's workers and the writer waited on each other's arena locks, and
// billed requests under wrk went about a fifth slower. jemalloc's options are fixed when it
// starts (malloc_conf in MemoryTrim.cpp).
namespace MemoryTrim {
void prepare();  // before any thread starts
void release();  // gives unused memory back to the system; any thread
bool jemalloc(); // whether the program allocates through jemalloc
} // namespace MemoryTrim

class MemoryTrimmer : public QObject
{
    Q_OBJECT
public:
    explicit MemoryTrimmer(int intervalMs = 5000, QObject *parent = nullptr);

private:
    QTimer m_timer;
};
