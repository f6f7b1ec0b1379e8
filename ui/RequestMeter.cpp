#include "RequestMeter.h"

RequestMeter::RequestMeter(qint64 startMs)
{
    m_samples.emplace_back(startMs, 0);
}

void RequestMeter::record(int status)
{
    m_total.fetch_add(1, std::memory_order_relaxed);
    if (status >= 500)
        m_serverErrors.fetch_add(1, std::memory_order_relaxed);
    else if (status >= 400)
        m_clientErrors.fetch_add(1, std::memory_order_relaxed);
}

quint64 RequestMeter::sample(qint64 nowMs)
{
    // The baseline is the newest sample at least a window old; older ones are no longer needed.
    while (m_samples.size() >= 2 && m_samples[1].first <= nowMs - kWindowMs)
        m_samples.pop_front();
    const quint64 now = total();
    const quint64 inWindow = now - m_samples.front().second;
    m_samples.emplace_back(nowMs, now);
    return inWindow;
}
