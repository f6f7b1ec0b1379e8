#pragma once

#include <QByteArray>
#include <QList>

// One server-sent event as it came over the wire.
struct SseEvent
{
    QByteArray event;     // the "event:" field, empty when absent
    QByteArray data;      // "data:" lines joined with \n
    bool comment = false; // only comment lines (": keep-alive")
};

// Incremental SSE framing (the WHATWG event-stream format): feed bytes as they arrive, take
// whole events out. Tolerates \n and \r\n line ends and events split across reads.
class SseParser
{
public:
    void feed(const QByteArray &bytes) { m_buffer.append(bytes); }
    // The next complete event, or false when more bytes are needed.
    bool next(SseEvent *event);
    bool hasPartial() const { return !m_buffer.trimmed().isEmpty(); }
    qsizetype buffered() const { return m_buffer.size(); }

    // Serializes an event in canonical form: "event: X\ndata: Y\n\n".
    static QByteArray format(const QByteArray &event, const QByteArray &data);

private:
    QByteArray m_buffer;
    qsizetype m_scanFrom = 0;
};
