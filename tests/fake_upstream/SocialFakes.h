#pragma once

#include "http/HttpExchange.h"

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

#include <memory>

class FakeUpstream;
class HttpConnection;
struct FakeOptions;

// The fake's TikHub-style social-media data API (README.md, "Social-media data"): the
// upstream's OpenAPI document served as it is at GET /openapi.json, and every operation of it
// answered as FastAPI answers (405, 401, 422, then the {"code":200,...,"data":{...}} envelope
// whose data echoes what arrived), with per-request knobs taken from the query (the relay
// forwards the query, not the client's headers) or from x-fake-* headers.
namespace SocialFakes {

// What the fake checks of one operation of the document.
struct Operation
{
    QStringList requiredQuery; // required query parameters, inline or $ref'd, in document order
    bool secured = true;       // a non-empty security requirement: Authorization: Bearer needed
    bool bodyRequired = false; // requestBody.required
    bool jsonBody = false;     // the request body is application/json
    QStringList requiredBody;  // required top-level members of that body's schema
    QByteArray docs;           // the operation's Swagger UI link, or empty
};

// The loaded document: its bytes, served unchanged, and its operations by path and method.
class Catalog
{
public:
    // Reads and parses the file; nullptr and *error when it is not an OpenAPI document with a
    // "paths" object. Path templates ({id}) are not expanded: every path matches literally.
    static std::unique_ptr<Catalog> load(const QString &file, QString *error);

    const QByteArray &document() const { return m_document; }
    int operationCount() const { return m_operations; }
    // The operations at this (percent-decoded) path by upper-case method, or nullptr when the
    // path is not in the document.
    const QHash<QByteArray, Operation> *find(const QString &path) const;

private:
    QByteArray m_document;
    QHash<QString, QHash<QByteArray, Operation>> m_paths;
    int m_operations = 0;
};

// True when the path is the fake's to answer as the social API: /openapi.json or a path of the
// document, whatever the method (a wrong method gets FastAPI's 405).
bool claims(const Catalog &catalog, const QString &path);

struct Request
{
    ExchangePtr exchange;
    HttpConnection *connection = nullptr; // the exchange's socket, for the reset faults
    quint64 seq = 0;                      // the request number (request_id)
};

// Answers a claimed request. Counts it with owner.jobStarted/jobEnded when it gets past the
// checks (the caller has already counted and logged it as a request).
void answer(FakeUpstream &owner, const FakeOptions &options, const Catalog &catalog,
            const Request &request);

// A raw query string as Starlette reads it (urllib's parse_qsl with keep_blank_values): split
// at '&', empty pieces skipped, a piece without '=' is a name with an empty value, '+' is a
// space, %XX is decoded (a malformed escape stays as it is), the bytes are read as UTF-8 with
// invalid sequences replaced by U+FFFD. Order and repeats are kept.
QList<QPair<QString, QString>> parseQuery(const QByteArray &raw);

} // namespace SocialFakes
