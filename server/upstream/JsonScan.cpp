#include "upstream/JsonScan.h"

namespace JsonScan {

namespace {

qsizetype skipSpace(QByteArrayView s, qsizetype i)
{
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
        ++i;
    return i;
}

// Index one past the string starting at s[i] == '"', or -1.
qsizetype skipString(QByteArrayView s, qsizetype i)
{
    for (++i; i < s.size(); ++i) {
        if (s[i] == '\\')
            ++i;
        else if (s[i] == '"')
            return i + 1;
    }
    return -1;
}

// Index one past the value starting at s[i], or -1.
qsizetype skipValue(QByteArrayView s, qsizetype i)
{
    i = skipSpace(s, i);
    if (i >= s.size())
        return -1;
    const char c = s[i];
    if (c == '"')
        return skipString(s, i);
    if (c == '{' || c == '[') {
        int depth = 0;
        for (; i < s.size(); ++i) {
            const char d = s[i];
            if (d == '"') {
                i = skipString(s, i);
                if (i < 0)
                    return -1;
                --i;
            } else if (d == '{' || d == '[') {
                ++depth;
            } else if (d == '}' || d == ']') {
                if (--depth == 0)
                    return i + 1;
            }
        }
        return -1;
    }
    // number, true, false, null
    const qsizetype start = i;
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' &&
           s[i] != '\n' && s[i] != '\r' && s[i] != '\t')
        ++i;
    return i > start ? i : -1; // an empty value is broken JSON
}

// Within the object starting at s[i] == '{', the span of key's value.
Span member(QByteArrayView s, qsizetype i, QByteArrayView key)
{
    i = skipSpace(s, i);
    if (i >= s.size() || s[i] != '{')
        return {};
    ++i;
    for (;;) {
        i = skipSpace(s, i);
        if (i >= s.size() || s[i] == '}' || s[i] != '"')
            return {};
        const qsizetype keyEnd = skipString(s, i);
        if (keyEnd < 0)
            return {};
        const QByteArrayView k = s.sliced(i + 1, keyEnd - i - 2);
        i = skipSpace(s, keyEnd);
        if (i >= s.size() || s[i] != ':')
            return {};
        i = skipSpace(s, i + 1);
        const qsizetype valueEnd = skipValue(s, i);
        if (valueEnd < 0)
            return {};
        if (k == key)
            return {i, valueEnd};
        i = skipSpace(s, valueEnd);
        if (i < s.size() && s[i] == ',')
            ++i;
        else
            return {};
    }
}

} // namespace

Span find(QByteArrayView json, std::initializer_list<QByteArrayView> path)
{
    Span span{0, json.size()};
    for (QByteArrayView key : path) {
        span = member(json, span.begin, key);
        if (!span.found())
            return {};
    }
    return span;
}

bool replaceString(QByteArray &json, std::initializer_list<QByteArrayView> path,
                   QByteArrayView value)
{
    const Span s = find(json, path);
    if (!s.found() || json.at(s.begin) != '"')
        return false;
    json.replace(s.begin, s.end - s.begin, value.data(), value.size());
    return true;
}

QByteArray quote(QByteArrayView text)
{
    QByteArray out;
    out.reserve(text.size() + 2);
    out.append('"');
    for (char c : text) {
        switch (c) {
        case '"':
            out.append("\\\"");
            break;
        case '\\':
            out.append("\\\\");
            break;
        case '\n':
            out.append("\\n");
            break;
        case '\r':
            out.append("\\r");
            break;
        case '\t':
            out.append("\\t");
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20)
                out.append("\\u00").append(QByteArray::number(c, 16).rightJustified(2, '0'));
            else
                out.append(c);
        }
    }
    out.append('"');
    return out;
}

} // namespace JsonScan
