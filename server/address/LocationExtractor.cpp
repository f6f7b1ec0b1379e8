#include "LocationExtractor.h"

#include "NameExtractor.h"
#include "PhoneExtractor.h"

#include <optional>
#include <vector>

namespace {

using Kind = LocationExtractor::Kind;
using Piece = LocationExtractor::Piece;

// Function words and pronouns: never inside a piece, and a piece may start after one.
constexpr char16_t kStops[] =
    u"的了我你他她们在住到去从往是给送寄收请谢吗呢吧啊呀哦嗯很也就还要想把被让着这么啥怎些每再"
    u"已帮";
// Conjunctions: a piece may start with one (和平路) but not hold one inside.
constexpr char16_t kConjunctions[] = u"与及或跟";

constexpr const char16_t *kTownSuffixes[] = {
    u"街道", u"镇",   u"乡", u"开发区", u"工业园区", u"工业园", u"工业区", u"高新区",
    u"新区", u"社区", u"村", u"嘎查",   u"农场",     u"林场",   u"管委会"};
constexpr const char16_t *kRoadSuffixes[] = {u"大道", u"大街", u"公路", u"路",   u"街",  u"巷",
                                             u"胡同", u"道",   u"里弄", u"国道", u"省道"};
constexpr const char16_t *kPoiSuffixes[] = {
    u"小区",   u"大厦",   u"广场",   u"中心", u"花园", u"公寓", u"大楼", u"园区",   u"科技园",
    u"产业园", u"软件园", u"物流园", u"学校", u"大学", u"学院", u"中学", u"小学",   u"幼儿园",
    u"医院",   u"酒店",   u"宾馆",   u"饭店", u"公司", u"超市", u"商场", u"市场",   u"商城",
    u"商厦",   u"车站",   u"地铁站", u"机场", u"苑",   u"园",   u"城",   u"府",     u"庭",
    u"湾",     u"坊",     u"家园",   u"新村", u"公馆", u"大院", u"基地", u"馆",     u"厂",
    u"店",     u"写字楼", u"仓库",   u"公园", u"景区", u"银行", u"宿舍", u"家属院", u"楼",
    u"阁",     u"轩",     u"居",     u"墅",   u"港",   u"座",   u"站",   u"所",     u"局",
    u"院",     u"堂"};
// Units after a number. Longest first.
constexpr const char16_t *kNumberUnits[] = {u"号楼", u"号院", u"号房", u"单元", u"号", u"弄",
                                            u"栋",   u"幢",   u"室",   u"层",   u"楼", u"座",
                                            u"户",   u"组",   u"期",   u"区",   u"排", u"门"};
// Labels and other words that end a fragment (the fragment may start right after them).
constexpr const char16_t *kLabels[] = {
    u"收货地址", u"详细地址", u"所在地区", u"收件地址", u"寄件地址", u"地址",   u"手机号码",
    u"手机号",   u"手机",     u"电话号码", u"联系电话", u"电话",     u"座机",   u"固话",
    u"联系方式", u"收件人",   u"收货人",   u"联系人",   u"寄件人",   u"发件人", u"姓名",
    u"备注",     u"邮编",     u"快递单号", u"运单号",   u"订单号",   u"单号",   u"订单",
    u"快递",     u"附近",     u"对面",     u"旁边",     u"门口",     u"楼下"};

bool isHan(QChar c)
{
    const char16_t u = c.unicode();
    return (u >= 0x4E00 && u <= 0x9FFF) || (u >= 0x3400 && u <= 0x4DBF);
}

bool isDigitLike(QChar c)
{
    const char16_t u = c.unicode();
    return (u >= u'0' && u <= u'9') || (u >= 0xFF10 && u <= 0xFF19);
}

bool isLetter(QChar c)
{
    const char16_t u = c.unicode();
    return (u >= u'a' && u <= u'z') || (u >= u'A' && u <= u'Z') || (u >= 0xFF21 && u <= 0xFF3A) ||
           (u >= 0xFF41 && u <= 0xFF5A);
}

bool isAsciiLetter(QChar c)
{
    const char16_t u = c.unicode();
    return (u >= u'a' && u <= u'z') || (u >= u'A' && u <= u'Z');
}

bool isJoiner(QChar c)
{
    return c == u'-' || c == u'－' || c == u'—' || c == u'#' || c == u'＃' || c == u'之';
}

bool in(const char16_t *set, QChar c)
{
    for (const char16_t *p = set; *p; ++p) {
        if (*p == c.unicode())
            return true;
    }
    return false;
}

bool at(QStringView text, qsizetype pos, QStringView word)
{
    return pos >= 0 && pos + word.size() <= text.size() && text.mid(pos, word.size()) == word;
}

bool endsWithAny(QStringView s, const auto &suffixes)
{
    for (const char16_t *suf : suffixes) {
        if (s.endsWith(QStringView(suf)))
            return true;
    }
    return false;
}

Kind kindOf(Gazetteer::Level level)
{
    switch (level) {
    case Gazetteer::Level::Province:
        return Kind::Province;
    case Gazetteer::Level::City:
        return Kind::City;
    case Gazetteer::Level::District:
        return Kind::District;
    case Gazetteer::Level::Town:
        return Kind::Town;
    }
    return Kind::Town;
}

struct Scan
{
    QStringView text;
    std::vector<char> blocked;                       // inside a phone, a name or a label
    std::vector<DivisionMatcher::Mention> mentionAt; // the longest mention starting here
    QList<Piece> current;

    bool anchorAt(qsizetype pos) const
    {
        if (pos == 0)
            return true;
        const QChar prev = text[pos - 1];
        return !isHan(prev) || in(kStops, prev) || blocked[std::size_t(pos - 1)] ||
               (!current.isEmpty() && current.last().end == pos);
    }

    // A division written in full, or a province or city, starts here: a named piece stops
    // before it (张三浙江省... is no road name).
    bool divisionStartsAt(qsizetype pos) const
    {
        const DivisionMatcher::Mention &m = mentionAt[std::size_t(pos)];
        return m.isValid() && m.division->level != Gazetteer::Level::Town &&
               (!m.shortForm || m.division->level <= Gazetteer::Level::City);
    }

    // A Chinese numeral and a unit (一座, 二期, 三楼): a detail, not part of a name.
    bool numberedUnitAt(qsizetype pos) const
    {
        qsizetype k = pos;
        while (k < text.size() && in(u"一二三四五六七八九十两", text[k]))
            ++k;
        return k > pos && k < text.size() && in(u"座栋幢楼层期区号单室", text[k]);
    }

    // A Han run from `pos` that a named piece may cover.
    qsizetype runEnd(qsizetype pos) const
    {
        qsizetype r = pos;
        while (r < text.size() && r - pos < 16 && !blocked[std::size_t(r)]) {
            const QChar c = text[r];
            // Latin letters only as a prefix (SOHO现代城), never after Han text (大厦B座).
            if (!(isHan(c) || (isAsciiLetter(c) && (r == pos || isAsciiLetter(text[r - 1])))))
                break;
            if (in(kStops, c))
                break;
            if (r > pos && (in(kConjunctions, c) || divisionStartsAt(r) || numberedUnitAt(r)))
                break;
            ++r;
        }
        return r;
    }

    std::optional<Piece> named(qsizetype pos, Kind previous, bool hasPrevious, bool glued) const
    {
        const qsizetype end = runEnd(pos);
        if (end - pos < 2 || in(u"号栋幢室层楼单弄座", text[pos]))
            return std::nullopt; // a name never starts with a unit (868号新金海饭店)
        // Towns and roads: the earliest suffix (a road comes before what follows it).
        for (qsizetype j = pos + 2; j <= end; ++j) {
            const QStringView s = text.sliced(pos, j - pos);
            // After the street, 中关村大厦 is a building, not a village.
            const bool street = hasPrevious && previous >= Kind::Road;
            if (!street && s.size() >= 3 && endsWithAny(s, kTownSuffixes)) {
                bool roadFollows = false; // 中关村大街 is a road, not a village and a stray 大街
                for (const char16_t *r : kRoadSuffixes)
                    roadFollows = roadFollows || at(text, j, QStringView(r));
                const bool longer =
                    j < end && endsWithAny(text.sliced(pos, j + 1 - pos), kTownSuffixes);
                if (!roadFollows && !longer) // 工业园区, not 工业园 and a stray 区
                    return Piece{Kind::Town, pos, j, nullptr};
            }
            if (endsWithAny(s, kRoadSuffixes) && (s.size() >= 3 || hasPrevious)) {
                if (s.endsWith(u'街') && j < text.size() && text[j] == u'道')
                    continue; // 街道 is a town
                return Piece{Kind::Road, pos, j, nullptr};
            }
        }
        // Places: the longest name ending in a suffix; two characters will do when glued to the
        // piece before and followed by a number (街道香园83幢).
        const bool numberFollows =
            end < text.size() && (isDigitLike(text[end]) || isLetter(text[end]));
        for (qsizetype j = end; j >= pos + (glued && numberFollows ? 2 : 3); --j) {
            if (endsWithAny(text.sliced(pos, j - pos), kPoiSuffixes))
                return Piece{Kind::Poi, pos, j, nullptr};
        }
        // A stretch of a road (临园路东段) is a detail of the road.
        if (glued && previous == Kind::Road && end - pos == 2 && text[pos + 1] == u'段' &&
            in(u"东西南北中上下", text[pos]))
            return Piece{Kind::Detail, pos, pos + 2, nullptr};
        // A name without a suffix after a road or its number, ending the run (969号阿里巴巴);
        // after a space two characters may as well be a person (严格 138...), so three or more.
        // A village's hamlet or a house name glued to a town and followed by its number is one
        // too (某某村林家1005号).
        if (glued && previous == Kind::Town && numberFollows && end - pos <= 6)
            return Piece{Kind::Poi, pos, end, nullptr};
        if (hasPrevious && (glued || end - pos >= 3) &&
            (previous == Kind::RoadNo || previous == Kind::Road) &&
            (end == text.size() || !isHan(text[end]) || blocked[std::size_t(end)] ||
             numberedUnitAt(end)))
            return Piece{Kind::Poi, pos, end, nullptr};
        return std::nullopt;
    }

    std::optional<Piece> number(qsizetype pos, Kind previous, bool hasRoadNo, bool glued) const
    {
        if (numberedUnitAt(pos)) { // 八幢, 九楼, 二区
            qsizetype k = pos;
            while (in(u"一二三四五六七八九十两", text[k]))
                ++k;
            const QStringView rest = text.sliced(k);
            return Piece{Kind::Detail, pos, k + (rest.startsWith(u"单元") ? 2 : 1), nullptr};
        }
        qsizetype i = pos;
        bool digits = false;
        bool joined = false;
        while (i < text.size() && !blocked[std::size_t(i)]) {
            if (isDigitLike(text[i])) {
                digits = true;
                ++i;
            } else if (isLetter(text[i]) && i - pos < 4) {
                ++i;
            } else if (isJoiner(text[i]) && i > pos && i + 1 < text.size() &&
                       (isDigitLike(text[i + 1]) || isLetter(text[i + 1]))) {
                joined = true;
                ++i;
            } else {
                break;
            }
        }
        if (i == pos)
            return std::nullopt;
        for (const char16_t *u : kNumberUnits) {
            const QStringView unit(u);
            if (!at(text, i, unit))
                continue;
            const bool roadUnit = unit == u"号" || unit == u"弄" || unit == u"号院";
            const Kind kind = roadUnit && !hasRoadNo && previous == Kind::Road && digits
                                  ? Kind::RoadNo
                                  : Kind::Detail;
            return Piece{kind, pos, i + unit.size(), nullptr};
        }
        if (!digits)
            return std::nullopt;
        const bool digitAfter = i < text.size() && isDigitLike(text[i]);
        if (previous == Kind::Road && !hasRoadNo && !digitAfter)
            return Piece{Kind::RoadNo, pos, i, nullptr}; // 文三路100, 民安路625-106-403
        if (joined && previous != Kind::Road)
            return Piece{Kind::Detail, pos, i, nullptr}; // 3-2-501
        // A room number glued to a building, a place or a road number (52幢413, 73号1641).
        if (glued &&
            (previous == Kind::Detail || previous == Kind::Poi || previous == Kind::RoadNo) &&
            !digitAfter)
            return Piece{Kind::Detail, pos, i, nullptr};
        return std::nullopt;
    }
};

} // namespace

const LocationExtractor::Piece *LocationExtractor::Location::first(Kind kind) const
{
    for (const Piece &p : pieces) {
        if (p.kind == kind)
            return &p;
    }
    return nullptr;
}

LocationExtractor::LocationExtractor(const DivisionMatcher &matcher) : m_matcher(matcher) {}

QList<LocationExtractor::Location> LocationExtractor::extract(QStringView text) const
{
    Barriers barriers;
    const QString copy = text.toString();
    qsizetype from = 0;
    for (const PhoneExtractor::Match &m : PhoneExtractor::extract(copy)) {
        const qsizetype pos = copy.indexOf(m.word, from);
        if (pos < 0)
            continue;
        barriers.spans.append({pos, pos + m.word.size()});
        from = pos + m.word.size();
    }
    for (const NameExtractor::Match &m : NameExtractor(m_matcher).extract(text))
        barriers.spans.append({m.start, m.end});
    return extract(text, barriers);
}

QList<LocationExtractor::Location> LocationExtractor::extract(QStringView text,
                                                              const Barriers &barriers) const
{
    QList<Location> out;
    const qsizetype n = text.size();
    if (n == 0)
        return out;
    Scan scan;
    scan.text = text;
    scan.blocked.assign(std::size_t(n), 0);
    for (const auto &span : barriers.spans) {
        for (qsizetype i = std::max<qsizetype>(0, span.first); i < std::min(n, span.second); ++i)
            scan.blocked[std::size_t(i)] = 1;
    }
    for (qsizetype i = 0; i < n; ++i) {
        for (const char16_t *l : kLabels) {
            const QStringView label(l);
            if (at(text, i, label)) {
                for (qsizetype k = i; k < i + label.size(); ++k)
                    scan.blocked[std::size_t(k)] = 1;
                break;
            }
        }
    }
    scan.mentionAt.assign(std::size_t(n), DivisionMatcher::Mention{});
    for (const DivisionMatcher::Mention &m : m_matcher.mentions(text)) {
        if (m.division->level == Gazetteer::Level::Town &&
            (m.shortForm || m.division->name.size() < 3))
            continue; // town short forms (and two-character towns: 城南) are too often words
        bool free = true;
        for (qsizetype k = m.start; k < m.end; ++k)
            free = free && !scan.blocked[std::size_t(k)];
        DivisionMatcher::Mention &slot = scan.mentionAt[std::size_t(m.start)];
        if (free && (!slot.isValid() || m.end > slot.end))
            slot = m;
    }

    const auto close = [&] {
        if (scan.current.isEmpty())
            return;
        bool keep = false;
        for (const Piece &p : std::as_const(scan.current)) {
            keep = keep ||
                   (p.kind != Kind::Poi && p.kind != Kind::Detail && p.kind != Kind::RoadNo) ||
                   (p.kind == Kind::Poi && p.end - p.start >= 4);
        }
        if (keep) {
            Location loc;
            loc.start = scan.current.first().start;
            loc.end = scan.current.last().end;
            loc.word = text.sliced(loc.start, loc.end - loc.start).toString();
            loc.pieces = scan.current;
            out.append(loc);
        }
        scan.current.clear();
    };
    // True when only spaces separate the current fragment from `pos`.
    const auto adjacent = [&](qsizetype pos) {
        if (scan.current.isEmpty())
            return false;
        // Divisions may also be written with dashes between them (安徽-芜湖-弋江区).
        const Kind last = scan.current.last().kind;
        const bool division =
            last == Kind::Province || last == Kind::City || last == Kind::District;
        for (qsizetype k = scan.current.last().end; k < pos; ++k) {
            if (!text[k].isSpace() && text[k] != u'\u3000' &&
                !(division && (text[k] == u'-' || text[k] == u'－' || text[k] == u'—')))
                return false;
        }
        return true;
    };

    qsizetype pos = 0;
    while (pos < n) {
        if (scan.blocked[std::size_t(pos)]) {
            close();
            ++pos;
            continue;
        }
        const bool touching = adjacent(pos);
        const bool glued = touching && scan.current.last().end == pos;
        const bool hasPrevious = touching;
        const Kind previous = touching ? scan.current.last().kind : Kind::Poi;
        bool hasRoadNo = false;
        if (touching) {
            for (const Piece &p : std::as_const(scan.current))
                hasRoadNo = hasRoadNo || p.kind == Kind::RoadNo;
        }
        const bool anchor = touching || scan.anchorAt(pos);
        std::optional<Piece> piece;
        const DivisionMatcher::Mention &m = scan.mentionAt[std::size_t(pos)];
        // After a road, a number or a place, a division name is part of a name (969号阿里巴巴,
        // 588号宁波文化广场).
        const bool lower = touching && previous != Kind::Province && previous != Kind::City &&
                           previous != Kind::District;
        if (m.isValid() && !lower) {
            Piece p{kindOf(m.division->level), m.start, m.end, m.division};
            bool accept = true;
            if (m.shortForm) {
                // 南京东路 is a road, not 南京 and a stray 东路 (朝阳北大街 neither).
                if (const auto road = scan.named(pos, previous, hasPrevious, glued);
                    road && road->kind == Kind::Road && road->end <= m.end + 3) {
                    accept = false;
                    piece = road;
                } else if (p.kind == Kind::District && !touching) {
                    // A district's short form alone must be followed by a non-Han character,
                    // another division or an address piece (和平年代 is no place).
                    const bool clean = m.end >= n || !isHan(text[m.end]) ||
                                       scan.blocked[std::size_t(m.end)] ||
                                       scan.mentionAt[std::size_t(m.end)].isValid();
                    accept = clean || scan.named(m.end, p.kind, true, true).has_value();
                }
            }
            if (accept)
                piece = p;
        }
        if (!piece && touching && !lower && scan.current.last().end == pos) {
            // Divisions written so that their names overlap (青岛市南区: 青岛市, 市南区): the
            // longer mention that starts inside the last piece continues the fragment.
            const Piece &last = scan.current.last();
            for (qsizetype k = last.start + 1; k < pos && !piece; ++k) {
                const DivisionMatcher::Mention &o = scan.mentionAt[std::size_t(k)];
                if (o.isValid() && o.end > pos && !o.shortForm)
                    piece = Piece{kindOf(o.division->level), pos, o.end, o.division};
            }
        }
        if (!piece && anchor) {
            if (touching &&
                (isDigitLike(text[pos]) || isLetter(text[pos]) || scan.numberedUnitAt(pos)))
                piece = scan.number(pos, previous, hasRoadNo, glued);
            if (!piece && (isHan(text[pos]) || isAsciiLetter(text[pos])))
                piece = scan.named(pos, previous, hasPrevious, glued);
        }
        if (!piece) {
            if (!adjacent(pos + 1)) // a space, or a dash after a division, keeps it open
                close();
            ++pos;
            continue;
        }
        if (!touching)
            close();
        scan.current.append(*piece);
        pos = piece->end;
    }
    close();
    return out;
}
