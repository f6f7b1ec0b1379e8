#include "LocalData.h"

#include "CoordTransform.h"

#include <QSet>
#include <QStringDecoder>

#include <algorithm>
#include <cmath>

using Division = Gazetteer::Division;

namespace {

// ---- CSV -------------------------------------------------------------------------------------

bool isBlankRecord(const LocalDataCsv::Record &r)
{
    return r.error.isEmpty() && r.fields.size() == 1 && r.fields.first().isEmpty();
}

// The text of the file, or a fatal error: invalid UTF-8 would otherwise import as U+FFFD.
std::optional<QString> decode(QByteArrayView csv, QString *fatal)
{
    if (csv.startsWith("\xEF\xBB\xBF"))
        csv = csv.sliced(3);
    QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    QString text = decoder.decode(csv);
    if (decoder.hasError()) {
        *fatal = QStringLiteral("the file is not UTF-8 text; save it as UTF-8 (CSV UTF-8)");
        return std::nullopt;
    }
    return text;
}

// Column name -> index, from the header record; a fatal error for unknown or duplicate names.
struct Header
{
    QHash<QString, int> columns;
    int size = 0;
    int index(const char *name) const { return columns.value(QLatin1String(name), -1); }
    bool has(const char *name) const { return columns.contains(QLatin1String(name)); }
};

std::optional<Header> readHeader(const LocalDataCsv::Record &record, const QStringList &known,
                                 QString *fatal)
{
    Header h;
    h.size = int(record.fields.size());
    if (!record.error.isEmpty()) {
        *fatal = QStringLiteral("line %1: header row: %2").arg(record.line).arg(record.error);
        return std::nullopt;
    }
    for (int i = 0; i < record.fields.size(); ++i) {
        const QString name = record.fields.at(i).trimmed().toLower();
        if (!known.contains(name)) {
            *fatal = QStringLiteral("line %1: unknown column '%2'; the columns are %3")
                         .arg(record.line)
                         .arg(record.fields.at(i), known.join(u','));
            return std::nullopt;
        }
        if (h.columns.contains(name)) {
            *fatal =
                QStringLiteral("line %1: column '%2' appears twice").arg(record.line).arg(name);
            return std::nullopt;
        }
        h.columns.insert(name, i);
    }
    return h;
}

QString field(const LocalDataCsv::Record &r, int index)
{
    return index >= 0 ? r.fields.value(index) : QString();
}

QString divisionPathName(const Division &d)
{
    QString out;
    for (const Division *p = &d; p; p = p->parent) {
        if (!p->placeholder)
            out.prepend(p->name);
    }
    return out;
}

bool allDigits(QStringView s)
{
    return std::all_of(s.begin(), s.end(), [](QChar c) { return c >= u'0' && c <= u'9'; });
}

// The region of a row: the divcode column when filled, else the four name columns.
const Division *rowRegion(const Gazetteer &g, const Header &h, const LocalDataCsv::Record &r,
                          QString *error)
{
    const QString code = field(r, h.index("divcode"));
    if (!code.isEmpty()) {
        if (!allDigits(code) || (code.size() != 12 && code.size() != 9 && code.size() != 6)) {
            *error = QStringLiteral("divcode '%1' must be a 12-digit division code (6 or 9 "
                                    "digits are padded with zeros)")
                         .arg(code);
            return nullptr;
        }
        const Division *d = g.byCode(QStringView(code));
        if (!d)
            *error = QStringLiteral("unknown divcode '%1'").arg(code);
        return d;
    }
    const QStringList names{field(r, h.index("province")), field(r, h.index("city")),
                            field(r, h.index("district")), field(r, h.index("town"))};
    if (std::all_of(names.begin(), names.end(), [](const QString &s) { return s.isEmpty(); })) {
        *error = QStringLiteral("no region: fill province (then city, district, town) or divcode");
        return nullptr;
    }
    return LocalDataCsv::resolveRegion(g, names, error);
}

// Removes the division names an address starts with (浙江省杭州市余杭区...), and the name of a
// town below the POI's division, leaving what a text would repeat: road, number, building.
// Short forms only for provinces and cities, and not when a road follows: 东华门大街 keeps
// its 东华门 (the short form of 东华门街道), 余杭塘路 its 余杭.
QString streetOf(const Gazetteer &g, QString address, const Division *division)
{
    address = address.trimmed();
    const auto stripOne = [&](const Division &d) {
        if (d.placeholder)
            return false;
        if (address.startsWith(d.name)) {
            address.remove(0, d.name.size());
            return true;
        }
        const QString &s = d.shortName;
        if (s.isEmpty() || d.level > Gazetteer::Level::City || !address.startsWith(s))
            return false;
        static const QString roadStart = QStringLiteral("路街道巷弄大");
        if (address.size() > s.size() && roadStart.contains(address.at(s.size())))
            return false;
        address.remove(0, s.size());
        return true;
    };
    if (division) {
        for (const Division *d : g.path(*division))
            stripOne(*d);
        for (const Division *child : g.children(*division)) {
            if (stripOne(*child))
                break;
        }
    }
    return address.trimmed();
}

// The codes of a division and all below it are [code, code + span): the national codes are
// hierarchical (33 province, 3301 city, 330110 district, 330110001 town, then 3 zeros).
qint64 descendantSpan(Gazetteer::Level level)
{
    static constexpr qint64 spans[] = {0, 10'000'000'000, 100'000'000, 1'000'000, 1'000};
    return spans[int(level)];
}

} // namespace

namespace LocalDataCsv {

QList<Record> parseRecords(QStringView text)
{
    QList<Record> out;
    const qsizetype n = text.size();
    qsizetype i = 0;
    int line = 1;
    const auto atLineEnd = [&](qsizetype at) {
        return at >= n || text[at] == u'\n' || text[at] == u'\r';
    };
    // Consumes one line break at i (\r\n, \n or \r).
    const auto takeLineEnd = [&] {
        if (i < n && text[i] == u'\r')
            ++i;
        if (i < n && text[i] == u'\n')
            ++i;
        ++line;
    };
    while (i < n) {
        Record r;
        r.line = line;
        bool endOfRecord = false;
        while (!endOfRecord) {
            QString f;
            qsizetype j = i;
            while (j < n && (text[j] == u' ' || text[j] == u'\t'))
                ++j;
            if (j < n && text[j] == u'"') {
                i = j + 1;
                bool closed = false;
                while (i < n) {
                    const QChar c = text[i];
                    if (c == u'"') {
                        if (i + 1 < n && text[i + 1] == u'"') {
                            f += u'"';
                            i += 2;
                            continue;
                        }
                        ++i;
                        closed = true;
                        break;
                    }
                    if (c == u'\n' || (c == u'\r' && !(i + 1 < n && text[i + 1] == u'\n')))
                        ++line;
                    f += c;
                    ++i;
                }
                if (!closed) {
                    r.error = QStringLiteral("a quoted field is never closed");
                    r.fields.append(f.trimmed());
                    out.append(r);
                    return out;
                }
                while (i < n && (text[i] == u' ' || text[i] == u'\t'))
                    ++i;
                if (i < n && text[i] != u',' && !atLineEnd(i)) {
                    if (r.error.isEmpty())
                        r.error = QStringLiteral("text after a closing quote in field %1")
                                      .arg(r.fields.size() + 1);
                    while (i < n && text[i] != u',' && !atLineEnd(i))
                        ++i;
                }
            } else {
                while (i < n && text[i] != u',' && !atLineEnd(i)) {
                    if (text[i] == u'"' && r.error.isEmpty())
                        r.error = QStringLiteral("a quote inside unquoted field %1 (quote the "
                                                 "field and double the quote)")
                                      .arg(r.fields.size() + 1);
                    f += text[i++];
                }
            }
            r.fields.append(f.trimmed());
            if (i < n && text[i] == u',') {
                ++i;
                continue;
            }
            if (i < n)
                takeLineEnd();
            endOfRecord = true;
        }
        if (!isBlankRecord(r))
            out.append(r);
    }
    return out;
}

const Division *resolveRegion(const Gazetteer &g, const QStringList &names, QString *error)
{
    const Division *within = nullptr;
    for (int i = 0; i < 4 && i < names.size(); ++i) {
        const QString name = names.at(i).trimmed();
        if (name.isEmpty() || Gazetteer::isPlaceholderName(name))
            continue;
        if (within && (name == within->name || name == within->shortName))
            continue; // a municipality's city repeating the province: 北京市,北京市
        QList<const Division *> hits = g.findByName(name, Gazetteer::Level(i + 1), within);
        if (hits.isEmpty())
            hits = g.findByName(name, within);
        if (hits.isEmpty()) {
            *error = within ? QStringLiteral("unknown region '%1' in %2")
                                  .arg(name, divisionPathName(*within))
                            : QStringLiteral("unknown region '%1'").arg(name);
            return nullptr;
        }
        if (hits.size() > 1) {
            QStringList which;
            for (const Division *d : hits.mid(0, 3))
                which << QStringLiteral("%1 (%2)").arg(divisionPathName(*d), d->codeString());
            *error = QStringLiteral("ambiguous region '%1': %2%3; name the levels above it")
                         .arg(name, which.join(u", "),
                              hits.size() > 3 ? QStringLiteral("...") : QString());
            return nullptr;
        }
        within = hits.first();
    }
    if (!within)
        *error = QStringLiteral("no region named");
    return within;
}

Parsed<ZipRow> parseZipcodes(QByteArrayView csv, const Gazetteer &g)
{
    Parsed<ZipRow> out;
    const auto text = decode(csv, &out.fatal);
    if (!text)
        return out;
    const QList<Record> records = parseRecords(*text);
    if (records.isEmpty()) {
        out.fatal = QStringLiteral("the file is empty; the first row must be the header "
                                   "zipcode,province,city,district,town,road");
        return out;
    }
    const auto header = readHeader(
        records.first(), {"zipcode", "province", "city", "district", "town", "road", "divcode"},
        &out.fatal);
    if (!header)
        return out;
    if (!header->has("zipcode") || (!header->has("province") && !header->has("divcode"))) {
        out.fatal = QStringLiteral("line %1: the header needs a zipcode column and a province "
                                   "(or divcode) column: zipcode,province,city,district,town,road")
                        .arg(records.first().line);
        return out;
    }
    for (qsizetype k = 1; k < records.size(); ++k) {
        const Record &r = records.at(k);
        ++out.records;
        const auto reject = [&](const QString &reason) { out.errors.append({r.line, reason}); };
        if (!r.error.isEmpty()) {
            reject(r.error);
            continue;
        }
        if (r.fields.size() > header->size) {
            reject(QStringLiteral("%1 fields, the header has %2")
                       .arg(r.fields.size())
                       .arg(header->size));
            continue;
        }
        const QString zip = field(r, header->index("zipcode"));
        if (zip.isEmpty()) {
            reject(QStringLiteral("zipcode missing"));
            continue;
        }
        if (!allDigits(zip)) {
            reject(QStringLiteral("zipcode '%1' has characters other than digits").arg(zip));
            continue;
        }
        if (zip.size() != 6) {
            reject(QStringLiteral("zipcode '%1' has %2 digits, expected 6 (a spreadsheet may have "
                                  "dropped leading zeros)")
                       .arg(zip)
                       .arg(zip.size()));
            continue;
        }
        QString error;
        const Division *d = rowRegion(g, *header, r, &error);
        if (!d) {
            reject(error);
            continue;
        }
        out.rows.append({r.line, zip, d->code, field(r, header->index("road"))});
    }
    return out;
}

Parsed<PoiRow> parsePois(QByteArrayView csv, const Gazetteer &g)
{
    Parsed<PoiRow> out;
    const auto text = decode(csv, &out.fatal);
    if (!text)
        return out;
    const QList<Record> records = parseRecords(*text);
    if (records.isEmpty()) {
        out.fatal = QStringLiteral("the file is empty; the first row must be the header "
                                   "name,province,city,district,town,address,lon,lat,coord,"
                                   "category,aliases");
        return out;
    }
    const auto header = readHeader(records.first(),
                                   {"name", "province", "city", "district", "town", "divcode",
                                    "address", "lon", "lat", "coord", "category", "aliases"},
                                   &out.fatal);
    if (!header)
        return out;
    if (!header->has("name") || !header->has("lon") || !header->has("lat") ||
        (!header->has("province") && !header->has("divcode"))) {
        out.fatal = QStringLiteral("line %1: the header needs the columns name, lon, lat and "
                                   "province (or divcode): name,province,city,district,town,"
                                   "address,lon,lat,coord,category,aliases")
                        .arg(records.first().line);
        return out;
    }
    for (qsizetype k = 1; k < records.size(); ++k) {
        const Record &r = records.at(k);
        ++out.records;
        const auto reject = [&](const QString &reason) { out.errors.append({r.line, reason}); };
        if (!r.error.isEmpty()) {
            reject(r.error);
            continue;
        }
        if (r.fields.size() > header->size) {
            reject(QStringLiteral("%1 fields, the header has %2")
                       .arg(r.fields.size())
                       .arg(header->size));
            continue;
        }
        PoiRow row;
        row.line = r.line;
        row.name = field(r, header->index("name"));
        if (row.name.isEmpty()) {
            reject(QStringLiteral("missing name"));
            continue;
        }
        const QString lonText = field(r, header->index("lon"));
        const QString latText = field(r, header->index("lat"));
        bool okLon = false;
        bool okLat = false;
        const double lon = lonText.toDouble(&okLon);
        const double lat = latText.toDouble(&okLat);
        if (!okLon || !okLat || !std::isfinite(lon) || !std::isfinite(lat)) {
            reject(QStringLiteral("lon,lat '%1,%2' are not decimal degrees").arg(lonText, latText));
            continue;
        }
        if (lon < -180 || lon > 180 || lat < -90 || lat > 90) {
            reject(QStringLiteral("coordinate out of range: lon %1 (-180..180), lat %2 (-90..90)")
                       .arg(lonText, latText));
            continue;
        }
        if (CoordTransform::outOfChina(lon, lat)) {
            reject(QStringLiteral("coordinate out of range: %1,%2 is outside China (lon 73.66.."
                                  "135.05, lat 3.86..53.55); are lon and lat swapped?")
                       .arg(lonText, latText));
            continue;
        }
        const QString coord = field(r, header->index("coord"));
        const auto system = coord.isEmpty() ? std::optional(CoordTransform::System::Gcj02)
                                            : CoordTransform::parseSystem(coord);
        if (!system) {
            reject(QStringLiteral("unknown coord '%1': gcj02, wgs84 or bd09").arg(coord));
            continue;
        }
        QString error;
        const Division *d = rowRegion(g, *header, r, &error);
        if (!d) {
            reject(error);
            continue;
        }
        const CoordTransform::LonLat gcj =
            CoordTransform::convert({lon, lat}, *system, CoordTransform::System::Gcj02);
        row.lon = gcj.lon;
        row.lat = gcj.lat;
        row.divcode = d->code;
        row.address = field(r, header->index("address"));
        row.category = field(r, header->index("category"));
        for (const QString &a :
             field(r, header->index("aliases")).split(u'|', Qt::SkipEmptyParts)) {
            const QString alias = a.trimmed();
            if (!alias.isEmpty() && alias != row.name && !row.aliases.contains(alias))
                row.aliases.append(alias);
        }
        out.rows.append(row);
    }
    return out;
}

} // namespace LocalDataCsv

// ---- the snapshot ----------------------------------------------------------------------------

std::shared_ptr<const LocalData> LocalData::build(std::vector<ZipEntry> zipcodes,
                                                  std::vector<Poi> pois, const Gazetteer &g)
{
    std::shared_ptr<LocalData> data(new LocalData);
    data->m_gazetteer = &g;

    // Zip codes: one entry per (division, road), the later row winning.
    QHash<QString, quint32> seen;
    for (ZipEntry &z : zipcodes) {
        const Division *d = g.byCode(z.divcode);
        if (!d)
            continue;
        const QString key = QString::number(z.divcode) + u'\t' + z.road;
        const auto it = seen.constFind(key);
        if (it != seen.constEnd()) {
            data->m_zips[*it] = std::move(z);
            continue;
        }
        seen.insert(key, quint32(data->m_zips.size()));
        data->m_zips.push_back(std::move(z));
    }
    for (quint32 i = 0; i < data->m_zips.size(); ++i) {
        const ZipEntry &z = data->m_zips[i];
        if (z.road.isEmpty()) {
            data->m_zipByDivision.insert(z.divcode, i);
            continue;
        }
        // A road of a town is found from its district too (texts often skip the town).
        const Division *d = g.byCode(z.divcode);
        data->m_zipRoads[z.divcode].push_back(i);
        if (d->level == Gazetteer::Level::Town && d->parent)
            data->m_zipRoads[d->parent->code].push_back(i);
    }

    // POIs: every name, alias and street is a key; prefixes let the scan stop early.
    data->m_pois.reserve(pois.size());
    for (Poi &p : pois) {
        p.division = g.byCode(p.divcode);
        if (!p.division)
            continue;
        p.street = streetOf(g, p.address, p.division);
        data->m_pois.push_back(std::move(p));
    }
    const auto addKey = [&](const QString &key, quint32 poi, bool street) {
        if (key.size() < 2)
            return;
        auto it = data->m_poiKeys.find(QStringView(key));
        if (it == data->m_poiKeys.end()) {
            data->m_keys.push_back(key);
            const QStringView stored(data->m_keys.back());
            it = data->m_poiKeys.insert(stored, {});
            for (qsizetype len = 2; len <= stored.size(); ++len)
                data->m_poiPrefixes.insert(stored.left(len), true);
            data->m_maxKey = std::max(data->m_maxKey, stored.size());
        }
        it->push_back({data->m_pois[poi].divcode, poi, street});
    };
    for (quint32 i = 0; i < data->m_pois.size(); ++i) {
        const Poi &p = data->m_pois[i];
        addKey(p.name, i, false);
        for (const QString &a : p.aliases)
            addKey(a, i, false);
        if (p.street.size() >= 3)
            addKey(p.street, i, true);
    }
    for (const Poi &p : data->m_pois)
        data->m_poiCodes.push_back(p.divcode);
    std::sort(data->m_poiCodes.begin(), data->m_poiCodes.end());
    for (auto &hits : data->m_poiKeys) {
        std::sort(hits.begin(), hits.end());
        hits.erase(std::unique(hits.begin(), hits.end()), hits.end());
    }
    return data;
}

std::shared_ptr<const LocalData> LocalData::empty()
{
    // No gazetteer needed (nor loaded) for no data.
    return std::shared_ptr<const LocalData>(new LocalData);
}

std::optional<LocalData::ZipMatch> LocalData::zipcode(const Division *leaf, QStringView text) const
{
    if (m_zips.empty())
        return std::nullopt;
    for (const Division *d = leaf; d; d = d->parent) {
        const auto it = m_zipRoads.constFind(d->code);
        if (it == m_zipRoads.constEnd())
            continue;
        const ZipEntry *best = nullptr;
        for (quint32 i : *it) {
            const ZipEntry &z = m_zips[i];
            if (text.contains(z.road) && (!best || z.road.size() > best->road.size()))
                best = &z;
        }
        if (best)
            return ZipMatch{best, m_gazetteer->byCode(best->divcode), true};
    }
    for (const Division *d = leaf; d; d = d->parent) {
        const auto it = m_zipByDivision.constFind(d->code);
        if (it != m_zipByDivision.constEnd())
            return ZipMatch{&m_zips[*it], d, false};
    }
    return std::nullopt;
}

std::optional<LocalData::PoiMatch> LocalData::findPoi(QStringView text, const Division *leaf,
                                                      bool streets, FindPoiStats *stats) const
{
    if (stats)
        *stats = {};
    if (m_pois.empty())
        return std::nullopt;
    struct Candidate
    {
        quint32 poi;
        bool byName = false;
        bool byStreet = false;
        QStringView longest;
        int tier() const { return byName && byStreet ? 3 : byStreet ? 2 : 1; }
    };
    std::vector<Candidate> found;
    QHash<quint32, std::size_t> foundIndex;
    QSet<QStringView> seenKeys; // views into m_keys
    const auto take = [&](const KeyHit &h, QStringView sub) {
        if (stats)
            ++stats->hits;
        if (h.street && !streets)
            return;
        auto it = foundIndex.constFind(h.poi);
        if (it == foundIndex.constEnd()) {
            it = foundIndex.insert(h.poi, found.size());
            found.push_back(Candidate{h.poi, false, false, {}});
        }
        Candidate &c = found[*it];
        (h.street ? c.byStreet : c.byName) = true;
        if (sub.size() > c.longest.size())
            c.longest = sub;
    };
    // The leaf's descendants are one code range (descendantSpan), its ancestors single codes.
    qint64 rangeBegin = 0;
    qint64 rangeEnd = 0;
    if (leaf) {
        rangeBegin = leaf->code;
        rangeEnd = leaf->code + descendantSpan(leaf->level);
    }
    const auto byCode = [](const KeyHit &h, qint64 code) { return h.divcode < code; };
    const qsizetype n = text.size();
    for (qsizetype i = 0; i < n; ++i) {
        for (qsizetype len = 2; len <= m_maxKey && i + len <= n; ++len) {
            const QStringView sub = text.mid(i, len);
            if (!m_poiPrefixes.contains(sub))
                break;
            const auto it = m_poiKeys.constFind(sub);
            if (it == m_poiKeys.constEnd())
                continue;
            // Every occurrence of a key gives the same hits (the longest match is the key
            // itself): a chain's name repeated in a long text is handled once, not once per
            // occurrence times its thousands of branches.
            if (seenKeys.contains(it.key()))
                continue;
            seenKeys.insert(it.key());
            const std::vector<KeyHit> &hits = *it;
            if (stats)
                ++stats->keys;
            if (!leaf) {
                for (const KeyHit &h : hits)
                    take(h, sub);
                continue;
            }
            for (auto h = std::lower_bound(hits.begin(), hits.end(), rangeBegin, byCode);
                 h != hits.end() && h->divcode < rangeEnd; ++h)
                take(*h, sub);
            for (const Division *d = leaf->parent; d; d = d->parent) {
                for (auto h = std::lower_bound(hits.begin(), hits.end(), d->code, byCode);
                     h != hits.end() && h->divcode == d->code; ++h)
                    take(*h, sub);
            }
        }
    }
    if (found.empty())
        return std::nullopt;
    // Better first: tier, longer match, deeper division, earlier import.
    const auto better = [&](const Candidate &a, const Candidate &b) {
        if (a.tier() != b.tier())
            return a.tier() > b.tier();
        if (a.longest.size() != b.longest.size())
            return a.longest.size() > b.longest.size();
        const int la = int(m_pois[a.poi].division->level);
        const int lb = int(m_pois[b.poi].division->level);
        if (la != lb)
            return la > lb;
        return a.poi < b.poi;
    };
    std::sort(found.begin(), found.end(), better);
    const Candidate &best = found.front();
    if (!leaf && found.size() > 1 && found[1].tier() == best.tier() &&
        found[1].longest.size() == best.longest.size())
        return std::nullopt; // with no region named, a tie cannot be settled
    return PoiMatch{&m_pois[best.poi], best.byName, best.byStreet, best.longest.toString()};
}

qsizetype LocalData::poiCountWithin(const Division *division) const
{
    if (!division)
        return poiCount();
    const qint64 end = division->code + descendantSpan(division->level);
    return std::lower_bound(m_poiCodes.begin(), m_poiCodes.end(), end) -
           std::lower_bound(m_poiCodes.begin(), m_poiCodes.end(), division->code);
}
