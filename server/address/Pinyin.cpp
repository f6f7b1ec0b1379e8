#include "Pinyin.h"

#include <QFile>

#include <algorithm>

namespace {

// The code point at `i` and how many UTF-16 units it takes.
std::pair<char32_t, qsizetype> codePointAt(QStringView text, qsizetype i)
{
    const QChar c = text[i];
    if (c.isHighSurrogate() && i + 1 < text.size() && text[i + 1].isLowSurrogate())
        return {QChar::surrogateToUcs4(c, text[i + 1]), 2};
    return {c.unicode(), 1};
}

// Full-width ASCII (Ａ, ｈ, ０, ＇) folded to ASCII; other characters unchanged.
char32_t foldWidth(char32_t ch)
{
    if (ch >= 0xFF01 && ch <= 0xFF5E)
        return ch - 0xFEE0;
    if (ch == 0x3000)
        return u' ';
    return ch;
}

bool isAsciiAlnum(char32_t ch)
{
    return (ch >= u'a' && ch <= u'z') || (ch >= u'A' && ch <= u'Z') || (ch >= u'0' && ch <= u'9');
}

char16_t asciiLower(char32_t ch)
{
    return (ch >= u'A' && ch <= u'Z') ? char16_t(ch + 32) : char16_t(ch);
}

bool validSyllable(QStringView s)
{
    if (s.isEmpty() || s.size() > 8)
        return false;
    for (QChar c : s) {
        if (c < u'a' || c > u'z')
            return false;
    }
    return true;
}

} // namespace

const Pinyin &Pinyin::builtin()
{
    static const Pinyin *const instance = [] {
        auto *p = new Pinyin; // lives for the whole process
        QString error;
        if (!p->load(QString::fromLatin1(kResourcePath), &error))
            qFatal("address pinyin: %s", qPrintable(error));
        return p;
    }();
    return *instance;
}

bool Pinyin::load(const QString &path, QString *error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        if (error)
            *error = QStringLiteral("cannot open %1: %2").arg(path, file.errorString());
        return false;
    }
    return loadFromData(file.readAll(), error);
}

quint16 Pinyin::syllableId(const QString &s)
{
    auto it = m_syllableIds.constFind(s);
    if (it != m_syllableIds.cend())
        return *it;
    const auto id = quint16(m_syllables.size());
    m_syllables.push_back(s);
    m_syllableIds.insert(s, id);
    return id;
}

bool Pinyin::loadFromData(QByteArrayView tsv, QString *error)
{
    auto failAt = [error](int line, const QString &why) {
        if (error)
            *error = QStringLiteral("pinyin table line %1: %2").arg(line).arg(why);
        return false;
    };
    m_syllables.clear();
    m_syllableIds.clear();
    m_readingIds.clear();
    m_words.clear();
    m_wordStarts.clear();
    m_maxWord = 0;
    m_charCount = 0;
    m_chars.assign(kLast - kFirst + 1, Slice{});

    int lineNo = 0;
    for (QByteArrayView rest = tsv; !rest.isEmpty();) {
        ++lineNo;
        const qsizetype nl = rest.indexOf('\n');
        const QByteArrayView raw = nl < 0 ? rest : rest.first(nl);
        rest = nl < 0 ? QByteArrayView() : rest.sliced(nl + 1);
        if (raw.isEmpty() || raw.startsWith('#'))
            continue;
        const QString line = QString::fromUtf8(raw);
        const QStringList fields = line.split(u'\t');
        if (fields.size() != 3)
            return failAt(lineNo, QStringLiteral("expected 3 tab-separated fields"));
        const QStringList readings = fields[2].split(u' ', Qt::SkipEmptyParts);
        if (readings.isEmpty())
            return failAt(lineNo, QStringLiteral("no reading"));
        for (const QString &r : readings) {
            if (!validSyllable(r))
                return failAt(lineNo, QStringLiteral("bad syllable '%1'").arg(r));
        }
        if (fields[0] == u"c") {
            const QList<uint> ucs = fields[1].toUcs4();
            if (ucs.size() != 1 || ucs[0] < kFirst || ucs[0] > kLast)
                return failAt(lineNo, QStringLiteral("not one CJK character: %1").arg(fields[1]));
            Slice &slice = m_chars[ucs[0] - kFirst];
            if (slice.count)
                return failAt(lineNo, QStringLiteral("duplicate character %1").arg(fields[1]));
            slice.begin = quint32(m_readingIds.size());
            slice.count = quint16(readings.size());
            for (const QString &r : readings)
                m_readingIds.push_back(syllableId(r));
            ++m_charCount;
        } else if (fields[0] == u"w") {
            if (readings.size() != fields[1].size())
                return failAt(
                    lineNo,
                    QStringLiteral("word %1: one syllable per character expected").arg(fields[1]));
            QList<quint16> ids;
            for (const QString &r : readings)
                ids.append(syllableId(r));
            m_words.insert(fields[1], ids);
            m_maxWord = std::max(m_maxWord, fields[1].size());
            qsizetype &longest = m_wordStarts[fields[1].front().unicode()];
            longest = std::max(longest, fields[1].size());
        } else {
            return failAt(lineNo, QStringLiteral("unknown record type '%1'").arg(fields[0]));
        }
    }
    if (m_charCount == 0)
        return failAt(lineNo, QStringLiteral("no characters"));
    return true;
}

std::span<const quint16> Pinyin::readingIds(char32_t ch) const
{
    if (ch < kFirst || ch > kLast || m_chars.empty())
        return {};
    const Slice &s = m_chars[ch - kFirst];
    return std::span<const quint16>(m_readingIds).subspan(s.begin, s.count);
}

QStringList Pinyin::readings(char32_t ch) const
{
    QStringList out;
    for (quint16 id : readingIds(ch))
        out.append(m_syllables[id]);
    return out;
}

bool Pinyin::isHan(char32_t ch)
{
    return (ch >= 0x4E00 && ch <= 0x9FFF) || (ch >= 0x3400 && ch <= 0x4DBF) ||
           (ch >= 0x20000 && ch <= 0x3134F) || (ch >= 0xF900 && ch <= 0xFAFF) || ch == 0x3007;
}

QList<Pinyin::Slot> Pinyin::readingSlots(QStringView text) const
{
    QList<Slot> out;
    qsizetype i = 0;
    while (i < text.size()) {
        const auto [raw, width] = codePointAt(text, i);
        const char32_t ch = foldWidth(raw);
        if (isAsciiAlnum(ch)) {
            QString run;
            while (i < text.size()) {
                const char32_t c = foldWidth(text[i].unicode());
                if (!isAsciiAlnum(c))
                    break;
                run.append(QChar(asciiLower(c)));
                ++i;
            }
            out.append(Slot{run, {}});
            continue;
        }
        if (!isHan(ch)) {
            i += width; // spaces and punctuation are not read
            continue;
        }
        // The longest place name of the table that starts here.
        bool matched = false;
        const qsizetype longest = m_wordStarts.value(text[i].unicode(), 0);
        for (qsizetype len = std::min(longest, text.size() - i); len >= 2 && !matched; --len) {
            auto w = m_words.constFind(text.sliced(i, len).toString());
            if (w == m_words.cend())
                continue;
            for (qsizetype k = 0; k < len; ++k)
                out.append(Slot{m_syllables[(*w)[k]], readingIds(text[i + k].unicode())});
            i += len;
            matched = true;
        }
        if (matched)
            continue;
        const auto ids = readingIds(ch);
        out.append(
            Slot{ids.empty() ? text.sliced(i, width).toString() : m_syllables[ids.front()], ids});
        i += width;
    }
    return out;
}

QStringList Pinyin::syllables(QStringView text) const
{
    QStringList out;
    for (const Slot &s : readingSlots(text))
        out.append(s.primary);
    return out;
}

QList<QStringList> Pinyin::alternatives(QStringView text, int limit) const
{
    QList<QStringList> out;
    if (limit <= 0)
        return out;
    const QList<Slot> ss = readingSlots(text);
    QStringList primary;
    QStringList naive;
    for (const Slot &s : ss) {
        primary.append(s.primary);
        naive.append(s.others.empty() ? s.primary : m_syllables[s.others.front()]);
    }
    out.append(primary);
    if (naive != primary && out.size() < limit)
        out.append(naive);
    for (qsizetype i = 0; i < ss.size() && out.size() < limit; ++i) {
        for (quint16 id : ss[i].others) {
            if (out.size() >= limit)
                break;
            QStringList variant = primary;
            variant[i] = m_syllables[id];
            if (!out.contains(variant))
                out.append(variant);
        }
    }
    return out;
}

QString Pinyin::initialsOf(const QStringList &syllables)
{
    QString out;
    for (const QString &s : syllables) {
        if (s.isEmpty())
            continue;
        // A run with digits (K11, 798) is a code, not a syllable: kept whole.
        const bool code = std::any_of(s.cbegin(), s.cend(), [](QChar c) { return c.isDigit(); });
        out += code ? s : s.left(1);
    }
    return out;
}

QString Pinyin::normalize(QStringView text)
{
    QString out;
    out.reserve(text.size());
    for (qsizetype i = 0; i < text.size();) {
        const auto [raw, width] = codePointAt(text, i);
        i += width;
        const char32_t ch = foldWidth(raw);
        if (isAsciiAlnum(ch)) {
            out.append(QChar(asciiLower(ch)));
        } else if (ch == u'ü' || ch == u'Ü') {
            out.append(u'v');
        } else if (ch == u':' && out.endsWith(u'u')) {
            out.back() = u'v'; // lu: -> lv
        } else if (ch > 0x7F && QChar::isLetterOrNumber(ch)) {
            out.append(QString::fromUcs4(&ch, 1));
        }
        // whitespace, apostrophes, hyphens, middle dots and other punctuation are dropped
    }
    return out;
}
