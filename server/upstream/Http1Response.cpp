#include "Http1Response.h"

#include <algorithm>

namespace {

bool isTokenChar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return QByteArrayView("!#$%&'*+-.^_`|~").contains(c);
}

QByteArrayView trimmed(QByteArrayView v)
{
    while (!v.isEmpty() && (v.front() == ' ' || v.front() == '\t'))
        v = v.sliced(1);
    while (!v.isEmpty() && (v.back() == ' ' || v.back() == '\t'))
        v.chop(1);
    return v;
}

// A Content-Length value: digits, or a list of equal ones ("5, 5"); -1 when invalid.
qint64 contentLength(QByteArrayView v)
{
    qint64 result = -1;
    while (true) {
        const qsizetype comma = v.indexOf(',');
        const QByteArrayView item = trimmed(comma < 0 ? v : v.first(comma));
        if (item.isEmpty() || item.size() > 18)
            return -1;
        qint64 n = 0;
        for (char c : item) {
            if (c < '0' || c > '9')
                return -1;
            n = n * 10 + (c - '0');
        }
        if (result >= 0 && n != result)
            return -1;
        result = n;
        if (comma < 0)
            return result;
        v = v.sliced(comma + 1);
    }
}

// Whether a comma-separated header value lists token (case-insensitively).
bool listsToken(QByteArrayView value, QByteArrayView token)
{
    while (!value.isEmpty()) {
        const qsizetype comma = value.indexOf(',');
        if (trimmed(comma < 0 ? value : value.first(comma)).compare(token, Qt::CaseInsensitive) ==
            0)
            return true;
        if (comma < 0)
            break;
        value = value.sliced(comma + 1);
    }
    return false;
}

// The last coding of a Transfer-Encoding value.
QByteArrayView lastCoding(QByteArrayView value)
{
    const qsizetype comma = value.lastIndexOf(',');
    return trimmed(comma < 0 ? value : value.sliced(comma + 1));
}

} // namespace

Http1Response::Event Http1Response::fail(const QString &message)
{
    m_state = State::Failed;
    m_keepAlive = false;
    m_error = message;
    return Event::Error;
}

Http1Response::Event Http1Response::takeRemaining(const char *&p, const char *end)
{
    if (p == end)
        return Event::NeedMore;
    const qsizetype n = qsizetype(std::min<qint64>(m_remaining, end - p));
    m_data = QByteArrayView(p, n);
    p += n;
    m_remaining -= n;
    return Event::Data;
}

Http1Response::Event Http1Response::next(const char *&p, const char *end)
{
    while (true) {
        switch (m_state) {
        case State::Head:
        case State::Trailers: {
            if (p == end)
                return Event::NeedMore;
            m_started = true;
            // Up to the blank line that ends the section, and not a byte further: the body is
            // never copied. A line ends with LF, with or without a CR before it.
            const qsizetype before = m_line.size();
            const qsizetype avail = std::min<qsizetype>(end - p, kMaxHead + 1 - before);
            qsizetype stop = -1;
            for (qsizetype i = 0; i < avail; ++i) {
                const char c = p[i];
                if (c == '\n') {
                    if (m_scan != Scan::InLine) {
                        stop = i + 1;
                        break;
                    }
                    m_scan = Scan::LineStart;
                } else {
                    m_scan =
                        c == '\r' && m_scan == Scan::LineStart ? Scan::LineStartCr : Scan::InLine;
                }
            }
            m_line.append(p, stop < 0 ? avail : stop);
            p += stop < 0 ? avail : stop;
            if (m_line.size() > kMaxHead)
                return fail(
                    m_state == State::Head
                        ? QStringLiteral("the response head is larger than %1 bytes").arg(kMaxHead)
                        : QStringLiteral("the trailers are larger than %1 bytes").arg(kMaxHead));
            if (stop < 0)
                return Event::NeedMore;
            m_scan = Scan::InLine;
            if (m_state == State::Trailers) {
                m_line.clear();
                m_state = State::Done;
                return Event::Done;
            }
            const Event e = parseHead();
            m_line.clear();
            if (e == Event::NeedMore)
                continue; // an interim (1xx) head: the final one follows
            return e;
        }
        case State::Length: {
            if (m_remaining == 0) {
                m_state = State::Done;
                return Event::Done;
            }
            return takeRemaining(p, end);
        }
        case State::UntilClose: {
            if (p == end)
                return Event::NeedMore;
            m_data = QByteArrayView(p, end - p);
            p = end;
            return Event::Data;
        }
        case State::ChunkSize: {
            if (p == end)
                return Event::NeedMore;
            const char *nl = std::find(p, end, '\n');
            const qsizetype take = nl == end ? end - p : nl - p + 1;
            if (m_line.size() + take > kMaxChunkLine)
                return fail(
                    QStringLiteral("a chunk-size line is longer than %1 bytes").arg(kMaxChunkLine));
            m_line.append(p, take);
            p += take;
            if (nl == end)
                return Event::NeedMore;
            // chunk-size [ chunk-ext ] CRLF: hex digits, then ';', spaces or the line's end.
            qint64 size = 0;
            qsizetype i = 0;
            for (; i < m_line.size(); ++i) {
                const char c = m_line[i];
                int d = -1;
                if (c >= '0' && c <= '9')
                    d = c - '0';
                else if (c >= 'a' && c <= 'f')
                    d = c - 'a' + 10;
                else if (c >= 'A' && c <= 'F')
                    d = c - 'A' + 10;
                if (d < 0)
                    break;
                if (size >= (qint64(1) << 56)) // leading zeros are fine; 15 digits of it are not
                    return fail(QStringLiteral("a chunk size is too large"));
                size = size * 16 + d;
            }
            const char after = m_line[i];
            if (i == 0 ||
                (after != ';' && after != ' ' && after != '\t' && after != '\r' && after != '\n'))
                return fail(QStringLiteral("a chunk-size line is not valid"));
            m_line.clear();
            if (size == 0) {
                m_state = State::Trailers;
                m_scan = Scan::LineStart; // an empty line at once: no trailer fields
            } else {
                m_remaining = size;
                m_state = State::ChunkData;
            }
            continue;
        }
        case State::ChunkData: {
            const Event e = takeRemaining(p, end);
            if (m_remaining == 0)
                m_state = State::ChunkEnd;
            return e;
        }
        case State::ChunkEnd: {
            // CRLF, or a bare LF; m_line holds a CR already seen.
            if (p == end)
                return Event::NeedMore;
            const char c = *p++;
            if (c == '\r' && m_line.isEmpty()) {
                m_line.append('\r');
                continue;
            }
            if (c != '\n')
                return fail(QStringLiteral("a chunk does not end with CRLF"));
            m_line.clear();
            m_state = State::ChunkSize;
            continue;
        }
        case State::Done:
            return Event::Done;
        case State::Failed:
            return Event::Error;
        }
    }
}

Http1Response::Event Http1Response::eof()
{
    switch (m_state) {
    case State::UntilClose:
        m_state = State::Done;
        m_keepAlive = false;
        return Event::Done;
    case State::Done:
        return Event::Done;
    case State::Failed:
        return Event::Error;
    case State::Head:
        return fail(m_started ? QStringLiteral("the connection closed inside the response head")
                              : QStringLiteral("the upstream closed the connection without an "
                                               "answer"));
    case State::Length:
        if (m_remaining == 0) {
            m_state = State::Done;
            return Event::Done;
        }
        return fail(QStringLiteral("the connection closed with %1 bytes of the body missing")
                        .arg(m_remaining));
    default:
        return fail(QStringLiteral("the connection closed inside the chunked body"));
    }
}

Http1Response::Event Http1Response::parseHead()
{
    QByteArrayView head(m_line);
    const auto takeLine = [&head]() {
        const qsizetype nl = head.indexOf('\n');
        QByteArrayView line = head.first(nl); // a head always ends with a newline
        head = head.sliced(nl + 1);
        if (line.endsWith('\r'))
            line.chop(1);
        return line;
    };
    // status-line = HTTP-version SP 3DIGIT SP [ reason-phrase ]
    const QByteArrayView status = takeLine();
    if (status.size() < 12 || !status.startsWith("HTTP/1.") || status[7] < '0' || status[7] > '9' ||
        status[8] != ' ' || (status.size() > 12 && status[12] != ' '))
        return fail(QStringLiteral("the upstream's answer is not an HTTP/1.x response"));
    int code = 0;
    for (int i = 9; i < 12; ++i) {
        if (status[i] < '0' || status[i] > '9')
            return fail(QStringLiteral("the upstream's status code is not valid"));
        code = code * 10 + (status[i] - '0');
    }
    if (code < 100 || code > 599)
        return fail(QStringLiteral("the upstream's status code %1 is not valid").arg(code));
    if (code == 101)
        return fail(QStringLiteral("the upstream switched protocols (101)"));
    const bool http10 = status[7] == '0';

    HttpHeaders headers;
    while (true) {
        const QByteArrayView line = takeLine();
        if (line.isEmpty())
            break;
        if (line.front() == ' ' || line.front() == '\t') {
            // obs-fold: RFC 9112 section 5.2 has a recipient of a response replace it with a
            // space, as libcurl does.
            if (headers.isEmpty())
                return fail(QStringLiteral("the upstream's head folds its first line"));
            const QByteArrayView more = trimmed(line);
            if (!more.isEmpty()) {
                QByteArray &value = headers.last().second;
                value += value.isEmpty() ? QByteArray() : QByteArray(" ");
                value += more.toByteArray();
            }
            continue;
        }
        const qsizetype colon = line.indexOf(':');
        if (colon <= 0)
            return fail(QStringLiteral("the upstream's head has a line that is not a header"));
        const QByteArrayView name = line.first(colon);
        if (!std::all_of(name.begin(), name.end(), isTokenChar))
            return fail(QStringLiteral("the upstream's head has a header name that is not valid"));
        const QByteArrayView value = trimmed(line.sliced(colon + 1));
        if (std::any_of(value.begin(), value.end(), [](char c) { return c == '\r' || c == 0; }))
            return fail(QStringLiteral("the upstream's head has a header value with a CR or NUL"));
        headers.append({name.toByteArray().toLower(), value.toByteArray()});
    }
    if (code < 200)
        return Event::NeedMore; // an interim head: dropped, the final one follows

    m_status = code;
    m_headers = std::move(headers);
    m_keepAlive = !http10;
    qint64 length = -1;
    bool chunked = false;
    bool otherCoding = false;
    bool haveLength = false;
    for (const auto &[name, value] : std::as_const(m_headers)) {
        if (name == "connection") {
            if (listsToken(value, "close"))
                m_keepAlive = false;
        } else if (name == "transfer-encoding") {
            const bool isChunked = lastCoding(value).compare("chunked", Qt::CaseInsensitive) == 0;
            chunked = isChunked;
            otherCoding = !isChunked;
        } else if (name == "content-length") {
            const qint64 n = contentLength(value);
            if (n < 0 || (haveLength && n != length))
                return fail(QStringLiteral("the upstream's Content-Length is not valid"));
            length = n;
            haveLength = true;
        }
    }
    if (m_noBody || code == 204 || code == 304) {
        m_remaining = 0;
        m_state = State::Length;
    } else if (chunked || otherCoding) {
        // Transfer-Encoding overrides Content-Length; a message with both is suspect, so its
        // connection is not reused (RFC 9112 section 6.3).
        if (haveLength)
            m_keepAlive = false;
        if (chunked) {
            m_state = State::ChunkSize;
        } else {
            m_state = State::UntilClose;
            m_keepAlive = false;
        }
    } else if (haveLength) {
        m_remaining = length;
        m_state = State::Length;
    } else {
        m_state = State::UntilClose;
        m_keepAlive = false;
    }
    m_headDone = true;
    return Event::Head;
}
