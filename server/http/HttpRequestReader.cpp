#include "HttpRequestReader.h"

#include "HttpHead.h"

#include <charconv>

namespace {

enum class ChunkLine
{
    Ok,
    Malformed,
    TooLarge
};

// A chunk-size line, "1*HEXDIG [BWS ";" extensions]" (the extensions ignored), into *size when
// it is at most max. std::from_chars reports a number past 64 bits instead of wrapping it, and
// takes no sign or prefix.
ChunkLine chunkSize(QByteArrayView line, qint64 max, qint64 *size)
{
    const char *end = line.data() + line.size();
    quint64 value = 0;
    const auto [at, error] = std::from_chars(line.data(), end, value, 16);
    if (at == line.data())
        return ChunkLine::Malformed;
    if (error == std::errc::result_out_of_range || value > quint64(max))
        return ChunkLine::TooLarge;
    const char *p = at;
    while (p != end && (*p == ' ' || *p == '\t'))
        ++p;
    if (p != end && *p != ';')
        return ChunkLine::Malformed;
    *size = qint64(value);
    return ChunkLine::Ok;
}

} // namespace

HttpRequestReader::HttpRequestReader(const HttpLimits &limits, const HttpBufferBudget *budget)
    : m_limits(limits), m_budget(budget)
{
}

QString HttpRequestReader::tooLargeMessage(qint64 length, qint64 limit)
{
    if (length < 0)
        return QStringLiteral("Request body is larger than the limit of %1 bytes for this "
                              "endpoint.")
            .arg(limit);
    return QStringLiteral("Request body of %1 bytes is larger than the limit of %2 bytes for "
                          "this endpoint.")
        .arg(length)
        .arg(limit);
}

QString HttpRequestReader::busyMessage()
{
    return QStringLiteral("The server holds as much request and response data as it may; try "
                          "again shortly.");
}

HttpRequestReader::Event HttpRequestReader::fail(int status, const QString &message)
{
    m_state = State::Closed;
    m_failStatus = status;
    m_failMessage = message;
    m_buffer = QByteArray();
    m_body = QByteArray();
    m_remaining = 0;
    return Event::Failed;
}

bool HttpRequestReader::readsIntoBody() const
{
    return (m_state == State::Body || m_state == State::ChunkData) && m_buffer.isEmpty();
}

qint64 HttpRequestReader::readBudget() const
{
    const qint64 buffered = m_buffer.size();
    switch (m_state) {
    case State::Head:
        return qBound<qint64>(0, headCapacity() - buffered, kReadStep);
    case State::Body:
    case State::ChunkData:
        return m_buffer.isEmpty() ? m_remaining : 0;
    case State::ChunkSize:
        return qMax<qint64>(0, kMaxChunkLine + 2 - buffered);
    case State::ChunkEnd:
        return qMax<qint64>(0, 2 - buffered);
    case State::Trailer:
        return qBound<qint64>(0, m_limits.maxHeaderBytes + 2 - m_trailerBytes - buffered,
                              kReadStep);
    case State::HeadStep:
    case State::Handling:
    case State::Closed:
        return 0;
    }
    return 0;
}

char *HttpRequestReader::prepareRead(qint64 n)
{
    m_readInto = readsIntoBody() ? &m_body : &m_buffer;
    m_readFrom = m_readInto->size();
    m_readSize = n;
    m_readInto->resize(m_readFrom + n);
    return m_readInto->data() + m_readFrom;
}

void HttpRequestReader::commitRead(qint64 got)
{
    if (!m_readInto)
        return;
    got = qBound<qint64>(0, got, m_readSize);
    m_readInto->truncate(m_readFrom + got);
    if (m_readInto == &m_body)
        m_remaining -= got;
    m_readInto = nullptr;
}

void HttpRequestReader::takeFromBuffer()
{
    const qint64 take = qMin<qint64>(m_remaining, m_buffer.size());
    if (take <= 0)
        return;
    m_body.append(m_buffer.constData(), take);
    m_buffer.remove(0, take);
    m_remaining -= take;
}

HttpRequestReader::Event HttpRequestReader::next()
{
    for (;;) {
        switch (m_state) {
        case State::Head: {
            const qsizetype end = m_buffer.indexOf("\r\n\r\n", qMax<qsizetype>(0, m_scanFrom - 3));
            if (end < 0) {
                if (m_buffer.size() >= headCapacity())
                    return fail(431, QStringLiteral("Request header block is larger than %1 bytes.")
                                         .arg(m_limits.maxHeaderBytes));
                m_scanFrom = m_buffer.size();
                return Event::NeedBytes;
            }
            if (end > m_limits.maxHeaderBytes)
                return fail(431, QStringLiteral("Request header block is larger than %1 bytes.")
                                     .arg(m_limits.maxHeaderBytes));
            return parseHead(end);
        }
        case State::Body:
            takeFromBuffer();
            if (m_remaining > 0)
                return Event::NeedBytes;
            return complete();
        case State::ChunkSize: {
            const qsizetype eol = m_buffer.indexOf("\r\n");
            if (eol < 0) {
                if (m_buffer.size() >= kMaxChunkLine + 2)
                    return fail(400, QStringLiteral("Malformed chunk size line."));
                return Event::NeedBytes;
            }
            // However the bytes came (a line may arrive whole with a head), a line is refused
            // by its length alone.
            if (eol > kMaxChunkLine)
                return fail(400, QStringLiteral("Malformed chunk size line."));
            if (const Event e = parseChunkSize(eol); e != Event::NeedBytes)
                return e;
            break;
        }
        case State::ChunkData:
            takeFromBuffer();
            if (m_remaining > 0)
                return Event::NeedBytes;
            m_state = State::ChunkEnd;
            break;
        case State::ChunkEnd:
            if (m_buffer.size() < 2)
                return Event::NeedBytes;
            if (!m_buffer.startsWith("\r\n"))
                return fail(400, QStringLiteral("Malformed chunk."));
            m_buffer.remove(0, 2);
            m_state = State::ChunkSize;
            break;
        case State::Trailer: {
            // Trailer fields are read and ignored, up to the empty line; the section is bounded
            // as a head is.
            const qsizetype eol = m_buffer.indexOf("\r\n");
            const qint64 cap = qint64(m_limits.maxHeaderBytes) + 2;
            if (eol < 0 ? m_trailerBytes + m_buffer.size() >= cap : m_trailerBytes + eol + 2 > cap)
                return fail(431, QStringLiteral("Chunked trailer is too large."));
            if (eol < 0)
                return Event::NeedBytes;
            m_trailerBytes += eol + 2;
            m_buffer.remove(0, eol + 2);
            if (eol == 0)
                return complete();
            break;
        }
        case State::HeadStep:
        case State::Handling:
        case State::Closed:
            return Event::Wait;
        }
    }
}

// Continues with the next state (NeedBytes stands for "go on"), or fails.
HttpRequestReader::Event HttpRequestReader::parseChunkSize(qsizetype eol)
{
    qint64 size = 0;
    // The body is never over its limit, so the room left is never negative.
    const qint64 room = m_bodyLimit - m_body.size();
    switch (chunkSize(QByteArrayView(m_buffer).first(eol), room, &size)) {
    case ChunkLine::Malformed:
        return fail(400, QStringLiteral("Malformed chunk size line."));
    case ChunkLine::TooLarge:
        return fail(413, tooLargeMessage(-1, m_bodyLimit));
    case ChunkLine::Ok:
        break;
    }
    if (m_budget && !m_budget->allows(size))
        return fail(503, busyMessage());
    m_buffer.remove(0, eol + 2);
    if (size == 0) {
        m_state = State::Trailer;
        m_trailerBytes = 0;
    } else {
        m_state = State::ChunkData;
        m_remaining = size;
    }
    return Event::NeedBytes;
}

HttpRequestReader::Event HttpRequestReader::parseHead(qsizetype end)
{
    HttpHead::Error error;
    const bool parsed = HttpHead::parse(QByteArrayView(m_buffer).first(end),
                                        m_limits.maxHeaderCount, &m_request, &error);
    m_buffer.remove(0, end + 4);
    m_scanFrom = 0;
    if (!parsed)
        return fail(error.status, error.message);
    const bool http10 = m_request.versionMinor == 0;
    const QByteArray connection = m_request.header("connection").toLower();
    m_keepAlive = http10 ? connection.contains("keep-alive") : !connection.contains("close");

    const QByteArray te = m_request.header("transfer-encoding").toLower();
    const bool hasLength = m_request.hasHeader("content-length");
    if (!te.isEmpty()) {
        if (te != "chunked" || hasLength)
            return fail(400, QStringLiteral("Unsupported Transfer-Encoding."));
        m_bodyLength = -1;
    } else if (hasLength) {
        QByteArray lengthText;
        for (const auto &h : std::as_const(m_request.headers)) {
            if (h.first != "content-length")
                continue;
            if (!lengthText.isEmpty() && lengthText != h.second)
                return fail(400, QStringLiteral("Conflicting Content-Length headers."));
            lengthText = h.second;
        }
        bool ok = false;
        const qint64 length = lengthText.toLongLong(&ok);
        if (!ok || length < 0 || lengthText.front() == '+' || lengthText.front() == '-')
            return fail(400, QStringLiteral("Malformed Content-Length."));
        m_bodyLength = length;
    } else {
        m_bodyLength = 0;
    }
    m_request.bodyLength = m_bodyLength;
    m_expectContinue = !http10 && m_bodyLength != 0 &&
                       m_request.header("expect").compare("100-continue", Qt::CaseInsensitive) == 0;
    m_state = State::HeadStep;
    return Event::Head;
}

HttpRequest HttpRequestReader::takeHead()
{
    return std::exchange(m_request, HttpRequest());
}

bool HttpRequestReader::admit(qint64 bodyLimit)
{
    if (m_state != State::HeadStep)
        return false;
    m_bodyLimit = qMax<qint64>(0, bodyLimit);
    if (m_bodyLength > m_bodyLimit) {
        fail(413, tooLargeMessage(m_bodyLength, m_bodyLimit));
        return false;
    }
    if (m_bodyLength > 0 && m_budget && !m_budget->allows(m_bodyLength)) {
        fail(503, busyMessage());
        return false;
    }
    m_body = QByteArray();
    if (m_bodyLength < 0) {
        m_state = State::ChunkSize;
        return true;
    }
    // Bounded by the limit: one allocation keeps a large upload from being copied on every
    // growth (peak memory stays near the body's size).
    if (m_bodyLength > 0)
        m_body.reserve(m_bodyLength);
    m_remaining = m_bodyLength;
    m_state = State::Body;
    return true;
}

bool HttpRequestReader::wantsContinue() const
{
    return m_expectContinue && m_buffer.isEmpty() && m_body.isEmpty() &&
           (m_state == State::Body || m_state == State::ChunkSize);
}

HttpRequestReader::Event HttpRequestReader::complete()
{
    m_state = State::Handling;
    return Event::Complete;
}

QByteArray HttpRequestReader::takeBody()
{
    return std::exchange(m_body, QByteArray());
}

void HttpRequestReader::finish()
{
    if (m_state != State::Handling && !(m_state == State::HeadStep && !hasBody())) {
        close(); // a body left unread: the connection cannot go on
        return;
    }
    m_state = State::Head;
    m_request = HttpRequest();
    m_body = QByteArray();
    m_bodyLength = 0;
    m_remaining = 0;
    m_scanFrom = 0;
    m_keepAlive = true;
    m_expectContinue = false;
}

void HttpRequestReader::close()
{
    m_state = State::Closed;
    m_buffer = QByteArray();
    m_body = QByteArray();
    m_remaining = 0;
}

qint64 HttpRequestReader::bodyHeld() const
{
    qint64 held = m_body.capacity();
    if (m_state == State::ChunkData)
        held = qMax(held, m_body.size() + m_remaining);
    return held;
}
