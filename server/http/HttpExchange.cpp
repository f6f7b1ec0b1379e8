#include "HttpExchange.h"

#include "HttpConnection.h"

#include <charconv>
#include <QTimer>

namespace {

// Appends a number's digits without the temporary QByteArray that QByteArray::number makes.
void appendNumber(QByteArray &out, qint64 n)
{
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out.append(digits, end - digits);
}

} // namespace

HttpExchange::HttpExchange(HttpRequest request, HttpConnection *connection)
    : m_request(std::move(request)), m_connection(connection)
{
}

qint64 HttpExchange::unsentBytes() const
{
    return m_connection ? m_connection->unsentBytes() : 0;
}

qint64 HttpExchange::unackedBytes() const
{
    return m_connection ? m_connection->unackedBytes() : 0;
}

void HttpExchange::limitSendQueue(int bytes)
{
    if (m_connection)
        m_connection->limitSendQueue(bytes);
}

void HttpExchange::abortConnection()
{
    if (m_connection)
        m_connection->abortNow();
}

bool HttpExchange::isOpen() const
{
    return !m_closed && !m_connection.isNull();
}

void HttpExchange::onClosed(std::function<void()> callback)
{
    if (m_closed && m_state != State::Done && callback) {
        QTimer::singleShot(0, std::move(callback)); // not inside the caller's own setup
        return;
    }
    m_onClosed = std::move(callback);
}

QByteArray HttpExchange::reasonPhrase(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 402:
        return "Payment Required";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Status";
    }
}

QByteArray HttpExchange::head(int status, const HttpHeaders &headers, bool chunked, qint64 length,
                              qsizetype room) const
{
    // Room for all of it, and for a body the caller appends: one allocation per response.
    qsizetype size = 96 + room;
    for (const auto &h : headers)
        size += h.first.size() + h.second.size() + 4;
    QByteArray out;
    out.reserve(size);
    out += "HTTP/1.1 ";
    appendNumber(out, status);
    out += ' ';
    out += reasonPhrase(status);
    out += "\r\n";
    for (const auto &h : headers) {
        out += h.first;
        out += ": ";
        out += h.second;
        out += "\r\n";
    }
    if (chunked) {
        out += "Transfer-Encoding: chunked\r\n";
    } else {
        out += "Content-Length: ";
        appendNumber(out, length);
        out += "\r\n";
    }
    if (closeAfter())
        out += "Connection: close\r\n";
    out += "\r\n";
    return out;
}

void HttpExchange::respond(int status, const HttpHeaders &headers, const QByteArray &body)
{
    if (m_state != State::Pending)
        return;
    m_state = State::Done;
    if (!m_connection)
        return;
    const bool withBody = m_request.method != "HEAD";
    QByteArray out = head(status, headers, false, body.size(), withBody ? body.size() : 0);
    if (withBody)
        out += body;
    m_connection->write(out);
    m_connection->exchangeFinished(this);
}

void HttpExchange::readBody(qint64 bodyLimit, std::function<void()> run)
{
    if (m_state == State::Pending && m_connection)
        m_connection->readBody(this, bodyLimit, std::move(run));
}

void HttpExchange::startStream(int status, const HttpHeaders &headers)
{
    if (m_state != State::Pending)
        return;
    m_state = State::Streaming;
    if (m_connection)
        m_connection->write(head(status, headers, true, 0));
}

void HttpExchange::writeChunk(const QByteArray &data)
{
    // A HEAD answer is its head alone (RFC 9110 9.3.2): bytes after it would be read as the
    // next answer on the connection.
    if (m_state != State::Streaming || !m_connection || data.isEmpty() ||
        m_request.method == "HEAD")
        return;
    m_connection->write(QByteArray::number(data.size(), 16) + "\r\n" + data + "\r\n");
}

void HttpExchange::endStream()
{
    if (m_state != State::Streaming)
        return;
    m_state = State::Done;
    if (!m_connection)
        return;
    if (m_request.method != "HEAD")
        m_connection->write(QByteArrayLiteral("0\r\n\r\n"));
    m_connection->exchangeFinished(this);
}

void HttpExchange::notifyClosed()
{
    m_closed = true;
    if (m_state == State::Done)
        return;
    if (auto cb = std::move(m_onClosed)) {
        m_onClosed = nullptr;
        cb();
    }
}
