#include "http/Multipart.h"

#include <cstring>
#include <vector>

namespace {

constexpr int kMaxBoundaryLength = 70;      // RFC 2046, section 5.1.1
constexpr int kMaxBoundaryLineExtra = 1024; // transport padding after a boundary
constexpr qint64 kKiB = 1024, kMiB = 1024 * 1024;

bool isSpace(char c)
{
    return c == ' ' || c == '\t';
}

// RFC 2046 bchars: the space is allowed, but not as the last character.
bool isBoundaryChar(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && std::strchr("'()+_,-./:=? ", c) != nullptr); // strchr finds the NUL
}

QString humanLimit(qint64 bytes)
{
    if (bytes >= kMiB && bytes % kMiB == 0)
        return QStringLiteral(" (%1 MiB)").arg(bytes / kMiB);
    if (bytes >= kKiB && bytes % kKiB == 0)
        return QStringLiteral(" (%1 KiB)").arg(bytes / kKiB);
    return {};
}

struct Param
{
    QByteArray name; // lowercased
    QByteArray value;
};

// `; name=value` pairs after the first token of a header value. Values are tokens or quoted
// strings. In a quoted string a backslash escapes only '"' and '\': browsers send Windows paths
// (filename="C:\x\y.wav") without escaping them, so other backslashes are kept as sent.
// false on a malformed list (an unterminated quote, a parameter without '=').
bool parseParams(const QByteArray &value, qsizetype from, QList<Param> *out)
{
    const qsizetype n = value.size();
    qsizetype i = from;
    while (i < n) {
        while (i < n && (isSpace(value[i]) || value[i] == ';'))
            ++i;
        if (i >= n)
            break;
        const qsizetype nameStart = i;
        while (i < n && value[i] != '=' && value[i] != ';')
            ++i;
        if (i >= n || value[i] != '=')
            return false;
        Param p;
        p.name = value.mid(nameStart, i - nameStart).trimmed().toLower();
        if (p.name.isEmpty())
            return false;
        ++i; // '='
        while (i < n && isSpace(value[i]))
            ++i;
        if (i < n && value[i] == '"') {
            ++i;
            bool closed = false;
            while (i < n) {
                const char c = value[i];
                if (c == '\\' && i + 1 < n && (value[i + 1] == '"' || value[i + 1] == '\\')) {
                    p.value += value[i + 1];
                    i += 2;
                } else if (c == '"') {
                    ++i;
                    closed = true;
                    break;
                } else {
                    p.value += c;
                    ++i;
                }
            }
            if (!closed)
                return false;
            while (i < n && isSpace(value[i]))
                ++i;
            if (i < n && value[i] != ';')
                return false;
        } else {
            const qsizetype valueStart = i;
            while (i < n && value[i] != ';')
                ++i;
            p.value = value.mid(valueStart, i - valueStart).trimmed();
        }
        out->append(p);
    }
    return true;
}

// RFC 5987 ext-value (charset'language'percent-encoded), for filename*. Only UTF-8 and
// ISO-8859-1 are decoded; anything else yields nullopt and the plain filename stays in use.
std::optional<QByteArray> decodeExtValue(const QByteArray &v)
{
    const qsizetype q1 = v.indexOf('\'');
    const qsizetype q2 = q1 < 0 ? -1 : v.indexOf('\'', q1 + 1);
    if (q2 < 0)
        return std::nullopt;
    const QByteArray charset = v.left(q1).toLower();
    const QByteArray decoded = QByteArray::fromPercentEncoding(v.mid(q2 + 1));
    if (charset == "utf-8")
        return decoded;
    if (charset == "iso-8859-1")
        return QString::fromLatin1(decoded).toUtf8();
    return std::nullopt;
}

} // namespace

std::optional<QByteArray> multipartBoundary(const QByteArray &contentType, QString *error)
{
    auto fail = [error](const QString &message) -> std::optional<QByteArray> {
        if (error)
            *error = message;
        return std::nullopt;
    };
    const qsizetype semi = contentType.indexOf(';');
    const QByteArray type = contentType.left(semi < 0 ? contentType.size() : semi).trimmed();
    if (type.compare("multipart/form-data", Qt::CaseInsensitive) != 0)
        return fail(QStringLiteral("The Content-Type is not multipart/form-data."));
    QList<Param> params;
    if (semi >= 0 && !parseParams(contentType, semi + 1, &params))
        return fail(QStringLiteral("The Content-Type's parameters are malformed."));
    std::optional<QByteArray> boundary;
    for (const Param &p : params) {
        if (p.name != "boundary")
            continue;
        if (boundary)
            return fail(QStringLiteral("The Content-Type has more than one boundary."));
        boundary = p.value;
    }
    if (!boundary)
        return fail(QStringLiteral("The multipart/form-data Content-Type has no boundary."));
    if (boundary->isEmpty())
        return fail(QStringLiteral("The multipart boundary is empty."));
    if (boundary->size() > kMaxBoundaryLength)
        return fail(QStringLiteral("The multipart boundary is longer than %1 characters.")
                        .arg(kMaxBoundaryLength));
    for (char c : *boundary)
        if (!isBoundaryChar(c))
            return fail(QStringLiteral("The multipart boundary has a character RFC 2046 does "
                                       "not allow."));
    if (boundary->endsWith(' '))
        return fail(QStringLiteral("The multipart boundary ends with a space."));
    if (error)
        error->clear();
    return boundary;
}

// The delimiter "\r\n--boundary" is found with a KMP automaton, so every input byte is looked
// at a bounded amortised number of times however the body is split; between candidates a
// memchr for '\r' skips ahead. Bytes that may be the start of a delimiter are not stored: while
// k bytes match, they are the delimiter's first k bytes, so they can be handed out from the
// delimiter itself if the match fails. Everything else is handed out as spans of the input.
struct MultipartParser::Private
{
    enum class State
    {
        Preamble,   // before the first delimiter: discarded
        AfterDelim, // right after a delimiter: "--", or padding then CRLF
        AfterDash,  // seen one '-' after a delimiter
        PaddingCr,  // seen the CR ending the boundary line
        Headers,    // a part's header block, up to its empty line
        Data,       // a part's data, up to the next delimiter
        Epilogue,   // after the close delimiter: discarded
        Failed,
    };

    QByteArray delimiter;  // "\r\n--" + boundary
    std::vector<int> next; // KMP failure function
    MultipartLimits limits;
    Callbacks callbacks;
    MultipartError error;

    State state = State::Preamble;
    int matched = 0;   // delimiter bytes matched so far, possibly across chunks
    int lineBytes = 0; // padding after the current delimiter
    QByteArray header; // the current part's header block
    int parts = 0;
    MultipartPart part;
    qint64 partBytes = 0;
    qint64 partLimit = 0;

    void setError(int status, const QString &message, const QString &param = {})
    {
        error = {status, message, param};
        state = State::Failed;
    }
    bool stopped()
    {
        // A callback refused without saying why.
        if (state != State::Failed)
            setError(400, QStringLiteral("The multipart body was refused."));
        return false;
    }

    bool emitData(const char *p, qsizetype n);
    bool emitRange(const char *chunk, qsizetype carry, qsizetype from, qsizetype to);
    bool startPart();
    bool headersDone();
    bool endPart();
    bool feed(const char *data, qsizetype size);
};

bool MultipartParser::Private::emitData(const char *p, qsizetype n)
{
    if (n <= 0)
        return true;
    if (partBytes + n > partLimit) {
        const QString name = QString::fromUtf8(part.name);
        setError(413,
                 QStringLiteral("The %1field '%2' is larger than the limit of %3 bytes%4.")
                     .arg(part.hasFilename ? QStringLiteral("file ") : QString(), name)
                     .arg(partLimit)
                     .arg(humanLimit(partLimit)),
                 name);
        return false;
    }
    partBytes += n;
    if (callbacks.data && (!callbacks.data(p, n) || state == State::Failed))
        return stopped();
    return true;
}

// Hands out the data in [from, to), positions relative to the chunk; negative positions are
// the `carry` delimiter bytes matched at the end of earlier chunks.
bool MultipartParser::Private::emitRange(const char *chunk, qsizetype carry, qsizetype from,
                                         qsizetype to)
{
    if (state == State::Preamble || from >= to)
        return true;
    if (from < 0) {
        const qsizetype end = qMin<qsizetype>(to, 0);
        if (!emitData(delimiter.constData() + carry + from, end - from))
            return false;
        from = end;
    }
    return emitData(chunk + from, to - from);
}

bool MultipartParser::Private::startPart()
{
    if (++parts > limits.maxParts) {
        setError(
            413,
            QStringLiteral("The form has more parts than the limit of %1.").arg(limits.maxParts));
        return false;
    }
    header.clear();
    state = State::Headers;
    return true;
}

bool MultipartParser::Private::headersDone()
{
    part = MultipartPart();
    bool sawDisposition = false, sawType = false;
    // Unfold obsolete continuation lines, then read "Name: value" fields.
    QList<QByteArray> fields;
    for (const QByteArray &line : header.split('\n')) {
        QByteArray l = line.endsWith('\r') ? line.chopped(1) : line;
        if (l.isEmpty())
            continue;
        if (isSpace(l.front()) && !fields.isEmpty())
            fields.back() += ' ' + l.trimmed();
        else
            fields.append(l);
    }
    for (const QByteArray &f : fields) {
        const qsizetype colon = f.indexOf(':');
        if (colon <= 0) {
            setError(400, QStringLiteral("A multipart part has a malformed header field."));
            return false;
        }
        const QByteArray name = f.left(colon).trimmed().toLower();
        const QByteArray value = f.mid(colon + 1).trimmed();
        if (name == "content-disposition") {
            if (sawDisposition) {
                setError(400, QStringLiteral("A multipart part has two Content-Disposition "
                                             "fields."));
                return false;
            }
            sawDisposition = true;
            const qsizetype semi = value.indexOf(';');
            const QByteArray type = value.left(semi < 0 ? value.size() : semi).trimmed();
            QList<Param> params;
            if (type.compare("form-data", Qt::CaseInsensitive) != 0 ||
                (semi >= 0 && !parseParams(value, semi + 1, &params))) {
                setError(400, QStringLiteral("A multipart part has a malformed "
                                             "Content-Disposition (expected form-data)."));
                return false;
            }
            bool sawName = false;
            std::optional<QByteArray> extFilename;
            for (const Param &p : params) {
                // A repeated name or filename could be read differently by another parser.
                if ((p.name == "name" && sawName) || (p.name == "filename" && part.hasFilename)) {
                    setError(400, QStringLiteral("A multipart part repeats the '%1' parameter.")
                                      .arg(QString::fromLatin1(p.name)));
                    return false;
                }
                if (p.name == "name") {
                    sawName = true;
                    part.name = p.value;
                } else if (p.name == "filename") {
                    part.hasFilename = true;
                    part.filename = p.value;
                } else if (p.name == "filename*") {
                    extFilename = decodeExtValue(p.value);
                    if (!extFilename)
                        extFilename = QByteArray(); // still a file part
                }
            }
            // RFC 7578 4.2: filename* is not to be used; honour it only when it stands alone.
            if (extFilename && !part.hasFilename) {
                part.hasFilename = true;
                part.filename = *extFilename;
            }
        } else if (name == "content-type") {
            if (sawType) {
                setError(400, QStringLiteral("A multipart part has two Content-Type fields."));
                return false;
            }
            sawType = true;
            part.contentType = value;
        }
    }
    if (part.name.isEmpty()) {
        setError(400, QStringLiteral("A multipart part has no name (Content-Disposition: "
                                     "form-data; name=\"...\" is required)."));
        return false;
    }
    partBytes = 0;
    partLimit = part.hasFilename ? limits.fileLimits.value(part.name, limits.maxFileBytes)
                                 : limits.maxFieldBytes;
    state = State::Data;
    matched = 0;
    if (callbacks.begin && (!callbacks.begin(part) || state == State::Failed))
        return stopped();
    return true;
}

bool MultipartParser::Private::endPart()
{
    if (callbacks.end && (!callbacks.end() || state == State::Failed))
        return stopped();
    return true;
}

bool MultipartParser::Private::feed(const char *data, qsizetype size)
{
    const qsizetype m = delimiter.size();
    // Delimiter bytes matched before this chunk, handed out from `delimiter` if need be.
    qsizetype carry = (state == State::Data || state == State::Preamble) ? matched : 0;
    qsizetype i = 0;
    qsizetype from = -carry; // first byte of data not yet handed out
    while (i < size) {
        switch (state) {
        case State::Preamble:
        case State::Data: {
            qsizetype k = matched;
            while (i < size) {
                if (k == 0) {
                    const void *cr = std::memchr(data + i, '\r', size_t(size - i));
                    if (!cr) {
                        i = size;
                        break;
                    }
                    i = static_cast<const char *>(cr) - data;
                }
                const char c = data[i];
                while (k > 0 && delimiter[k] != c)
                    k = next[k - 1];
                if (delimiter[k] == c)
                    ++k;
                ++i;
                if (k == m)
                    break;
            }
            matched = int(k);
            if (k < m) { // the chunk ended; keep the matched tail back
                if (!emitRange(data, carry, from, size - k))
                    return false;
                return true;
            }
            if (!emitRange(data, carry, from, i - m))
                return false;
            if (state == State::Data && !endPart())
                return false;
            matched = 0;
            carry = 0;
            lineBytes = 0;
            state = State::AfterDelim;
            break;
        }
        case State::AfterDelim: {
            const char c = data[i++];
            if (c == '-') {
                state = State::AfterDash;
            } else if (c == '\r') {
                state = State::PaddingCr;
            } else if (isSpace(c) && ++lineBytes <= kMaxBoundaryLineExtra) {
                // transport padding
            } else {
                setError(400, QStringLiteral("The multipart body has a malformed boundary "
                                             "line."));
                return false;
            }
            break;
        }
        case State::AfterDash:
            if (data[i++] != '-') {
                setError(400, QStringLiteral("The multipart body has a malformed boundary "
                                             "line."));
                return false;
            }
            state = State::Epilogue;
            break;
        case State::PaddingCr:
            if (data[i++] != '\n') {
                setError(400, QStringLiteral("The multipart body has a malformed boundary "
                                             "line."));
                return false;
            }
            if (!startPart())
                return false;
            break;
        case State::Headers: {
            // The block ends at its empty line: either at once (no fields) or at CRLFCRLF.
            while (i < size) {
                header += data[i++];
                const qsizetype n = header.size();
                if (n > limits.maxPartHeaderBytes) {
                    setError(413, QStringLiteral("A multipart part header is larger than %1 "
                                                 "bytes.")
                                      .arg(limits.maxPartHeaderBytes));
                    return false;
                }
                if ((n == 2 && header == "\r\n") ||
                    (n >= 4 && std::memcmp(header.constData() + n - 4, "\r\n\r\n", 4) == 0))
                    break;
            }
            const qsizetype n = header.size();
            if (!(n == 2 && header == "\r\n") &&
                !(n >= 4 && std::memcmp(header.constData() + n - 4, "\r\n\r\n", 4) == 0))
                return true; // more header bytes to come
            if (!headersDone())
                return false;
            from = i;
            break;
        }
        case State::Epilogue:
            return true;
        case State::Failed:
            return false;
        }
    }
    return state != State::Failed;
}

MultipartParser::MultipartParser(QByteArray boundary, MultipartLimits limits, Callbacks callbacks)
    : d(std::make_unique<Private>())
{
    d->delimiter = "\r\n--" + boundary;
    d->limits = std::move(limits);
    d->callbacks = std::move(callbacks);
    const qsizetype m = d->delimiter.size();
    d->next.assign(size_t(m), 0);
    for (qsizetype q = 1, k = 0; q < m; ++q) {
        while (k > 0 && d->delimiter[k] != d->delimiter[q])
            k = d->next[size_t(k - 1)];
        if (d->delimiter[k] == d->delimiter[q])
            ++k;
        d->next[size_t(q)] = int(k);
    }
    // The first delimiter may open the body without a CRLF: start as if one was just seen.
    d->matched = 2;
}

MultipartParser::~MultipartParser() = default;

bool MultipartParser::feed(const char *data, qsizetype size)
{
    if (d->state == Private::State::Failed)
        return false;
    if (size <= 0)
        return true;
    return d->feed(data, size);
}

bool MultipartParser::finish()
{
    if (d->state == Private::State::Failed)
        return false;
    if (d->state != Private::State::Epilogue) {
        d->setError(400, QStringLiteral("The multipart body is truncated: its closing boundary "
                                        "is missing."));
        return false;
    }
    return true;
}

const MultipartError &MultipartParser::error() const
{
    return d->error;
}

void MultipartParser::fail(int status, const QString &message, const QString &param)
{
    d->setError(status, message, param);
}

const MultipartPart *MultipartForm::part(const QByteArray &name) const
{
    for (const MultipartPart &p : parts)
        if (p.name == name)
            return &p;
    return nullptr;
}

int MultipartForm::count(const QByteArray &name) const
{
    int n = 0;
    for (const MultipartPart &p : parts)
        n += p.name == name;
    return n;
}

MultipartForm parseMultipart(const QByteArray &body, const QByteArray &boundary,
                             const MultipartLimits &limits)
{
    MultipartForm form;
    // One chunk: a part's data arrives as one span inside `body`. Spans from elsewhere (the
    // parser's own delimiter copy) cannot occur then, but are copied if they ever do.
    const char *start = nullptr;
    qsizetype length = 0;
    QByteArray copy;
    bool copied = false;
    MultipartParser::Callbacks cb;
    cb.begin = [&](const MultipartPart &p) {
        form.parts.append(p);
        start = nullptr;
        length = 0;
        copy.clear();
        copied = false;
        return true;
    };
    cb.data = [&](const char *p, qsizetype n) {
        const bool inBody = p >= body.constData() && p + n <= body.constData() + body.size();
        if (!copied && inBody && (!start || p == start + length)) {
            if (!start)
                start = p;
            length += n;
        } else {
            if (!copied) {
                copy = QByteArray(start, length);
                copied = true;
            }
            copy.append(p, n);
        }
        return true;
    };
    cb.end = [&] {
        MultipartPart &p = form.parts.back();
        if (copied)
            p.data = copy;
        else if (start)
            p.data = QByteArray::fromRawData(start, length);
        return true;
    };
    MultipartParser parser(boundary, limits, std::move(cb));
    if (!parser.feed(body.constData(), body.size()) || !parser.finish())
        form.error = parser.error();
    return form;
}
