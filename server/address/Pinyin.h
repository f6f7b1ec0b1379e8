#pragma once

#include <QByteArrayView>
#include <QHash>
#include <QList>
#include <QString>
#include <QStringList>
#include <QStringView>

#include <span>
#include <vector>

// Toneless pinyin of Chinese text, for the address search (SearchIndex). A plain library: Qt Core
// only, no I/O after loading.
//
// Data: resources/address/pinyin.tsv (built by resources/address/build/build-pinyin.mjs from the
// npm package pinyin-pro; see resources/address/README.md), compiled in as kResourcePath: every
// reading of each character of the CJK Unified Ideographs block, the most common first, and the
// place names whose reading in context differs from that (六安 lu an, 厦门 xia men, 蚌埠 beng bu).
// ü is written v (lv, nv), as pinyin keyboards take it.
//
// A text is read as syllables: place names of the table by longest match, then each character
// by its first reading; a run of ASCII letters and digits is one syllable of its own (lowercased),
// other characters (spaces, punctuation) are dropped, and a character with no reading stays as
// itself. Immutable once loaded: one instance may serve any number of threads.
class Pinyin
{
public:
    static constexpr const char *kResourcePath = ":/switchyard/address/pinyin.tsv";

    Pinyin() = default;
    Pinyin(const Pinyin &) = delete;
    Pinyin &operator=(const Pinyin &) = delete;

    // The compiled-in table, loaded on first use (thread-safe); qFatal if the resource is broken.
    static const Pinyin &builtin();

    bool load(const QString &path = QString::fromLatin1(kResourcePath), QString *error = nullptr);
    bool loadFromData(QByteArrayView tsv, QString *error = nullptr);

    // Every reading of one character, the most common first; empty when it has none.
    QStringList readings(char32_t ch) const;
    bool hasReading(char32_t ch) const { return !readingIds(ch).empty(); }

    // The syllables of `text` (see above): the place-name reading where one applies.
    QStringList syllables(QStringView text) const;
    // Up to `limit` readings of `text`: syllables() first, then the first reading of every
    // character when it differs (liu an for 六安), then the other readings of one character at a
    // time, left to right. Bounded, so names full of polyphones cannot explode.
    QList<QStringList> alternatives(QStringView text, int limit) const;

    // Joined syllables ("hangzhou") and their first letters ("hz") of the first reading.
    QString full(QStringView text) const { return syllables(text).join(QString()); }
    QString initials(QStringView text) const { return initialsOf(syllables(text)); }
    static QString initialsOf(const QStringList &syllables);

    // Latin input as the index stores it: ASCII lowercased, full-width forms folded to ASCII, ü
    // (or u:) as v, whitespace, apostrophes, hyphens and other punctuation removed; CJK and
    // other letters kept as they are.
    static QString normalize(QStringView text);
    static bool isHan(char32_t ch);

    qsizetype characterCount() const { return m_charCount; }
    qsizetype wordCount() const { return m_words.size(); }

private:
    struct Slice
    {
        quint32 begin = 0;
        quint16 count = 0;
    };
    std::span<const quint16> readingIds(char32_t ch) const;
    quint16 syllableId(const QString &s);
    // One position of a reading: the chosen syllable and the others it may take.
    struct Slot
    {
        QString primary;
        std::span<const quint16> others; // readings of the character, may include primary
    };
    QList<Slot> readingSlots(QStringView text) const;

    static constexpr char32_t kFirst = 0x4E00;
    static constexpr char32_t kLast = 0x9FFF;
    std::vector<QString> m_syllables;
    QHash<QString, quint16> m_syllableIds;
    std::vector<Slice> m_chars; // indexed by code point - kFirst
    std::vector<quint16> m_readingIds;
    QHash<QString, QList<quint16>> m_words;
    qsizetype m_maxWord = 0;
    QHash<char16_t, qsizetype> m_wordStarts; // first character -> longest word starting with it
    qsizetype m_charCount = 0;
};
