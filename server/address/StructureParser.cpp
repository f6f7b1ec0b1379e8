#include "StructureParser.h"

#include <QHash>
#include <QVarLengthArray>

#include <array>
#include <span>
#include <vector>

// How a parse works:
//  1. Divisions: DivisionMatcher::resolve gives the chain (prov > city > district > town) and
//     where each level is named. A mention that is not the division it names (a short form
//     opening a road or POI name, 中关村大街; a generic town name inside a zone name) is hidden
//     and the text resolved again; a short form followed by its level suffix takes the suffix
//     (上望 + 镇). Levels must come in order; one named after a road or POI is part of a name.
//     When a level is named more than once ("浙江省温州市浙江省温州市
//     鹿城区"), the copy nearest the rest of the address is kept and every division name before
//     the chain is redundant (the usual pasted-twice prefix).
//  2. The gaps between those segments are read left to right as tokens:
//     - punctuation and spaces: redundant;
//     - numbers (digits, letters, Chinese numerals, dash-joined runs) with their unit: 号楼/幢/栋
//       houseNo, 单元 cellNo, 楼/层/F floorNo, 室/房 roomNo, 号 and 弄 by context (a road
//       waiting for its number, then the building parts in order);
//     - words up to the first suffix keyword (路 road, 村 community, 开发区 devZone, 大厦 poi...),
//       a longer keyword overlapping it winning (街道 over 街, 市场 over 市); a road whose stem
//       is 4+ characters has a name glued before it (临平朝阳东路), split off and read alone;
//     - standalone words (附近, 对面, 交叉口: assist; 电联: redundant).
//     While no road, POI or number has been read, division suffixes (省, 市, 区, 县, 镇, 乡,
//     街道) name levels the gazetteer does not know (renamed or merged since), as long as the
//     level lies between the levels already read and the next one the matcher found.
//  3. A key taken twice becomes its sub key where there is one (road -> subRoad, poi -> subPoi).

namespace {

enum Key : int
{
    Country,
    Prov,
    City,
    District,
    DevZone,
    Town,
    Community,
    Village,
    Road,
    SubRoad,
    RoadNo,
    SubRoadNo,
    Poi,
    SubPoi,
    HouseNo,
    CellNo,
    FloorNo,
    RoomNo,
    Assist,
    Direction,
    Person,
    Redundant,
    OtherInfo,
    KeyCount
};

const std::array<const char16_t *, KeyCount> kKeyNames = {
    u"country",   u"prov",      u"city",    u"district",  u"devZone",  u"town",
    u"community", u"village",   u"road",    u"subRoad",   u"roadNo",   u"subRoadNo",
    u"poi",       u"subPoi",    u"houseNo", u"cellNo",    u"floorNo",  u"roomNo",
    u"assist",    u"direction", u"person",  u"redundant", u"otherInfo"};

// What a word's suffix says it is.
enum class Kind : quint8
{
    Prov,      // 省, 自治区
    City,      // 市 (a city, or a county-level city below one)
    District,  // 区, 县, 旗
    Town,      // 镇, 乡, 街道
    DevZone,   // 开发区, 高新区, 工业园区...
    Community, // 村, 社区, 居委会
    Road,      // 路, 街, 大道, 巷...
    RoadPart,  // 段 (东段, 中段): a part of the road just read
    Poi,       // 大厦, 小区, 公司, 中心...
    Country,   // 中国
};

// Words that stand on their own (no name before them).
enum class Standalone : quint8
{
    Assist,
    Redundant,
};

struct Tables
{
    QList<QString> storage;               // keeps the views below alive
    QHash<QStringView, Kind> suffixes;    // a word ends with one of these
    QHash<QStringView, Standalone> words; // whole words
    QHash<QStringView, Key> units;        // after a number
    qsizetype maxSuffix = 0;
    qsizetype maxWord = 0;
    qsizetype maxUnit = 0;

    template <typename V>
    void add(QHash<QStringView, V> &hash, qsizetype &max,
             std::initializer_list<const char16_t *> list, V value)
    {
        for (const char16_t *s : list) {
            storage.append(QString::fromUtf16(s));
            hash.insert(QStringView(storage.last()), value);
            max = std::max(max, storage.last().size());
        }
    }

    Tables()
    {
        // The views point at each string's shared character data, which stays put when the
        // list reallocates; the strings are never modified.
        add(suffixes, maxSuffix, {u"省", u"自治区"}, Kind::Prov);
        add(suffixes, maxSuffix, {u"市"}, Kind::City);
        add(suffixes, maxSuffix, {u"区", u"县", u"旗", u"自治县"}, Kind::District);
        add(suffixes, maxSuffix, {u"镇", u"乡", u"街道", u"街道办", u"街道办事处"}, Kind::Town);
        add(suffixes, maxSuffix,
            {u"开发区", u"高新区", u"工业区", u"工业园区", u"工业园", u"园区", u"新区", u"保税区",
             u"经济区", u"度假区", u"产业园区", u"科技园区", u"试验区", u"示范区", u"集聚区",
             u"管委会"},
            Kind::DevZone);
        add(suffixes, maxSuffix,
            {u"村", u"社区", u"居委会", u"村委会", u"村委", u"居委", u"行政村"}, Kind::Community);
        add(suffixes, maxSuffix,
            {u"路", u"街", u"大街", u"大道", u"道", u"巷", u"弄", u"胡同", u"公路", u"国道",
             u"省道", u"环路", u"组", u"线", u"里弄"},
            Kind::Road);
        add(suffixes, maxSuffix, {u"段"}, Kind::RoadPart);
        add(suffixes, maxSuffix,
            {u"大厦", u"大楼",   u"广场",   u"小区",   u"花园", u"家园", u"公寓",   u"公司",
             u"集团", u"医院",   u"卫生院", u"诊所",   u"学校", u"小学", u"中学",   u"大学",
             u"学院", u"幼儿园", u"中心",   u"市场",   u"商城", u"商场", u"超市",   u"商厦",
             u"城",   u"园",     u"苑",     u"府",     u"居",   u"阁",   u"轩",     u"湾",
             u"庄",   u"山庄",   u"新村",   u"厦",     u"场",   u"店",   u"馆",     u"局",
             u"站",   u"所",     u"厂",     u"部",     u"宾馆", u"酒店", u"饭店",   u"银行",
             u"基地", u"仓库",   u"楼",     u"院",     u"寓",   u"坊",   u"墅",     u"大院",
             u"厅",   u"期",     u"座",     u"营业厅", u"门市", u"门",   u"库",     u"仓",
             u"行",   u"社",     u"处",     u"科",     u"队",   u"校",   u"矿",     u"农场",
             u"林场", u"码头",   u"机场",   u"车站",   u"广场", u"楼宇", u"写字楼", u"村委"},
            Kind::Poi);
        add(suffixes, maxSuffix, {u"中国", u"中华人民共和国"}, Kind::Country);
        add(words, maxWord,
            {u"附近",   u"对面", u"旁边",   u"隔壁", u"交叉口", u"交汇处", u"路口",   u"门口",
             u"大门口", u"东侧", u"西侧",   u"南侧", u"北侧",   u"东边",   u"西边",   u"南边",
             u"北边",   u"东面", u"西面",   u"南面", u"北面",   u"东南角", u"东北角", u"西南角",
             u"西北角", u"旁",   u"内",     u"里面", u"楼下",   u"后面",   u"前面",   u"对过",
             u"斜对面", u"往东", u"往西",   u"往南", u"往北",   u"院内",   u"店内",   u"楼内",
             u"与",     u"和",   u"交界处", u"拐角", u"边上"},
            Standalone::Assist);
        add(words, maxWord,
            {u"电联", u"电话联系", u"请电联", u"收", u"收件", u"转", u"送货上门", u"代收", u"谢谢",
             u"的"},
            Standalone::Redundant);
        add(units, maxUnit, {u"号楼", u"幢", u"栋", u"座", u"撞", u"号院", u"排"}, HouseNo);
        add(units, maxUnit, {u"单元"}, CellNo);
        add(units, maxUnit, {u"楼", u"层", u"F", u"f", u"Ｆ"}, FloorNo);
        add(units, maxUnit, {u"室", u"号房", u"房", u"户", u"间", u"号室", u"号铺", u"铺"}, RoomNo);
        add(units, maxUnit, {u"号"}, RoadNo);                                    // by context
        add(units, maxUnit, {u"弄"}, SubRoad);                                   // by context
        add(units, maxUnit, {u"路", u"街", u"巷", u"道", u"组", u"大道"}, Road); // 3道, 五组
        add(units, maxUnit, {u"区", u"期", u"号门"}, Poi); // 3区, 二期: a part of the POI
        add(units, maxUnit, {u"米"}, Assist);              // 100米
    }
};

const Tables &tables()
{
    static const Tables t;
    return t;
}

bool isDigit(QChar c)
{
    const char16_t u = c.unicode();
    return (u >= u'0' && u <= u'9') || (u >= u'０' && u <= u'９');
}

bool isLatin(QChar c)
{
    const char16_t u = c.unicode();
    return (u >= u'a' && u <= u'z') || (u >= u'A' && u <= u'Z') || (u >= u'ａ' && u <= u'ｚ') ||
           (u >= u'Ａ' && u <= u'Ｚ');
}

bool isChineseNumeral(QChar c)
{
    // A switch, not a search in a string: asked for at every position of every request.
    switch (c.unicode()) {
    case u'零':
    case u'〇':
    case u'一':
    case u'二':
    case u'三':
    case u'四':
    case u'五':
    case u'六':
    case u'七':
    case u'八':
    case u'九':
    case u'十':
    case u'百':
    case u'千':
    case u'两':
        return true;
    default:
        return false;
    }
}

bool isDash(QChar c)
{
    return c == u'-' || c == u'－' || c == u'—' || c == u'–' || c == u'~' || c == u'～';
}

// A character that belongs to no word: spaces, punctuation, symbols (emoji included). Either
// half of a surrogate pair answers for the whole code point.
bool isNoise(QStringView text, qsizetype i)
{
    const QChar c = text[i];
    if (c.isHighSurrogate() && i + 1 < text.size() && text[i + 1].isLowSurrogate())
        return !QChar::isLetterOrNumber(QChar::surrogateToUcs4(c, text[i + 1]));
    if (c.isLowSurrogate() && i > 0 && text[i - 1].isHighSurrogate())
        return !QChar::isLetterOrNumber(QChar::surrogateToUcs4(text[i - 1], c));
    return !c.isLetterOrNumber();
}

// The mentions starting at each position of a text, over DivisionMatcher::mentions() (ordered
// by start): asking every mention, per position or per mention, is quadratic on repetitive text.
class MentionIndex
{
public:
    MentionIndex(const QList<DivisionMatcher::Mention> &mentions, qsizetype textSize)
        : m_mentions(mentions), m_first(size_t(textSize) + 2)
    {
        qsizetype k = 0;
        for (qsizetype p = 0; p <= textSize + 1; ++p) {
            while (k < mentions.size() && mentions[k].start < p)
                ++k;
            m_first[size_t(p)] = k;
        }
        Q_ASSERT(k == mentions.size());
    }

    // The mentions starting at p, in the list's order.
    std::span<const DivisionMatcher::Mention> at(qsizetype p) const
    {
        if (p < 0 || size_t(p) + 1 >= m_first.size())
            return {};
        const qsizetype first = m_first[size_t(p)];
        return {m_mentions.constData() + first, size_t(m_first[size_t(p) + 1] - first)};
    }

private:
    const QList<DivisionMatcher::Mention> &m_mentions;
    std::vector<qsizetype> m_first; // the index of the first mention starting at p or later
};

class Parse
{
public:
    Parse(QStringView text, const Tables &t) : m_text(text), m_t(t)
    {
        // Number runs are asked for at every position (each Latin letter may open a building
        // number, A座): precomputed right to left so each question is answered at once, not by
        // a scan to the run's end, which is quadratic on a long run of letters.
        const size_t n = size_t(text.size());
        m_runEnd[0].resize(n + 1);
        m_runEnd[1].resize(n + 1);
        m_numeralsBefore.resize(n + 1);
        m_runEnd[0][n] = m_runEnd[1][n] = qsizetype(n);
        for (qsizetype i = qsizetype(n) - 1; i >= 0; --i) {
            const QChar c = text[i];
            const bool plain = isDigit(c) || isLatin(c);
            m_runEnd[0][size_t(i)] = plain ? m_runEnd[0][size_t(i) + 1] : i;
            m_runEnd[1][size_t(i)] = plain || isChineseNumeral(c) ? m_runEnd[1][size_t(i) + 1] : i;
        }
        m_numeralsBefore[0] = 0;
        for (size_t i = 0; i < n; ++i) {
            const QChar c = text[qsizetype(i)];
            m_numeralsBefore[i + 1] = m_numeralsBefore[i] + (isDigit(c) || isChineseNumeral(c));
        }
    }

    // The mentions of divisions in the text.
    void setMentions(const MentionIndex *mentions) { m_mentions = mentions; }

    QList<StructureParser::Segment> segments;

    void add(Key key, qsizetype start, qsizetype end)
    {
        if (end <= start)
            return;
        // Merge adjacent noise into one redundant span.
        if (key == Redundant && !segments.isEmpty() && segments.last().end == start &&
            segments.last().key == QStringView(kKeyNames[Redundant]) && m_lastNoise &&
            isNoise(m_text, start)) {
            segments.last().end = end;
            segments.last().text =
                m_text.sliced(segments.last().start, end - segments.last().start).toString();
            return;
        }
        m_lastNoise = key == Redundant && isNoise(m_text, start);
        StructureParser::Segment s;
        s.key = QString::fromUtf16(kKeyNames[key]);
        s.start = start;
        s.end = end;
        s.text = m_text.sliced(start, end - start).toString();
        segments.append(s);
        if (key != Redundant) {
            m_have[key] = true;
            m_last = key;
        }
        if (key > Town && key != Redundant && key != Assist && key != Direction && key != OtherInfo)
            m_pastDivisions = true;
    }

    bool pastDivisions() const { return m_pastDivisions; }

    // Whether anything address-like was read: a division, a suffix keyword or a numbered unit.
    bool anchored = false;

    void addDivision(Key key, qsizetype start, qsizetype end)
    {
        anchored = true;
        add(key, start, end);
        m_level = std::max(m_level, levelOf(key));
    }

    static int levelOf(Key key)
    {
        switch (key) {
        case Country:
            return 0;
        case Prov:
            return 1;
        case City:
            return 2;
        case District:
            return 3;
        case Town:
            return 4;
        default:
            return 5;
        }
    }

    // Reads [from, to) as tokens; `nextLevel` is the level of the next division segment.
    void readGap(qsizetype from, qsizetype to, int nextLevel)
    {
        m_frontOfDivisions = nextLevel < 5 && m_level == 0;
        qsizetype p = from;
        while (p < to) {
            if (isNoise(m_text, p)) {
                qsizetype e = p + 1;
                while (e < to && isNoise(m_text, e))
                    ++e;
                add(Redundant, p, e);
                p = e;
                continue;
            }
            if (const qsizetype e = standaloneAt(p, to); e > p) {
                const Standalone kind = m_t.words.value(m_text.sliced(p, e - p));
                add(kind == Standalone::Assist ? Assist : Redundant, p, e);
                p = e;
                continue;
            }
            if (const qsizetype e = readNumber(p, to); e > p) {
                p = e;
                continue;
            }
            p = readWord(p, to, nextLevel);
        }
    }

private:
    // The end of the longest standalone word at p (that is not the start of a longer name), or p.
    qsizetype standaloneAt(qsizetype p, qsizetype to) const
    {
        for (qsizetype len = std::min(m_t.maxWord, to - p); len >= 1; --len) {
            const auto it = m_t.words.constFind(m_text.sliced(p, len));
            if (it == m_t.words.cend())
                continue;
            // Single characters (旁, 内, 与, 收...) only between elements, never at the start.
            if (len == 1 && segments.isEmpty())
                return p;
            if (len == 1 && p + 1 < to && !isNoise(m_text, p + 1) &&
                it.value() == Standalone::Redundant)
                return p;
            // 与/和 join two roads; elsewhere they are part of a name.
            if (len == 1 && (m_text[p] == u'与' || m_text[p] == u'和') && m_last != Road &&
                m_last != SubRoad && m_last != RoadNo)
                return p;
            if (len == 1 && (m_text[p] == u'内' || m_text[p] == u'旁') && m_last < Road)
                return p;
            if (len == 1 && m_text[p] == u'的' && !m_pastDivisions)
                return p;
            return p + len;
        }
        return p;
    }

    // The end of the run of digits, letters and Chinese numerals at p.
    qsizetype atomEnd(qsizetype p, qsizetype to, bool allowChinese) const
    {
        return std::min(m_runEnd[allowChinese ? 1 : 0][size_t(p)], std::max(p, to));
    }

    // Surrogate pairs are one character: positions step over them, lengths count them once,
    // and no segment boundary falls between their halves.
    qsizetype charsBack(qsizetype i, qsizetype count, qsizetype floor) const
    {
        for (; count > 0 && i > floor; --count) {
            --i;
            if (i > floor && m_text[i].isLowSurrogate() && m_text[i - 1].isHighSurrogate())
                --i;
        }
        return i;
    }
    qsizetype charsForward(qsizetype i, qsizetype count, qsizetype ceiling) const
    {
        for (; count > 0 && i < ceiling; --count) {
            ++i;
            if (i < ceiling && m_text[i].isLowSurrogate() && m_text[i - 1].isHighSurrogate())
                ++i;
        }
        return i;
    }
    // The number of characters in [from, to), counted up to `cap` (the rules compare lengths
    // with small numbers; counting a long word to its end per keyword would be quadratic).
    qsizetype charCount(qsizetype from, qsizetype to, qsizetype cap) const
    {
        qsizetype count = 0;
        for (qsizetype i = from; i < to && count < cap; i = charsForward(i, 1, to))
            ++count;
        return count;
    }

    // The unit (Key) after a number at p, its length in *len; KeyCount when none.
    Key unitAt(qsizetype p, qsizetype to, qsizetype *len) const
    {
        for (qsizetype l = std::min(m_t.maxUnit, to - p); l >= 1; --l) {
            const auto it = m_t.units.constFind(m_text.sliced(p, l));
            if (it != m_t.units.cend()) {
                *len = l;
                return it.value();
            }
        }
        *len = 0;
        return KeyCount;
    }

    // Whether the last element is a housing estate or building (its numbers are buildings).
    bool lastIsEstate() const
    {
        if ((m_last != Poi && m_last != SubPoi) || segments.isEmpty())
            return false;
        static const QStringView estates[] = {u"小区", u"花园", u"苑",   u"公寓", u"大厦", u"家园",
                                              u"新村", u"大楼", u"广场", u"山庄", u"城"};
        const QString &t = segments.last().text;
        return std::any_of(std::begin(estates), std::end(estates),
                           [&](QStringView e) { return t.endsWith(e); });
    }

    // 7街 after a POI and before any road (国际商贸城四区7街): a row of shops in a market,
    // numbered like a unit.
    bool isMarketRow(qsizetype p, qsizetype e) const
    {
        if (e - p < 2 || m_text[e - 1] != u'街' || m_have[Road] || !m_have[Poi] || m_have[CellNo])
            return false;
        for (qsizetype i = p; i < e - 1; ++i) {
            if (!isDigit(m_text[i]) && !isChineseNumeral(m_text[i]))
                return false;
        }
        return true;
    }

    bool roadWaitsForNumber() const
    {
        return (m_last == Road && !m_have[RoadNo]) || (m_last == SubRoad && !m_have[SubRoadNo]);
    }

    bool numberFollows(qsizetype p, qsizetype to) const
    {
        return p < to && (isDigit(m_text[p]) || isLatin(m_text[p]));
    }

    // A number token at p (with its unit), or p when there is none.
    qsizetype readNumber(qsizetype p, qsizetype to)
    {
        const bool startsDigit = isDigit(m_text[p]) || isLatin(m_text[p]);
        const bool startsChinese = isChineseNumeral(m_text[p]);
        if (!startsDigit && !startsChinese)
            return p;
        // Dash-joined atoms: 9-7-1453室, 12-14号.
        QList<std::pair<qsizetype, qsizetype>> atoms;
        qsizetype e = atomEnd(p, to, startsChinese);
        atoms.append({p, e});
        if (startsDigit) {
            while (e + 1 < to && isDash(m_text[e]) && numberFollows(e + 1, to)) {
                const qsizetype next = atomEnd(e + 1, to, false);
                atoms.append({e + 1, next});
                e = next;
            }
        }
        qsizetype unitLen = 0;
        Key unit = unitAt(e, to, &unitLen);
        // A Latin word (KTV, A座 aside) is not a number.
        const bool hasDigit = m_numeralsBefore[size_t(e)] > m_numeralsBefore[size_t(p)];
        // A letter or two with a building unit (C座, AB栋) is numbered like a digit.
        if (!hasDigit && !(e - p <= 2 && atoms.size() == 1 && unit != KeyCount && unit != RoadNo &&
                           unit != Road && unit != Poi && unit != SubRoad && unit != Assist))
            return p;
        if (startsChinese && unit == KeyCount)
            return p; // 十里亭: a name, not a number
        if (startsChinese && (unit == Road || unit == Poi) && !roadWaitsForNumber())
            return p; // 五马路 is read as a word
        if (unit == KeyCount && e < to && !isNoise(m_text, e) && !isDigit(m_text[e]) &&
            atoms.size() == 1 && hasWordSuffixAhead(e, to))
            return p; // 1号线, 3区... are read as words by readWord
        qsizetype end = e + unitLen;
        // 14号大街, 3号路: a numbered road.
        if (unit == RoadNo && atoms.size() == 1 && !m_have[Road]) {
            for (qsizetype l = std::min(m_t.maxSuffix, to - end); l >= 1; --l) {
                if (m_t.suffixes.value(m_text.sliced(end, l), Kind::Poi) == Kind::Road &&
                    m_t.suffixes.contains(m_text.sliced(end, l))) {
                    anchored = true;
                    add(Road, p, end + l);
                    return end + l;
                }
            }
        }

        // Resolve the unit by context.
        auto numberKey = [&](Key u) -> Key {
            switch (u) {
            case RoadNo: // 号
                if (m_last == CellNo && !m_have[RoomNo])
                    return RoomNo; // a shop in a market row (7街8号)
                if (m_last == SubRoad && !m_have[SubRoadNo])
                    return SubRoadNo;
                if (m_have[Road] && !m_have[RoadNo] && !m_have[HouseNo] && !m_have[Poi])
                    return RoadNo;
                if (m_have[Road] && !m_have[RoadNo] && m_last == Road)
                    return RoadNo;
                if (!m_have[Road] && !m_have[RoadNo] && !m_have[HouseNo] && !lastIsEstate())
                    return RoadNo; // a village or place numbered without a road
                if (!m_have[HouseNo])
                    return HouseNo;
                // 8幢3号: a short number after the building is its unit, a long one a room.
                if (!m_have[CellNo] && m_last == HouseNo && e - p <= 2)
                    return CellNo;
                return RoomNo;
            case SubRoad: // 弄
                if (m_have[Road] && !m_have[RoadNo] && !m_have[SubRoad])
                    return SubRoad;
                if (!m_have[RoadNo])
                    return RoadNo;
                return HouseNo;
            case Road:
                if (isMarketRow(p, end))
                    return CellNo;
                return m_have[Road] ? SubRoad : Road;
            case Poi:
                return m_have[Poi] ? SubPoi : Poi;
            case FloorNo:
                return FloorNo;
            default:
                return u;
            }
        };

        if (unit != KeyCount)
            anchored = true;
        if (unit != KeyCount) {
            if (atoms.size() == 1 || (unit == RoadNo && atoms.size() == 2 && isRange(atoms) &&
                                      numberKey(RoadNo) == RoadNo)) {
                add(numberKey(unit), p, end);
                return end;
            }
        }
        if (unit == KeyCount && segments.isEmpty() == false && !m_pastDivisions && m_level == 0 &&
            m_frontOfDivisions) {
            add(OtherInfo, p, end); // 310012 浙江省...: a zip code or a label number
            return end;
        }
        if (unit == KeyCount && segments.isEmpty() && m_frontOfDivisions) {
            add(OtherInfo, p, end);
            return end;
        }
        if (atoms.size() == 1) {
            // A bare number.
            Key k;
            if (m_last == CellNo && !m_have[RoomNo])
                k = RoomNo;
            else if (roadWaitsForNumber())
                k = m_last == SubRoad ? SubRoadNo : RoadNo;
            else if (!m_have[Road] && !m_have[RoadNo] && !m_have[HouseNo] && !lastIsEstate() &&
                     (m_last == Poi || m_last == Community))
                k = RoadNo;
            else if (!m_have[HouseNo] && (m_have[Poi] || m_have[Community] || m_have[RoadNo]))
                k = HouseNo;
            else if (m_last == HouseNo && !m_have[CellNo] && end < to)
                k = CellNo;
            else if (m_have[HouseNo])
                k = RoomNo;
            else if (!m_have[RoadNo] && m_have[Road])
                k = RoadNo;
            else
                k = m_have[Poi] ? SubPoi : Poi;
            add(k, p, end);
            return end;
        }
        // Two or more dash-joined numbers.
        if (atoms.size() == 2 && unit == KeyCount && roadWaitsForNumber() && isRange(atoms)) {
            add(m_last == SubRoad ? SubRoadNo : RoadNo, p, end);
            return end;
        }
        if (atoms.size() == 2 && m_have[HouseNo] && !m_have[RoomNo]) {
            add(RoomNo, p, end); // 1703-2
            return end;
        }
        QList<Key> order;
        if (roadWaitsForNumber())
            order.append(m_last == SubRoad ? SubRoadNo : RoadNo);
        if (!m_have[HouseNo])
            order.append(HouseNo);
        if (atoms.size() - order.size() >= 2 && !m_have[CellNo])
            order.append(CellNo);
        while (order.size() < atoms.size())
            order.append(RoomNo);
        // A unit names the last part: 9-7-1453室 (室), 10-2号 (号: the room in that order).
        for (qsizetype i = 0; i < atoms.size(); ++i) {
            if (i > 0)
                add(Redundant, atoms[i - 1].second, atoms[i].first);
            const bool last = i == atoms.size() - 1;
            Key k = order[i];
            if (last && unit != KeyCount && unit != RoadNo && unit != SubRoad)
                k = numberKey(unit);
            add(k, atoms[i].first, last ? end : atoms[i].second);
        }
        return end;
    }

    bool isRange(const QList<std::pair<qsizetype, qsizetype>> &atoms) const
    {
        bool ok1 = false, ok2 = false;
        const int a = m_text.sliced(atoms[0].first, atoms[0].second - atoms[0].first).toInt(&ok1);
        const int b = m_text.sliced(atoms[1].first, atoms[1].second - atoms[1].first).toInt(&ok2);
        return ok1 && ok2 && b > a && b - a < 100;
    }

    // Whether a word suffix keyword ends within two characters after position p.
    bool hasWordSuffixAhead(qsizetype p, qsizetype to) const
    {
        const qsizetype last = charsForward(p, 2, to);
        for (qsizetype e = p + 1; e <= last; ++e) {
            for (qsizetype len = 1; len <= e - p; ++len) {
                if (m_t.suffixes.contains(m_text.sliced(e - len, len)))
                    return true;
            }
        }
        return false;
    }

    // The keyword suffix ending at e with its start >= minStart (longest), or none.
    bool suffixAt(qsizetype e, qsizetype minStart, Kind *kind, qsizetype *len) const
    {
        for (qsizetype l = std::min(m_t.maxSuffix, e - minStart); l >= 1; --l) {
            const auto it = m_t.suffixes.constFind(m_text.sliced(e - l, l));
            if (it != m_t.suffixes.cend()) {
                *kind = it.value();
                *len = l;
                return true;
            }
        }
        return false;
    }

    // A word from p to its suffix keyword (or to the next number, noise or standalone word).
    qsizetype readWord(qsizetype p, qsizetype to, int nextLevel)
    {
        // A one-character POI keyword (园, 厂, 楼...) often sits inside a longer name (科技园区,
        // 厂房): it ends the word only when no other keyword follows before the word breaks.
        bool weak = false;
        qsizetype e = p + 1;
        for (; e <= to; ++e) {
            const QChar c = m_text[e - 1];
            if (isNoise(m_text, e - 1))
                break;
            if (e - 1 > p && (isDigit(c) || isLatin(c))) {
                // 丹溪1区, 3道9路: a number inside a name when a suffix follows it closely.
                const qsizetype q = atomEnd(e - 1, to, false);
                if (q < to && hasWordSuffixAhead(q, to) && unitIsNotBuilding(q, to)) {
                    e = q;
                    continue;
                }
                break;
            }
            if (e - 1 > p && isAssistStart(e - 1, to))
                break;
            Kind kind;
            qsizetype len = 0;
            if (!suffixAt(e, p + 1, &kind, &len))
                continue;
            // A longer keyword overlapping this one wins (街道 over 街, 市场 over 市).
            if (overlappingLonger(e, p, to))
                continue;
            // 横街 + 镇: a town named after a street.
            if (!m_pastDivisions && m_level < 4 && nextLevel > 4 && e < to && kind != Kind::Town) {
                for (QStringView t :
                     {QStringView(u"街道"), QStringView(u"镇"), QStringView(u"乡")}) {
                    if (m_text.sliced(e).startsWith(t) && charCount(p, e, 5) <= 4) {
                        e += t.size();
                        kind = Kind::Town;
                        break;
                    }
                }
            }
            // A POI keyword right after another keyword names the whole (中关村大厦, 新村小区).
            if (kind != Kind::Town && kind != Kind::Road && e < to) {
                for (qsizetype l = std::min(m_t.maxSuffix, to - e); l >= 2; --l) {
                    if (m_t.suffixes.value(m_text.sliced(e, l), Kind::Prov) == Kind::Poi &&
                        m_t.suffixes.contains(m_text.sliced(e, l))) {
                        e += l;
                        kind = Kind::Poi;
                        len = l;
                        break;
                    }
                }
            }
            // A road suffix right after a POI keyword makes a road (中心街, 广场路).
            if (kind != Kind::Road && kind != Kind::Town && e < to) {
                Kind next;
                qsizetype nlen = 0;
                for (qsizetype l = 1; l <= 2 && e + l <= to; ++l) {
                    if (suffixAt(e + l, e, &next, &nlen) && nlen == l && next == Kind::Road &&
                        !isAssistStart(e, to)) {
                        e += l;
                        kind = Kind::Road;
                        break;
                    }
                }
            }
            if (kind == Kind::Poi && len == 1 && e < to) {
                weak = true;
                continue;
            }
            if (emitWord(kind, p, e, nextLevel))
                return e;
            // Not a division here: keep reading (区 of 丹溪1区 when past the divisions).
        }
        // No keyword: a name (a POI, or whatever the position says).
        const qsizetype end = std::min(e - 1, to);
        const qsizetype stop = std::max(end, p + 1);
        anchored = anchored || weak;
        if (!weak && !m_pastDivisions && nextLevel < 5 && m_level == 0) {
            add(Redundant, p, stop); // words in front of the divisions: 收货地址浙江省...
            return stop;
        }
        add(m_have[Poi] ? SubPoi : Poi, p, stop);
        return stop;
    }

    // Where a road word [p, e) holds a name glued before the road's own name (临平 + 朝阳东路,
    // 私营工业城 + 新横六路, 东风村 + 花园路, 大舜 + 纽扣南路), the start of the road's name, or p.
    // A road's stem (its name before the suffix and any 东西南北, numeral or letter) is nearly
    // always 2 or 3 characters, so only a stem of 4 or more is split: after the last keyword that
    // leaves a 2-character stem, else after a division named at the front, else before the
    // stem's last 2 characters. *front tells which.
    enum class Front : quint8
    {
        None,
        Keyword,
        Division,
        Name
    };
    qsizetype roadNameStart(qsizetype p, qsizetype e, Front *front) const
    {
        *front = Front::None;
        qsizetype stemEnd = e;
        for (qsizetype l = std::min(m_t.maxSuffix, e - p - 1); l >= 1; --l) {
            const auto it = m_t.suffixes.constFind(m_text.sliced(e - l, l));
            if (it != m_t.suffixes.cend() && *it == Kind::Road) {
                stemEnd = e - l;
                break;
            }
        }
        if (stemEnd == e)
            return p;
        const bool group = m_text[e - 1] == u'组';
        qsizetype digits = 0, numerals = 0;
        while (stemEnd > p && (isDigit(m_text[stemEnd - 1]) || isLatin(m_text[stemEnd - 1]) ||
                               isChineseNumeral(m_text[stemEnd - 1]))) {
            digits += isDigit(m_text[stemEnd - 1]) ? 1 : 0;
            ++numerals;
            --stemEnd;
        }
        // A numbered village group after its village (邹家2组), a street numbered in digits after
        // a longer name (黄城里5街; 新兴1路 is a road).
        if (numerals > 0 && stemEnd > p &&
            (group || (digits > 0 && charCount(p, stemEnd, 3) >= 3))) {
            *front = Front::Name;
            return stemEnd;
        }
        // 中 is as often part of the stem (洋中路) as a direction.
        while (stemEnd > p && (QStringView(u"东西南北").contains(m_text[stemEnd - 1]) ||
                               isDigit(m_text[stemEnd - 1]) || isLatin(m_text[stemEnd - 1]) ||
                               isChineseNumeral(m_text[stemEnd - 1])))
            --stemEnd;
        if (charCount(p, stemEnd, 4) < 4)
            return p;
        // The stem's last two characters, wherever a pair sits.
        const qsizetype lastTwo = charsBack(stemEnd, 2, p);
        for (qsizetype q = lastTwo; q >= charsForward(p, 2, stemEnd); q = charsBack(q, 1, p)) {
            Kind kind;
            qsizetype len = 0;
            if (suffixAt(q, p + 1, &kind, &len) && kind != Kind::Road && kind != Kind::RoadPart &&
                kind != Kind::Country) {
                *front = Front::Keyword;
                return q;
            }
        }
        qsizetype q = p;
        for (const DivisionMatcher::Mention &m : mentionsAt(p)) {
            if (m.end <= lastTwo)
                q = std::max(q, m.end);
        }
        if (charCount(p, q, 2) >= 2) {
            *front = Front::Division;
            return q;
        }
        *front = Front::Name;
        return lastTwo;
    }

    std::span<const DivisionMatcher::Mention> mentionsAt(qsizetype p) const
    {
        return m_mentions ? m_mentions->at(p) : std::span<const DivisionMatcher::Mention>();
    }

    // Reads the name glued before a road (see roadNameStart); returns where the road starts.
    qsizetype readRoadFront(qsizetype p, qsizetype e)
    {
        Front front;
        const qsizetype q = roadNameStart(p, e, &front);
        switch (front) {
        case Front::None:
            return p;
        case Front::Keyword:
            readGap(p, q, 5);
            return q;
        case Front::Division: {
            // An old town name written without 镇/街道 (临平, 沈家门), or an upper level again.
            bool town = false;
            for (const DivisionMatcher::Mention &m : mentionsAt(p)) {
                if (m.end == q)
                    town = town || m.division->level == Gazetteer::Level::Town ||
                           (m.division->level == Gazetteer::Level::District && m_have[District]);
            }
            if (town && !m_have[Town] && !m_pastDivisions)
                addDivision(Town, p, q);
            else
                add(Redundant, p, q);
            return q;
        }
        case Front::Name:
            if (m_have[Town] && !m_have[Community] && !m_have[Poi] && !m_pastDivisions)
                add(Community, p, q);
            else
                add(m_have[Poi] ? SubPoi : Poi, p, q);
            return q;
        }
        return p;
    }

    bool unitIsNotBuilding(qsizetype q, qsizetype to) const
    {
        qsizetype len = 0;
        const Key u = unitAt(q, to, &len);
        return u == KeyCount || u == Road || u == Poi;
    }

    bool isAssistStart(qsizetype p, qsizetype to) const
    {
        for (qsizetype len = std::min(m_t.maxWord, to - p); len >= 2; --len) {
            if (m_t.words.value(m_text.sliced(p, len), Standalone::Redundant) ==
                    Standalone::Assist &&
                m_t.words.contains(m_text.sliced(p, len)))
                return true;
        }
        return false;
    }

    bool overlappingLonger(qsizetype e, qsizetype p, qsizetype to) const
    {
        for (qsizetype e2 = e + 1; e2 <= std::min(to, e + 3); ++e2) {
            for (qsizetype l = e2 - e + 1; l <= std::min(m_t.maxSuffix, e2 - p - 1); ++l) {
                if (m_t.suffixes.contains(m_text.sliced(e2 - l, l)))
                    return true;
            }
        }
        return false;
    }

    // Emits the word [p, e) with a suffix of `kind`; false when the keyword does not apply here.
    bool emitWord(Kind kind, qsizetype p, qsizetype e, int nextLevel)
    {
        if (kind != Kind::City && kind != Kind::Prov && kind != Kind::District &&
            kind != Kind::Town)
            anchored = true;
        const bool divisionZone = !m_pastDivisions && charCount(p, e, 8) <= 7;
        auto division = [&](Key key) {
            const int level = levelOf(key);
            if (!divisionZone || level <= m_level || level >= nextLevel || m_have[key])
                return false;
            addDivision(key, p, e);
            return true;
        };
        switch (kind) {
        case Kind::Country:
            if (segments.isEmpty() || !m_pastDivisions) {
                add(Country, p, e);
                return true;
            }
            return false;
        case Kind::Prov:
            return division(Prov);
        case Kind::City:
            if (division(m_level < 2 && !m_have[City] ? City : District))
                return true;
            return false;
        case Kind::District:
            if (division(District))
                return true;
            if (m_have[Poi] || m_pastDivisions) {
                add(m_have[Poi] ? SubPoi : Poi, p, e);
                return true;
            }
            return false;
        case Kind::Town:
            if (division(Town))
                return true;
            if (m_text[e - 1] == u'道' && !m_have[Road]) {
                add(Road, p, e);
                return true;
            }
            return false;
        case Kind::DevZone:
            if (!m_have[DevZone] && !m_have[Road] && !m_have[Poi]) {
                add(DevZone, p, e);
                return true;
            }
            add(m_have[Poi] ? SubPoi : Poi, p, e);
            return true;
        case Kind::Community:
            if (!m_have[Community] && !m_have[Road] && !m_have[Poi] && !m_have[RoadNo]) {
                add(Community, p, e);
                return true;
            }
            add(m_have[Poi] ? SubPoi : Poi, p, e);
            return true;
        case Kind::Road: {
            Key key = m_have[Poi] ? SubPoi : Poi;
            if (!m_have[Road])
                key = Road;
            else if (!m_have[SubRoad] && (m_last == Road || m_last == Assist || m_last == RoadNo))
                key = SubRoad;
            if (key == Road || key == SubRoad)
                p = readRoadFront(p, e);
            if (key == Road && isMarketRow(p, e))
                key = CellNo;
            add(key, p, e);
            return true;
        }
        case Kind::RoadPart:
            if (m_last == Road) {
                add(SubRoad, p, e);
                return true;
            }
            add(m_have[Poi] ? SubPoi : Poi, p, e);
            return true;
        case Kind::Poi:
            add(m_have[Poi] ? SubPoi : Poi, p, e);
            return true;
        }
        return false;
    }

    QStringView m_text;
    const Tables &m_t;
    std::array<bool, KeyCount> m_have{};
    Key m_last = KeyCount;
    int m_level = 0; // deepest division level read
    bool m_pastDivisions = false;
    bool m_lastNoise = false;
    bool m_frontOfDivisions = false; // reading the text before the first division
    // Per position: where the run of digits and letters (0) or of digits, letters and Chinese
    // numerals (1) starting there ends; how many digits and numerals come before it.
    std::array<std::vector<qsizetype>, 2> m_runEnd;
    std::vector<qsizetype> m_numeralsBefore;
    const MentionIndex *m_mentions = nullptr; // every mention in m_text

    friend class ::StructureParser;
};

} // namespace

const QStringList &StructureParser::keys()
{
    static const QStringList list = [] {
        QStringList l;
        for (const char16_t *k : kKeyNames)
            l.append(QString::fromUtf16(k));
        return l;
    }();
    return list;
}

QString StructureParser::canonicalKey(QStringView key)
{
    for (const QString &k : keys()) {
        if (key.compare(k, Qt::CaseInsensitive) == 0)
            return k;
    }
    return {};
}

StructureParser::StructureParser(const DivisionMatcher &matcher) : m_matcher(matcher)
{
    tables();
}

QList<StructureParser::Segment> StructureParser::parse(QStringView text) const
{
    return parse(text, nullptr);
}

QList<StructureParser::Segment> StructureParser::parse(QStringView text,
                                                       DivisionMatcher::Result *divisions) const
{
    // The whole text is resolved, not a window at its start: the matcher caps its mentions per
    // level, so repetitive text stays cheap, and an address may follow a long note.
    // Level suffixes a short form may be followed by (上望 + 镇 when only 上望街道 is known).
    static const QList<QStringView> levelSuffixes[] = {{u"自治区", u"省"},
                                                       {u"地区", u"市", u"州", u"盟"},
                                                       {u"自治县", u"区", u"县", u"市", u"旗"},
                                                       {u"街道", u"镇", u"乡"}};
    static const QList<QStringView> anySuffix = {u"自治区", u"省", u"市",   u"自治县", u"区",
                                                 u"县",     u"旗", u"街道", u"镇",     u"乡"};
    // The end of a mention with the level suffix a short form may be followed by.
    const auto extendedEnd = [&](const DivisionMatcher::Mention &m, int level) {
        if (m.shortForm) {
            for (QStringView suffix : levelSuffixes[level]) {
                if (text.sliced(m.end).startsWith(suffix))
                    return m.end + suffix.size();
            }
        }
        return m.end;
    };
    // A mention that is not the division it names: a generic town name read alone (街道, 经济
    // 开发区), a short form that opens a road, POI or zone name (中关村大街, 湖墅南路, 天子湖工业
    // 园区) or carries another level's suffix (金乡 + 镇 is a town, not 金乡县), a short form that
    // ends like a village or road (五马村).
    const QList<DivisionMatcher::Mention> textMentions = m_matcher.mentions(text);
    const MentionIndex textIndex(textMentions, text.size());
    // A full name read where the matcher chose a short form at the same place (金乡镇 over the
    // 金乡 of 金乡县): the text names that division, whatever the level.
    const auto longerFullName = [&](const DivisionMatcher::Mention &m) {
        const DivisionMatcher::Mention *best = nullptr;
        for (const DivisionMatcher::Mention &o : textIndex.at(m.start)) {
            if (!o.shortForm && o.end > m.end && !o.division->placeholder &&
                (!best || o.end > best->end))
                best = &o;
        }
        return m.shortForm ? best : nullptr;
    };
    const auto dubious = [&](const DivisionMatcher::Mention &m, int level) {
        if (longerFullName(m))
            return false;
        const Tables &t = tables();
        const QStringView name = text.sliced(m.start, m.end - m.start);
        const auto kindOf = [&](QStringView w) {
            const auto it = t.suffixes.constFind(w);
            return it == t.suffixes.cend() ? std::optional<Kind>() : std::optional<Kind>(*it);
        };
        if (level == 3 && kindOf(name) && !m.shortForm)
            return true;
        // 钱江 + 经济开发区: a generic town name inside a longer zone name.
        if (level == 3 && m.start > 0 && !isNoise(text, m.start - 1) && name.size() >= 3 &&
            kindOf(name.last(3)) == Kind::DevZone)
            return true;
        if (!m.shortForm || extendedEnd(m, level) != m.end)
            return false;
        for (QStringView suffix : anySuffix) {
            if (text.sliced(m.end).startsWith(suffix))
                return true;
        }
        for (qsizetype l = 1; l <= t.maxSuffix && m.end + l <= text.size(); ++l) {
            const auto k = kindOf(text.sliced(m.end, l));
            if (k && (*k == Kind::Road || *k == Kind::Poi || *k == Kind::DevZone))
                return true;
        }
        if (m.end + 2 <= text.size() && QStringView(u"东西南北中").contains(text[m.end]) &&
            kindOf(text.sliced(m.end + 1, 1)) == Kind::Road)
            return true;
        const auto last = kindOf(name.last(1));
        return last && (*last == Kind::Community || *last == Kind::Road);
    };
    QString masked;
    QStringView view = text;
    DivisionMatcher::Result r;
    const DivisionMatcher::Mention *chain[] = {&r.province, &r.city, &r.district, &r.town};
    for (int round = 0; round < 3; ++round) {
        r = m_matcher.resolve(view);
        bool changed = false;
        for (int i = 0; i < 4; ++i) {
            const DivisionMatcher::Mention &m = *chain[i];
            if (!m.division || m.start < 0 || !dubious(m, i))
                continue;
            // Hide it and resolve again: the chain may have a better reading without it.
            if (masked.isEmpty())
                masked = text.toString();
            for (qsizetype k = m.start; k < m.end; ++k)
                masked[k] = QChar(0x3000);
            changed = true;
        }
        if (!changed)
            break;
        view = masked;
    }
    if (divisions)
        *divisions = r;

    // The division segments the matcher read, as (level key, start, end).
    struct Div
    {
        Key key;
        qsizetype start, end;
        const Gazetteer::Division *division;
    };
    QList<Div> divs;
    const Key chainKeys[] = {Prov, City, District, Town};
    for (int i = 0; i < 4; ++i) {
        const DivisionMatcher::Mention &m = *chain[i];
        if (!m.division || m.start < 0 || dubious(m, i))
            continue;
        qsizetype end = extendedEnd(m, i);
        const Gazetteer::Division *division = m.division;
        Key key = chainKeys[i];
        if (const DivisionMatcher::Mention *full = longerFullName(m)) {
            end = full->end;
            division = full->division;
            key = chainKeys[int(division->level) - 1];
        }
        // A municipality (上海市) is written where a city goes: the corpus and users call it one.
        if (key == Prov && r.city.division && r.city.division->placeholder &&
            division->name.endsWith(u'市'))
            key = City;
        divs.append({key, m.start, end, division});
    }
    // In text order, each level below the one before (浙江 in 浙江大学 after 西湖区 is a name).
    std::sort(divs.begin(), divs.end(),
              [](const Div &a, const Div &b) { return a.start < b.start; });
    for (qsizetype i = 1; i < divs.size(); ++i) {
        if (divs[i].start < divs[i - 1].end ||
            Parse::levelOf(divs[i].key) <= Parse::levelOf(divs[i - 1].key)) {
            divs.remove(i);
            --i;
        }
    }
    const QList<DivisionMatcher::Mention> all =
        masked.isEmpty() ? textMentions : m_matcher.mentions(view);
    // The ends of the mentions starting at each position: the scans below ask for them per
    // position, which over every mention would be quadratic on repetitive text.
    std::vector<QVarLengthArray<qsizetype, 2>> mentionEnds(size_t(text.size()) + 1);
    for (const DivisionMatcher::Mention &o : all)
        mentionEnds[size_t(o.start)].append(o.end);
    // The end of the longest mention starting at `at` and ending by `limit`, or `at`.
    const auto longestAt = [&](qsizetype at, qsizetype limit) {
        qsizetype end = at;
        for (const qsizetype e : mentionEnds[size_t(at)]) {
            if (e <= limit)
                end = std::max(end, e);
        }
        return end;
    };
    // Whether [from, to) is only division names and noise (a pasted repeat).
    const auto onlyDivisions = [&](qsizetype from, qsizetype to) {
        qsizetype c = from;
        while (c < to) {
            if (isNoise(view, c)) {
                ++c;
                continue;
            }
            const qsizetype e = longestAt(c, to);
            if (e == c)
                return false;
            c = e;
        }
        return true;
    };
    // A level named twice in a row: keep the copy nearest the rest of the address.
    for (qsizetype i = divs.size() - 1; i >= 0; --i) {
        const qsizetype limit = i + 1 < divs.size() ? divs[i + 1].start : text.size();
        for (const DivisionMatcher::Mention &o : all) {
            if (o.division == divs[i].division && o.start >= divs[i].end && o.end <= limit &&
                o.end - o.start >= divs[i].end - divs[i].start &&
                longestAt(o.start, limit) == o.end && onlyDivisions(divs[i].end, o.start) &&
                !dubious(o, Parse::levelOf(divs[i].key) - 1)) {
                divs[i].start = o.start;
                divs[i].end = o.end;
            }
        }
    }
    for (qsizetype i = 1; i < divs.size(); ++i) {
        if (divs[i].start < divs[i - 1].end) {
            divs.remove(i - 1);
            i = 0;
        }
    }
    // Other copies of the chain's names among the divisions: redundant.
    if (!divs.isEmpty()) {
        QList<Div> copies;
        for (const DivisionMatcher::Mention &o : all) {
            if (o.end > divs.last().start || longestAt(o.start, text.size()) != o.end)
                continue;
            bool onChain = false, overlaps = false;
            for (const Div &d : divs) {
                onChain = onChain || d.division == o.division;
                overlaps = overlaps || (o.start < d.end && d.start < o.end);
            }
            for (const Div &c : copies)
                overlaps = overlaps || (o.start < c.end && c.start < o.end);
            if (onChain && !overlaps && o.start > divs.first().start)
                copies.append({Redundant, o.start, o.end, o.division});
        }
        divs += copies;
        std::sort(divs.begin(), divs.end(),
                  [](const Div &a, const Div &b) { return a.start < b.start; });
    }
    const bool haveAll = !divs.isEmpty();

    Parse p(text, tables());
    p.setMentions(&textIndex);
    qsizetype pos = 0;
    if (!divs.isEmpty() && haveAll) {
        // Division names before the chain are a pasted prefix: redundant.
        const qsizetype firstDiv = divs.first().start;
        qsizetype cursor = 0;
        bool onlyDivisions = firstDiv > 0;
        // Only when everything before the chain is division names and noise.
        const auto onChain = [&](const Gazetteer::Division *d) {
            return std::any_of(divs.cbegin(), divs.cend(),
                               [d](const Div &x) { return x.division == d; });
        };
        for (const DivisionMatcher::Mention &o : all) {
            if (o.start < cursor || o.end > firstDiv)
                continue;
            // A short form of another division is too weak a sign (龙州 + 街道...).
            if (o.shortForm && !onChain(o.division))
                continue;
            if (o.start > cursor) {
                bool noise = true;
                for (qsizetype i = cursor; i < o.start; ++i)
                    noise = noise && isNoise(view, i);
                if (!noise)
                    continue;
            }
            cursor = longestAt(o.start, firstDiv);
        }
        for (qsizetype i = cursor; i < firstDiv; ++i)
            onlyDivisions = onlyDivisions && isNoise(view, i);
        if (onlyDivisions && cursor > 0) {
            // One redundant span per name, noise between them too.
            qsizetype s = 0;
            for (const DivisionMatcher::Mention &o : all) {
                if (o.start < s || o.end > cursor)
                    continue;
                const qsizetype end = longestAt(o.start, cursor);
                if (o.start > s)
                    p.add(Redundant, s, o.start);
                p.add(Redundant, o.start, end);
                s = end;
            }
            if (s < firstDiv)
                p.add(Redundant, s, firstDiv);
            pos = firstDiv;
        }
    }
    for (const Div &d : divs) {
        int nextLevel = 5;
        for (const Div &n : divs) {
            if (n.start >= d.start && n.key != Redundant) {
                nextLevel = Parse::levelOf(n.key);
                break;
            }
        }
        p.readGap(pos, d.start, nextLevel);
        // A division named after a road, POI or number is part of a name (春南路浙江富阳纸业).
        if (p.pastDivisions()) {
            pos = d.start;
            break;
        }
        if (d.key == Redundant) {
            p.add(Redundant, d.start, d.end);
            pos = d.end;
            continue;
        }
        // A suffix-read level may already hold this key (rare); then the later read wins.
        p.addDivision(d.key, d.start, d.end);
        pos = d.end;
    }
    p.readGap(pos, text.size(), 5);
    if (!p.anchored)
        return {};
    return p.segments;
}

QString StructureParser::format(const QList<Segment> &segments)
{
    QString out;
    for (const Segment &s : segments) {
        if (!out.isEmpty())
            out += u'\t';
        out += s.key + u'=' + s.text;
    }
    return out;
}

const StructureParser::Segment *StructureParser::find(const QList<Segment> &segments,
                                                      QStringView key)
{
    for (const Segment &s : segments) {
        if (s.key == key)
            return &s;
    }
    return nullptr;
}
