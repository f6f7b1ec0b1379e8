#pragma once

#include "Gazetteer.h"
#include "Pinyin.h"

#include <QHash>
#include <QList>
#include <QString>
#include <QStringList>
#include <QStringView>

#include <memory>
#include <optional>
#include <vector>

// The index behind POST /v1/address/search and /v1/address/input-search: every division of the
// gazetteer (all levels but the placeholders) plus extra entries (points of interest imported by
// an operator), found by Chinese name, short form or alias, full pinyin (any case, with or without
// spaces and apostrophes), initials (hz, yhq) or a mix (hangzhou余杭). A plain library: Qt Core
// only, no I/O; immutable once built, so one instance may serve any number of threads.
//
// Keys: each entry is indexed under its name and short form (and aliases), the pinyin of each
// (syllables joined), their initials, and up to kAlternatives - 1 other readings of polyphones
// (六安 under lu'an and liu'an; alternative readings rank below the first). All keys sit in one
// sorted array, so a prefix is two binary searches; the best kCacheSize answers of every prefix
// that matches more than kScanLimit keys are precomputed, so no keystroke scans more than
// kScanLimit keys unless a region or a parent narrows it (then it scans the smaller of the
// prefix's keys and the region's own entries).
//
// A query naming a parent first narrows the rest to it (杭州余杭, 杭州 余杭, hangzhou yuhang,
// hz余杭 -> 余杭区 in 杭州): a head of the query that equals a key of a province, city or district
// restricts the remainder to that division (up to three levels: 浙江杭州余杭).
//
// Ranking: match class first (exact key > prefix of a key > the same pinyin as a Chinese query
// (杭洲 -> hangzhou) > one wrong character or one pinyin typo > prefix of the query's pinyin), a
// first reading before an alternative one, then level (province, city, district, town, then other
// entries), then the shorter key, then entry order (by code; extra entries in the order given).
class SearchIndex
{
public:
    using Division = Gazetteer::Division;

    struct Point
    {
        double lon = 0;
        double lat = 0;
    };
    // What the index returns. Divisions: name = the division's name (余杭区), address = its full
    // path (浙江省杭州市余杭区), kind = province, city, district or town.
    struct Entry
    {
        QString name;
        QStringList aliases;
        QString kind;
        QString address;    // empty for an extra entry: filled with its division's path
        qint64 divcode = 0; // 12 digits; 0 when unknown (then no region or parent can select it)
        std::optional<Point> gcj02;
    };

    enum class Match : quint8
    {
        Exact,
        Prefix,
        Homophone,      // a Chinese query read as pinyin equals a key (杭洲 -> hangzhou)
        Fuzzy,          // one wrong Chinese character, or one pinyin typo
        HomophonePrefix // a Chinese query read as pinyin is a prefix of a key
    };
    struct Hit
    {
        qsizetype entry = -1;
        Match match = Match::Exact;
        bool alternative = false; // found under a reading other than the first
        double score = 0;         // 1.0 exact ... see SearchIndex.cpp, follows the ranking
    };

    static constexpr int kAlternatives = 3; // readings indexed per name
    static constexpr int kScanLimit = 512;
    static constexpr int kCacheSize = 20; // the largest limit the endpoints accept

    // Indexes the gazetteer's divisions and `extra` (kept after the divisions with the same code).
    SearchIndex(const Gazetteer &gazetteer, const Pinyin &pinyin, QList<Entry> extra = {});
    SearchIndex(const SearchIndex &) = delete;
    SearchIndex &operator=(const SearchIndex &) = delete;

    // The built-in gazetteer and pinyin table, no extra entries; built on first use and shared
    // by every AddressEngine in the process (immutable, thread-safe). An engine with imported
    // POIs answers from an index of its own (AddressEngine::searchIndex()).
    static const SearchIndex &builtin();

    qsizetype size() const { return qsizetype(m_entries.size()); }
    const Entry &entry(qsizetype i) const { return m_entries[size_t(i)]; }
    const Gazetteer &gazetteer() const { return m_gazetteer; }
    qsizetype keyCount() const { return qsizetype(m_keys.size()); }

    // Autocomplete: exact and prefix matches only (with parent narrowing), best first.
    // `regions`, when not empty, keeps entries within (or equal to) one of them.
    QList<Hit> complete(QStringView query, int limit,
                        const QList<const Division *> &regions = {}) const;
    // Search: complete() plus the tolerant classes (homophones, one wrong character, one pinyin
    // typo), best first.
    QList<Hit> search(QStringView query, int limit,
                      const QList<const Division *> &regions = {}) const;

    double buildMs() const { return m_buildMs; }

private:
    enum KeyKind : quint8
    {
        Han,      // name, short form, alias
        Latin,    // pinyin (first reading) and initials
        AltLatin, // another reading of a polyphone, and its initials
    };
    struct Key
    {
        quint32 offset = 0; // into m_pool
        quint16 length = 0;
        KeyKind kind = Han;
        bool fuzzy = false; // a whole pinyin or Chinese name the tolerant scans look at
        quint32 entry = 0;
    };
    struct Range
    {
        qint64 low = 0; // codes in [low, high)
        qint64 high = 0;
        qint64 self = -1; // the context division's own entry code, excluded when narrowing
        bool operator==(const Range &) const = default;
    };
    struct Candidate;
    class Collector;

    QStringView keyText(const Key &k) const
    {
        return QStringView(m_pool).sliced(k.offset, k.length);
    }
    void addKey(quint32 entry, QStringView text, KeyKind kind, bool fuzzy);
    void buildCache();
    std::pair<qsizetype, qsizetype> prefixRange(QStringView prefix) const;
    bool inside(quint32 entry, const QList<Range> &ranges) const;
    static Range rangeOf(qint64 code, int level, bool includeSelf);
    void collectPrefix(QStringView q, const QList<Range> &ranges, bool homophone,
                       Collector &out) const;
    void collectFuzzy(QStringView q, const QList<Range> &ranges, Collector &out) const;
    enum class Pass
    {
        Prefix,    // exact and prefix matches of the query
        Homophone, // the same, for the pinyin of a Chinese query
        Fuzzy      // one wrong character or one pinyin typo
    };
    std::vector<std::pair<quint32, quint32>> regionKeySpans(const QList<Range> &ranges,
                                                            qsizetype *count) const;
    void collect(QStringView q, const QList<Range> &ranges, int depth, Pass pass,
                 Collector &out) const;
    QList<Hit> run(QStringView query, int limit, const QList<const Division *> &regions,
                   bool tolerant) const;

    const Gazetteer &m_gazetteer;
    const Pinyin &m_pinyin;
    std::vector<Entry> m_entries;     // sorted by divcode, divisions before extras
    std::vector<qint64> m_codes;      // m_entries' divcodes
    std::vector<quint8> m_levels;     // 1..4 for divisions, 5 for the rest
    std::vector<quint32> m_entryKeys; // m_keys index where each entry's keys begin (+ end)
    QString m_pool;
    std::vector<Key> m_keys;           // in entry order
    std::vector<quint32> m_sorted;     // m_keys indexes sorted by text, then rank
    std::vector<quint32> m_fuzzyHan;   // Chinese names sorted by length, for the tolerant scan
    std::vector<quint32> m_fuzzyLatin; // their first pinyin sorted by length
    QHash<QStringView, std::vector<quint32>> m_cache; // prefix -> m_keys indexes, best first
    double m_buildMs = 0;
};
