#include "AddressStore.h"

#include "AddressTables.h"
#include "Migrations.h"
#include "Store.h"

#include <QDateTime>
#include <QMetaObject>
#include <QScopeGuard>
#include <QSet>
#include <QSqlError>
#include <QSqlQuery>
#include <QThread>
#include <QVariant>

#include <atomic>

namespace AddressStore {

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

Target target(Kind kind)
{
    if (kind == Kind::Zipcodes)
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
QString stageName(Kind kind)
{
    return QStringLiteral("address_import_stage_") + kindName(kind);
}

// Qualified, so that DELETE and DROP can never reach a main table of the same name.
QString stageTable(const Store &store, Kind kind)
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

// NULL strings would be NULLs in the NOT NULL columns.
QString text(const QString &s)
{
    return s.isNull() ? QStringLiteral("") : s;
}

void bindRow(QSqlQuery &q, const ZipRow &r)
{
    q.bindValue(1, r.divcode);
    q.bindValue(2, text(r.road));
    q.bindValue(3, r.zipcode);
}

void bindRow(QSqlQuery &q, const PoiRow &r)
{
    q.bindValue(1, r.divcode);
    q.bindValue(2, r.name);
    q.bindValue(3, text(r.address));
    q.bindValue(4, r.lon);
    q.bindValue(5, r.lat);
    q.bindValue(6, text(r.category));
    q.bindValue(7, text(r.aliases.join(u'|')));
}

QString keyOf(const ZipRow &r)
{
    return QString::number(r.divcode) + u'\t' + r.road;
}

QString keyOf(const PoiRow &r)
{
    return QString::number(r.divcode) + u'\t' + r.name;
}

// Writes the rows, each key once. The slow part (one INSERT per row) goes into a TEMP table
// inside a transaction that touches only the temporary database, so other connections (the
// server's billing writer) keep writing meanwhile; the main table then changes in one short
// transaction of set-based statements. The counts come from the table before and after, so they
// are right on both databases without dialect-specific RETURNING tricks.
template <class Row>
void stageAndApply(Store &store, Kind kind, const QList<Row> &rows, bool replace,
                   const Progress &progress, ImportReport &report)
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
                bindRow(q, row);
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

template <class Row>
void writeRows(Store &store, Kind kind, const QList<Row> &all, bool replace, ImportReport &report,
               const Progress &progress)
{
    report.kind = kindName(kind);
    // A key repeated in one file: the last row wins, so keep only it (an upsert of the same key
    // twice would count as an update of a row that was never there before).
    QSet<QString> seen;
    QList<Row> rows;
    for (auto it = all.crbegin(); it != all.crend(); ++it) {
        const QString key = keyOf(*it);
        if (!seen.contains(key)) {
            seen.insert(key);
            rows.prepend(*it);
        }
    }
    stageAndApply(store, kind, rows, replace, progress, report);
    report.updated += int(all.size() - rows.size());
    report.imported = int(all.size());
}

} // namespace

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

void write(Store &store, const QList<ZipRow> &rows, bool replace, ImportReport &report,
           const Progress &progress)
{
    writeRows(store, Kind::Zipcodes, rows, replace, report, progress);
}

void write(Store &store, const QList<PoiRow> &rows, bool replace, ImportReport &report,
           const Progress &progress)
{
    writeRows(store, Kind::Pois, rows, replace, report, progress);
}

Rows load(Store &store)
{
    QSqlDatabase db = store.database();
    Rows rows;
    {
        QSqlQuery q(db);
        q.setForwardOnly(true);
        prepare(q, QStringLiteral("SELECT divcode, road, zipcode FROM address_zipcodes "
                                  "ORDER BY divcode, road"));
        exec(q, QStringLiteral("load zip codes"));
        while (q.next())
            rows.zipcodes.append(
                {0, q.value(0).toLongLong(), q.value(1).toString(), q.value(2).toString()});
    }
    {
        QSqlQuery q(db);
        q.setForwardOnly(true);
        prepare(q, QStringLiteral("SELECT divcode, name, address, lon, lat, category, aliases "
                                  "FROM address_pois ORDER BY id"));
        exec(q, QStringLiteral("load points of interest"));
        while (q.next()) {
            PoiRow p;
            p.divcode = q.value(0).toLongLong();
            p.name = q.value(1).toString();
            p.address = q.value(2).toString();
            p.lon = q.value(3).toDouble();
            p.lat = q.value(4).toDouble();
            p.category = q.value(5).toString();
            p.aliases = q.value(6).toString().split(u'|', Qt::SkipEmptyParts);
            rows.pois.append(std::move(p));
        }
    }
    return rows;
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

void withOwnConnection(const DatabaseConfig &config, const QString &purpose,
                       const std::function<void(Store &)> &fn)
{
    // Connection names are process-wide in Qt SQL, so the serial that keeps them apart is too.
    static std::atomic<quint64> serial{0};
    const QString unique = QStringLiteral("%1-%2").arg(purpose).arg(++serial);
    const auto remove = qScopeGuard([&unique] {
        const QString token = u'-' + unique + u'-';
        for (const QString &name : QSqlDatabase::connectionNames()) {
            if (name.contains(token))
                DatabaseConfig::close(name);
        }
    });
    // Every QSqlDatabase and QSqlQuery of the call lives in this scope and is gone before the
    // guard removes the connection.
    [&] {
        QSqlDatabase db = config.open(unique);
        Store store(db, config.kind());
        fn(store);
    }();
}

} // namespace AddressStore

namespace {

// The import itself, on the job's thread: the report its finished() signal carries.
AddressStore::ImportReport runImport(const DatabaseConfig &config, AddressStore::Kind kind,
                                     bool replace, const AddressImportJob::Read &read,
                                     const AddressImportJob::Committed &committed,
                                     const AddressStore::Progress &progress)
{
    using namespace AddressStore;
    ImportReport report;
    try {
        AddressImportJob::Input input = read();
        report = std::move(input.report);
        report.kind = kindName(kind);
        if (!report.ok())
            return report;
        withOwnConnection(config, QStringLiteral("address-import"), [&](Store &store) {
            Migrations::apply(store.database(), config.kind(), {AddressTables::migrations()});
            if (kind == Kind::Zipcodes)
                write(store, input.zipcodes, replace, report, progress);
            else
                write(store, input.pois, replace, report, progress);
            if (!committed || report.imported + report.removed == 0)
                return;
            // The rows are in: a failure from here on must not report them unwritten.
            try {
                committed(store);
            } catch (const std::exception &e) {
                qWarning("address import: written, but not loaded: %s", e.what());
            }
        });
    } catch (const std::exception &e) {
        report.kind = kindName(kind);
        report.fatal = QString::fromUtf8(e.what());
        report.imported = report.inserted = report.updated = report.removed = 0;
        report.total = 0;
    }
    return report;
}

} // namespace

AddressImportJob::AddressImportJob(QObject *context) : QObject(context) {}

AddressImportJob::~AddressImportJob()
{
    if (m_thread) {
        m_thread->wait();
        delete m_thread;
    }
}

AddressImportJob *AddressImportJob::start(const DatabaseConfig &config, AddressStore::Kind kind,
                                          bool replace, Read read, Committed committed,
                                          QObject *context)
{
    auto *job = new AddressImportJob(context);
    // The job outlives its thread (its destructor waits), so posting to it from there is always
    // safe; what is still queued when the job is deleted is dropped with it.
    const AddressStore::Progress progress = [job](qsizetype staged, qsizetype rows) {
        QMetaObject::invokeMethod(
            job, [job, staged, rows] { emit job->progress(staged, rows); }, Qt::QueuedConnection);
    };
    job->m_thread = QThread::create([job, config, kind, replace, read = std::move(read),
                                     committed = std::move(committed), progress] {
        const AddressStore::ImportReport report =
            runImport(config, kind, replace, read, committed, progress);
        QMetaObject::invokeMethod(
            job,
            [job, report] {
                emit job->finished(report);
                job->deleteLater();
            },
            Qt::QueuedConnection);
    });
    job->m_thread->setObjectName(QStringLiteral("address-import"));
    job->m_thread->start();
    return job;
}
