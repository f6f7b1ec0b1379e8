#include "SseParser.h"

bool SseParser::next(SseEvent *event)
{
    for (;;) {
        // Find the blank line that ends an event.
        qsizetype end = -1;
        qsizetype sepLen = 0;
        for (qsizetype i = qMax<qsizetype>(m_scanFrom, 0); i < m_buffer.size(); ++i) {
            if (m_buffer[i] != '\n')
                continue;
            if (i + 1 < m_buffer.size() && m_buffer[i + 1] == '\n') {
                end = i;
                sepLen = 2;
                break;
            }
            if (i + 2 < m_buffer.size() && m_buffer[i + 1] == '\r' && m_buffer[i + 2] == '\n') {
                end = i;
                sepLen = 3;
                break;
            }
        }
        if (end < 0) {
            m_scanFrom = qMax<qsizetype>(0, m_buffer.size() - 2);
            return false;
        }
        const QByteArray block = m_buffer.left(end);
        m_buffer.remove(0, end + sepLen);
        m_scanFrom = 0;

        SseEvent e;
        bool sawField = false;
        bool sawData = false;
        for (QByteArray line : block.split('\n')) {
            if (line.endsWith('\r'))
                line.chop(1);
            if (line.isEmpty())
                continue;
            if (line.startsWith(':')) {
                e.comment = true;
                continue;
            }
            const qsizetype colon = line.indexOf(':');
            const QByteArray name = colon < 0 ? line : line.left(colon);
            QByteArray value = colon < 0 ? QByteArray() : line.mid(colon + 1);
            if (value.startsWith(' '))
                value.remove(0, 1);
            if (name == "event") {
                e.event = value;
                sawField = true;
            } else if (name == "data") {
                if (sawData)
                    e.data.append('\n');
                e.data.append(value);
                sawData = sawField = true;
            }
        }
        if (sawField) {
            e.comment = false;
            *event = std::move(e);
            return true;
        }
        if (e.comment) {
            *event = std::move(e);
            return true;
        }
        // An empty block: keep looking.
    }
}

QByteArray SseParser::format(const QByteArray &event, const QByteArray &data)
{
    QByteArray out;
    out.reserve(event.size() + data.size() + 16);
    if (!event.isEmpty())
        out.append("event: ").append(event).append('\n');
    if (!data.contains('\n')) {
        out.append("data: ").append(data).append("\n\n");
        return out;
    }
    for (const QByteArray &line : data.split('\n'))
        out.append("data: ").append(line).append('\n');
    out.append('\n');
    return out;
}
