#pragma once

#include <QObject>
#include <QTimer>

// Gives memory freed after a burst back to the system. glibc keeps freed chunks in its arenas
// (one per thread that allocated, up to eight per core) and returns to the system only what
// lies at the top of a heap: after 1,000 streams had ended, or an overload had passed, the
// server's RSS stayed where the burst had taken it. Both programs cap the arenas at four before
// any thread starts (limitArenas) and keep a MemoryTrimmer, which calls malloc_trim(0) every
// intervalMs from the thread it lives on (a few milliseconds at most, for a heap of a few
// hundred megabytes; tests/bench/README.md has the figures). Four, not two: with two, the server
// thread, the address workers and the writer waited on each other's arena locks (futex calls
// inside malloc and free), and billed requests under wrk went about a fifth slower; the memory
// after a burst was the same with either.
namespace MemoryTrim {
void limitArenas();
} // namespace MemoryTrim

class MemoryTrimmer : public QObject
{
    Q_OBJECT
public:
    explicit MemoryTrimmer(int intervalMs = 5000, QObject *parent = nullptr);

private:
    QTimer m_timer;
};
