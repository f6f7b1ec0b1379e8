#include "AddressCompleter.h"

#include "AddressCorrector.h"

#include <algorithm>

AddressCompleter::AddressCompleter(const StructureParser &parser) : m_parser(parser) {}

AddressCompleter::Result AddressCompleter::complete(QStringView text) const
{
    using Level = Gazetteer::Level;
    Result out;
    const QList<Segment> parsed = m_parser.parse(text, &out.divisions);
    for (const Segment &s : parsed) {
        if (s.key != u"redundant")
            out.segments.append(s);
    }
    // A town's short form that ends like a road and carries the road's number (南京东路200号,
    // 南京东路 also naming 南京东路街道) is the road: the town is then not known.
    const DivisionMatcher::Mention &town = out.divisions.town;
    if (town.division && !town.inferred() && town.shortForm &&
        !StructureParser::find(out.segments, u"road")) {
        for (qsizetype i = 0; i + 1 < out.segments.size(); ++i) {
            Segment &s = out.segments[i];
            if (s.key == u"town" && s.start == town.start && !s.text.isEmpty() &&
                QStringView(u"路街道巷").contains(s.text.back()) &&
                out.segments[i + 1].key == u"roadNo") {
                s.key = QStringLiteral("road");
                out.divisions.town = {};
                out.divisions.leaf = out.divisions.district.division
                                         ? out.divisions.district.division
                                         : out.divisions.city.division;
                break;
            }
        }
    }
    const DivisionMatcher::Result &chain = out.divisions;
    for (Level level : {Level::Province, Level::City, Level::District, Level::Town}) {
        const DivisionMatcher::Mention &m = chain.at(level);
        if (!m.division)
            continue;
        const QString key = AddressCorrector::levelKey(level);
        const QString value = level == Level::City ? chain.cityName() : m.division->name;
        auto it = std::find_if(out.segments.begin(), out.segments.end(),
                               [&](const Segment &s) { return s.key == key; });
        if (it != out.segments.end()) {
            it->text = value;
        } else {
            out.segments.append(Segment{key, -1, -1, value});
            out.filled.append(key);
        }
    }
    const QStringList &order = StructureParser::keys();
    std::stable_sort(out.segments.begin(), out.segments.end(),
                     [&](const Segment &a, const Segment &b) {
                         return order.indexOf(a.key) < order.indexOf(b.key);
                     });
    std::sort(out.filled.begin(), out.filled.end(), [&](const QString &a, const QString &b) {
        return order.indexOf(a) < order.indexOf(b);
    });
    return out;
}

bool AddressCompleter::isNoise(QStringView key)
{
    for (const char16_t *noise :
         {u"country", u"assist", u"direction", u"person", u"redundant", u"otherInfo"}) {
        if (key == QStringView(noise))
            return true;
    }
    return false;
}

QString AddressCompleter::standardText(const QList<Segment> &segments)
{
    QString out;
    const Segment *prov = StructureParser::find(segments, u"prov");
    for (const Segment &s : segments) {
        if (isNoise(s.key))
            continue;
        if (s.key == u"city" && prov && prov->text == s.text)
            continue;
        out += s.text;
    }
    return out;
}
