#include "RateLimiter.h"

#include <cmath>

RateLimiter::Decision RateLimiter::take(const QByteArray &key, int perMinute, qint64 nowMs)
{
    // Forget buckets that have been full for a while so the table stays bounded.
    if (nowMs - m_lastSweepMs > 60'000) {
        m_lastSweepMs = nowMs;
        for (auto it = m_buckets.begin(); it != m_buckets.end();)
            it = nowMs - it->updatedMs > 120'000 ? m_buckets.erase(it) : std::next(it);
    }
    Decision d;
    d.limit = perMinute;
    if (perMinute <= 0) { // 0 or negative: unlimited
        d.remaining = 0;
        return d;
    }
    const double ratePerMs = perMinute / 60'000.0;
    auto it = m_buckets.find(key);
    if (it == m_buckets.end() || it->limit != perMinute)
        it = m_buckets.insert(key, Bucket{double(perMinute), nowMs, perMinute});
    Bucket &b = *it;
    b.tokens = std::min<double>(perMinute, b.tokens + (nowMs - b.updatedMs) * ratePerMs);
    b.updatedMs = nowMs;
    if (b.tokens >= 1.0) {
        b.tokens -= 1.0;
        d.allowed = true;
    } else {
        d.allowed = false;
        d.retryAfterSeconds = std::max(1, int(std::ceil((1.0 - b.tokens) / ratePerMs / 1000.0)));
    }
    d.remaining = int(std::floor(b.tokens));
    const double msToFull = (perMinute - b.tokens) / ratePerMs;
    d.resetInMs = qint64(std::ceil(msToFull));
    return d;
}
