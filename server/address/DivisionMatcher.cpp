#include "DivisionMatcher.h"

#include <QVarLengthArray>

#include <algorithm>
#include <array>

namespace {

using Division = Gazetteer::Division;
using Level = Gazetteer::Level;

// In half points, so a former name can score half a point below a current one.
constexpr int kFullPoints = 8;
constexpr int kShortPoints = 6;
constexpr int kOutOfOrderPoints = 2; // an upper level named after (not before) the level below
constexpr int kLoneTownPoints = 4;   // a town named with none of its upper levels (开发区...)
constexpr int kConflictPenalty =
    4; // per division above the town named before the leaf, off the chain
constexpr int kFormerDiscount = 1; // a former name: current names win ties
// The search below tries every combination of one mention per level: in text that repeats an
// address hundreds of times that is hundreds cubed. The first few mentions of a division are
// enough to choose from.
constexpr qsizetype kMaxOptionsPerLevel = 8;

// A short form followed by one of these is part of a road or place name (北京路, 中山大道,
// 余杭塘河), not a division.
bool endsPlaceName(QChar c)
{
    static constexpr char16_t kSuffixes[] = u"路街道巷弄胡同村桥";
    for (char16_t s : std::u16string_view(kSuffixes))
        if (c.unicode() == s)
            return true;
    return false;
}

struct Candidate
{
    int score = 0;
    int fullLevels = 0;
    qsizetype leafStart = 0;
    std::array<int, 4> choice{-1, -1, -1, -1}; // index into the mention list per chain level
};

bool better(const Candidate &a, const Candidate &b)
{
    if (a.score != b.score)
        return a.score > b.score;
    if (a.fullLevels != b.fullLevels)
        return a.fullLevels > b.fullLevels;
    return a.leafStart < b.leafStart;
}

DivisionMatcher::Mention &slot(DivisionMatcher::Result &r, Level level)
{
    switch (level) {
    case Level::Province:
        return r.province;
    case Level::City:
        return r.city;
    case Level::District:
        return r.district;
    case Level::Town:
        break;
    }
    return r.town;
}

} // namespace

QString DivisionMatcher::Result::cityName() const
{
    if (!city.division)
        return {};
    if (city.division->placeholder)
        return province.division ? province.division->name : QString();
    return city.division->name;
}

const DivisionMatcher::Mention &DivisionMatcher::Result::at(Level level) const
{
    switch (level) {
    case Level::Province:
        return province;
    case Level::City:
        return city;
    case Level::District:
        return district;
    case Level::Town:
        break;
    }
    return town;
}

QList<const DivisionMatcher::Mention *> DivisionMatcher::Result::formerMentions() const
{
    QList<const Mention *> out;
    for (const Mention *m : {&province, &city, &district, &town})
        if (m->former)
            out.append(m);
    return out;
}

const DivisionMatcher &DivisionMatcher::builtin()
{
    static const DivisionMatcher matcher;
    return matcher;
}

DivisionMatcher::DivisionMatcher(const Gazetteer &gazetteer) : m_gazetteer(gazetteer)
{
    m_index.reserve(gazetteer.size() * 6);
    const auto add = [&](const Division &d, const QString &key, bool isShort,
                         const Gazetteer::FormerName *former) {
        if (key.size() < m_minLength)
            return;
        QList<Entry> &entries = m_index[QStringView(key)];
        // Two former names of one division may share a short form (南汇区, 南汇县: 南汇).
        if (std::any_of(entries.cbegin(), entries.cend(),
                        [&](const Entry &e) { return e.division == &d; }))
            return;
        entries.append(Entry{&d, isShort, former});
        m_maxLength = std::max(m_maxLength, key.size());
        // Every shorter prefix too (with no entries unless it is a name itself), so the scan
        // stops as soon as the text leaves all names.
        for (qsizetype len = m_minLength; len < key.size(); ++len) {
            const QStringView prefix = QStringView(key).first(len);
            if (!m_index.contains(prefix))
                m_index.insert(prefix, {});
        }
    };
    for (const Division &d : gazetteer.all()) {
        if (d.placeholder)
            continue;
        add(d, d.name, false, nullptr);
        if (!d.shortName.isEmpty() && d.shortName != d.name)
            add(d, d.shortName, true, nullptr);
    }
    for (const Gazetteer::FormerName &f : gazetteer.formerNames()) {
        add(*f.division, f.name, false, &f);
        if (!f.shortName.isEmpty())
            add(*f.division, f.shortName, true, &f);
    }
}

QList<DivisionMatcher::Mention> DivisionMatcher::mentions(QStringView text) const
{
    QList<Mention> out;
    for (qsizetype i = 0; i + m_minLength <= text.size(); ++i) {
        const qsizetype longest = std::min(m_maxLength, text.size() - i);
        for (qsizetype len = m_minLength; len <= longest; ++len) {
            const auto it = m_index.constFind(text.sliced(i, len));
            if (it == m_index.cend())
                break; // no name starts with this prefix
            for (const Entry &e : *it) {
                if (e.shortForm && i + len < text.size() && endsPlaceName(text[i + len]))
                    continue;
                out.append(Mention{e.division, i, i + len, e.shortForm, e.former});
            }
        }
    }
    return out;
}

DivisionMatcher::Result DivisionMatcher::resolve(QStringView text) const
{
    Result result;
    const QList<Mention> found = mentions(text);
    if (found.isEmpty())
        return result;

    Candidate best;
    const Division *bestLeaf = nullptr;
    int ties = 0;

    // A former name read where a current name is read too (东山区: 鹤岗's, and 广州's former one)
    // scores a little less, so the current name wins the tie. Elsewhere it scores in full, so
    // 江东区 is not beaten by the 东区 inside it.
    QVarLengthArray<bool, 32> discounted(found.size(), false);
    for (int j = 0; j < found.size(); ++j) {
        if (!found[j].former)
            continue;
        for (int k = 0; k < found.size() && found[k].start <= found[j].start; ++k)
            if (!found[k].former && found[k].start == found[j].start &&
                found[k].end == found[j].end)
                discounted[j] = true;
    }

    // Mentions above the town level, for the conflict penalty.
    QList<int> upper;
    for (int j = 0; j < found.size(); ++j)
        if (found[j].division->level <= Level::District)
            upper.append(j);

    // Leaves: every mentioned division, once.
    QList<const Division *> leaves;
    for (const Mention &m : found)
        if (!leaves.contains(m.division))
            leaves.append(m.division);

    for (const Division *leaf : std::as_const(leaves)) {
        // The chain without placeholders, top first.
        std::array<const Division *, 4> chain{};
        int depth = 0;
        for (const Division *d = leaf; d && depth < 4; d = d->parent)
            if (!d->placeholder && d->code != 0)
                chain[std::size_t(depth++)] = d;
        std::reverse(chain.begin(), chain.begin() + depth);

        // Mentions per chain level.
        std::array<QList<int>, 4> options;
        for (int k = 0; k < depth; ++k)
            for (int j = 0;
                 j < found.size() && options[std::size_t(k)].size() < kMaxOptionsPerLevel; ++j)
                if (found[j].division == chain[std::size_t(k)])
                    options[std::size_t(k)].append(j);

        // Exhaustive search over the (few) choices: each level takes one of its mentions or none;
        // the leaf must take one; chosen mentions must not overlap.
        Candidate current;
        Candidate bestHere;
        bool haveHere = false;
        const auto search = [&](auto &&self, int k, qsizetype prevEnd, bool parentMentioned) {
            if (k == depth) {
                if (current.choice[std::size_t(depth - 1)] < 0)
                    return;
                Candidate scored = current;
                const bool lone = std::count_if(scored.choice.begin(), scored.choice.end(),
                                                [](int c) { return c >= 0; }) == 1;
                if (lone && leaf->level == Level::Town)
                    scored.score = kLoneTownPoints;
                // Divisions above the town level named before the leaf that the chain contradicts.
                QVarLengthArray<const Division *, 8> conflicts;
                for (int j : upper) {
                    const Mention &m = found[j];
                    if (m.end > scored.leafStart || m.division == leaf ||
                        Gazetteer::isWithin(*leaf, m.division) ||
                        Gazetteer::isWithin(*m.division, leaf) || conflicts.contains(m.division))
                        continue;
                    bool overlaps = false;
                    for (int c : scored.choice)
                        if (c >= 0 && found[c].start < m.end && m.start < found[c].end)
                            overlaps = true;
                    if (!overlaps)
                        conflicts.append(m.division);
                }
                scored.score -= kConflictPenalty * int(conflicts.size());
                if (!haveHere || better(scored, bestHere)) {
                    bestHere = scored;
                    haveHere = true;
                }
                return;
            }
            const Division *d = chain[std::size_t(k)];
            for (int j : options[std::size_t(k)]) {
                const Mention &m = found[j];
                if (m.shortForm && d->level == Level::Town && !parentMentioned)
                    continue;
                bool overlaps = false;
                for (int q = 0; q < k; ++q) {
                    const int c = current.choice[std::size_t(q)];
                    if (c >= 0 && found[c].start < m.end && m.start < found[c].end)
                        overlaps = true;
                }
                if (overlaps)
                    continue;
                const Candidate saved = current;
                const bool inOrder = m.start >= prevEnd;
                current.score +=
                    (inOrder ? (m.shortForm ? kShortPoints : kFullPoints) : kOutOfOrderPoints) -
                    (discounted[j] ? kFormerDiscount : 0);
                current.fullLevels += m.shortForm ? 0 : 1;
                current.choice[std::size_t(k)] = j;
                if (k == depth - 1)
                    current.leafStart = m.start;
                self(self, k + 1, std::max(prevEnd, m.end), true);
                current = saved;
            }
            if (k < depth - 1) // not naming this level is allowed above the leaf
                self(self, k + 1, prevEnd, false);
        };
        search(search, 0, 0, false);
        if (!haveHere)
            continue;
        if (!bestLeaf || better(bestHere, best)) {
            best = bestHere;
            bestLeaf = leaf;
            ties = 0;
        } else if (!better(best, bestHere)) {
            ++ties;
            if (leaf->code < bestLeaf->code) {
                best = bestHere;
                bestLeaf = leaf;
            }
        }
    }
    if (!bestLeaf)
        return result;

    result.leaf = bestLeaf;
    result.score = best.score;
    result.ambiguous = ties > 0;
    // Fill every level of the full path (placeholders included), then attach the mentions.
    for (const Division *d : m_gazetteer.path(*bestLeaf)) {
        if (d->code == 0)
            continue;
        Mention m;
        m.division = d;
        slot(result, d->level) = m;
    }
    for (int c : best.choice) {
        if (c < 0)
            continue;
        const Mention &m = found[c];
        slot(result, m.division->level) = m;
    }
    return result;
}
