#include "HttpHead.h"

#include <QUrl>

namespace HttpHead {

bool isToken(QByteArrayView s)
{
    if (s.isEmpty())
        return false;
    for (char c : s) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || QByteArrayView("!#$%&'*+-.^_`|~").contains(c);
        if (!ok)
            return false;
    }
    return true;
}

namespace {

// The line starting at `at`, without its LF and one CR before it; `at` moves past the LF (to
// head.size() + 1 after the last line).
QByteArrayView nextLine(QByteArrayView head, qsizetype &at)
{
    qsizetype end = head.indexOf('\n', at);
    if (end < 0)
        end = head.size();
    QByteArrayView line = head.sliced(at, end - at);
    at = end + 1;
    if (line.endsWith('\r'))
        line.chop(1);
    return line;
}

bool refuse(Error *error, int status, const QString &message)
{
    *error = Error{status, message};
    return false;
}

} // namespace

// Views into the head until a field is kept: a request with four fields used to take about twenty
// allocations here (the head copied, split into lines, each line and each part copied again).
bool parse(QByteArrayView head, int maxHeaderLines, HttpRequest *request, Error *error)
{
    qsizetype at = 0;
    const QByteArrayView line = nextLine(head, at);
    const qsizetype sp1 = line.indexOf(' ');
    const qsizetype sp2 = sp1 < 0 ? -1 : line.indexOf(' ', sp1 + 1);
    const bool threeParts = sp2 >= 0 && line.indexOf(' ', sp2 + 1) < 0;
    if (!threeParts || !isToken(line.first(sp1)) || sp2 == sp1 + 1)
        return refuse(error, 400, QStringLiteral("Malformed HTTP request line."));
    const QByteArrayView version = line.sliced(sp2 + 1);
    if (version == "HTTP/1.1")
        request->versionMinor = 1;
    else if (version == "HTTP/1.0")
        request->versionMinor = 0;
    else
        return refuse(error, 505, QStringLiteral("Only HTTP/1.0 and HTTP/1.1 are supported."));
    request->method = line.first(sp1).toByteArray();
    request->target = line.sliced(sp1 + 1, sp2 - sp1 - 1).toByteArray();
    const qsizetype q = request->target.indexOf('?');
    const QByteArrayView rawPath =
        QByteArrayView(request->target).first(q < 0 ? request->target.size() : q);
    if (!rawPath.startsWith('/'))
        return refuse(error, 400, QStringLiteral("The request target must be an absolute path."));
    request->path = rawPath.contains('%') ? QUrl::fromPercentEncoding(rawPath.toByteArray())
                                          : QString::fromUtf8(rawPath);
    // The path is stored with usage records, and PostgreSQL's text holds no NUL: a %00 failed
    // the whole settlement batch it was in.
    for (const QChar c : std::as_const(request->path))
        if (c.unicode() < 0x20 || c.unicode() == 0x7f)
            return refuse(error, 400,
                          QStringLiteral("The request path may not hold control characters."));
    if (q >= 0)
        request->query.setQuery(QString::fromUtf8(QByteArrayView(request->target).sliced(q + 1)));

    const qsizetype lines = head.count('\n');
    if (lines > maxHeaderLines)
        return refuse(error, 431,
                      QStringLiteral("Too many header fields (at most %1).").arg(maxHeaderLines));
    request->headers.reserve(lines + 1); // grown once, not field by field
    while (at <= head.size()) {
        const QByteArrayView field = nextLine(head, at);
        if (field.isEmpty())
            continue;
        if (field.front() == ' ' || field.front() == '\t')
            return refuse(error, 400, QStringLiteral("Folded header lines are not accepted."));
        const qsizetype colon = field.indexOf(':');
        if (colon <= 0 || !isToken(field.first(colon)))
            return refuse(error, 400, QStringLiteral("Malformed header field."));
        request->headers.append({field.first(colon).toByteArray().toLower(),
                                 field.sliced(colon + 1).trimmed().toByteArray()});
    }
    return true;
}

} // namespace HttpHead
