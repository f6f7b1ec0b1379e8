#include "AddressData.h"

#include <QFile>

namespace AddressData {

namespace {

QList<AddressStore::RowError> rowErrors(const QList<LocalDataCsv::RowError> &errors)
{
    QList<AddressStore::RowError> out;
    out.reserve(errors.size());
    for (const LocalDataCsv::RowError &e : errors)
        out.append({e.line, e.reason});
    return out;
}

template <class Parsed> ImportReport reportOf(Kind kind, const Parsed &parsed)
{
    ImportReport report;
    report.kind = AddressStore::kindName(kind);
    report.records = parsed.records;
    report.errors = rowErrors(parsed.errors);
    report.fatal = parsed.fatal;
    return report;
}

AddressImportJob::Input parse(Kind kind, QByteArrayView csv)
{
    AddressImportJob::Input input;
    if (kind == Kind::Zipcodes) {
        const auto parsed = LocalDataCsv::parseZipcodes(csv);
        input.report = reportOf(kind, parsed);
        input.zipcodes.reserve(parsed.rows.size());
        for (const LocalDataCsv::ZipRow &r : parsed.rows)
            input.zipcodes.append({r.line, r.divcode, r.road, r.zipcode});
        return input;
    }
    const auto parsed = LocalDataCsv::parsePois(csv);
    input.report = reportOf(kind, parsed);
    input.pois.reserve(parsed.rows.size());
    for (const LocalDataCsv::PoiRow &r : parsed.rows)
        input.pois.append(
            {r.line, r.divcode, r.name, r.address, r.lon, r.lat, r.category, r.aliases});
    return input;
}

ImportReport write(Store &store, Kind kind, AddressImportJob::Input input, bool replace,
                   const AddressStore::Progress &progress)
{
    ImportReport &report = input.report;
    if (!report.ok())
        return report;
    if (kind == Kind::Zipcodes)
        AddressStore::write(store, input.zipcodes, replace, report, progress);
    else
        AddressStore::write(store, input.pois, replace, report, progress);
    return report;
}

} // namespace

ImportReport importData(Store &store, Kind kind, QByteArrayView csv, bool replace,
                        const AddressStore::Progress &progress)
{
    return write(store, kind, parse(kind, csv), replace, progress);
}

AddressImportJob::Input readFile(Kind kind, const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        AddressImportJob::Input input;
        input.report.kind = AddressStore::kindName(kind);
        input.report.fatal = QStringLiteral("cannot read %1: %2").arg(path, file.errorString());
        return input;
    }
    return parse(kind, file.readAll());
}

ImportReport importFile(Store &store, Kind kind, const QString &path, bool replace,
                        const AddressStore::Progress &progress)
{
    return write(store, kind, readFile(kind, path), replace, progress);
}

std::shared_ptr<const LocalData> load(Store &store)
{
    AddressStore::Rows rows = AddressStore::load(store);
    if (rows.zipcodes.empty() && rows.pois.empty())
        return LocalData::empty(); // nothing to index: the gazetteer stays unbuilt until used
    std::vector<LocalData::ZipEntry> zips;
    zips.reserve(rows.zipcodes.size());
    for (AddressStore::ZipRow &z : rows.zipcodes)
        zips.push_back({std::move(z.zipcode), z.divcode, std::move(z.road)});
    std::vector<LocalData::Poi> pois;
    pois.reserve(rows.pois.size());
    for (AddressStore::PoiRow &p : rows.pois) {
        LocalData::Poi poi;
        poi.name = std::move(p.name);
        poi.aliases = std::move(p.aliases);
        poi.divcode = p.divcode;
        poi.address = std::move(p.address);
        poi.lon = p.lon;
        poi.lat = p.lat;
        poi.category = std::move(p.category);
        pois.push_back(std::move(poi));
    }
    return LocalData::build(std::move(zips), std::move(pois));
}

} // namespace AddressData
