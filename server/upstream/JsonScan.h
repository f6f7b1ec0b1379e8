#pragma once

#include <initializer_list>
#include <QByteArray>
#include <QByteArrayView>

// Finds and replaces values in JSON text without building a document: the relay touches only
// the `model` field and reads only `usage` of each streamed event, and copying the rest
// byte for byte keeps it fast and keeps the upstream's bytes intact.
namespace JsonScan {

struct Span
{
    qsizetype begin = -1; // offset of the value's first byte
    qsizetype end = -1;   // one past its last byte
    bool found() const { return begin >= 0; }
};

// The value at a path of object keys from the top-level object, e.g. {"message", "usage"}.
// Returns an empty span if the text is not an object, the path is missing or the JSON is broken.
Span find(QByteArrayView json, std::initializer_list<QByteArrayView> path);

// The values of several top-level keys in one walk, spans[i] for keys[i]: what find(json,
// {keys[i]}) gives, for a fraction of the cost when the relays want three of one answer.
// spans must have room for keys.size() spans.
void members(QByteArrayView json, std::initializer_list<QByteArrayView> keys, Span *spans);

// Replaces a string value at the path with `value`: the new value's JSON text, quotes included
// (quote() makes it).
// Returns false (leaving json untouched) when there is no string there.
bool replaceString(QByteArray &json, std::initializer_list<QByteArrayView> path,
                   QByteArrayView value);

// Whether the text is one whole, well-formed JSON object (RFC 8259: strings with their escapes
// and valid UTF-8, numbers, literals, nesting at most 1,024 deep), surrounded by whitespace
// only. Checks without building a document: the relays use it to tell a whole answer from a
// truncated one, where QJsonDocument cost about 50,000 instructions per small answer.
bool isObject(QByteArrayView json);
// isObject() and members() in one pass: when the text is a whole object, spans[i] is the span of
// keys[i] at its top level (the first member of that name, as find() gives); otherwise every
// span is empty.
bool isObject(QByteArrayView json, std::initializer_list<QByteArrayView> keys, Span *spans);

// `text` as a JSON string literal, quotes included.
QByteArray quote(QByteArrayView text);

} // namespace JsonScan
