#include "EnvelopeScanner.h"

#include <limits>

// One pass over the bytes, a byte at a time, with the whole state in the members: a piece may end
// anywhere (inside a BOM, a name, an escape, a UTF-8 sequence, a number or a literal) and the
// next piece carries on. The grammar is RFC 8259's, stricter than QJsonDocument (which takes raw
// control characters, unknown escapes and numbers like ".5" or "1."): an answer QJsonDocument
// refuses is never Found, and one it accepts is read the same way (tests/social).

namespace {

enum Mode : quint8
{
    Start,       // before the document: a BOM (first bytes only), whitespace, then '{'
    Bom,         // inside the BOM
    ObjectFirst, // after '{': a name or '}'
    ObjectNext,  // after ',' in an object: a name
    Colon,       // after a name: ':'
    Value,       // after ':' or ',' in an array: a value
    ArrayFirst,  // after '[': a value or ']'
    AfterValue,  // after a value: ',' or the container's end
    String,
    Escape,  // after '\'
    Unicode, // in \uXXXX
    Utf8,    // in a multi-byte UTF-8 sequence
    NumMinus,
    NumZero, // a leading 0: no more integer digits
    NumInt,
    NumDot,
    NumFrac,
    NumE,
    NumESign,
    NumExp,
    Literal,
    Done, // the top-level object has ended: whitespace only
    Dead, // NotFound for good: nothing more is read
};

constexpr quint8 kNoKey = 0xFF;
constexpr char kCode[] = "code";
constexpr const char *kLiterals[] = {"true", "false", "null"};

constexpr bool isSpace(uchar c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

constexpr bool isDigit(uchar c)
{
    return c >= '0' && c <= '9';
}

constexpr int hexValue(uchar c)
{
    if (isDigit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// Bytes a string holds as they are: printable ASCII but '"' and '\' (DEL included, as JSON
// allows). The fast path of strings skips runs of them.
struct PlainTable
{
    bool plain[256] = {};
    constexpr PlainTable()
    {
        for (int c = 0x20; c < 0x80; ++c)
            plain[c] = c != '"' && c != '\\';
    }
};
constexpr PlainTable kPlain;

// The length of the valid UTF-8 sequence of 2 to 4 bytes at p when it is whole in [p, end),
// else 0 (then the byte-at-a-time path reads it, or refuses it).
inline int utf8Sequence(const uchar *p, const uchar *end)
{
    const uchar c = *p;
    const auto cont = [](uchar b) { return (b & 0xC0) == 0x80; };
    if (c >= 0xC2 && c <= 0xDF)
        return end - p >= 2 && cont(p[1]) ? 2 : 0;
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) // no further limit on byte 2
        return end - p >= 3 && cont(p[1]) && cont(p[2]) ? 3 : 0;
    return 0;
}

constexpr quint64 kMaxPositive = quint64(std::numeric_limits<qint64>::max());

} // namespace

void EnvelopeScanner::fail()
{
    m_state = State::NotFound;
    m_mode = Dead;
}

bool EnvelopeScanner::push(bool array)
{
    if (m_depth >= kMaxDepth) {
        fail();
        return false;
    }
    const quint64 bit = quint64(1) << (m_depth & 63);
    if (array)
        m_arrays[m_depth >> 6] |= bit;
    else
        m_arrays[m_depth >> 6] &= ~bit;
    ++m_depth;
    m_mode = array ? ArrayFirst : ObjectFirst;
    return true;
}

// Ends the current container, which must be of that kind; the top-level object's end decides.
bool EnvelopeScanner::close(bool array)
{
    const int top = m_depth - 1;
    if (top < 0 || bool((m_arrays[top >> 6] >> (top & 63)) & 1) != array) {
        fail();
        return false;
    }
    m_depth = top;
    if (m_depth > 0) {
        m_mode = AfterValue;
        return true;
    }
    if (m_state != State::Found) {
        fail(); // the top-level object ended without an integer "code"
        return false;
    }
    m_mode = Done;
    return true;
}

// The member "code": <integer> is complete (',' or '}' follows it).
void EnvelopeScanner::commitCode()
{
    if (!m_codePending)
        return;
    m_codePending = false;
    m_code = m_negative ? qint64(0 - m_magnitude) : qint64(m_magnitude);
    m_state = State::Found;
}

void EnvelopeScanner::feed(QByteArrayView piece)
{
    const uchar *p = reinterpret_cast<const uchar *>(piece.data());
    const uchar *const end = p + piece.size();
    while (p < end) {
        switch (m_mode) {
        case Dead:
            return;
        case Start: {
            const uchar c = *p++;
            if (isSpace(c)) {
                m_sub = 1; // a BOM only as the very first bytes
            } else if (c == 0xEF && m_sub == 0) {
                m_mode = Bom;
                m_sub = 1;
            } else if (c == '{') {
                push(false);
            } else {
                return fail(); // not JSON, or the top-level value is not an object
            }
            break;
        }
        case Bom: {
            const uchar c = *p++;
            if (c != (m_sub == 1 ? 0xBB : 0xBF))
                return fail();
            if (++m_sub == 3)
                m_mode = Start;
            break;
        }
        case ObjectFirst:
        case ObjectNext: {
            const uchar c = *p++;
            if (isSpace(c))
                break;
            if (c == '"') {
                m_inKey = true;
                // Only the top level's names are matched, and only until the first "code".
                m_keyPos = m_depth == 1 && m_state == State::Pending ? 0 : kNoKey;
                m_mode = String;
            } else if (c == '}' && m_mode == ObjectFirst) {
                if (!close(false))
                    return;
            } else {
                return fail();
            }
            break;
        }
        case Colon: {
            const uchar c = *p++;
            if (isSpace(c))
                break;
            if (c != ':')
                return fail();
            m_valueIsCode = m_keyIsCode;
            m_keyIsCode = false;
            m_mode = Value;
            break;
        }
        case Value:
        case ArrayFirst: {
            const uchar c = *p++;
            if (isSpace(c))
                break;
            if (m_valueIsCode) {
                // "code" must hold an integer; anything else answers NotFound at once.
                if (c != '-' && !isDigit(c))
                    return fail();
                m_negative = c == '-';
                m_magnitude = m_negative ? 0 : quint64(c - '0');
            }
            switch (c) {
            case '{':
                if (!push(false))
                    return;
                break;
            case '[':
                if (!push(true))
                    return;
                break;
            case ']':
                if (m_mode != ArrayFirst || !close(true))
                    return fail();
                break;
            case '"':
                m_inKey = false;
                m_keyPos = kNoKey;
                m_mode = String;
                break;
            case '-':
                m_mode = NumMinus;
                break;
            case '0':
                m_mode = NumZero;
                break;
            case 't':
            case 'f':
            case 'n':
                m_literal = c == 't' ? 0 : c == 'f' ? 1 : 2;
                m_sub = 1;
                m_mode = Literal;
                break;
            default:
                if (!isDigit(c))
                    return fail();
                m_mode = NumInt;
                break;
            }
            break;
        }
        case AfterValue: {
            const uchar c = *p++;
            if (isSpace(c))
                break;
            const int top = m_depth - 1;
            const bool array = (m_arrays[top >> 6] >> (top & 63)) & 1;
            if (c == ',') {
                commitCode();
                m_mode = array ? Value : ObjectNext;
            } else if (c == (array ? ']' : '}')) {
                commitCode();
                if (!close(array))
                    return;
            } else {
                return fail();
            }
            break;
        }
        case String: {
            if (m_keyPos == kNoKey) {
                // The fast path: runs of plain bytes and whole UTF-8 sequences.
                while (p < end) {
                    if (kPlain.plain[*p])
                        ++p;
                    else if (const int n = utf8Sequence(p, end))
                        p += n;
                    else
                        break;
                }
                if (p == end)
                    return;
            }
            const uchar c = *p++;
            if (c == '"') {
                if (m_inKey) {
                    m_keyIsCode = m_keyPos == 4;
                    m_keyPos = kNoKey;
                    m_mode = Colon;
                } else {
                    m_mode = AfterValue;
                }
            } else if (c == '\\') {
                m_mode = Escape;
            } else if (c < 0x20) {
                return fail();
            } else if (c < 0x80) {
                if (m_keyPos != kNoKey)
                    m_keyPos = m_keyPos < 4 && c == uchar(kCode[m_keyPos]) ? m_keyPos + 1 : kNoKey;
            } else {
                // A UTF-8 lead byte and the range of the byte after it (no overlong forms,
                // no surrogates, nothing above U+10FFFF), as QJsonDocument checks them.
                m_keyPos = kNoKey;
                m_lo = 0x80;
                m_hi = 0xBF;
                if (c >= 0xC2 && c <= 0xDF) {
                    m_sub = 1;
                } else if (c >= 0xE0 && c <= 0xEF) {
                    m_sub = 2;
                    if (c == 0xE0)
                        m_lo = 0xA0;
                    else if (c == 0xED)
                        m_hi = 0x9F;
                } else if (c >= 0xF0 && c <= 0xF4) {
                    m_sub = 3;
                    if (c == 0xF0)
                        m_lo = 0x90;
                    else if (c == 0xF4)
                        m_hi = 0x8F;
                } else {
                    return fail();
                }
                m_mode = Utf8;
            }
            break;
        }
        case Utf8: {
            const uchar c = *p++;
            if (c < m_lo || c > m_hi)
                return fail();
            m_lo = 0x80;
            m_hi = 0xBF;
            if (--m_sub == 0)
                m_mode = String;
            break;
        }
        case Escape: {
            const uchar c = *p++;
            if (c == 'u') {
                m_sub = 0;
                m_hex = 0;
                m_mode = Unicode;
                break;
            }
            if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' &&
                c != 't')
                return fail();
            m_keyPos = kNoKey; // no escape but \u stands for a letter of "code"
            m_mode = String;
            break;
        }
        case Unicode: {
            const int v = hexValue(*p++);
            if (v < 0)
                return fail();
            m_hex = quint16(m_hex << 4 | v);
            if (++m_sub < 4)
                break;
            // JSON semantics: "\u0063ode" is the name "code".
            if (m_keyPos != kNoKey)
                m_keyPos = m_keyPos < 4 && m_hex == uchar(kCode[m_keyPos]) ? m_keyPos + 1 : kNoKey;
            m_mode = String;
            break;
        }
        case NumMinus: {
            const uchar c = *p++;
            if (!isDigit(c))
                return fail();
            if (m_valueIsCode)
                m_magnitude = quint64(c - '0');
            m_mode = c == '0' ? NumZero : NumInt;
            break;
        }
        case NumZero:
        case NumInt:
        case NumFrac:
        case NumExp: {
            const uchar c = *p;
            if (isDigit(c)) {
                if (m_mode == NumZero)
                    return fail(); // a leading zero ("0200")
                ++p;
                if (m_mode == NumInt && m_valueIsCode) {
                    // Beyond 64 bits: not an integer this scanner can report.
                    const quint64 limit = m_negative ? kMaxPositive + 1 : kMaxPositive;
                    const quint64 d = c - '0';
                    if (m_magnitude > (limit - d) / 10)
                        return fail();
                    m_magnitude = m_magnitude * 10 + d;
                }
                break;
            }
            if (c == '.' && (m_mode == NumZero || m_mode == NumInt)) {
                if (m_valueIsCode)
                    return fail(); // a fraction ("200.0") is no integer code
                ++p;
                m_mode = NumDot;
                break;
            }
            if ((c == 'e' || c == 'E') && m_mode != NumExp) {
                if (m_valueIsCode)
                    return fail(); // nor is an exponent ("2e2")
                ++p;
                m_mode = NumE;
                break;
            }
            // The number ended; this byte is read again after it.
            if (m_valueIsCode) {
                m_valueIsCode = false;
                m_codePending = true;
            }
            m_mode = AfterValue;
            break;
        }
        case NumDot:
        case NumESign: {
            if (!isDigit(*p++))
                return fail();
            m_mode = m_mode == NumDot ? NumFrac : NumExp;
            break;
        }
        case NumE: {
            const uchar c = *p++;
            if (c == '+' || c == '-')
                m_mode = NumESign;
            else if (isDigit(c))
                m_mode = NumExp;
            else
                return fail();
            break;
        }
        case Literal: {
            const char *word = kLiterals[m_literal];
            if (*p++ != uchar(word[m_sub]))
                return fail();
            if (word[++m_sub] == 0)
                m_mode = AfterValue;
            break;
        }
        case Done: {
            if (!isSpace(*p++))
                return fail(); // bytes after the document
            break;
        }
        default:
            return fail();
        }
    }
}

std::optional<qint64> EnvelopeScanner::code() const
{
    if (m_state != State::Found)
        return std::nullopt;
    return m_code;
}

bool EnvelopeScanner::success() const
{
    return m_state == State::Found && (m_code == 200 || m_code == 0);
}
