#pragma once

#include "Gazetteer.h"

#include <QHash>
#include <QList>
#include <QString>
#include <QStringView>

// Finds the administrative divisions named in free text (an address, possibly with noise around
// it) and resolves the most specific consistent chain province > city > district > town: the
// resolver behind POST /v1/address/division-code. A plain library (Qt Core only, no HTTP).
//
// How it works:
//  1. Mentions: every substring of the text that is a full name or a short form (Gazetteer::
//     shortForm) of a division, found by hash lookups over the substrings that start at each
//     position, growing while the substring is still the prefix of some name (a prefix index).
//     Placeholder cities (市辖区, 县...) are never matched. A short form directly followed by
//     a road or lane suffix (路, 街, 道, 巷, 弄, 胡, 同, 村, 桥) is not a mention (北京路).
//     Former names (Gazetteer::formerNames(): 江东区, 萧山市, 襄樊市...) are mentions of the
//     current division they became, marked with `former`; their short forms only where the
//     gazetteer found them unambiguous (江东, 闸北; not 城区, 东山).
//  2. Chains: every mentioned division is a candidate leaf. Its chain is its ancestors; each
//     level scores when one of its mentions lies after (and does not overlap) the mention chosen
//     for the level above: 4 for a full name, 3 for a short form, 1 when it comes out of order;
//     half a point less for a former name read where a current name is read at the same span
//     (so a current name wins the tie: 东山区 alone is 鹤岗's, 广州东山区 is 越秀区).
//     A town's short form counts only when its parent (district, or city for cities without
//     districts) is matched by a mention of its own, so 海淀 or 北京 alone never selects 海淀街道
//     or 北京街道; a town named with none of its upper levels scores only 2 (generic town names
//     such as 经济开发区 lose to a district named by its short form). Each province, city or
//     district named before the leaf's mention that is off the chain (neither an ancestor nor a
//     descendant of the leaf, not overlapping the chain's mentions) costs 2, so 宁波江东区 is
//     鄞州区 (江东区's successor), not 攀枝花's 东区.
//  3. The highest score wins; ties prefer more full-name levels, then the earliest leaf mention,
//     then the lowest code (then `ambiguous` is set: e.g. 朝阳区 alone is in 北京 and in 长春).
//     Upper levels not mentioned are inferred from the leaf (余杭区 -> 浙江省 杭州市 余杭区).
//
// Offsets (`start`, `end`) are QString UTF-16 code units into the text, `end` exclusive; they
// equal Unicode character offsets for text in the Basic Multilingual Plane (all division names
// are). Immutable after construction; one instance may serve any number of threads.
class DivisionMatcher
{
public:
    using Division = Gazetteer::Division;
    using Level = Gazetteer::Level;

    struct Mention
    {
        const Division *division = nullptr;
        qsizetype start = -1; // -1 when the level was inferred, not read from the text
        qsizetype end = -1;
        bool shortForm = false;
        // Set when the text used a former name of `division` (江东区 for 鄞州区).
        const Gazetteer::FormerName *former = nullptr;

        bool isValid() const { return division != nullptr; }
        bool inferred() const { return division != nullptr && start < 0; }
    };

    struct Result
    {
        // Levels of the chain; `division` is null for a level the chain does not reach. For the
        // municipalities and the county-level cities directly under a province, `city` is the
        // national placeholder (市辖区, 省直辖县级行政区划...), always inferred.
        Mention province;
        Mention city;
        Mention district;
        Mention town;
        const Division *leaf = nullptr; // the most specific division resolved
        int score = 0;                  // in half points: 8 per level named in full, in order
        bool ambiguous = false;         // another chain scored the same

        bool isEmpty() const { return leaf == nullptr; }
        // The leaf's 12-digit code, empty when nothing was resolved.
        QString divcode() const { return leaf ? leaf->codeString() : QString(); }
        // The name to show for the city level: the province's name for a placeholder city.
        QString cityName() const;
        const Mention &at(Level level) const;
        // The levels read from the text through a former name, top first.
        QList<const Mention *> formerMentions() const;
    };

    explicit DivisionMatcher(const Gazetteer &gazetteer = Gazetteer::builtin());
    // Over Gazetteer::builtin(), built on first use (about half a second) and shared by every
    // AddressEngine in the process: an immutable table of compiled-in data, thread-safe.
    static const DivisionMatcher &builtin();

    // Every mention found in the text (step 1), ordered by start, then shortest first.
    QList<Mention> mentions(QStringView text) const;
    Result resolve(QStringView text) const;

    const Gazetteer &gazetteer() const { return m_gazetteer; }

private:
    struct Entry
    {
        const Division *division;
        bool shortForm;
        const Gazetteer::FormerName *former;
    };
    const Gazetteer &m_gazetteer;
    // Names (current and former) and all their prefixes (2+ characters; a bare prefix has no
    // entries), as views into the gazetteer's strings.
    QHash<QStringView, QList<Entry>> m_index;
    qsizetype m_minLength = 2;
    qsizetype m_maxLength = 0;
};
