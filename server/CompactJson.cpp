#include "CompactJson.h"

#include <algorithm>
#include <charconv>
#include <QCborArray>
#include <QCborMap>
#include <QCborValue>
#include <QLocale>

namespace {

// The document is read through QCborMap and QCborArray, which share a QJsonObject's storage,
// so that an integer and a double keep the types Qt's writer sees.
class Writer
{
public:
    explicit Writer(QByteArray &out) : m_out(out) {}

    void value(const QCborValue &v)
    {
        switch (v.type()) {
        case QCborValue::True:
            m_out.append("true", 4);
            break;
        case QCborValue::False:
            m_out.append("false", 5);
            break;
        case QCborValue::Integer: {
            char digits[24];
            const auto r = std::to_chars(digits, digits + sizeof digits, v.toInteger());
            m_out.append(digits, r.ptr - digits);
            break;
        }
        case QCborValue::Double: {
            const double d = v.toDouble();
            if (qIsFinite(d))
                m_out.append(QByteArray::number(d, 'g', QLocale::FloatingPointShortest));
            else
                m_out.append("null", 4);
            break;
        }
        case QCborValue::String:
            string(v.toString());
            break;
        case QCborValue::Array:
            array(v.toArray());
            break;
        case QCborValue::Map:
            map(v.toMap());
            break;
        default:
            m_out.append("null", 4);
        }
    }

    void map(const QCborMap &m)
    {
        m_out.append('{');
        bool first = true;
        for (auto it = m.cbegin(); it != m.cend(); ++it) {
            if (!first)
                m_out.append(',');
            first = false;
            string(it.key().toString());
            m_out.append(':');
            value(it.value());
        }
        m_out.append('}');
    }

    void array(const QCborArray &a)
    {
        m_out.append('[');
        bool first = true;
        for (const QCborValue &v : a) {
            if (!first)
                m_out.append(',');
            first = false;
            value(v);
        }
        m_out.append(']');
    }

    void string(const QString &s)
    {
        const char16_t *p = reinterpret_cast<const char16_t *>(s.constData());
        const char16_t *const end = p + s.size();
        m_out.append('"');
        qsizetype at = m_out.size();
        // Room for the worst case, six bytes a UTF-16 unit (\u00XX), made a slice at a time so
        // that a long string does not take six times its size at once.
        while (p != end) {
            const char16_t *const stop = p + std::min<qsizetype>(end - p, kSlice);
            m_out.resize(at + 6 * (stop - p) + 6); // + 6: a pair may end one unit past stop
            char *const begin = m_out.data() + at;
            char *o = begin;
            while (p < stop)
                o = unit(o, p, end);
            at += o - begin;
        }
        m_out.resize(at);
        m_out.append('"');
    }

private:
    static constexpr qsizetype kSlice = 4096;

    // Writes the unit at p (with the next one, for a surrogate pair) and moves p past them.
    static char *unit(char *o, const char16_t *&p, const char16_t *end)
    {
        const char16_t u = *p++;
        if (u < 0x80) {
            if (u >= 0x20 && u != '"' && u != '\\') {
                *o++ = char(u);
                return o;
            }
            *o++ = '\\';
            switch (u) {
            case '"':
                *o++ = '"';
                break;
            case '\\':
                *o++ = '\\';
                break;
            case 0x8:
                *o++ = 'b';
                break;
            case 0xc:
                *o++ = 'f';
                break;
            case 0xa:
                *o++ = 'n';
                break;
            case 0xd:
                *o++ = 'r';
                break;
            case 0x9:
                *o++ = 't';
                break;
            default:
                o = escape(o, u);
            }
        } else if (u < 0x800) {
            *o++ = char(0xc0 | (u >> 6));
            *o++ = char(0x80 | (u & 0x3f));
        } else if (!QChar::isSurrogate(u)) {
            *o++ = char(0xe0 | (u >> 12));
            *o++ = char(0x80 | ((u >> 6) & 0x3f));
            *o++ = char(0x80 | (u & 0x3f));
        } else if (QChar::isHighSurrogate(u) && p != end && QChar::isLowSurrogate(*p)) {
            const char32_t c = QChar::surrogateToUcs4(u, *p++);
            *o++ = char(0xf0 | (c >> 18));
            *o++ = char(0x80 | ((c >> 12) & 0x3f));
            *o++ = char(0x80 | ((c >> 6) & 0x3f));
            *o++ = char(0x80 | (c & 0x3f));
        } else {
            *o++ = '\\'; // not valid UTF-16: the unit itself, escaped
            o = escape(o, u);
        }
        return o;
    }

    // "uXXXX" after a backslash, in lower-case hex as Qt writes it.
    static char *escape(char *o, char16_t u)
    {
        static constexpr char kHex[] = "0123456789abcdef";
        *o++ = 'u';
        for (int shift = 12; shift >= 0; shift -= 4)
            *o++ = kHex[(u >> shift) & 0xf];
        return o;
    }

    QByteArray &m_out;
};

} // namespace

QByteArray CompactJson::encode(const QJsonObject &object)
{
    QByteArray out;
    out.reserve(256);
    Writer(out).map(QCborMap::fromJsonObject(object));
    return out;
}

QByteArray CompactJson::encode(const QJsonArray &array)
{
    QByteArray out;
    out.reserve(256);
    Writer(out).array(QCborArray::fromJsonArray(array));
    return out;
}
