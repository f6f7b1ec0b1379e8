#pragma once

#include <atomic>
#include <deque>
#include <QtGlobal>
#include <utility>

// Counts finished requests for the status bar. record() is called on the server thread for
// every request and only bumps atomics, so a busy server posts nothing to the GUI thread; the
// window samples the counters about once a second to get requests in the last 60 seconds.
class RequestMeter
{
public:
    static constexpr qint64 kWindowMs = 60'000;

    explicit RequestMeter(qint64 startMs);

    // Any thread.
    void record(int status);

    // GUI thread: takes a sample at nowMs and returns the requests finished in the window
    // ending then (since start while the meter is younger than the window), to one sampling
    // interval's precision.
    quint64 sample(qint64 nowMs);

    quint64 total() const { return m_total.load(std::memory_order_relaxed); }
    quint64 serverErrors() const { return m_serverErrors.load(std::memory_order_relaxed); }
    quint64 clientErrors() const { return m_clientErrors.load(std::memory_order_relaxed); }

private:
    std::atomic<quint64> m_total{0};
    std::atomic<quint64> m_serverErrors{0};
    std::atomic<quint64> m_clientErrors{0};
    std::deque<std::pair<qint64, quint64>> m_samples; // (time, total), oldest first
};
