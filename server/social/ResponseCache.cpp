#include "ResponseCache.h"

namespace {

qint64 cost(const QByteArray &key, const ResponseCache::Answer &a)
{
    return key.size() + a.body.size() + a.contentType.size();
}

} // namespace

ResponseCache::ResponseCache(qint64 maxBytes, qint64 maxEntryBytes)
    : m_maxBytes(maxBytes), m_maxEntryBytes(maxEntryBytes)
{
}

std::optional<ResponseCache::Answer> ResponseCache::find(const QByteArray &key, qint64 nowMs)
{
    QMutexLocker lock(&m_mutex);
    auto it = m_entries.find(key);
    if (it == m_entries.end())
        return std::nullopt;
    if (it->expiresMs <= nowMs) {
        remove(it);
        return std::nullopt;
    }
    m_lru.splice(m_lru.begin(), m_lru, it->lru);
    return it->answer;
}

void ResponseCache::store(const QByteArray &key, Answer answer, qint64 nowMs, qint64 ttlMs)
{
    if (ttlMs <= 0 || answer.body.size() > m_maxEntryBytes)
        return;
    QMutexLocker lock(&m_mutex);
    if (auto it = m_entries.find(key); it != m_entries.end())
        remove(it);
    const qint64 size = cost(key, answer);
    while (!m_lru.empty() && m_bytes + size > m_maxBytes)
        remove(m_entries.find(m_lru.back()));
    if (size > m_maxBytes)
        return;
    m_lru.push_front(key);
    m_entries.insert(key, Entry{std::move(answer), nowMs + ttlMs, m_lru.begin()});
    m_bytes += size;
}

void ResponseCache::remove(QHash<QByteArray, Entry>::iterator it)
{
    m_bytes -= cost(it.key(), it->answer);
    m_lru.erase(it->lru);
    m_entries.erase(it);
}

qint64 ResponseCache::bytes() const
{
    QMutexLocker lock(&m_mutex);
    return m_bytes;
}

qsizetype ResponseCache::size() const
{
    QMutexLocker lock(&m_mutex);
    return m_entries.size();
}
