#include "AddressCommon.h"

#include <algorithm>

namespace AddressCommon {

Reply fail(const QString &param, const QString &message)
{
    Reply r;
    r.status = 400;
    r.param = param;
    r.error = message;
    return r;
}

Reply ok(QJsonObject body)
{
    Reply r;
    r.body = std::move(body);
    return r;
}

std::optional<QString> requestText(const QJsonObject &body, Reply *error)
{
    const QJsonValue text = body.value("text");
    if (!text.isString()) {
        *error = fail(QStringLiteral("text"), QStringLiteral("text: required, a string"));
        return std::nullopt;
    }
    const QString t = text.toString();
    // Blank includes text of only invisible format characters (zero-width space, BOM...).
    const bool blank = std::all_of(t.cbegin(), t.cend(), [](QChar c) {
        return c.isSpace() || c.category() == QChar::Other_Format;
    });
    if (blank) {
        *error = fail(QStringLiteral("text"), QStringLiteral("text: must not be empty"));
        return std::nullopt;
    }
    // The bound is in characters, as the offsets are: a surrogate pair counts once.
    const qsizetype length = charOffset(t, t.size());
    if (length > AddressApi::kMaxText) {
        *error = fail(QStringLiteral("text"), QStringLiteral("text: at most %1 characters, got %2")
                                                  .arg(AddressApi::kMaxText)
                                                  .arg(length));
        return std::nullopt;
    }
    return t;
}

qsizetype charOffset(QStringView text, qsizetype utf16)
{
    qsizetype chars = 0;
    for (qsizetype i = 0; i < utf16 && i < text.size(); ++i) {
        if (!(text[i].isLowSurrogate() && i > 0 && text[i - 1].isHighSurrogate()))
            ++chars;
    }
    return chars;
}

QString importHint(const char *kind)
{
    return QStringLiteral("`switchyard-server address import %1 FILE.csv` or the Address data row "
                          "of Tools > Address testing in the window")
        .arg(QLatin1String(kind));
}

} // namespace AddressCommon
