// Imported address data at scale, on one thread: CSV parsing, snapshot building and memory,
// zipcode / geocode / hp-geocode calls per second in process, and the database import and load
// (SQLite in a temporary directory; PostgreSQL too with --pg URL). Prints numbers, asserts none.
//
//   bench_local_data [--pois-per-district N] [--calls N] [--pg postgresql://...]
//
// The data is generated: every district of the gazetteer gets a zip code, five roads with
// codes and N points of interest with invented names (测试中心7) and street addresses.

#include "address/AddressTables.h"
#include "AddressApi.h"
#include "AddressData.h"
#include "AddressEngine.h"
#include "LocalData.h"
#include "Migrations.h"
#include "Store.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTextStream>

#include <cstdio>

namespace {

double rssMiB()
{
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray &line : f.readAll().split('\n')) {
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').first().toDouble() / 1024.0;
    }
    return 0;
}

QString pathName(const Gazetteer::Division &d)
{
    QString out;
    for (const Gazetteer::Division *p = &d; p; p = p->parent) {
        if (!p->placeholder)
            out.prepend(p->name);
    }
    return out;
}

double perSecond(qint64 n, qint64 ns)
{
    return ns > 0 ? double(n) * 1e9 / double(ns) : 0;
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    int poisPerDistrict = 20;
    int calls = 20000;
    QString pgUrl;
    const QStringList args = app.arguments();
    for (int i = 1; i + 1 < args.size(); i += 2) {
        if (args[i] == u"--pois-per-district")
            poisPerDistrict = args[i + 1].toInt();
        else if (args[i] == u"--calls")
            calls = args[i + 1].toInt();
        else if (args[i] == u"--pg")
            pgUrl = args[i + 1];
    }
    QTextStream out(stdout);
    const Gazetteer &g = Gazetteer::builtin();
    AddressEngine engine; // what the endpoints answer from
    AddressApi::call(engine, QStringLiteral("zipcode"), QJsonObject{{"text", "杭州"}}); // warm up

    QByteArray zipCsv = "zipcode,divcode,road\n";
    QByteArray poiCsv = "name,divcode,address,lon,lat,coord,category,aliases\n";
    QStringList texts;
    int districts = 0;
    for (const Gazetteer::Division &d : g.all()) {
        if (d.level != Gazetteer::Level::District || !d.hasCentre())
            continue;
        const QByteArray code = d.codeString().toLatin1();
        const QByteArray zip = QByteArray::number(100000 + districts * 7 % 800000);
        zipCsv += zip + ',' + code + ",\n";
        for (int r = 0; r < 5; ++r)
            zipCsv += zip + ',' + code + ",测试" + QByteArray::number(r) + "路\n";
        for (int p = 0; p < poisPerDistrict; ++p) {
            const QByteArray n = QByteArray::number(p);
            poiCsv += "测试中心" + n + ',' + code + ",测试" + QByteArray::number(p % 5) + "路" + n +
                      "号," + QByteArray::number(d.lon + p * 1e-4, 'f', 6) + ',' +
                      QByteArray::number(d.lat, 'f', 6) + ",gcj02,测试,中心" + n + "\n";
        }
        if (districts % 7 == 0) {
            const QString where = pathName(d);
            texts << where + QStringLiteral("测试2路18号测试中心3")
                  << where + QStringLiteral("测试1路1号") << where + QStringLiteral("某某小区5幢");
        }
        ++districts;
    }

    const double rss0 = rssMiB();
    QElapsedTimer t;
    t.start();
    const auto zips = LocalDataCsv::parseZipcodes(zipCsv);
    const qint64 zipParseNs = t.nsecsElapsed();
    t.restart();
    const auto pois = LocalDataCsv::parsePois(poiCsv);
    const qint64 poiParseNs = t.nsecsElapsed();
    std::vector<LocalData::ZipEntry> zipEntries;
    for (const auto &r : zips.rows)
        zipEntries.push_back({r.zipcode, r.divcode, r.road});
    std::vector<LocalData::Poi> poiEntries;
    for (const auto &r : pois.rows) {
        LocalData::Poi p;
        p.name = r.name;
        p.aliases = r.aliases;
        p.divcode = r.divcode;
        p.address = r.address;
        p.lon = r.lon;
        p.lat = r.lat;
        p.category = r.category;
        poiEntries.push_back(std::move(p));
    }
    t.restart();
    auto data = LocalData::build(std::move(zipEntries), std::move(poiEntries));
    const qint64 buildNs = t.nsecsElapsed();
    const double rss1 = rssMiB();
    engine.install(data);
    out << "data: " << districts << " districts, " << data->zipCount() << " zip rows, "
        << data->poiCount() << " POIs (" << zips.errors.size() + pois.errors.size()
        << " rows rejected)\n";
    out << QString::asprintf("parse zip CSV: %.0f rows/s; POI CSV: %.0f rows/s\n",
                             perSecond(zips.records, zipParseNs),
                             perSecond(pois.records, poiParseNs));
    out << QString::asprintf("build snapshot: %.1f ms; RSS of parsed rows + snapshot: %.1f MiB\n",
                             buildNs / 1e6, rss1 - rss0);

    for (const char *endpoint : {"zipcode", "geocode", "hp-geocode"}) {
        const QString name = QLatin1String(endpoint);
        // Which level answered, to show the texts exercise the data (not only the fallback).
        QHash<QString, int> levels;
        t.restart();
        for (int i = 0; i < calls; ++i) {
            const auto r =
                AddressApi::call(engine, name, QJsonObject{{"text", texts[i % texts.size()]}});
            const QJsonObject body = r.body;
            const QString level =
                name == u"zipcode"
                    ? body.value("level").toString()
                    : body.value(name == u"geocode" ? "offline_geocode" : "hp_geocode")
                          .toObject()
                          .value("level")
                          .toString();
            ++levels[level.isEmpty() ? body.value("status").toString() : level];
        }
        const qint64 ns = t.nsecsElapsed();
        QStringList shares;
        for (auto it = levels.cbegin(); it != levels.cend(); ++it)
            shares << QStringLiteral("%1 %2").arg(it.key()).arg(it.value());
        shares.sort();
        out << QString::asprintf("%-10s %8.0f calls/s in process (one thread, %d calls: %s)\n",
                                 endpoint, perSecond(calls, ns), calls,
                                 qPrintable(shares.join(u", ")));
    }

    // Database import and load.
    QTemporaryDir dir;
    QList<QPair<QString, DatabaseConfig>> targets{
        {QStringLiteral("sqlite"), DatabaseConfig::sqlite(dir.filePath("bench.db"))}};
    if (!pgUrl.isEmpty())
        targets.append({QStringLiteral("postgres"), DatabaseConfig::fromUrl(pgUrl)});
    for (const auto &[label, config] : targets) {
        QSqlDatabase db = config.open(QStringLiteral("bench"));
        Migrations::apply(db, config.kind(), {AddressTables::migrations()});
        Store store(db, config.kind());
        t.restart();
        const AddressStore::ImportReport zr =
            AddressData::importData(store, AddressStore::Kind::Zipcodes, zipCsv, true);
        const qint64 zipNs = t.nsecsElapsed();
        t.restart();
        const AddressStore::ImportReport pr =
            AddressData::importData(store, AddressStore::Kind::Pois, poiCsv, true);
        const qint64 poiNs = t.nsecsElapsed();
        t.restart();
        const auto loaded = AddressData::load(store);
        const qint64 loadNs = t.nsecsElapsed();
        out << QString::asprintf("%s: import zip codes %.0f rows/s, POIs %.0f rows/s (replace, "
                                 "one transaction each); load %lld + %lld rows: %.0f ms\n",
                                 qPrintable(label), perSecond(zr.imported, zipNs),
                                 perSecond(pr.imported, poiNs), qlonglong(loaded->zipCount()),
                                 qlonglong(loaded->poiCount()), loadNs / 1e6);
    }
    return 0;
}
