#pragma once

#include "Gazetteer.h"

#include <QByteArrayView>
#include <QHash>
#include <QList>
#include <QString>
#include <QStringList>
#include <QStringView>

#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

// Zip codes and points of interest that the operator imports (no installable package has them),
// for POST /v1/address/zipcode, geocode and hp-geocode. A plain library (Qt Core only): the
// database side is models/address/AddressStore.h, the glue server/address/AddressData.h.
//
// CSV formats (RFC 4180: comma separated, fields with commas, quotes or line breaks in double
// quotes, "" for a quote; UTF-8, a byte order mark is ignored; a header row naming the columns,
// in any order, case-insensitive; blank lines skipped; fields trimmed):
//
//   zip codes: zipcode,province,city,district,town,road
//     zipcode   6 digits, required.
//     province, city, district, town: the region, full names or short forms (浙江省 or 浙江),
//               blank from the right as far as the code covers (a city-wide code leaves district
//               and town blank). A municipality's city may be blank or repeat the province.
//     road      optional: the code of one road within the region.
//     A `divcode` column (12-digit national statistics code) may replace the four name columns.
//     The most specific row that matches an address wins: road > town > district > city.
//
//   POIs: name,province,city,district,town,address,lon,lat,coord,category,aliases
//     name      required.
//     province..town or divcode: the region, as above, required down to at least a province.
//     address   optional: the street address (文一西路969号); lets hp-geocode match by road and
//               number.
//     lon, lat  decimal degrees, required, inside China's bounding box.
//     coord     gcj02 (default when blank), wgs84 or bd09; stored as GCJ-02.
//     category  optional free text.
//     aliases   optional, other names separated by `|`.
//
// A row with an error is reported with its line number and reason and skipped; the good rows
// are imported. A file that cannot be read as a whole (no header, a required column missing,
// an unknown column, invalid UTF-8) is a fatal error.
namespace LocalDataCsv {

struct Record
{
    int line = 0; // 1-based line where the record starts
    QStringList fields;
    QString error; // a malformed record (e.g. a quote never closed)
};

// Splits CSV text (already decoded) into records, RFC 4180 rules; blank lines are skipped.
QList<Record> parseRecords(QStringView text);

struct RowError
{
    int line = 0;
    QString reason;
};

struct ZipRow
{
    int line = 0;
    QString zipcode;
    qint64 divcode = 0;
    QString road; // empty: the row covers the whole division
};

struct PoiRow
{
    int line = 0;
    QString name;
    qint64 divcode = 0;
    QString address;
    double lon = 0; // GCJ-02
    double lat = 0;
    QString category;
    QStringList aliases;
};

template <class Row> struct Parsed
{
    QList<Row> rows;
    QList<RowError> errors;
    QString fatal;   // the file as a whole is unusable; rows and errors are then empty
    int records = 0; // data records read (good + bad)
};

Parsed<ZipRow> parseZipcodes(QByteArrayView csv, const Gazetteer &gazetteer = Gazetteer::builtin());
Parsed<PoiRow> parsePois(QByteArrayView csv, const Gazetteer &gazetteer = Gazetteer::builtin());

// The division named by up to four region names (province, city, district, town; blanks
// allowed), each looked up below the one before; nullptr with a reason in *error.
const Gazetteer::Division *resolveRegion(const Gazetteer &gazetteer, const QStringList &names,
                                         QString *error);

} // namespace LocalDataCsv

// One immutable snapshot of the imported data with its indexes; any number of threads may read
// it. An AddressEngine holds the installed one (never null: empty until data is loaded), which
// an import or a load replaces atomically; readers keep the one they took.
class LocalData
{
public:
    using Division = Gazetteer::Division;

    struct ZipEntry
    {
        QString zipcode;
        qint64 divcode = 0;
        QString road;
    };

    struct Poi
    {
        QString name;
        QStringList aliases;
        qint64 divcode = 0;
        QString address;
        double lon = 0; // GCJ-02
        double lat = 0;
        QString category;
        const Division *division = nullptr; // resolved from divcode; null if the code is unknown
        QString street; // address without its leading division names: what texts repeat
    };

    struct ZipMatch
    {
        const ZipEntry *entry = nullptr;
        const Division *division = nullptr; // the division of the entry
        bool byRoad = false;
    };

    struct PoiMatch
    {
        const Poi *poi = nullptr;
        bool byName = false;   // the name or an alias is in the text
        bool byStreet = false; // the street address (road and number) is in the text
        QString matchedText;   // the longest name, alias or street found
    };

    // Builds the indexes; entries whose divcode the gazetteer does not know are dropped.
    static std::shared_ptr<const LocalData>
    build(std::vector<ZipEntry> zipcodes, std::vector<Poi> pois,
          const Gazetteer &gazetteer = Gazetteer::builtin());

    // No data (a new snapshot; needs no gazetteer).
    static std::shared_ptr<const LocalData> empty();

    qsizetype zipCount() const { return qsizetype(m_zips.size()); }
    qsizetype poiCount() const { return qsizetype(m_pois.size()); }
    std::span<const ZipEntry> zipcodes() const { return m_zips; }
    std::span<const Poi> pois() const { return m_pois; }

    // The zip code of an address: a road row of `leaf` or its ancestors whose road the text
    // contains (the longest), else the row of the most specific division on the chain.
    std::optional<ZipMatch> zipcode(const Division *leaf, QStringView text) const;

    // The POI the text names: its name or an alias (byName), or its street address (byStreet,
    // only when streets is true), within `leaf` or one of its ancestors (POIs imported for a
    // district match a text that resolves to a town of it). With leaf null, any POI, but only
    // when the best match is unique. Ranking: name and street > street > name, then the longer
    // match, then the more specific division, then import order.
    // What one findPoi call looked at (for tests and benchmarks; reset by each call): the work
    // grows with the distinct keys found and their hits, not with how often the text repeats
    // them.
    struct FindPoiStats
    {
        qsizetype keys = 0; // distinct keys found in the text
        qsizetype hits = 0; // POI entries of those keys visited
    };
    std::optional<PoiMatch> findPoi(QStringView text, const Division *leaf, bool streets = true,
                                    FindPoiStats *stats = nullptr) const;

    // POIs imported for `division` or below it (all with null).
    qsizetype poiCountWithin(const Division *division) const;

private:
    LocalData() = default;

    struct KeyHit
    {
        qint64 divcode; // the POI's division: hits are sorted by it, so that the hits within
        quint32 poi;    // a division (a code range) are found by binary search, however many
        bool street;    // POIs share a name (a chain's branches)
        auto operator<=>(const KeyHit &) const = default;
    };

    const Gazetteer *m_gazetteer = nullptr;
    std::vector<ZipEntry> m_zips;
    std::vector<Poi> m_pois;
    QHash<qint64, quint32> m_zipByDivision;            // rows without a road
    QHash<qint64, std::vector<quint32>> m_zipRoads;    // road rows, by own and district code
    std::deque<QString> m_keys;                        // storage the views below point into
    QHash<QStringView, std::vector<KeyHit>> m_poiKeys; // names, aliases, streets
    QHash<QStringView, bool> m_poiPrefixes;            // every prefix (2+ chars) of every key
    std::vector<qint64> m_poiCodes;                    // every POI's divcode, sorted
    qsizetype m_maxKey = 0;
};
