#pragma once

#include "HttpRequest.h"

#include <QByteArrayView>
#include <QString>

// The head of an HTTP/1.x request: the request line and the header fields, up to (not
// including) the blank line that ends them. Lines end in CRLF or a bare LF. A plain function of
// the bytes, so that it can be fuzzed (tests/server/fuzz_http_head.cpp); HttpConnection finds
// the head's end, then decides on the body from the headers this fills in.
namespace HttpHead {

struct Error
{
    int status = 0; // 400 malformed, 431 too many header fields, 505 not HTTP/1.0 or 1.1
    QString message;
};

// Fills request's method, target, path (percent-decoded), query, versionMinor and headers
// (names lower-cased, values without surrounding whitespace, in the order sent). Refuses a
// request line that is not "METHOD SP /target SP HTTP/1.x", a target that is not an absolute
// path, more than maxHeaderLines lines after the request line, folded (obsolete line-continued)
// fields and fields without a token before their colon.
bool parse(QByteArrayView head, int maxHeaderLines, HttpRequest *request, Error *error);

// Whether s is an RFC 9110 token (a method or a field name): one or more tchar.
bool isToken(QByteArrayView s);

} // namespace HttpHead
