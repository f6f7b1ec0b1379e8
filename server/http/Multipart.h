#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <QByteArray>
#include <QHash>
#include <QList>
#include <QString>

// multipart/form-data (RFC 7578) for upload routes: a streaming parser with bounds, and a
// convenience over a whole body that hands out the parts' data as views into it (no copy).
// Every refusal is a MultipartError with the HTTP status to answer (400 malformed, 413 a part
// over its bound) and, where one part is at fault, its field name.

struct MultipartLimits
{
    int maxParts = 64;                      // parts in one body
    int maxPartHeaderBytes = 8 * 1024;      // one part's header block
    qint64 maxFieldBytes = 64 * 1024;       // a part without a filename (a text field)
    qint64 maxFileBytes = 25 * 1024 * 1024; // a part with a filename, unless named below
    QHash<QByteArray, qint64> fileLimits;   // field name -> bound, e.g. {"file", 26'214'400}
};

struct MultipartError
{
    int status = 400;
    QString message; // says what is wrong, and for a bound the field and the limit
    QString param;   // the field at fault, when one is
};

struct MultipartPart
{
    QByteArray name;     // from Content-Disposition (required)
    QByteArray filename; // as sent; never used as a path
    bool hasFilename = false;
    QByteArray contentType; // the part's Content-Type, empty when absent
    QByteArray data;        // whole-body parsing only: a view into the body
};

// The boundary of a Content-Type header value. nullopt and *error set when the type is not
// multipart/form-data, or the boundary is missing, empty, longer than 70 characters or made
// of characters RFC 2046 does not allow.
std::optional<QByteArray> multipartBoundary(const QByteArray &contentType, QString *error);

// Push parser: feed the body in chunks of any size, then finish(). Calls, in order, for each
// part: begin(part) (data empty), data(bytes) zero or more times, end(). A callback returning
// false stops parsing with the error it set through fail() (or a generic one).
class MultipartParser
{
public:
    struct Callbacks
    {
        std::function<bool(const MultipartPart &)> begin;
        std::function<bool(const char *data, qsizetype size)> data;
        std::function<bool()> end;
    };

    MultipartParser(QByteArray boundary, MultipartLimits limits, Callbacks callbacks);
    ~MultipartParser();

    // false: stop, error() says why. Calls after an error return false.
    bool feed(const char *data, qsizetype size);
    // The body ended: false when the closing boundary was not seen (truncated body).
    bool finish();
    const MultipartError &error() const;
    // For callbacks that refuse a part: sets the error returned by error().
    void fail(int status, const QString &message, const QString &param = {});

private:
    struct Private;
    std::unique_ptr<Private> d;
};

struct MultipartForm
{
    QList<MultipartPart> parts;
    std::optional<MultipartError> error;

    // The first part with this name, or nullptr.
    const MultipartPart *part(const QByteArray &name) const;
    int count(const QByteArray &name) const;
};

// Parses a whole body; the parts' data are QByteArray::fromRawData views into `body`, valid
// while `body` is alive and unmodified.
MultipartForm parseMultipart(const QByteArray &body, const QByteArray &boundary,
                             const MultipartLimits &limits);
