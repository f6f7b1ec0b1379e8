#pragma once

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>

// QJsonDocument(x).toJson(QJsonDocument::Compact), byte for byte, into one buffer. Qt's writer
// allocates, shrinks and frees a buffer for every key and string it escapes; encoding the
// answers of billed local-engine requests was a fifth of an engine worker's time in perf
// (tests/bench/README.md, "The charge path"). Numbers are written as Qt writes them: an integer
// as it is stored, a double in its shortest form ('g'), a double that is not finite as null.
// Strings are UTF-8 with '"', '\\' and the control characters escaped; a lone surrogate is
// written as a \uXXXX escape of itself. tst_compact_json compares the two on random documents.
namespace CompactJson {

QByteArray encode(const QJsonObject &object);
QByteArray encode(const QJsonArray &array);

} // namespace CompactJson
