#include "AddressAssessor.h"

#include "PhoneExtractor.h"

namespace {

using Division = Gazetteer::Division;
using Level = Gazetteer::Level;
using Segment = StructureParser::Segment;

int digitValue(QChar c)
{
    if (c >= u'0' && c <= u'9')
        return c.unicode() - u'0';
    if (c.unicode() >= 0xFF10 && c.unicode() <= 0xFF19) // full-width ０-９
        return c.unicode() - 0xFF10;
    return -1;
}

bool isAsciiLetter(QChar c)
{
    return (c >= u'a' && c <= u'z') || (c >= u'A' && c <= u'Z');
}

// The UTF-16 index of code point `cp` in `text` (PhoneExtractor counts code points).
qsizetype utf16Index(QStringView text, qsizetype cp)
{
    qsizetype i = 0;
    for (qsizetype n = 0; n < cp && i < text.size(); ++n)
        i += (text[i].isHighSurrogate() && i + 1 < text.size() && text[i + 1].isLowSurrogate()) ? 2
                                                                                                : 1;
    return i;
}

QString quoted(QStringView s)
{
    return u'\'' + s.toString() + u'\'';
}

bool hasAny(const QList<Segment> &segments, std::initializer_list<const char16_t *> keys)
{
    for (const char16_t *k : keys) {
        if (StructureParser::find(segments, QStringView(k)))
            return true;
    }
    return false;
}

} // namespace

AddressAssessor::AddressAssessor(const AddressCorrector &corrector,
                                 const AddressCompleter &completer)
    : m_corrector(corrector), m_completer(completer)
{
}

bool AddressAssessor::loadAreaCodes(QByteArrayView tsv, QString *error)
{
    QList<AreaCode> rows;
    QHash<QString, QList<qint64>> byCode;
    int lineNo = 0;
    for (const QByteArray &raw : tsv.toByteArray().split('\n')) {
        ++lineNo;
        const QString line = QString::fromUtf8(raw).trimmed();
        if (line.isEmpty() || line.startsWith(u'#'))
            continue;
        const QStringList f = line.split(u'\t');
        bool okCode = false;
        const qint64 division = f.value(0).toLongLong(&okCode);
        const QString area = f.value(2);
        bool digits = area.size() >= 3 && area.size() <= 4 && area.startsWith(u'0');
        for (QChar c : area)
            digits = digits && c >= u'0' && c <= u'9';
        if (f.size() != 3 || !okCode || f[0].size() != 12 || f[1].isEmpty() || !digits) {
            if (error)
                *error = QStringLiteral("line %1: expected division code (12 digits), name, "
                                        "area code (0 and 2-3 digits)")
                             .arg(lineNo);
            return false;
        }
        rows.append(AreaCode{division, f[1], area});
        byCode[area].append(division);
    }
    m_areaCodes = rows;
    m_byAreaCode = byCode;
    return true;
}

QString AddressAssessor::areaCodeOf(QStringView phone)
{
    QString digits;
    for (QChar c : phone) {
        const int v = digitValue(c);
        if (v >= 0)
            digits += QChar(u'0' + v);
    }
    // With a country prefix (+86, 0086, a bare 86) the area code may drop its 0.
    bool plus = phone.contains(u'+') || phone.contains(u'＋');
    if (digits.startsWith(u"0086")) {
        digits.remove(0, 4);
        plus = true;
    } else if (digits.startsWith(u"86") && (plus || digits.size() >= 12)) {
        digits.remove(0, 2);
        plus = true;
    }
    if (digits.startsWith(u'1') && digits.size() == 11)
        return {}; // a mobile
    if (digits.startsWith(u"400") || digits.startsWith(u"800"))
        return {};
    if (!digits.startsWith(u'0')) {
        // +86 571 ...: the area code without its 0, when a local number follows.
        if (plus && digits.size() >= 9 && digits.at(0) != u'1')
            digits.prepend(u'0');
        else if (plus && digits.startsWith(u"10") && digits.size() >= 10)
            digits.prepend(u'0');
        else
            return {};
    }
    if (digits.size() < 10)
        return {};
    const bool short3 = digits.startsWith(u"010") || digits.startsWith(u"02");
    return digits.left(short3 ? 3 : 4);
}

QString AddressAssessor::category(QStringView code)
{
    if (code == u"NOT_ADDRESS")
        return QStringLiteral("NOT_ADDRESS");
    if (code == u"REGION_INCONSISTENT" || code == u"AREA_CODE_MISMATCH")
        return QStringLiteral("INCONSISTENT");
    if (code == u"PHONE_DIGITS" || code == u"ZIP_DIGITS")
        return QStringLiteral("INVALID_NUMBER");
    if (code == u"REGION_MISSPELLED")
        return QStringLiteral("MISSPELLED");
    if (code.startsWith(u"MISSING_"))
        return QStringLiteral("INCOMPLETE");
    return QStringLiteral("OK");
}

AddressAssessor::Assessment AddressAssessor::assess(QStringView text) const
{
    const Gazetteer &gazetteer = m_corrector.matcher().gazetteer();
    Assessment out;
    auto add = [&](const char *code, const QString &message, qsizetype start = -1,
                   qsizetype end = -1) {
        out.findings.append(Finding{QLatin1String(code), message, start, end});
    };

    const AddressCorrector::Reading reading = m_corrector.correct(text, 1).constFirst();
    const AddressCompleter::Result parsed = m_completer.complete(reading.text);
    const DivisionMatcher::Result &chain = parsed.divisions;
    const QList<Segment> &segments = parsed.segments;

    const bool placed = !chain.isEmpty();
    const bool located = hasAny(segments, {u"road", u"subRoad", u"poi", u"subPoi", u"community",
                                           u"village", u"devZone", u"roadNo", u"houseNo"});
    if (!placed && !located)
        add("NOT_ADDRESS",
            QStringLiteral("No division, road or place name found: this does not look like an "
                           "address"));

    // Names of provinces, cities and districts off the resolved chain.
    bool offChainDistrict = false; // a district is named, just not one of this chain
    if (placed) {
        QList<std::pair<qsizetype, qsizetype>> flagged;
        const QList<DivisionMatcher::Mention> mentions =
            m_corrector.matcher().mentions(reading.text);
        for (const DivisionMatcher::Mention &m : mentions) {
            // 城区, 郊区 and 矿区 are district names and everyday words (the urban area).
            const QString &name = m.division->name;
            if (m.division->level == Level::Town || flagged.contains({m.start, m.end}) ||
                name == u"城区" || name == u"郊区" || name == u"矿区")
                continue;
            bool onChain = false;
            bool covered = false;
            for (const DivisionMatcher::Mention *c :
                 {&chain.province, &chain.city, &chain.district, &chain.town}) {
                if (c->division && !c->inferred() && m.start < c->end && c->start < m.end)
                    covered = true;
            }
            // Every reading of this span (朝阳区 is in 北京 and in 长春) must be off the chain.
            for (const DivisionMatcher::Mention &other : mentions) {
                if (other.start != m.start || other.end != m.end)
                    continue;
                const Division *d = other.division;
                if (d == chain.leaf || Gazetteer::isWithin(*chain.leaf, d) ||
                    Gazetteer::isWithin(*d, chain.leaf))
                    onChain = true;
            }
            if (covered || onChain)
                continue;
            // Inside a longer name (南县 in 苍南县, 吉县 in a repeated 安吉县): not a name of its
            // own.
            bool inside = false;
            // Where divisions are listed, the name starts the text or follows another name.
            bool listed = m.start == 0 || !text[m.start - 1].isLetter();
            for (const DivisionMatcher::Mention &other : mentions) {
                if (other.start <= m.start && m.end <= other.end &&
                    other.end - other.start > m.end - m.start)
                    inside = true;
                if (other.end == m.start)
                    listed = true;
            }
            if (inside || !listed)
                continue;
            // Only a name the parse reads as a division of its own: 南京东路 is a road.
            const Segment *host = nullptr;
            for (const Segment &s : segments) {
                if (s.start >= 0 && s.start <= m.start && m.end <= s.end)
                    host = &s;
            }
            const bool division = host && (host->key == u"prov" || host->key == u"city" ||
                                           host->key == u"district" || host->key == u"town");
            if (!division && (host || m.shortForm))
                continue;
            flagged.append({m.start, m.end});
            offChainDistrict = offChainDistrict || m.division->level == Level::District;
            const QString named = text.mid(m.start, m.end - m.start).toString();
            add("REGION_INCONSISTENT",
                QStringLiteral("%1 (%2) is not in %3: the address names divisions that do not "
                               "belong together")
                    .arg(quoted(named), Gazetteer::pathName(*m.division),
                         Gazetteer::pathName(*chain.leaf)),
                m.start, m.end);
        }
    }

    // Landline area codes against the address.
    const QList<PhoneExtractor::Match> phones = PhoneExtractor::extract(text.toString());
    for (const PhoneExtractor::Match &p : phones) {
        if (!placed || p.kind != PhoneExtractor::Kind::Landline)
            continue;
        const QString area = areaCodeOf(p.word);
        const QList<qint64> served = m_byAreaCode.value(area);
        if (served.isEmpty())
            continue;
        bool agrees = false;
        for (qint64 code : served) {
            const Division *d = gazetteer.byCode(code);
            agrees = agrees || (d && (d == chain.leaf || Gazetteer::isWithin(*chain.leaf, d) ||
                                      Gazetteer::isWithin(*d, chain.leaf)));
        }
        if (agrees)
            continue;
        QStringList names;
        for (qint64 code : served) {
            if (const Division *d = gazetteer.byCode(code))
                names.append(d->name);
        }
        add("AREA_CODE_MISMATCH",
            QStringLiteral("Area code %1 of %2 is %3, but the address is in %4")
                .arg(area, quoted(p.word), names.join(u'/'), Gazetteer::pathName(*chain.leaf)),
            utf16Index(text, p.start), utf16Index(text, p.end));
    }

    // Digit runs: mobiles one digit short or long, zip codes not 6 digits.
    for (qsizetype i = 0; i < text.size();) {
        if (digitValue(text[i]) < 0) {
            ++i;
            continue;
        }
        qsizetype j = i;
        while (j < text.size() && digitValue(text[j]) >= 0)
            ++j;
        const qsizetype length = j - i;
        const bool glued =
            (i > 0 && (isAsciiLetter(text[i - 1]) || text[i - 1] == u'-' || text[i - 1] == u'.' ||
                       text[i - 1] == u'+')) ||
            (j < text.size() && (isAsciiLetter(text[j]) || text[j] == u'-' || text[j] == u'.'));
        // The label right before the run, skipping a colon or spaces.
        qsizetype k = i;
        while (k > 0 && (text[k - 1] == u':' || text[k - 1] == u'：' || text[k - 1].isSpace()))
            --k;
        const QStringView before = text.left(k);
        const bool zipLabel = before.endsWith(u"邮编") || before.endsWith(u"邮政编码");
        const QStringView run = text.mid(i, length);
        if (zipLabel) {
            if (length != 6)
                add("ZIP_DIGITS",
                    QStringLiteral("Zip code %1 has %2 digits; a zip code has 6")
                        .arg(quoted(run))
                        .arg(length),
                    i, j);
        } else if (!glued && (length == 10 || length == 12) && digitValue(text[i]) == 1 &&
                   digitValue(text[i + 1]) >= 3) {
            add("PHONE_DIGITS",
                QStringLiteral("%1 looks like a mobile number but has %2 digits; a mobile number "
                               "has 11")
                    .arg(quoted(run))
                    .arg(length),
                i, j);
        }
        i = j;
    }

    for (const AddressCorrector::Correction &c : reading.corrections)
        add("REGION_MISSPELLED",
            QStringLiteral("%1 is not a division name; did you mean %2 (%3)?")
                .arg(quoted(c.from), quoted(c.to), Gazetteer::pathName(*c.division)),
            c.start, c.end);

    // Missing segments, for what is an address at all.
    if (!placed && located) {
        add("MISSING_REGION",
            QStringLiteral("No province, city or district is named: the address cannot be placed"));
    } else if (placed && chain.leaf->level <= Level::City) {
        const auto below = gazetteer.children(*chain.leaf);
        const bool districts = chain.leaf->level == Level::Province ||
                               (!below.empty() && below.front()->level == Level::District);
        if (districts && !offChainDistrict)
            add("MISSING_DISTRICT",
                QStringLiteral("No district or county: the divisions stop at %1")
                    .arg(Gazetteer::pathName(*chain.leaf)));
    }
    if (placed || located) {
        const Segment *road = StructureParser::find(segments, u"road");
        if (!located) {
            add("MISSING_ROAD",
                QStringLiteral("No road, street, community, village or place name after the "
                               "divisions"));
        } else if (road &&
                   !hasAny(segments, {u"roadNo", u"subRoadNo", u"poi", u"subPoi", u"houseNo"})) {
            add("MISSING_ROAD_NUMBER",
                QStringLiteral("Road %1 has no number")
                    .arg(quoted(text.mid(road->start, road->end - road->start))),
                road->start, road->end);
        }
    }

    static const QStringList order = {QStringLiteral("NOT_ADDRESS"), QStringLiteral("INCONSISTENT"),
                                      QStringLiteral("INVALID_NUMBER"),
                                      QStringLiteral("MISSPELLED"), QStringLiteral("INCOMPLETE")};
    out.code = QStringLiteral("OK");
    qsizetype rank = order.size();
    for (const Finding &f : out.findings)
        rank = std::min(rank, order.indexOf(category(f.code)));
    if (rank < order.size())
        out.code = order[rank];
    return out;
}
