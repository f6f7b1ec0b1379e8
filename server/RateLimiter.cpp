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
    if (perMinute <= 0) { // 0 or negative: unlimited
        Decision d;
        d.limit = perMinute;
        return d;
    }
    const double ratePerMs = perMinute / 60'000.0;
    auto it = m_buckets.find(key);
    if (it == m_buckets.end() || it->limit != perMinute)
        it = m_buckets.insert(key, Bucket{double(perMinute), nowMs, perMinute});
    Bucket &b = *it;
    b.tokens = std::min<double>(perMinute, b.tokens + (nowMs - b.updatedMs) * ratePerMs);
    b.updatedMs = nowMs;
    const bool allowed = b.tokens >= 1.0;
    if (allowed)
        b.tokens -= 1.0;
    return decision(allowed, b.tokens, perMinute);
}

RateLimiter::Decision RateLimiter::decision(bool allowed, double tokens, int perMinute)
{
    Decision d;
    d.limit = perMinute;
    d.allowed = allowed;
    const double ratePerMs = perMinute / 60'000.0;
    if (!allowed)
        d.retryAfterSeconds = std::max(1, int(std::ceil((1.0 - tokens) / ratePerMs / 1000.0)));
    d.remaining = std::max(0, int(std::floor(tokens)));
    d.resetInMs = qint64(std::ceil((perMinute - tokens) / ratePerMs));
    return d;
}
