#include "ExpressExtractor.h"

#include "PhoneExtractor.h"

#include <algorithm>

namespace {

constexpr const char16_t *kSenderLabels[] = {u"寄件人", u"发件人",   u"寄件方",   u"寄方",
                                             u"发货人", u"寄件地址", u"发件地址", u"寄自",
                                             u"from",   u"From",     u"FROM"};
constexpr const char16_t *kReceiverLabels[] = {
    u"收件人", u"收货人", u"收件方", u"收方", u"收件地址", u"收货地址", u"送至",
    u"寄往",   u"寄到",   u"送到",   u"to",   u"To",       u"TO"};

struct LabelIndex
{
    QList<std::pair<qsizetype, bool>> labels; // end of the label, true for a sender label

    explicit LabelIndex(QStringView text)
    {
        for (qsizetype i = 0; i < text.size(); ++i) {
            for (const char16_t *l : kSenderLabels) {
                const QStringView w(l);
                if (text.sliced(i).startsWith(w))
                    labels.append({i + w.size(), true});
            }
            for (const char16_t *l : kReceiverLabels) {
                const QStringView w(l);
                if (text.sliced(i).startsWith(w))
                    labels.append({i + w.size(), false});
            }
        }
    }
    // True when the nearest label ending at or before `pos` is a sender's.
    bool sender(qsizetype pos) const
    {
        qsizetype best = -1;
        bool isSender = false;
        for (const auto &[end, s] : labels) {
            if (end <= pos && end > best) {
                best = end;
                isSender = s;
            }
        }
        return isSender;
    }
};

} // namespace

ExpressExtractor::ExpressExtractor(const NameExtractor &names, const LocationExtractor &locations)
    : m_names(names), m_locations(locations)
{
}

ExpressExtractor::Result ExpressExtractor::extract(QStringView text) const
{
    Result r;
    if (text.isEmpty())
        return r;
    const LabelIndex labels(text);
    const QString copy = text.toString();

    // Phones, in UTF-16 indexes (PhoneExtractor answers in code points; `word` is exact).
    struct Phone
    {
        qsizetype start;
        qsizetype end;
        QString word;
        bool mobile;
    };
    QList<Phone> phones;
    qsizetype from = 0;
    LocationExtractor::Barriers barriers;
    for (const PhoneExtractor::Match &m : PhoneExtractor::extract(copy)) {
        const qsizetype pos = copy.indexOf(m.word, from);
        if (pos < 0)
            continue;
        phones.append({pos, pos + m.word.size(), m.word, m.kind == PhoneExtractor::Kind::Mobile});
        barriers.spans.append({pos, pos + m.word.size()});
        from = pos + m.word.size();
    }

    const QList<NameExtractor::Match> names = m_names.extract(text);
    const NameExtractor::Match *person = nullptr;
    const auto rank = [&](const NameExtractor::Match &m) {
        return (labels.sender(m.start) ? 0 : 1000) + (m.labelled ? 100 : 0) + m.score;
    };
    for (const NameExtractor::Match &m : names) {
        barriers.spans.append({m.start, m.end});
        if (!person || rank(m) > rank(*person))
            person = &m;
    }
    if (person)
        r.person = person->word;

    const Phone *phone = nullptr;
    const auto phoneRank = [&](const Phone &p) {
        int score = labels.sender(p.start) ? 0 : 100;
        if (person && p.start >= person->end)
            score += 50 - int(std::min<qsizetype>(p.start - person->end, 40));
        return score + (p.mobile ? 1 : 0);
    };
    for (const Phone &p : phones) {
        if (!phone || phoneRank(p) > phoneRank(*phone))
            phone = &p;
    }
    if (phone)
        r.phone = phone->word;

    const QList<LocationExtractor::Location> locations = m_locations.extract(text, barriers);
    const LocationExtractor::Location *address = nullptr;
    const auto addressRank = [&](const LocationExtractor::Location &l) {
        return (labels.sender(l.start) ? 0 : 10000) + l.pieces.size() * 100 + (l.end - l.start);
    };
    for (const LocationExtractor::Location &l : locations) {
        if (!address || addressRank(l) > addressRank(*address))
            address = &l;
    }
    if (!address)
        return r;

    using Kind = LocationExtractor::Kind;
    const auto isDivision = [](const LocationExtractor::Piece &p) {
        return p.kind == Kind::Province || p.kind == Kind::City || p.kind == Kind::District ||
               (p.kind == Kind::Town && p.division);
    };
    // A label may split the address (所在地区: 山东省 青岛市 市南区 详细地址: 香港中路10号): the
    // divisions come from one fragment, the street from the next when nothing but labels and
    // separators lie between them.
    QList<LocationExtractor::Piece> pieces = address->pieces;
    const qsizetype index = address - locations.constData();
    const auto onlyLabelsBetween = [&](qsizetype from, qsizetype to) {
        for (const auto &span : std::as_const(barriers.spans)) {
            if (span.first >= from && span.second <= to)
                return false;
        }
        return true;
    };
    const bool hasStreet = address->first(Kind::Road) || address->first(Kind::Poi);
    if (!hasStreet && index + 1 < locations.size() &&
        onlyLabelsBetween(address->end, locations[index + 1].start)) {
        for (const LocationExtractor::Piece &p : locations[index + 1].pieces)
            pieces.append(p);
    } else if (index > 0 && !std::any_of(pieces.cbegin(), pieces.cend(), isDivision) &&
               onlyLabelsBetween(locations[index - 1].end, address->start)) {
        const auto &before = locations[index - 1].pieces;
        if (!std::any_of(before.cbegin(), before.cend(),
                         [](const auto &p) { return p.kind == Kind::Road; }))
            pieces = before + pieces;
    }

    // Divisions: resolved over the division pieces only (a place name after the street, such as
    // 宁波文化广场, is not the city).
    QString divisionText;
    for (const LocationExtractor::Piece &p : std::as_const(pieces)) {
        if (!isDivision(p))
            continue;
        divisionText += text.sliced(p.start, p.end - p.start);
    }
    const DivisionMatcher::Result divisions = m_locations.matcher().resolve(divisionText);
    // An ambiguous chain (朝阳区 alone: Beijing or Changchun) fills nothing it was not told.
    const auto field = [&](const DivisionMatcher::Mention &m) -> QString {
        if (!m.isValid())
            return {};
        if (m.inferred())
            return divisions.ambiguous ? QString() : m.division->name;
        return QStringView(divisionText).sliced(m.start, m.end - m.start).toString();
    };
    r.province = field(divisions.province);
    if (divisions.city.isValid())
        r.city = divisions.city.division->placeholder ? r.province : field(divisions.city);
    r.district = field(divisions.district);

    const auto firstOf = [&](Kind kind, qsizetype from) -> const LocationExtractor::Piece * {
        for (const LocationExtractor::Piece &p : std::as_const(pieces)) {
            if (p.kind == kind && p.start >= from)
                return &p;
        }
        return nullptr;
    };
    const auto pieceText = [&](const LocationExtractor::Piece *p) {
        return p ? text.sliced(p->start, p->end - p->start).toString() : QString();
    };
    const LocationExtractor::Piece *road = firstOf(Kind::Road, 0);
    r.road = pieceText(road);
    const LocationExtractor::Piece *roadNo = firstOf(Kind::RoadNo, road ? road->end : 0);
    r.roadNo = pieceText(roadNo);
    const qsizetype after = roadNo ? roadNo->end : road ? road->end : 0;
    r.poi = pieceText(firstOf(Kind::Poi, after));
    return r;
}
