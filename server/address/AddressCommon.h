#pragma once

#include "AddressApi.h"

#include <optional>
#include <QJsonObject>
#include <QString>

// What the endpoint files share: the reply helpers.
namespace AddressCommon {

using AddressApi::Reply;

Reply fail(const QString &param, const QString &message);
Reply ok(QJsonObject body);

// The {text} body every text endpoint takes: the text, or the 400 in *error (missing, not a
// string, blank, over AddressApi::kMaxText characters).
std::optional<QString> requestText(const QJsonObject &body, Reply *error);

// The Unicode character (code point) offset of UTF-16 index `utf16` in `text`: the engine works
// in QString indexes, answers count characters (a surrogate pair is one).
qsizetype charOffset(QStringView text, qsizetype utf16);

// How to add imported data of `kind` ("zipcodes" or "pois"), for answers that lack it.
QString importHint(const char *kind);

} // namespace AddressCommon
