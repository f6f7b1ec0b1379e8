#include "AddressDataStore.h"

#include "SearchIndex.h"

#include <QMutex>
#include <QScopeGuard>
#include <QThreadPool>
#include <QTimer>

#include <atomic>

#include "address/AddressTables.h"
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

// How the rows of one kind are staged and applied.
struct Target
{
    QString table;      // the data table
    QString stageTypes; // the staging table's columns after `line`, with types
    QString columns;    // the data columns (without imported_ms), as in the staging table
    QString key;        // the conflict target
    QString updates;    // SET list for a key that exists
};

Target target(AddressDataStore::Kind kind)
{
    if (kind == AddressDataStore::Kind::Zipcodes)
        return {
            QStringLiteral("address_zipcodes"),
            QStringLiteral("divcode BIGINT NOT NULL, road TEXT NOT NULL, zipcode TEXT NOT NULL"),
            QStringLiteral("divcode, road, zipcode"), QStringLiteral("divcode, road"),
            QStringLiteral("zipcode = excluded.zipcode, imported_ms = excluded.imported_ms")};
    return {QStringLiteral("address_pois"),
            QStringLiteral("divcode BIGINT NOT NULL, name TEXT NOT NULL, address TEXT NOT NULL, "
                           "lon DOUBLE PRECISION NOT NULL, lat DOUBLE PRECISION NOT NULL, "
                           "category TEXT NOT NULL, aliases TEXT NOT NULL"),
            QStringLiteral("divcode, name, address, lon, lat, category, aliases"),
            QStringLiteral("divcode, name"),
            QStringLiteral("address = excluded.address, lon = excluded.lon, lat = excluded.lat, "
                           "category = excluded.category, aliases = excluded.aliases, "
                           "imported_ms = excluded.imported_ms")};
}

// The session's staging table: TEMP, so filling it takes no lock on the main database (SQLite)
// and no other session sees it (PostgreSQL). One per kind, so that a table left behind never
// has the other kind's columns.
QString stageName(AddressDataStore::Kind kind)
{
    return QStringLiteral("address_import_stage_") + AddressDataStore::kindName(kind);
}

// Qualified, so that DELETE and DROP can never reach a main table of the same name.
QString stageTable(const Store &store, AddressDataStore::Kind kind)
{
    return (store.isPostgres() ? QStringLiteral("pg_temp.") : QStringLiteral("temp.")) +
           stageName(kind);
}

// Drops the staging table however the import ends.
struct StageGuard
{
    QSqlDatabase db;
    QString table;
    ~StageGuard()
    {
        QSqlQuery q(db);
        q.exec(QStringLiteral("DROP TABLE ") + table);
    }
};

constexpr int kStageBatch = 5000;

// Writes the good rows. The slow part (one INSERT per row) goes into a TEMP table inside a
// transaction that touches only the temporary database, so other connections (the server's
// billing writer) keep writing meanwhile; the main table then changes in one short transaction
// of set-based statements. The counts come from the table before and after, so they are right
// on both databases without dialect-specific RETURNING tricks.
template <class Row, class Bind>
void write(Store &store, AddressDataStore::Kind kind, const QList<Row> &rows, bool replace,
           Bind bind, const AddressDataStore::Progress &progress, ImportReport &report)
{
    QSqlDatabase db = store.database();
    const Target t = target(kind);
    const QString stage = stageTable(store, kind);
    {
        // Not prepared: PostgreSQL cannot prepare DDL.
        QSqlQuery q(db);
        // A table left by an import that failed to drop it is emptied, not reused as is.
        if (!q.exec(QStringLiteral("CREATE TEMP TABLE IF NOT EXISTS ") + stageName(kind) +
                    QStringLiteral(" (line INTEGER NOT NULL, ") + t.stageTypes + u')') ||
            !q.exec(QStringLiteral("DELETE FROM ") + stage))
            throw StoreError(QStringLiteral("create the staging table: %1")
                                 .arg(q.lastError().text())
                                 .toStdString());
    }
    StageGuard guard{db, stage};
    {
        // Not Store::transaction: on SQLite its BEGIN IMMEDIATE would lock the main database.
        QSqlQuery tx(db);
        if (!tx.exec(QStringLiteral("BEGIN")))
            throw StoreError(tx.lastError().text().toStdString());
        try {
            QSqlQuery q(db);
            const int values = int(t.columns.count(u',')) + 2; // line + columns
            QString marks = QStringLiteral("?");
            for (int i = 1; i < values; ++i)
                marks += QStringLiteral(", ?");
            prepare(q, QStringLiteral("INSERT INTO ") + stage + QStringLiteral(" (line, ") +
                           t.columns + QStringLiteral(") VALUES (") + marks + u')');
            qsizetype staged = 0;
            for (const Row &row : rows) {
                q.bindValue(0, row.line);
                bind(q, row);
                exec(q, QStringLiteral("line %1").arg(row.line));
                if (++staged % kStageBatch == 0 && progress)
                    progress(staged, rows.size());
            }
        } catch (...) {
            tx.exec(QStringLiteral("ROLLBACK"));
            throw;
        }
        if (!tx.exec(QStringLiteral("COMMIT")))
            throw StoreError(tx.lastError().text().toStdString());
    }
    if (progress)
        progress(rows.size(), rows.size());
    store.transaction([&] {
        if (replace) {
            QSqlQuery del(db);
            prepare(del, QStringLiteral("DELETE FROM ") + t.table);
            exec(del, QStringLiteral("clear ") + t.table);
            report.removed = del.numRowsAffected();
        }
        const qint64 before = countRows(db, t.table);
        QSqlQuery q(db);
        // "WHERE 1 = 1": SQLite would otherwise read ON CONFLICT as a join constraint. ORDER BY
        // line keeps the file's order in the ids (the load order of POIs).
        prepare(q, QStringLiteral("INSERT INTO ") + t.table + QStringLiteral(" (") + t.columns +
                       QStringLiteral(", imported_ms) SELECT ") + t.columns +
                       QStringLiteral(", ? FROM ") + stage +
                       QStringLiteral(" WHERE 1 = 1 ORDER BY line ON CONFLICT (") + t.key +
                       QStringLiteral(") DO UPDATE SET ") + t.updates);
        q.bindValue(0, QDateTime::currentMSecsSinceEpoch());
        exec(q, QStringLiteral("write ") + t.table);
        report.total = countRows(db, t.table);
        report.inserted = int(report.total - before);
        report.updated = int(rows.size() - report.inserted);
    });
}

// Runs fn on a connection opened for this call alone and removed afterwards: DatabaseConfig
// names connections by thread, and pool threads (or a new thread reusing an old id) would
// otherwise find, or leak, a connection of an earlier call. The name carries a serial number;
// the connection is removed even when opening it failed (open() registers it first).
template <class Fn> auto withOwnConnection(const DatabaseConfig &config, const char *purpose, Fn fn)
{
    static std::atomic<quint64> serial{0};
    const QString unique = QStringLiteral("%1-%2").arg(QLatin1String(purpose)).arg(++serial);
    const auto remove = qScopeGuard([&unique] {
        const QString token = u'-' + unique + u'-';
        for (const QString &name : QSqlDatabase::connectionNames()) {
            if (name.contains(token))
                DatabaseConfig::close(name);
        }
    });
    // Every QSqlDatabase and QSqlQuery of the call lives in this scope and is gone before the
    // guard removes the connection.
    return [&] {
        QSqlDatabase db = config.open(unique);
        Store store(db, config.kind());
        return fn(store);
    }();
}

} // namespace

QString ImportReport::summary() const
{
    if (!ok())
        return QStringLiteral("Nothing imported: %1").arg(fatal);
    const QString noun =
        kind == u"pois" ? QStringLiteral("points of interest") : QStringLiteral("zip codes");
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

ImportReport importData(Store &store, Kind kind, QByteArrayView csv, bool replace,
                        const Progress &progress)
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
        write(
            store, kind, rows, replace,
            [](QSqlQuery &q, const LocalDataCsv::ZipRow &r) {
                q.bindValue(1, r.divcode);
                q.bindValue(2, r.road.isNull() ? QStringLiteral("") : r.road);
                q.bindValue(3, r.zipcode);
            },
            progress, report);
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
    write(
        store, kind, rows, replace,
        [&](QSqlQuery &q, const LocalDataCsv::PoiRow &r) {
            q.bindValue(1, r.divcode);
            q.bindValue(2, r.name);
            q.bindValue(3, text(r.address));
            q.bindValue(4, r.lon);
            q.bindValue(5, r.lat);
            q.bindValue(6, text(r.category));
            q.bindValue(7, text(r.aliases.join(u'|')));
        },
        progress, report);
    report.updated += int(parsed.rows.size() - rows.size());
    report.imported = int(parsed.rows.size());
    return report;
}

ImportReport importFile(Store &store, Kind kind, const QString &path, bool replace,
                        const Progress &progress)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        ImportReport report;
        report.kind = kindName(kind);
        report.fatal = QStringLiteral("cannot read %1: %2").arg(path, file.errorString());
        return report;
    }
    return importData(store, kind, file.readAll(), replace, progress);
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
        return withOwnConnection(config, "address-import", [&](Store &store) {
            Migrations::apply(store.database(), config.kind(), {AddressTables::migrations()});
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
        });
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
    prepare(q, QStringLiteral("SELECT (SELECT COUNT(*) FROM address_zipcodes), "
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

// Loads have a pool of their own: on the global pool they would queue behind search rebuilds
// (seconds each), which an import starts there.
QThreadPool &loadPool()
{
    static QThreadPool pool;
    return pool;
}

bool waitForLoad(int msecs)
{
    return loadPool().waitForDone(msecs);
}

void loadAsync(DatabaseService &db)
{
    if (g_loading.exchange(true))
        return; // a load is under way; it reads the newest rows anyway
    const quint64 generation = LocalData::generation();
    // A pool thread with its own connection, not one of the service's readers: a load takes
    // seconds for large data, and requests whose reads land on a busy reader would wait.
    loadPool().start([config = db.config(), generation] {
        try {
            using Loaded = std::pair<DataVersion, std::shared_ptr<const LocalData>>;
            const Loaded loaded = withOwnConnection(config, "address-load", [](Store &store) {
                // The version first: rows imported between the two reads make the next check
                // reload once more, never miss.
                const DataVersion version = dataVersion(store);
                return Loaded{version, load(store)};
            });
            if (LocalData::installIf(generation, loaded.second)) {
                setLoadedVersion(loaded.first);
                reindexSearch();
            }
        } catch (const std::exception &e) {
            qWarning("address data: cannot load the imported zip codes and POIs: %s", e.what());
        }
        g_loading = false;
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
