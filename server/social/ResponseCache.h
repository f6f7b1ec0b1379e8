#pragma once

#include <list>
#include <optional>
#include <QByteArray>
#include <QHash>
#include <QMutex>

// The optional cache of social-data answers (off by default; README.md, "Response cache"):
// identical GET requests (the same action and the same query, byte for byte) within a
// platform's time to live get the stored answer. Only successful answers are kept (2xx with
// envelope code 200 or 0) and only up to the entry bound; the least recently used go first
// when the total bound is reached. Thread-safe: one cache per family, shared by every server.
class ResponseCache
{
public:
    struct Answer
    {
        int status = 200;
        QByteArray contentType;
        QByteArray body;
    };

    ResponseCache(qint64 maxBytes, qint64 maxEntryBytes);

    std::optional<Answer> find(const QByteArray &key, qint64 nowMs);
    // Keeps the answer until nowMs + ttlMs; ignored when it is larger than the entry bound.
    void store(const QByteArray &key, Answer answer, qint64 nowMs, qint64 ttlMs);
    qint64 entryLimit() const { return m_maxEntryBytes; }
    qint64 bytes() const;
    qsizetype size() const;

private:
    struct Entry
    {
        Answer answer;
        qint64 expiresMs = 0;
        std::list<QByteArray>::iterator lru;
    };
    void remove(QHash<QByteArray, Entry>::iterator it);

    const qint64 m_maxBytes;
    const qint64 m_maxEntryBytes;
    mutable QMutex m_mutex;
    QHash<QByteArray, Entry> m_entries;
    std::list<QByteArray> m_lru; // most recent first
    qint64 m_bytes = 0;
};
