#pragma once

#include <QString>

// A request a route refuses, as its parser reports it: the status, the sentence for the client,
// the field at fault (a JSON path such as "questions.q1.type", or a form field), and a code a
// client can branch on. RequestContext::respondError(const RequestError &) answers it in the
// route's error envelope; the type is the envelope's conventional one for the status unless
// set.
struct RequestError
{
    int status = 400;
    QString message = {};
    QString param = {};
    QString code = {};
    QString type = {};
};
