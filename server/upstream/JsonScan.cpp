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

// Keys wanted at the top level, and where their values were seen (the first of each name).
struct Wanted
{
    std::initializer_list<QByteArrayView> keys;
    Span *spans;
    void clear() const
    {
        for (size_t n = 0; n < keys.size(); ++n)
            spans[n] = {};
    }
    // Returns true once every key has a span.
    bool note(QByteArrayView key, qsizetype begin, qsizetype end) const
    {
        bool all = true;
        size_t n = 0;
        for (QByteArrayView k : keys) {
            if (!spans[n].found() && k == key)
                spans[n] = {begin, end};
            all = all && spans[n].found();
            ++n;
        }
        return all;
    }
};

// Walks the members of the object starting at s[i] == '{' (after spaces), noting each in
// `wanted`; stops at the end, at broken JSON, or once every wanted key has its span.
void walkMembers(QByteArrayView s, qsizetype i, const Wanted &wanted)
{
    i = skipSpace(s, i);
    if (i >= s.size() || s[i] != '{')
        return;
    ++i;
    for (;;) {
        i = skipSpace(s, i);
        if (i >= s.size() || s[i] != '"')
            return;
        const qsizetype keyEnd = skipString(s, i);
        if (keyEnd < 0)
            return;
        const QByteArrayView k = s.sliced(i + 1, keyEnd - i - 2);
        i = skipSpace(s, keyEnd);
        if (i >= s.size() || s[i] != ':')
            return;
        i = skipSpace(s, i + 1);
        const qsizetype valueEnd = skipValue(s, i);
        if (valueEnd < 0 || wanted.note(k, i, valueEnd))
            return;
        i = skipSpace(s, valueEnd);
        if (i < s.size() && s[i] == ',')
            ++i;
        else
            return;
    }
}

// Within the object starting at s[i] == '{', the span of key's value.
Span member(QByteArrayView s, qsizetype i, QByteArrayView key)
{
    Span span;
    walkMembers(s, i, Wanted{{key}, &span});
    return span;
}

// A strict validator: each returns the index one past what it accepted, or -1.
class Validator
{
public:
    explicit Validator(QByteArrayView s, const Wanted *wanted = nullptr) : m_s(s), m_wanted(wanted)
    {
    }

    qsizetype value(qsizetype i, int depth)
    {
        i = skipSpace(m_s, i);
        if (i >= m_s.size())
            return -1;
        switch (m_s[i]) {
        case '{':
            return depth < kMaxDepth ? object(i, depth + 1) : -1;
        case '[':
            return depth < kMaxDepth ? array(i, depth + 1) : -1;
        case '"':
            return string(i);
        case 't':
            return literal(i, "true");
        case 'f':
            return literal(i, "false");
        case 'n':
            return literal(i, "null");
        default:
            return number(i);
        }
    }

    qsizetype object(qsizetype i, int depth)
    {
        i = skipSpace(m_s, i + 1);
        if (i < m_s.size() && m_s[i] == '}')
            return i + 1;
        for (;;) {
            i = skipSpace(m_s, i);
            const qsizetype keyBegin = i;
            if (i >= m_s.size() || m_s[i] != '"' || (i = string(i)) < 0)
                return -1;
            const qsizetype keyEnd = i;
            i = skipSpace(m_s, i);
            if (i >= m_s.size() || m_s[i] != ':')
                return -1;
            const qsizetype valueBegin = skipSpace(m_s, i + 1);
            if ((i = value(valueBegin, depth)) < 0)
                return -1;
            if (depth == 1 && m_wanted)
                m_wanted->note(m_s.sliced(keyBegin + 1, keyEnd - keyBegin - 2), valueBegin, i);
            i = skipSpace(m_s, i);
            if (i >= m_s.size())
                return -1;
            if (m_s[i] == '}')
                return i + 1;
            if (m_s[i] != ',')
                return -1;
            ++i;
        }
    }

private:
    static constexpr int kMaxDepth = 1024;

    qsizetype array(qsizetype i, int depth)
    {
        i = skipSpace(m_s, i + 1);
        if (i < m_s.size() && m_s[i] == ']')
            return i + 1;
        for (;;) {
            if ((i = value(i, depth)) < 0)
                return -1;
            i = skipSpace(m_s, i);
            if (i >= m_s.size())
                return -1;
            if (m_s[i] == ']')
                return i + 1;
            if (m_s[i] != ',')
                return -1;
            ++i;
        }
    }

    qsizetype literal(qsizetype i, QByteArrayView word)
    {
        return m_s.sliced(i).startsWith(word) ? i + word.size() : -1;
    }

    static bool digit(char c) { return c >= '0' && c <= '9'; }

    qsizetype number(qsizetype i)
    {
        const qsizetype n = m_s.size();
        if (i < n && m_s[i] == '-')
            ++i;
        if (i >= n || !digit(m_s[i]))
            return -1;
        if (m_s[i] == '0')
            ++i;
        else
            while (i < n && digit(m_s[i]))
                ++i;
        if (i < n && m_s[i] == '.') {
            if (++i >= n || !digit(m_s[i]))
                return -1;
            while (i < n && digit(m_s[i]))
                ++i;
        }
        if (i < n && (m_s[i] == 'e' || m_s[i] == 'E')) {
            if (++i < n && (m_s[i] == '+' || m_s[i] == '-'))
                ++i;
            if (i >= n || !digit(m_s[i]))
                return -1;
            while (i < n && digit(m_s[i]))
                ++i;
        }
        return i;
    }

    static int hex(char c)
    {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        return -1;
    }

    qsizetype string(qsizetype i)
    {
        const qsizetype n = m_s.size();
        for (++i; i < n;) {
            const uchar c = uchar(m_s[i]);
            if (c == '"')
                return i + 1;
            if (c < 0x20)
                return -1;
            if (c == '\\') {
                if (++i >= n)
                    return -1;
                const char e = m_s[i];
                if (e == 'u') {
                    if (i + 4 >= n)
                        return -1;
                    for (int k = 1; k <= 4; ++k)
                        if (hex(m_s[i + k]) < 0)
                            return -1;
                    i += 5;
                } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                           e == 'r' || e == 't') {
                    ++i;
                } else {
                    return -1;
                }
                continue;
            }
            if (c < 0x80) {
                ++i;
                continue;
            }
            // UTF-8: the sequence's length from its lead byte; no overlong forms, no
            // surrogates, nothing above U+10FFFF.
            int more = 0;
            uint cp = 0;
            if (c >= 0xc2 && c <= 0xdf) {
                more = 1;
                cp = c & 0x1f;
            } else if (c >= 0xe0 && c <= 0xef) {
                more = 2;
                cp = c & 0x0f;
            } else if (c >= 0xf0 && c <= 0xf4) {
                more = 3;
                cp = c & 0x07;
            } else {
                return -1;
            }
            if (i + more >= n)
                return -1;
            for (int k = 1; k <= more; ++k) {
                const uchar t = uchar(m_s[i + k]);
                if ((t & 0xc0) != 0x80)
                    return -1;
                cp = (cp << 6) | (t & 0x3f);
            }
            if ((more == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
                (more == 3 && (cp < 0x10000 || cp > 0x10ffff)))
                return -1;
            i += more + 1;
        }
        return -1;
    }

    QByteArrayView m_s;
    const Wanted *m_wanted;
};

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

void members(QByteArrayView json, std::initializer_list<QByteArrayView> keys, Span *spans)
{
    const Wanted wanted{keys, spans};
    wanted.clear();
    walkMembers(json, 0, wanted);
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

bool isObject(QByteArrayView json)
{
    return isObject(json, {}, nullptr);
}

bool isObject(QByteArrayView json, std::initializer_list<QByteArrayView> keys, Span *spans)
{
    const Wanted wanted{keys, spans};
    wanted.clear();
    const qsizetype start = skipSpace(json, 0);
    if (start >= json.size() || json[start] != '{')
        return false;
    Validator v(json, keys.size() ? &wanted : nullptr);
    const qsizetype end = v.object(start, 1);
    if (end >= 0 && skipSpace(json, end) == json.size())
        return true;
    wanted.clear();
    return false;
}

} // namespace JsonScan
