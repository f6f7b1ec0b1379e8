#pragma once

#include <QByteArray>
#include <QHash>
#include <QString>

// Token buckets per (credential, bucket name): a limit of N requests per minute refills N/60
// tokens a second up to N, so a client may burst N and then sustain N a minute. Kept in memory:
// the limiter of a single instance, and of each instance while the state they share cannot be
// reached (SharedState.h keeps the buckets of instances on one PostgreSQL database).
// Time is a monotonic clock's milliseconds (the Pipeline's): a wall clock that steps, forward
// or back, neither fills nor drains a bucket.
class RateLimiter
{
public:
    struct Decision
    {
        bool allowed = true;
        int limit = 0;
        int remaining = 0;
        qint64 resetInMs = 0;      // until the bucket is full again
        int retryAfterSeconds = 0; // when refused: until one request is allowed
    };

    Decision take(const QByteArray &key, int perMinute, qint64 nowMs);
    // The decision for a bucket of perMinute left with `tokens` after this request was
    // allowed (one taken) or refused; the shared limiter's too (SharedState).
    static Decision decision(bool allowed, double tokens, int perMinute);
    void clear() { m_buckets.clear(); }

private:
    struct Bucket
    {
        double tokens = 0;
        qint64 updatedMs = 0;
        int limit = 0;
    };
    QHash<QByteArray, Bucket> m_buckets;
    qint64 m_lastSweepMs = 0;
};
