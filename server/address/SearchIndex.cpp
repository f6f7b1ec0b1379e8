#include "SearchIndex.h"

#include <QElapsedTimer>
#include <QSet>

#include <algorithm>
#include <cmath>

namespace {

using Match = SearchIndex::Match;

// Scores shown to clients; they follow the ranking (class, then reading, then level).
double baseScore(Match m)
{
    switch (m) {
    case Match::Exact:
        return 1.0;
    case Match::Prefix:
        return 0.8;
    case Match::Homophone:
        return 0.7;
    case Match::Fuzzy:
        return 0.6;
    case Match::HomophonePrefix:
        return 0.5;
    }
    return 0;
}

const char *kindOf(Gazetteer::Level level)
{
    switch (level) {
    case Gazetteer::Level::Province:
        return "province";
    case Gazetteer::Level::City:
        return "city";
    case Gazetteer::Level::District:
        return "district";
    case Gazetteer::Level::Town:
        return "town";
    }
    return "";
}

bool hasHan(QStringView s)
{
    for (QChar c : s) {
        if (c.unicode() > 0x7F)
            return true;
    }
    return false;
}

bool hasAsciiLetter(QStringView s)
{
    for (QChar c : s) {
        if (c >= u'a' && c <= u'z')
            return true;
    }
    return false;
}

// Optimal-string-alignment distance is at most 1 (one substitution, insertion, deletion or swap
// of neighbours) and the strings differ.
bool withinOneEdit(QStringView a, QStringView b)
{
    const qsizetype n = a.size();
    const qsizetype m = b.size();
    if (std::abs(n - m) > 1 || a == b)
        return false;
    qsizetype i = 0;
    while (i < n && i < m && a[i] == b[i])
        ++i;
    if (n == m) {
        if (a.sliced(i + 1) == b.sliced(i + 1))
            return true; // substitution
        return i + 1 < n && a[i] == b[i + 1] && a[i + 1] == b[i] &&
               a.sliced(i + 2) == b.sliced(i + 2); // transposition
    }
    return n > m ? a.sliced(i + 1) == b.sliced(i) : a.sliced(i) == b.sliced(i + 1);
}

// Code points that differ, position by position; -1 when the lengths differ.
int substitutions(QStringView a, QStringView b)
{
    if (a.size() != b.size())
        return -1;
    int diff = 0;
    for (qsizetype i = 0; i < a.size(); ++i) {
        if (a[i] != b[i] && !a[i].isLowSurrogate())
            ++diff;
    }
    return diff;
}

} // namespace

struct SearchIndex::Candidate
{
    quint32 entry = 0;
    Match match = Match::Exact;
    bool alternative = false;
    quint8 level = 0;
    quint16 keyLength = 0;

    auto rank() const { return std::tuple(match, alternative, level, keyLength, entry); }
    bool operator<(const Candidate &o) const { return rank() < o.rank(); }
};

// Candidates of one query, the best per entry wins at the end.
class SearchIndex::Collector
{
public:
    explicit Collector(const SearchIndex &index) : m_index(index) {}

    void add(quint32 keyIndex, qsizetype queryLength, Match exactClass, Match prefixClass)
    {
        const Key &k = m_index.m_keys[keyIndex];
        m_items.push_back(Candidate{k.entry, k.length == queryLength ? exactClass : prefixClass,
                                    k.kind == AltLatin, m_index.m_levels[k.entry], k.length});
    }
    void add(const Candidate &c) { m_items.push_back(c); }
    // Distinct entries in the regions found with a class better than `match`, counting to `limit`.
    qsizetype countBetterThan(Match match, qsizetype limit, const QList<Range> &regions) const
    {
        QSet<quint32> seen;
        for (const Candidate &c : m_items) {
            if (c.match < match && m_index.inside(c.entry, regions)) {
                seen.insert(c.entry);
                if (seen.size() >= limit)
                    break;
            }
        }
        return seen.size();
    }
    qsizetype size() const { return qsizetype(m_items.size()); }

    // Best first, one per entry, at most `limit`.
    std::vector<Candidate> best(qsizetype limit, const QList<Range> &regions)
    {
        std::erase_if(m_items,
                      [&](const Candidate &c) { return !m_index.inside(c.entry, regions); });
        // An entry has a handful of keys: sorting the best 16 per wanted entry usually finds
        // them all without sorting every candidate.
        const qsizetype head = std::min<qsizetype>(qsizetype(m_items.size()), limit * 16);
        std::partial_sort(m_items.begin(), m_items.begin() + head, m_items.end());
        std::vector<Candidate> out = distinct(head, limit);
        if (qsizetype(out.size()) < limit && head < qsizetype(m_items.size())) {
            std::sort(m_items.begin(), m_items.end());
            out = distinct(qsizetype(m_items.size()), limit);
        }
        return out;
    }

private:
    std::vector<Candidate> distinct(qsizetype count, qsizetype limit) const
    {
        std::vector<Candidate> out;
        QSet<quint32> seen;
        for (qsizetype i = 0; i < count && qsizetype(out.size()) < limit; ++i) {
            if (!seen.contains(m_items[size_t(i)].entry)) {
                seen.insert(m_items[size_t(i)].entry);
                out.push_back(m_items[size_t(i)]);
            }
        }
        return out;
    }

    const SearchIndex &m_index;
    std::vector<Candidate> m_items;
};

SearchIndex::SearchIndex(const Gazetteer &gazetteer, const Pinyin &pinyin, QList<Entry> extra)
    : m_gazetteer(gazetteer), m_pinyin(pinyin)
{
    QElapsedTimer timer;
    timer.start();

    // Entries in code order; extras after the divisions of the same code, in the order given.
    struct Pending
    {
        qint64 code;
        qsizetype order;
        const Division *division;
        Entry entry;
    };
    std::vector<Pending> pending;
    pending.reserve(size_t(gazetteer.size() + extra.size()));
    for (const Division &d : gazetteer.all()) {
        if (d.placeholder)
            continue;
        Entry e;
        e.name = d.name;
        e.kind = QLatin1String(kindOf(d.level));
        e.address = Gazetteer::pathName(d);
        e.divcode = d.code;
        if (d.hasCentre())
            e.gcj02 = Point{d.lon, d.lat};
        pending.push_back(Pending{d.code, 0, &d, std::move(e)});
    }
    for (qsizetype i = 0; i < extra.size(); ++i) {
        Entry &e = extra[i];
        if (e.address.isEmpty()) {
            if (const Division *d = gazetteer.byCode(e.divcode))
                e.address = Gazetteer::pathName(*d);
        }
        pending.push_back(Pending{e.divcode, i + 1, nullptr, std::move(e)});
    }
    std::stable_sort(pending.begin(), pending.end(), [](const Pending &a, const Pending &b) {
        return std::tie(a.code, a.order) < std::tie(b.code, b.order);
    });

    m_entries.reserve(pending.size());
    for (Pending &p : pending) {
        const auto id = quint32(m_entries.size());
        m_codes.push_back(p.code);
        m_levels.push_back(p.division ? quint8(p.division->level) : 5);
        m_entryKeys.push_back(quint32(m_keys.size()));

        QStringList names{p.entry.name};
        if (p.division && !p.division->shortName.isEmpty())
            names.append(p.division->shortName);
        names.append(p.entry.aliases);
        names.removeDuplicates();
        for (const QString &raw : names) {
            const QString han = Pinyin::normalize(raw);
            if (han.isEmpty())
                continue;
            addKey(id, han, Han, true);
            const QList<QStringList> readings = pinyin.alternatives(han, kAlternatives);
            for (qsizetype r = 0; r < readings.size(); ++r) {
                const KeyKind kind = r == 0 ? Latin : AltLatin;
                addKey(id, readings[r].join(QString()), kind, r == 0);
                addKey(id, Pinyin::initialsOf(readings[r]), kind, false);
            }
        }
        m_entries.push_back(std::move(p.entry));
    }
    m_entryKeys.push_back(quint32(m_keys.size()));
    m_pool.squeeze();

    m_sorted.resize(m_keys.size());
    for (quint32 i = 0; i < m_sorted.size(); ++i)
        m_sorted[i] = i;
    std::sort(m_sorted.begin(), m_sorted.end(), [this](quint32 a, quint32 b) {
        const int c = keyText(m_keys[a]).compare(keyText(m_keys[b]));
        return c != 0 ? c < 0 : a < b;
    });
    for (quint32 i = 0; i < m_keys.size(); ++i) {
        if (m_keys[i].fuzzy)
            (m_keys[i].kind == Han ? m_fuzzyHan : m_fuzzyLatin).push_back(i);
    }
    for (auto *list : {&m_fuzzyHan, &m_fuzzyLatin}) {
        std::stable_sort(list->begin(), list->end(), [this](quint32 a, quint32 b) {
            return m_keys[a].length < m_keys[b].length;
        });
    }
    buildCache();
    m_buildMs = double(timer.nsecsElapsed()) / 1e6;
}

const SearchIndex &SearchIndex::builtin()
{
    static const SearchIndex index(Gazetteer::builtin(), Pinyin::builtin());
    return index;
}

void SearchIndex::addKey(quint32 entry, QStringView text, KeyKind kind, bool fuzzy)
{
    if (text.isEmpty() || text.size() > 0xFFFF)
        return;
    // One key per text and entry: the first (best) kind wins.
    for (quint32 i = m_entryKeys.back(); i < m_keys.size(); ++i) {
        if (keyText(m_keys[i]) == text)
            return;
    }
    Key k;
    k.offset = quint32(m_pool.size());
    k.length = quint16(text.size());
    k.kind = kind;
    k.fuzzy = fuzzy;
    k.entry = entry;
    m_pool.append(text);
    m_keys.push_back(k);
}

std::pair<qsizetype, qsizetype> SearchIndex::prefixRange(QStringView prefix) const
{
    auto lo = std::lower_bound(m_sorted.begin(), m_sorted.end(), prefix,
                               [this](quint32 k, QStringView q) { return keyText(m_keys[k]) < q; });
    auto hi = std::partition_point(lo, m_sorted.end(), [this, prefix](quint32 k) {
        return keyText(m_keys[k]).startsWith(prefix);
    });
    return {lo - m_sorted.begin(), hi - m_sorted.begin()};
}

void SearchIndex::buildCache()
{
    // Every prefix matching more than kScanLimit keys gets its best kCacheSize entries. Keys
    // sharing a prefix of length d are contiguous; recurse on the groups by the next character.
    std::vector<Candidate> items;
    auto visit = [&](auto &&self, qsizetype lo, qsizetype hi, qsizetype d) -> void {
        if (hi - lo <= kScanLimit)
            return;
        if (d > 0) {
            items.clear();
            for (qsizetype i = lo; i < hi; ++i) {
                const Key &k = m_keys[m_sorted[size_t(i)]];
                items.push_back(Candidate{m_sorted[size_t(i)],
                                          k.length == d ? Match::Exact : Match::Prefix,
                                          k.kind == AltLatin, m_levels[k.entry], k.length});
            }
            // Candidate::entry holds the key index here; rank by the key's entry as tie-break.
            auto less = [this](const Candidate &a, const Candidate &b) {
                return std::tuple(a.match, a.alternative, a.level, a.keyLength,
                                  m_keys[a.entry].entry) < std::tuple(b.match, b.alternative,
                                                                      b.level, b.keyLength,
                                                                      m_keys[b.entry].entry);
            };
            // An entry has a handful of keys under one prefix: 8 per slot is plenty.
            const auto middle =
                items.begin() + std::min<qsizetype>(qsizetype(items.size()), kCacheSize * 8);
            std::partial_sort(items.begin(), middle, items.end(), less);
            std::vector<quint32> best;
            QSet<quint32> seen;
            for (auto it = items.begin(); it != middle && qsizetype(best.size()) < kCacheSize;
                 ++it) {
                const quint32 entry = m_keys[it->entry].entry;
                if (!seen.contains(entry)) {
                    seen.insert(entry);
                    best.push_back(it->entry);
                }
            }
            m_cache.insert(keyText(m_keys[m_sorted[size_t(lo)]]).first(d), std::move(best));
        }
        qsizetype i = lo;
        while (i < hi && m_keys[m_sorted[size_t(i)]].length == d)
            ++i;
        while (i < hi) {
            const QChar c = keyText(m_keys[m_sorted[size_t(i)]])[d];
            qsizetype j = i;
            while (j < hi && keyText(m_keys[m_sorted[size_t(j)]])[d] == c)
                ++j;
            self(self, i, j, d + 1);
            i = j;
        }
    };
    visit(visit, 0, qsizetype(m_sorted.size()), 0);
}

SearchIndex::Range SearchIndex::rangeOf(qint64 code, int level, bool includeSelf)
{
    static constexpr qint64 spans[] = {1, 10'000'000'000, 100'000'000, 1'000'000, 1'000};
    const qint64 span = spans[std::clamp(level, 1, 4)];
    const qint64 low = code - code % span;
    return Range{low, low + span, includeSelf ? -1 : code};
}

bool SearchIndex::inside(quint32 entry, const QList<Range> &ranges) const
{
    if (ranges.isEmpty())
        return true;
    const qint64 code = m_codes[entry];
    for (const Range &r : ranges) {
        if (code >= r.low && code < r.high && !(code == r.self && m_levels[entry] <= 4))
            return true;
    }
    return false;
}

std::vector<std::pair<quint32, quint32>> SearchIndex::regionKeySpans(const QList<Range> &ranges,
                                                                     qsizetype *count) const
{
    // Entries are sorted by code, so a region's entries (and their keys) are contiguous.
    std::vector<std::pair<quint32, quint32>> spans;
    *count = 0;
    for (const Range &r : ranges) {
        const auto a = std::lower_bound(m_codes.begin(), m_codes.end(), r.low) - m_codes.begin();
        const auto b = std::lower_bound(m_codes.begin(), m_codes.end(), r.high) - m_codes.begin();
        spans.emplace_back(m_entryKeys[size_t(a)], m_entryKeys[size_t(b)]);
        *count += spans.back().second - spans.back().first;
    }
    return spans;
}

void SearchIndex::collectPrefix(QStringView q, const QList<Range> &ranges, bool homophone,
                                Collector &out) const
{
    const Match exact = homophone ? Match::Homophone : Match::Exact;
    const Match prefix = homophone ? Match::HomophonePrefix : Match::Prefix;
    const auto [lo, hi] = prefixRange(q);
    if (lo == hi)
        return;
    if (ranges.isEmpty()) {
        if (hi - lo > kScanLimit) {
            // Every prefix this large is in the cache (buildCache).
            const auto cached = m_cache.constFind(q);
            if (cached != m_cache.cend()) {
                for (quint32 k : *cached)
                    out.add(k, q.size(), exact, prefix);
            }
            return;
        }
        for (qsizetype i = lo; i < hi; ++i)
            out.add(m_sorted[size_t(i)], q.size(), exact, prefix);
        return;
    }
    // Narrowed: scan the prefix's keys or the regions' own keys, whichever is fewer.
    qsizetype regionKeys = 0;
    const auto spans = regionKeySpans(ranges, &regionKeys);
    if (regionKeys < hi - lo) {
        for (const auto &[a, b] : spans) {
            for (quint32 k = a; k < b; ++k) {
                if (keyText(m_keys[k]).startsWith(q) && inside(m_keys[k].entry, ranges))
                    out.add(k, q.size(), exact, prefix);
            }
        }
        return;
    }
    for (qsizetype i = lo; i < hi; ++i) {
        const quint32 k = m_sorted[size_t(i)];
        if (inside(m_keys[k].entry, ranges))
            out.add(k, q.size(), exact, prefix);
    }
}

void SearchIndex::collectFuzzy(QStringView q, const QList<Range> &ranges, Collector &out) const
{
    const bool han = hasHan(q);
    // A wrong character in one or two characters, or a typo in under four letters, matches too
    // much to mean anything.
    const qsizetype minLength = han ? 2 : 4;
    if (q.size() < minLength)
        return;
    const qsizetype shortest = han ? q.size() : q.size() - 1;
    const qsizetype longest = han ? q.size() : q.size() + 1;
    auto consider = [&](quint32 key) {
        const Key &k = m_keys[key];
        const QStringView text = keyText(k);
        const bool hit = han ? substitutions(q, text) == 1 : withinOneEdit(q, text);
        if (hit && inside(k.entry, ranges))
            out.add(Candidate{k.entry, Match::Fuzzy, false, m_levels[k.entry], k.length});
    };
    const std::vector<quint32> &list = han ? m_fuzzyHan : m_fuzzyLatin;
    auto it = std::lower_bound(list.begin(), list.end(), shortest,
                               [this](quint32 k, qsizetype len) { return m_keys[k].length < len; });
    auto end = std::upper_bound(it, list.end(), longest, [this](qsizetype len, quint32 k) {
        return len < m_keys[k].length;
    });
    if (!ranges.isEmpty()) {
        qsizetype regionKeys = 0;
        const auto spans = regionKeySpans(ranges, &regionKeys);
        if (regionKeys < end - it) {
            for (const auto &[a, b] : spans) {
                for (quint32 k = a; k < b; ++k) {
                    const Key &key = m_keys[k];
                    if (key.fuzzy && (key.kind == Han) == han && key.length >= shortest &&
                        key.length <= longest)
                        consider(k);
                }
            }
            return;
        }
    }
    for (; it != end; ++it)
        consider(*it);
}

void SearchIndex::collect(QStringView q, const QList<Range> &ranges, int depth, Pass pass,
                          Collector &out) const
{
    if (pass == Pass::Fuzzy)
        collectFuzzy(q, ranges, out);
    else
        collectPrefix(q, ranges, pass == Pass::Homophone, out);
    if (depth >= 3)
        return;
    // A head naming a province, city or district narrows the rest to it. At depth 0 the ranges
    // are the request's region, which the head may contain (杭州 良渚 within 余杭区): the region
    // is applied to the results instead.
    for (qsizetype i = 1; i < q.size(); ++i) {
        const QStringView head = q.first(i);
        const auto [lo, hi] = prefixRange(head);
        if (lo == hi)
            break; // no key starts with this head, nor with a longer one
        QList<Range> contexts;
        for (qsizetype k = lo; k < hi; ++k) {
            const Key &key = m_keys[m_sorted[size_t(k)]];
            if (key.length != head.size())
                break; // exact matches come first
            const quint8 level = m_levels[key.entry];
            if (level > 3 || (depth > 0 && !inside(key.entry, ranges)))
                continue;
            const Range r = rangeOf(m_codes[key.entry], level, false);
            if (!contexts.contains(r))
                contexts.append(r);
        }
        if (!contexts.isEmpty())
            collect(q.sliced(i), contexts, depth + 1, pass, out);
    }
}

QList<SearchIndex::Hit> SearchIndex::run(QStringView query, int limit,
                                         const QList<const Division *> &regions,
                                         bool tolerant) const
{
    QList<Hit> hits;
    if (limit <= 0)
        return hits;
    QString q = Pinyin::normalize(query);
    if (q.isEmpty())
        return hits;
    // Mixed input (hangzhou余杭, hz余杭) is searched as pinyin.
    if (hasHan(q) && hasAsciiLetter(q))
        q = m_pinyin.full(q);
    QList<Range> regionRanges;
    for (const Division *d : regions)
        regionRanges.append(rangeOf(d->code, int(d->level), true));

    Collector out(*this);
    collect(q, regionRanges, 0, Pass::Prefix, out);
    if (tolerant && hasHan(q)) {
        const QString sound = m_pinyin.full(q);
        if (hasAsciiLetter(sound))
            collect(sound, regionRanges, 0, Pass::Homophone, out);
    }
    // The tolerant scans only when the better classes leave room in the answer.
    if (tolerant && out.countBetterThan(Match::Fuzzy, limit, regionRanges) < limit)
        collect(q, regionRanges, 0, Pass::Fuzzy, out);
    // Narrowed results must also be in the region.
    for (const Candidate &c : out.best(limit, regionRanges)) {
        Hit h;
        h.entry = c.entry;
        h.match = c.match;
        h.alternative = c.alternative;
        const double score =
            baseScore(c.match) - (c.alternative ? 0.05 : 0.0) - 0.01 * (c.level - 1);
        h.score = std::round(score * 1000) / 1000;
        hits.append(h);
    }
    return hits;
}

QList<SearchIndex::Hit> SearchIndex::complete(QStringView query, int limit,
                                              const QList<const Division *> &regions) const
{
    return run(query, limit, regions, false);
}

QList<SearchIndex::Hit> SearchIndex::search(QStringView query, int limit,
                                            const QList<const Division *> &regions) const
{
    return run(query, limit, regions, true);
}
