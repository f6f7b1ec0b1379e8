#include "AddressDataStore.h"

#include "SearchIndex.h"

#include <QMutex>
#include <QThreadPool>
#include <QTimer>

#include <atomic>

#include "DatabaseService.h"
#include "Migrations.h"
#include "Store.h"

#include <QDateTime>
#include <QFile>
#include <QSet>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

namespace {

void exec(QSqlQuery &q, const QString &what)
{
    if (!q.exec())
        throw StoreError(QStringLiteral("%1: %2").arg(what, q.lastError().text()).toStdString());
}

void prepare(QSqlQuery &q, const QString &sql)
{
    if (!q.prepare(sql))
        throw StoreError(q.lastError().text().toStdString());
}

qint64 countRows(QSqlDatabase db, const QString &table, const QString &where = {})
{
    QSqlQuery q(db);
    prepare(q, QStringLiteral("SELECT COUNT(*) FROM ") + table + where);
    exec(q, QStringLiteral("count ") + table);
    return q.next() ? q.value(0).toLongLong() : 0;
}

QString table(AddressDataStore::Kind kind)
{
    return kind == AddressDataStore::Kind::Zipcodes ? QStringLiteral("address_zipcodes")
                                                    : QStringLiteral("address_pois");
}

// Good rows are written; the counts come from the table before and after, so they are right on
// both databases without dialect-specific RETURNING tricks.
template <class Row, class Bind>
void write(Store &store, AddressDataStore::Kind kind, const QList<Row> &rows, bool replace,
           const QString &sql, Bind bind, ImportReport &report)
{
    QSqlDatabase db = store.database();
    store.transaction([&] {
        if (replace) {
            QSqlQuery del(db);
            prepare(del, QStringLiteral("DELETE FROM ") + table(kind));
            exec(del, QStringLiteral("clear ") + table(kind));
            report.removed = del.numRowsAffected();
        }
        const qint64 before = countRows(db, table(kind));
        QSqlQuery q(db);
        prepare(q, sql);
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        for (const Row &row : rows) {
            bind(q, row, now);
            exec(q, QStringLiteral("line %1").arg(row.line));
        }
        report.total = countRows(db, table(kind));
        report.inserted = int(report.total - before);
        report.updated = int(rows.size() - report.inserted);
    });
}

} // namespace

QString ImportReport::summary() const
{
    if (!ok())
        return QStringLiteral("Nothing imported: %1").arg(fatal);
    const QString noun = kind == u"pois" ? QStringLiteral("points of interest")
                                         : QStringLiteral("zip codes");
    QString s = QStringLiteral("Imported %1 of %2 rows (%3 new, %4 updated)")
                    .arg(imported)
                    .arg(records)
                    .arg(inserted)
                    .arg(updated);
    if (removed > 0)
        s += QStringLiteral(", replacing %1 rows").arg(removed);
    s += errors.isEmpty() ? QStringLiteral(", no errors")
                          : QStringLiteral(", %1 with errors").arg(errors.size());
    return s + QStringLiteral("; %1 %2 in the database.").arg(total).arg(noun);
}

namespace AddressDataStore {

std::optional<Kind> parseKind(const QString &name)
{
    if (name == u"zipcodes" || name == u"zipcode")
        return Kind::Zipcodes;
    if (name == u"pois" || name == u"poi")
        return Kind::Pois;
    return std::nullopt;
}

QString kindName(Kind kind)
{
    return kind == Kind::Zipcodes ? QStringLiteral("zipcodes") : QStringLiteral("pois");
}

ImportReport importData(Store &store, Kind kind, QByteArrayView csv, bool replace)
{
    ImportReport report;
    report.kind = kindName(kind);
    if (kind == Kind::Zipcodes) {
        auto parsed = LocalDataCsv::parseZipcodes(csv);
        report.records = parsed.records;
        report.errors = parsed.errors;
        report.fatal = parsed.fatal;
        if (!report.ok())
            return report;
        // Duplicate keys in one file: the last row wins, so keep only it (an upsert of the same
        // key twice would count as an update of a row that was never there before).
        QSet<QString> seen;
        QList<LocalDataCsv::ZipRow> rows;
        for (auto it = parsed.rows.crbegin(); it != parsed.rows.crend(); ++it) {
            const QString key = QString::number(it->divcode) + u'\t' + it->road;
            if (!seen.contains(key)) {
                seen.insert(key);
                rows.prepend(*it);
            }
        }
        write(store, kind, rows, replace,
              QStringLiteral("INSERT INTO address_zipcodes (divcode, road, zipcode, imported_ms) "
                             "VALUES (?, ?, ?, ?) ON CONFLICT (divcode, road) DO UPDATE SET "
                             "zipcode = excluded.zipcode, imported_ms = excluded.imported_ms"),
              [](QSqlQuery &q, const LocalDataCsv::ZipRow &r, qint64 now) {
                  q.bindValue(0, r.divcode);
                  q.bindValue(1, r.road.isNull() ? QStringLiteral("") : r.road);
                  q.bindValue(2, r.zipcode);
                  q.bindValue(3, now);
              },
              report);
        report.updated += int(parsed.rows.size() - rows.size());
        report.imported = int(parsed.rows.size());
        return report;
    }
    auto parsed = LocalDataCsv::parsePois(csv);
    report.records = parsed.records;
    report.errors = parsed.errors;
    report.fatal = parsed.fatal;
    if (!report.ok())
        return report;
    QSet<QString> seen;
    QList<LocalDataCsv::PoiRow> rows;
    for (auto it = parsed.rows.crbegin(); it != parsed.rows.crend(); ++it) {
        const QString key = QString::number(it->divcode) + u'\t' + it->name;
        if (!seen.contains(key)) {
            seen.insert(key);
            rows.prepend(*it);
        }
    }
    const auto text = [](const QString &s) { return s.isNull() ? QStringLiteral("") : s; };
    write(store, kind, rows, replace,
          QStringLiteral("INSERT INTO address_pois (divcode, name, address, lon, lat, category, "
                         "aliases, imported_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                         "ON CONFLICT (divcode, name) DO UPDATE SET address = excluded.address, "
                         "lon = excluded.lon, lat = excluded.lat, category = excluded.category, "
                         "aliases = excluded.aliases, imported_ms = excluded.imported_ms"),
          [&](QSqlQuery &q, const LocalDataCsv::PoiRow &r, qint64 now) {
              q.bindValue(0, r.divcode);
              q.bindValue(1, r.name);
              q.bindValue(2, text(r.address));
              q.bindValue(3, r.lon);
              q.bindValue(4, r.lat);
              q.bindValue(5, text(r.category));
              q.bindValue(6, text(r.aliases.join(u'|')));
              q.bindValue(7, now);
          },
          report);
    report.updated += int(parsed.rows.size() - rows.size());
    report.imported = int(parsed.rows.size());
    return report;
}

ImportReport importFile(Store &store, Kind kind, const QString &path, bool replace)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        ImportReport report;
        report.kind = kindName(kind);
        report.fatal = QStringLiteral("cannot read %1: %2").arg(path, file.errorString());
        return report;
    }
    return importData(store, kind, file.readAll(), replace);
}

// The version of the data this process last installed from the database.
QMutex g_versionMutex;
DataVersion g_loadedVersion;
std::atomic_bool g_loading = false;

void setLoadedVersion(const DataVersion &v)
{
    QMutexLocker lock(&g_versionMutex);
    g_loadedVersion = v;
}

DataVersion loadedVersion()
{
    QMutexLocker lock(&g_versionMutex);
    return g_loadedVersion;
}

// search and input-search also find the imported POIs: their index is rebuilt (seconds) on a
// pool thread while searches go on with the old one.
static void reindexSearch()
{
    QThreadPool::globalInstance()->start([] { SearchIndex::rebuildFromLocalData(); });
}

ImportReport importCsv(const DatabaseConfig &config, Kind kind, const QString &path, bool replace)
{
    try {
        QSqlDatabase db = config.open(QStringLiteral("address-import"));
        Migrations::apply(db, config.kind());
        Store store(db, config.kind());
        const quint64 generation = LocalData::generation();
        ImportReport report = importFile(store, kind, path, replace);
        if (report.ok() && report.imported + report.removed > 0) {
            // Loading after the commit: the snapshot holds what the database holds, including
            // rows other instances wrote. A newer install (another import) is not replaced.
            const DataVersion version = dataVersion(store);
            if (LocalData::installIf(generation, load(store))) {
                setLoadedVersion(version);
                reindexSearch();
            }
        }
        return report;
    } catch (const std::exception &e) {
        ImportReport report;
        report.kind = kindName(kind);
        report.fatal = QString::fromUtf8(e.what());
        return report;
    }
}

std::shared_ptr<const LocalData> load(Store &store)
{
    QSqlDatabase db = store.database();
    std::vector<LocalData::ZipEntry> zips;
    {
        QSqlQuery q(db);
        q.setForwardOnly(true);
        prepare(q, QStringLiteral("SELECT divcode, road, zipcode FROM address_zipcodes "
                                  "ORDER BY divcode, road"));
        exec(q, QStringLiteral("load zip codes"));
        while (q.next())
            zips.push_back({q.value(2).toString(), q.value(0).toLongLong(), q.value(1).toString()});
    }
    std::vector<LocalData::Poi> pois;
    {
        QSqlQuery q(db);
        q.setForwardOnly(true);
        prepare(q, QStringLiteral("SELECT divcode, name, address, lon, lat, category, aliases "
                                  "FROM address_pois ORDER BY id"));
        exec(q, QStringLiteral("load points of interest"));
        while (q.next()) {
            LocalData::Poi p;
            p.divcode = q.value(0).toLongLong();
            p.name = q.value(1).toString();
            p.address = q.value(2).toString();
            p.lon = q.value(3).toDouble();
            p.lat = q.value(4).toDouble();
            p.category = q.value(5).toString();
            p.aliases = q.value(6).toString().split(u'|', Qt::SkipEmptyParts);
            pois.push_back(std::move(p));
        }
    }
    return LocalData::build(std::move(zips), std::move(pois));
}

Counts counts(Store &store)
{
    Counts c;
    c.zipcodes = countRows(store.database(), QStringLiteral("address_zipcodes"));
    c.zipRoads = countRows(store.database(), QStringLiteral("address_zipcodes"),
                           QStringLiteral(" WHERE road <> ''"));
    c.pois = countRows(store.database(), QStringLiteral("address_pois"));
    return c;
}

DataVersion dataVersion(Store &store)
{
    QSqlQuery q(store.database());
    prepare(q, QStringLiteral(
                   "SELECT (SELECT COUNT(*) FROM address_zipcodes), "
                   "(SELECT COALESCE(MAX(imported_ms), 0) FROM address_zipcodes), "
                   "(SELECT COUNT(*) FROM address_pois), "
                   "(SELECT COALESCE(MAX(imported_ms), 0) FROM address_pois)"));
    exec(q, QStringLiteral("read the address data version"));
    DataVersion v;
    if (q.next())
        v = {q.value(0).toLongLong(), q.value(1).toLongLong(), q.value(2).toLongLong(),
             q.value(3).toLongLong()};
    return v;
}

void loadAsync(DatabaseService &db)
{
    if (g_loading.exchange(true))
        return; // a load is under way; it reads the newest rows anyway
    const quint64 generation = LocalData::generation();
    using Loaded = std::pair<DataVersion, std::shared_ptr<const LocalData>>;
    db.read<Loaded>(
        nullptr,
        [](Store &store) {
            // The version first: rows imported between the two reads make the next check
            // reload once more, never miss.
            const DataVersion version = dataVersion(store);
            return Loaded{version, load(store)};
        },
        [generation](const DbResult<Loaded> &r) {
            g_loading = false;
            if (!r.ok()) {
                qWarning("address data: cannot load the imported zip codes and POIs: %s",
                         qPrintable(r.error));
                return;
            }
            if (LocalData::installIf(generation, r.value.second)) {
                setLoadedVersion(r.value.first);
                reindexSearch();
            }
        });
}

void watch(DatabaseService &db, QObject *context, int intervalMs)
{
    if (intervalMs <= 0)
        return;
    auto *timer = new QTimer(context);
    QObject::connect(timer, &QTimer::timeout, context, [&db, context] {
        db.read<DataVersion>(
            context, [](Store &store) { return dataVersion(store); },
            [&db](const DbResult<DataVersion> &r) {
                if (r.ok() && !(r.value == loadedVersion()))
                    loadAsync(db);
            });
    });
    timer->start(intervalMs);
}

} // namespace AddressDataStore
