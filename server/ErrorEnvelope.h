#pragma once

#include "http/HttpHeaders.h"

#include <initializer_list>
#include <QByteArray>
#include <QString>
#include <vector>

// One error as a handler gives it; `type` is filled in (the envelope's default for the status
// when the handler named none), `param` and `code` may be empty.
struct ErrorFields
{
    int status = 0;
    QString message;
    QString type;
    QString param;
    QString code;
};

// How errors are written in one envelope: the body's shape, the error type a status takes when
// the caller names none, and headers every answer in the envelope carries. The core has one,
// the OpenAI-style {error:{message,type,param,code}}; a family whose protocol has its own writes
// one (a long-lived object, e.g. a function-local static with no state) and names it in its
// routes (RouteSpec::errorStyle) and its prefixes (ServiceFamily::errorPrefixes).
class ErrorEnvelopeWriter
{
public:
    struct StatusType
    {
        int status;
        const char *type;
    };
    // types: the conventional error type of particular statuses (e.g. 401 ->
    // authentication_error); any other status takes clientError below 500, serverError from it.
    ErrorEnvelopeWriter(std::initializer_list<StatusType> types, const char *clientError,
                        const char *serverError);
    virtual ~ErrorEnvelopeWriter() = default;

    QString defaultType(int status) const;
    virtual QByteArray body(const ErrorFields &error) const = 0;
    // Headers every answer in this envelope carries besides X-Request-Id (a protocol that
    // names the request id its own way adds it here); called for every answer.
    virtual void addHeaders(const QByteArray &requestId, HttpHeaders *headers) const
    {
        Q_UNUSED(requestId);
        Q_UNUSED(headers);
    }

private:
    std::vector<StatusType> m_types;
    const char *m_clientError;
    const char *m_serverError;
};

// The envelope of a request's errors: a writer a family registered, or, default-constructed,
// the core's OpenAI-style one. Cheap to copy (a pointer); equal when the writer is the same.
class ErrorStyle
{
public:
    constexpr ErrorStyle() = default;
    constexpr explicit ErrorStyle(const ErrorEnvelopeWriter &writer) : m_writer(&writer) {}
    const ErrorEnvelopeWriter &writer() const;
    friend bool operator==(ErrorStyle a, ErrorStyle b) { return a.m_writer == b.m_writer; }

private:
    const ErrorEnvelopeWriter *m_writer = nullptr;
};

namespace ErrorEnvelope {

// The conventional error type for a status in a style (e.g. 401 -> authentication_error).
QString defaultType(ErrorStyle style, int status);
QByteArray body(ErrorStyle style, int status, const QString &message, const QString &type = {},
                const QString &param = {}, const QString &code = {});

} // namespace ErrorEnvelope
