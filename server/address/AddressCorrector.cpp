#include "AddressCorrector.h"

#include "Pinyin.h"

#include <algorithm>

namespace {

using Division = Gazetteer::Division;
using Level = Gazetteer::Level;

constexpr QChar kWildcard(u'\uFFFF'); // never in a name
constexpr qsizetype kMaxSpan = 12;    // longer names (autonomous prefectures) are not corrected
constexpr int kMaxRounds = 3;

bool isHan(QChar c)
{
    return c.unicode() >= 0x4E00 && c.unicode() <= 0x9FFF;
}

bool isRoadSuffix(QChar c)
{
    return QStringView(u"路街道巷弄胡同村桥").contains(c);
}

// How much of a full name may be corrected: its short form when it starts with it, all but the
// last (suffix) character otherwise.
qsizetype stemLength(const Division &d)
{
    if (!d.shortName.isEmpty() && d.name.startsWith(d.shortName))
        return d.shortName.size();
    return d.name.size() - 1;
}

const Division *namedParent(const Division &d)
{
    const Division *p = d.parent;
    while (p && p->placeholder)
        p = p->parent;
    return p;
}

// The single position where `a` and `b` (same length) differ; -1 when they differ elsewhere too
// or not at all.
qsizetype onlyDifference(QStringView a, QStringView b)
{
    qsizetype at = -1;
    for (qsizetype i = 0; i < a.size(); ++i) {
        if (a[i] != b[i]) {
            if (at >= 0)
                return -1;
            at = i;
        }
    }
    return at;
}

// True when only spaces or punctuation lie between `from` and `to` (from <= to).
bool adjacent(QStringView text, qsizetype from, qsizetype to)
{
    if (from < 0 || to < from)
        return false;
    for (qsizetype i = from; i < to; ++i) {
        if (!text[i].isSpace() && !text[i].isPunct())
            return false;
    }
    return true;
}

bool overlaps(qsizetype s1, qsizetype e1, qsizetype s2, qsizetype e2)
{
    return s1 < e2 && s2 < e1;
}

// True when [start, end) overlaps a division the chain read from the text.
bool overlapsChain(const DivisionMatcher::Result &chain, qsizetype start, qsizetype end)
{
    for (const DivisionMatcher::Mention *m :
         {&chain.province, &chain.city, &chain.district, &chain.town}) {
        if (m->division && !m->inferred() && overlaps(start, end, m->start, m->end))
            return true;
    }
    return false;
}

} // namespace

AddressCorrector::AddressCorrector(const DivisionMatcher &matcher, const Pinyin &pinyin)
    : m_matcher(matcher), m_pinyin(pinyin)
{
    for (const Division &d : matcher.gazetteer().all()) {
        if (d.placeholder || d.level == Level::Town)
            continue;
        auto index = [&](const QString &form, qsizetype editable, bool shortForm) {
            if (form.size() < 2 || form.size() > kMaxSpan)
                return;
            m_maxLength = std::max(m_maxLength, form.size());
            for (qsizetype k = 0; k < editable; ++k) {
                QString key = form;
                key[k] = kWildcard;
                m_oneOff[key].append(Entry{&d, shortForm});
            }
        };
        index(d.name, stemLength(d), false);
        if (!d.shortName.isEmpty() && d.shortName != d.name)
            index(d.shortName, d.shortName.size(), true);
    }
}

bool AddressCorrector::homophones(QChar a, QChar b) const
{
    if (a == b)
        return true;
    const QStringList ra = m_pinyin.readings(a.unicode());
    for (const QString &r : m_pinyin.readings(b.unicode())) {
        if (ra.contains(r))
            return true;
    }
    return false;
}

QString AddressCorrector::levelKey(Level level)
{
    switch (level) {
    case Level::Province:
        return QStringLiteral("prov");
    case Level::City:
        return QStringLiteral("city");
    case Level::District:
        return QStringLiteral("district");
    case Level::Town:
        return QStringLiteral("town");
    }
    return {};
}

void AddressCorrector::addCandidate(QList<Candidate> &out, QStringView text, qsizetype start,
                                    qsizetype length, const Division *d, bool shortForm,
                                    const DivisionMatcher::Result &chain, int alternatives) const
{
    const QString &form = shortForm ? d->shortName : d->name;
    const QStringView written = text.mid(start, length);
    const qsizetype k = onlyDifference(written, form);
    if (k < 0 || (!shortForm && k >= stemLength(*d)) || !homophones(written[k], form[k]))
        return;
    const qsizetype end = start + length;
    if (shortForm && end < text.size() && isRoadSuffix(text[end]))
        return;
    // 杭洲市场 is a market, not a city.
    if (!shortForm && form.endsWith(u'市') && end < text.size() && text[end] == u'场')
        return;

    int evidence = 0;
    const DivisionMatcher::Mention &same = chain.at(d->level);
    if (same.division == d && !same.inferred()) {
        evidence = 2; // named again, correctly elsewhere (an address pasted twice)
    } else if (!chain.isEmpty()) {
        const Division *leaf = chain.leaf;
        const bool below = Gazetteer::isWithin(*d, leaf);
        const bool above = leaf != d && Gazetteer::isWithin(*leaf, d);
        if (!below && !above)
            return; // off the chain the rest of the text names
        if (above && !chain.at(d->level).inferred())
            return; // that level is already named
        if (below) {
            // Directly under the leaf, or under a level named further up with nothing in between.
            const Division *parent = namedParent(*d);
            if (parent == leaf && (!shortForm || adjacent(text, chain.at(leaf->level).end, start)))
                evidence = 2;
            else if (!shortForm)
                evidence = 1; // a full name deeper down (浙江省余航区): its suffix says the level
            else
                return;
        } else {
            // A short form names its child right after it (杭洲余杭区), not anywhere.
            qsizetype next = -1;
            for (const DivisionMatcher::Mention *m : {&chain.city, &chain.district, &chain.town}) {
                if (next < 0 && m->division && !m->inferred() && m->division->level > d->level)
                    next = m->start;
            }
            if (shortForm && !adjacent(text, end, next))
                return;
            evidence = 2;
        }
    } else {
        // Nothing else named: only an unmistakable full name. Two characters with nothing
        // around them to confirm them are as often part of a word (林之语, 国贸名品).
        if (shortForm || d->level > Level::District || alternatives > 1)
            return;
    }
    Candidate c;
    c.start = start;
    c.length = length;
    c.division = d;
    c.shortForm = shortForm;
    c.score = evidence * 100 + int(length) * 10 + (shortForm ? 0 : 1);
    out.append(c);
}

QList<AddressCorrector::Candidate>
AddressCorrector::candidates(QStringView text, const DivisionMatcher::Result &chain) const
{
    const Gazetteer &gazetteer = m_matcher.gazetteer();
    // Towns are looked for under the resolved district, or a city without districts.
    const Division *townParent = nullptr;
    if (chain.district.division && !chain.town.division)
        townParent = chain.district.division;
    else if (chain.city.division && !chain.district.division && !chain.town.division &&
             !chain.city.division->placeholder) {
        const auto kids = gazetteer.children(*chain.city.division);
        if (!kids.empty() && kids.front()->level == Level::Town)
            townParent = chain.city.division;
    }

    QList<Candidate> out;
    for (qsizetype p = 0; p + 1 < text.size(); ++p) {
        if (!isHan(text[p]))
            continue;
        for (qsizetype len = 2; len <= m_maxLength && p + len <= text.size(); ++len) {
            if (!isHan(text[p + len - 1]))
                break;
            if (overlapsChain(chain, p, p + len))
                break;
            const QStringView span = text.mid(p, len);
            if (!gazetteer.findByName(span).isEmpty())
                continue; // never correct a name that exists
            // Upper levels by one-off lookup; distinct divisions counted for uniqueness.
            QList<Entry> hits;
            QString key = span.toString();
            for (qsizetype k = 0; k < len; ++k) {
                const QChar keep = key[k];
                key[k] = kWildcard;
                const auto it = m_oneOff.constFind(key);
                if (it != m_oneOff.cend()) {
                    for (const Entry &e : *it) {
                        if (homophones(keep,
                                       (e.shortForm ? e.division->shortName : e.division->name)[k]))
                            hits.append(e);
                    }
                }
                key[k] = keep;
            }
            QList<const Division *> distinct;
            for (const Entry &e : hits) {
                if (!distinct.contains(e.division))
                    distinct.append(e.division);
            }
            for (const Entry &e : hits)
                addCandidate(out, text, p, len, e.division, e.shortForm, chain,
                             int(distinct.size()));
            if (townParent) {
                for (const Division *t : gazetteer.children(*townParent)) {
                    if (t->name.size() == len)
                        addCandidate(out, text, p, len, t, false, chain, 1);
                    if (t->shortName.size() == len && t->shortName != t->name)
                        addCandidate(out, text, p, len, t, true, chain, 1);
                }
            }
        }
    }
    return out;
}

void AddressCorrector::settle(Reading &reading, QList<Correction> picked) const
{
    const QString original = reading.text;
    // Drop the corrections the matcher does not confirm, one at a time, until all hold.
    for (;;) {
        QString fixed = original;
        for (const Correction &c : picked)
            fixed.replace(c.start, c.end - c.start, c.to);
        const DivisionMatcher::Result chain = m_matcher.resolve(fixed);
        qsizetype bad = -1;
        for (qsizetype i = 0; i < picked.size() && bad < 0; ++i) {
            const Correction &c = picked[i];
            const DivisionMatcher::Mention &m = chain.at(c.division->level);
            // At the corrected span, or (a repeated name) the same division elsewhere.
            if (m.division != c.division)
                bad = i;
        }
        if (bad < 0) {
            reading.text = fixed;
            reading.divisions = chain;
            reading.corrections.append(picked);
            std::sort(reading.corrections.begin(), reading.corrections.end(),
                      [](const Correction &a, const Correction &b) { return a.start < b.start; });
            return;
        }
        picked.removeAt(bad);
    }
}

QList<AddressCorrector::Reading> AddressCorrector::correct(QStringView text, int maxReadings) const
{
    Reading best;
    best.text = text.toString();
    best.divisions = m_matcher.resolve(best.text);
    // Equally good alternatives seen in the rounds: (the correction taken, the alternative).
    QList<std::pair<Correction, Correction>> ties;

    auto toCorrection = [](QStringView t, const Candidate &c) {
        Correction out;
        out.start = c.start;
        out.end = c.start + c.length;
        out.from = t.mid(c.start, c.length).toString();
        out.to = c.shortForm ? c.division->shortName : c.division->name;
        out.division = c.division;
        out.shortForm = c.shortForm;
        return out;
    };

    for (int round = 0; round < kMaxRounds; ++round) {
        QList<Candidate> found = candidates(best.text, best.divisions);
        for (const Correction &done : best.corrections) {
            found.removeIf([&](const Candidate &c) {
                return overlaps(c.start, c.start + c.length, done.start, done.end);
            });
        }
        if (found.isEmpty())
            break;
        std::stable_sort(found.begin(), found.end(), [](const Candidate &a, const Candidate &b) {
            if (a.score != b.score)
                return a.score > b.score;
            if (a.start != b.start)
                return a.start < b.start;
            return a.division->code < b.division->code;
        });
        QList<Correction> picked;
        for (const Candidate &c : found) {
            bool clash = false;
            for (const Correction &p : picked) {
                if (overlaps(c.start, c.start + c.length, p.start, p.end)) {
                    clash = true;
                    if (p.start == c.start && p.end == c.start + c.length &&
                        p.division != c.division) {
                        // Same span, another division: a tie when it scored the same.
                        const auto scoreOf = [&](const Correction &x) {
                            for (const Candidate &y : found)
                                if (y.start == x.start && y.division == x.division)
                                    return y.score;
                            return 0;
                        };
                        if (scoreOf(p) == c.score)
                            ties.append({p, toCorrection(best.text, c)});
                    }
                    break;
                }
            }
            if (!clash)
                picked.append(toCorrection(best.text, c));
        }
        const qsizetype before = best.corrections.size();
        // `from` must be what the user wrote: the text is unchanged under each span so far.
        settle(best, picked);
        if (best.corrections.size() == before)
            break;
    }

    QList<Reading> out{best};
    for (const auto &[taken, alternative] : ties) {
        if (out.size() >= std::max(1, maxReadings))
            break;
        QList<Correction> swapped;
        bool present = false;
        for (const Correction &c : best.corrections) {
            if (c.start == taken.start && c.division == taken.division) {
                swapped.append(alternative);
                present = true;
            } else {
                swapped.append(c);
            }
        }
        if (!present)
            continue;
        Reading r;
        r.text = text.toString();
        settle(r, swapped);
        if (r.corrections.size() == swapped.size())
            out.append(r);
    }
    return out;
}
