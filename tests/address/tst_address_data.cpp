// Imported zip codes and POIs in the database (SQLite and PostgreSQL): append, update, replace,
// reload into a snapshot, the asynchronous import into a family's engine, the family's load,
// and the `switchyard-server address` commands.

#include "address/AddressFamily.h"
#include "address/AddressStore.h"
#include "address/AddressTables.h"
#include "AddressApi.h"
#include "AddressData.h"
#include "AddressEngine.h"
#include "DatabaseService.h"
#include "Migrations.h"
#include "Store.h"
#include "TestSupport.h"

#include <QJsonArray>
#include <QPointer>
#include <QProcess>
#include <QScopeGuard>
#include <QSemaphore>
#include <QSignalSpy>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QThreadPool>

#include <algorithm>
#include <atomic>
#include <optional>

using namespace Qt::Literals::StringLiterals;
using AddressStore::ImportReport;

namespace {

QString fixture(const char *name)
{
    return QStringLiteral(FIXTURE_DIR "/") + QLatin1String(name);
}

Store open(const TestDatabase &t)
{
    QSqlDatabase db = t.config().open(QStringLiteral("test"));
    Migrations::apply(db, t.config().kind(), {AddressTables::migrations()});
    return Store(db, t.config().kind());
}

const Gazetteer::Division *division(const QStringList &names)
{
    QString error;
    const auto *d = LocalDataCsv::resolveRegion(Gazetteer::builtin(), names, &error);
    if (!d)
        qFatal("test region: %s", qPrintable(error));
    return d;
}

struct Run
{
    int code = -1;
    QString out;
    QString err;
};

Run cli(const TestDatabase &db, QStringList args)
{
    if (db.url().isEmpty())
        args << "--data-dir" << db.dataDir();
    else
        args << "--database" << db.url();
    QProcess p;
    p.start(QStringLiteral(SERVER_BINARY), args);
    p.waitForFinished(60'000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
            QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

// An import through the family, its report awaited (it comes back on this thread).
ImportReport importNow(AddressFamily &family, AddressStore::Kind kind, const QString &path,
                       bool replace = false)
{
    QObject context;
    AddressImportJob *job = family.importCsv(kind, path, replace, &context);
    QSignalSpy done(job, &AddressImportJob::finished);
    if (!done.wait(60000))
        qFatal("the import did not finish");
    return done.first().first().value<ImportReport>();
}

// Connections whose name contains `part` (DatabaseConfig names them sy-<purpose>-...).
QStringList connectionsNamed(const QString &part)
{
    QStringList out;
    for (const QString &name : QSqlDatabase::connectionNames()) {
        if (name.contains(part))
            out << name;
    }
    return out;
}

} // namespace

class TestAddressData : public QObject
{
    Q_OBJECT

private slots:
    void zipcodesAppendUpdateReplace_data() { addBackendRows(); }
    void zipcodesAppendUpdateReplace()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        using AddressStore::Kind;
        ImportReport r =
            AddressData::importFile(s, Kind::Zipcodes, fixture("zipcodes-fixture.csv"), false);
        QVERIFY(r.ok());
        QCOMPARE(r.records, 10);
        QCOMPARE(r.imported, 7);
        QCOMPARE(r.inserted, 7);
        QCOMPARE(r.updated, 0);
        QCOMPARE(r.errors.size(), 3);
        QCOMPARE(r.total, 7);
        QVERIFY(r.summary().contains("Imported 7 of 10 rows (7 new, 0 updated), 3 with errors"));

        // The same file again: every key exists, nothing doubles.
        r = AddressData::importFile(s, Kind::Zipcodes, fixture("zipcodes-fixture.csv"), false);
        QCOMPARE(r.inserted, 0);
        QCOMPARE(r.updated, 7);
        QCOMPARE(r.total, 7);

        // Append: one key changed, one new, one repeated in the file (the last row wins).
        r = AddressData::importData(s, Kind::Zipcodes,
                                    "zipcode,province,city,district\n"
                                    "311101,浙江省,杭州市,余杭区\n"
                                    "311102,浙江省,杭州市,余杭区\n"
                                    "310012,浙江省,杭州市,西湖区\n",
                                    false);
        QCOMPARE(r.imported, 3);
        QCOMPARE(r.inserted, 1);
        QCOMPARE(r.updated, 2);
        QCOMPARE(r.total, 8);
        auto data = AddressData::load(s);
        QCOMPARE(data->zipCount(), 8);
        const auto *yuhang = division({u"浙江省"_s, u"杭州市"_s, u"余杭区"_s});
        QCOMPARE(data->zipcode(yuhang, u"余杭区"_s)->entry->zipcode, u"311102"_s);
        QCOMPARE(data->zipcode(yuhang, u"余杭区文一西路"_s)->entry->zipcode, u"311122"_s);
        AddressStore::Counts c = AddressStore::counts(s);
        QCOMPARE(c.zipcodes, 8);
        QCOMPARE(c.zipRoads, 2);
        QCOMPARE(c.pois, 0);

        // Replace: only the new file's rows remain.
        r = AddressData::importData(s, Kind::Zipcodes, "zipcode,divcode\n310000,330100000000\n",
                                    true);
        QCOMPARE(r.removed, 8);
        QCOMPARE(r.inserted, 1);
        QCOMPARE(r.total, 1);
        data = AddressData::load(s);
        QCOMPARE(data->zipCount(), 1);
        QCOMPARE(data->zipcode(yuhang, u"余杭区"_s)->entry->zipcode, u"310000"_s);

        // A file that cannot be read writes nothing, replace or not.
        r = AddressData::importFile(s, Kind::Zipcodes, fixture("no-such-file.csv"), true);
        QVERIFY(!r.ok());
        QVERIFY(r.fatal.contains("cannot read"));
        r = AddressData::importData(s, Kind::Zipcodes, "zip,province\n", true);
        QVERIFY(r.fatal.contains("unknown column 'zip'"));
        QCOMPARE(AddressStore::counts(s).zipcodes, 1);
    }

    void poisRoundTrip_data() { addBackendRows(); }
    void poisRoundTrip()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        using AddressStore::Kind;
        QFile f(fixture("pois-fixture.csv"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray csv = f.readAll();
        const auto parsed = LocalDataCsv::parsePois(csv);
        ImportReport r = AddressData::importData(s, Kind::Pois, csv, false);
        QCOMPARE(r.imported, 4);
        QCOMPARE(r.errors.size(), 3);
        QCOMPARE(r.total, 4);
        const auto data = AddressData::load(s);
        QCOMPARE(data->poiCount(), 4);
        for (qsizetype i = 0; i < parsed.rows.size(); ++i) {
            const LocalData::Poi &p = data->pois()[i];
            const LocalDataCsv::PoiRow &row = parsed.rows[i];
            QCOMPARE(p.name, row.name);
            QCOMPARE(p.divcode, row.divcode);
            QCOMPARE(p.address, row.address);
            QCOMPARE(p.aliases, row.aliases);
            QCOMPARE(p.category, row.category);
            // Stored as doubles: the converted GCJ-02 point comes back to the last bit or two.
            QVERIFY(qAbs(p.lon - row.lon) < 1e-12 && qAbs(p.lat - row.lat) < 1e-12);
        }
        // Same name in the same division updates; --replace empties the table first.
        r = AddressData::importData(s, Kind::Pois,
                                    "name,province,city,district,town,lon,lat,aliases\n"
                                    "西溪科创大厦,浙江省,杭州市,余杭区,五常街道,120.06,30.29,\n",
                                    false);
        QCOMPARE(r.updated, 1);
        QCOMPARE(r.total, 4);
        const auto updated = AddressData::load(s);
        const auto m = updated->findPoi(u"余杭区西溪科创大厦"_s, nullptr);
        QVERIFY(m);
        QCOMPARE(m->poi->lon, 120.06);
        QVERIFY(m->poi->aliases.isEmpty());
        r = AddressData::importData(s, Kind::Pois,
                                    "name,divcode,lon,lat\n测试点,330110,120.1,30.3\n", true);
        QCOMPARE(r.removed, 4);
        QCOMPARE(r.total, 1);
        QCOMPARE(AddressStore::counts(s).pois, 1);
    }

    // The window's import (AddressFamily::importCsv): written to the family's database and
    // installed in the family's engine, where search finds the POIs once the index is rebuilt.
    void importCsvInstallsTheSnapshot_data() { addBackendRows(); }
    void importCsvInstallsTheSnapshot()
    {
        SY_OPEN_DB(t);
        DatabaseService service(t.config());
        service.start({AddressTables::migrations()});
        AddressFamily family;
        family.start(service);
        QVERIFY(family.waitForLoad(60000));
        AddressEngine &engine = *family.engine();
        const quint64 before = engine.generation();
        ImportReport r = importNow(family, AddressStore::Kind::Pois, fixture("pois-fixture.csv"));
        QVERIFY(r.ok());
        QCOMPARE(engine.generation(), before + 1);
        QCOMPARE(engine.localData()->poiCount(), 4);
        // search finds an imported POI by name and by alias once its index is rebuilt.
        auto topName = [&engine](const char *query) {
            const AddressApi::Reply reply = AddressApi::call(engine, QStringLiteral("search"),
                                                             {{"text", QString::fromUtf8(query)}});
            const QJsonObject first =
                reply.body.value("search_result").toArray().first().toObject();
            return first.value("kind").toString() + u':' + first.value("name").toString();
        };
        QTRY_COMPARE_WITH_TIMEOUT(topName("西溪科创大厦"), QStringLiteral("poi:西溪科创大厦"),
                                  60000);
        QCOMPARE(topName("科创大厦"), QStringLiteral("poi:西溪科创大厦"));
        // A file with only bad rows changes nothing and installs nothing.
        QTemporaryDir dir;
        QFile bad(dir.filePath("bad.csv"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("name,province,lon,lat\n,浙江省,120,30\n");
        bad.close();
        r = importNow(family, AddressStore::Kind::Pois, bad.fileName());
        QCOMPARE(r.imported, 0);
        QCOMPARE(r.errors.size(), 1);
        QCOMPARE(engine.generation(), before + 1);
        service.stop();
    }

    // The asynchronous import: progress and the report arrive on the caller's thread while the
    // rows are written on another; the data goes into that family's engine only (another
    // family over the same database keeps what it loaded until it reloads).
    void importCsvReportsOnTheCallersThread_data() { addBackendRows(); }
    void importCsvReportsOnTheCallersThread()
    {
        SY_OPEN_DB(t);
        DatabaseService service(t.config());
        service.start({AddressTables::migrations()});
        AddressFamily family;
        AddressFamily other;
        QVERIFY(!family.canImport());
        family.start(service);
        other.start(service);
        QVERIFY(family.canImport());
        QVERIFY(family.waitForLoad(60000) && other.waitForLoad(60000));

        QTemporaryDir dir;
        QFile csv(dir.filePath("many.csv"));
        QVERIFY(csv.open(QIODevice::WriteOnly));
        csv.write("zipcode,divcode,road\n");
        const int rows = 12'000;
        for (int i = 0; i < rows; ++i)
            csv.write("311100,330110,路" + QByteArray::number(i) + "\n");
        csv.close();

        QObject context;
        AddressImportJob *job =
            family.importCsv(AddressStore::Kind::Zipcodes, csv.fileName(), false, &context);
        QCOMPARE(job->parent(), &context);
        QCOMPARE(job->thread(), QThread::currentThread());
        QList<qsizetype> staged;
        QList<QThread *> threads;
        std::optional<ImportReport> report;
        connect(job, &AddressImportJob::progress, &context, [&](qsizetype n, qsizetype total) {
            QCOMPARE(total, qsizetype(rows));
            staged << n;
            threads << QThread::currentThread();
        });
        connect(job, &AddressImportJob::finished, &context, [&](const ImportReport &r) {
            report = r;
            threads << QThread::currentThread();
        });
        QPointer<AddressImportJob> alive(job);
        QVERIFY(!report); // delivered later, by this thread's event loop
        QTRY_VERIFY_WITH_TIMEOUT(report.has_value(), 60000);
        QVERIFY(report->ok());
        QCOMPARE(report->imported, rows);
        QCOMPARE(report->inserted, rows);
        QCOMPARE(report->total, qint64(rows));
        QVERIFY(staged.size() >= 2);
        QCOMPARE(staged.last(), qsizetype(rows));
        QVERIFY(std::is_sorted(staged.begin(), staged.end()));
        for (QThread *thread : std::as_const(threads))
            QCOMPARE(thread, QThread::currentThread());
        QTRY_VERIFY(!alive); // the job deletes itself after finished()

        const auto *yuhang = division({u"浙江省"_s, u"杭州市"_s, u"余杭区"_s});
        QCOMPARE(family.engine()->localData()->zipCount(), rows);
        QCOMPARE(family.engine()->localData()->zipcode(yuhang, u"余杭区路5"_s)->entry->zipcode,
                 u"311100"_s);
        QCOMPARE(other.engine()->localData()->zipCount(), 0);
        const QJsonObject answer = AddressApi::call(*other.engine(), QStringLiteral("zipcode"),
                                                    {{"text", u"浙江省杭州市余杭区路5"_s}})
                                       .body;
        QCOMPARE(answer.value("status").toString(), QStringLiteral("NO_DATA"));
        service.stop();
    }

    // A database the import cannot use is the report's fatal, never an exception; so is an
    // import before the family has a database.
    void importCsvDatabaseFailure()
    {
        AddressFamily unstarted;
        QVERIFY(!unstarted.canImport());
        ImportReport r =
            importNow(unstarted, AddressStore::Kind::Pois, fixture("pois-fixture.csv"));
        QVERIFY(!r.ok());
        QVERIFY2(r.fatal.contains("no database"), qPrintable(r.fatal));
        QCOMPARE(r.kind, QStringLiteral("pois"));

        // The family only keeps the database's configuration (its loads and imports open
        // connections of their own), so a service that was never started will do.
        QTemporaryDir dir;
        DatabaseService nowhere(DatabaseConfig::sqlite(dir.filePath("no/such/dir/db")));
        AddressFamily family;
        family.start(nowhere);
        QVERIFY(family.waitForLoad(60000)); // it failed, with a warning
        r = importNow(family, AddressStore::Kind::Pois, fixture("pois-fixture.csv"));
        QVERIFY(!r.ok());
        QVERIFY2(r.fatal.contains("cannot open"), qPrintable(r.fatal));
        QCOMPARE(r.imported, 0);
        QCOMPARE(r.records, 7); // the file was read; nothing was written
        QCOMPARE(family.engine()->generation(), quint64(0));

        // The same through the job itself, and its connection is gone.
        QObject context;
        std::atomic_bool committed = false;
        AddressImportJob *job = AddressImportJob::start(
            DatabaseConfig::sqlite(dir.filePath("no/such/dir/db")), AddressStore::Kind::Zipcodes,
            false,
            [] {
                return AddressData::readFile(AddressStore::Kind::Zipcodes,
                                             fixture("zipcodes-fixture.csv"));
            },
            [&committed](Store &) { committed = true; }, &context);
        QSignalSpy done(job, &AddressImportJob::finished);
        QVERIFY(done.wait(60000));
        r = done.first().first().value<ImportReport>();
        QVERIFY(!r.ok());
        QVERIFY(!committed);
        QVERIFY(connectionsNamed("address-import").isEmpty());
    }

    // Staging takes no lock on the data tables: another connection (the server's billing
    // writer) commits while an import stages its rows. A lock held across the whole import,
    // as one transaction over all rows does, makes that write fail at once (no busy wait).
    void importLetsOthersWriteWhileStaging_data() { addBackendRows(); }
    void importLetsOthersWriteWhileStaging()
    {
        SY_OPEN_DB(t);
        Store s = open(t);
        QSqlDatabase other = t.config().open(QStringLiteral("other-writer"));
        QSqlQuery w(other);
        QVERIFY2(w.exec("CREATE TABLE scratch_writes (n INTEGER NOT NULL)"),
                 qPrintable(w.lastError().text()));
        if (t.config().kind() == DatabaseConfig::Kind::Sqlite)
            QVERIFY(w.exec("PRAGMA busy_timeout = 0"));
        else
            QVERIFY(w.exec("SET lock_timeout = 1"));

        QByteArray csv = "zipcode,divcode,road\n";
        const int rows = 12'000;
        for (int i = 0; i < rows; ++i)
            csv += "311100,330110,路" + QByteArray::number(i) + "\n";
        QList<qsizetype> calls;
        QStringList writeErrors;
        qsizetype distinctRows = rows;
        const auto progress = [&](qsizetype staged, qsizetype total) {
            QCOMPARE(total, distinctRows);
            calls << staged;
            QSqlQuery q(other);
            q.prepare("INSERT INTO scratch_writes (n) VALUES (?)");
            q.addBindValue(int(staged));
            if (!q.exec())
                writeErrors << q.lastError().text();
        };
        using AddressStore::Kind;
        ImportReport r = AddressData::importData(s, Kind::Zipcodes, csv, false, progress);
        QVERIFY2(writeErrors.isEmpty(), qPrintable(writeErrors.join(u'\n')));
        QVERIFY(r.ok());
        QCOMPARE(r.imported, rows);
        QCOMPARE(r.inserted, rows);
        QCOMPARE(r.updated, 0);
        QCOMPARE(r.total, rows);
        QVERIFY(calls.size() >= 2);
        QVERIFY(calls.first() < rows); // a call while rows were still being staged
        QCOMPARE(calls.last(), qsizetype(rows));
        QVERIFY(std::is_sorted(calls.begin(), calls.end()));
        QVERIFY(w.exec("SELECT COUNT(*) FROM scratch_writes") && w.next());
        QCOMPARE(w.value(0).toInt(), calls.size());

        // Again, with one row changed and one added, then replaced: the counts stay right and
        // the staging table of the previous import is gone.
        csv += "311199,330110,路5\n311100,330110,新路\n";
        calls.clear();
        distinctRows = rows + 1; // 路5 twice: the last row wins
        r = AddressData::importData(s, Kind::Zipcodes, csv, false, progress);
        QVERIFY(writeErrors.isEmpty());
        QCOMPARE(r.imported, rows + 2);
        QCOMPARE(r.inserted, 1);
        QCOMPARE(r.updated, rows + 1);
        QCOMPARE(r.total, rows + 1);
        const auto *yuhang = division({u"浙江省"_s, u"杭州市"_s, u"余杭区"_s});
        QCOMPARE(AddressData::load(s)->zipcode(yuhang, u"余杭区路5"_s)->entry->zipcode,
                 u"311199"_s);
        r = AddressData::importData(s, Kind::Zipcodes, "zipcode,divcode\n310000,330110\n", true);
        QCOMPARE(r.removed, rows + 1);
        QCOMPARE(r.inserted, 1);
        QCOMPARE(r.total, 1);
        w.finish();
    }

    // Every import opens a connection of its own and removes it: threads come and go (and
    // reuse ids), and a connection left behind is an open file or a PostgreSQL session.
    void importCsvRemovesItsConnection_data() { addBackendRows(); }
    void importCsvRemovesItsConnection()
    {
        SY_OPEN_DB(t);
        QTemporaryDir dir;
        QFile bad(dir.filePath("bad.csv"));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("zipcode,province\n1,浙江省\n");
        bad.close();
        DatabaseService service(t.config());
        service.start({AddressTables::migrations()});
        AddressFamily family;
        family.start(service);
        QVERIFY(family.waitForLoad(60000));
        DatabaseService nowhere(DatabaseConfig::sqlite(dir.filePath("no/such/dir/db")));
        AddressFamily broken;
        broken.start(nowhere);
        QVERIFY(broken.waitForLoad(60000));
        service.flush(); // its threads have opened their connections
        const QStringList before = QSqlDatabase::connectionNames();
        QList<ImportReport> reports;
        reports << importNow(family, AddressStore::Kind::Zipcodes, fixture("zipcodes-fixture.csv"));
        for (int i = 0; i < 4; ++i)
            reports << importNow(family, AddressStore::Kind::Zipcodes, bad.fileName());
        reports << importNow(broken, AddressStore::Kind::Zipcodes, fixture("zipcodes-fixture.csv"));
        QCOMPARE(reports.size(), 6);
        QCOMPARE(reports[0].imported, 7);
        for (int i = 1; i < 5; ++i) {
            QVERIFY(reports[i].ok());
            QCOMPARE(reports[i].errors.size(), 1);
        }
        QVERIFY(!reports[5].ok());
        QCOMPARE(QSqlDatabase::connectionNames(), before);
        QVERIFY(connectionsNamed("address-import").isEmpty());
        service.stop();
    }

    // The start-up load runs beside the service's readers, not on one: with the only reader
    // busy, the data still arrives (the old load queued behind the busy reader).
    void loadAsyncDoesNotTakeAReader_data() { addBackendRows(); }
    void loadAsyncDoesNotTakeAReader()
    {
        SY_OPEN_DB(t);
        {
            Store s = open(t);
            QVERIFY(AddressData::importFile(s, AddressStore::Kind::Pois,
                                            fixture("pois-fixture.csv"), false)
                        .ok());
        }
        DatabaseService service(t.config(), 1);
        service.start();
        QSemaphore entered;
        QSemaphore release;
        service.read<int>(
            nullptr,
            [&](Store &) {
                entered.release();
                release.acquire();
                return 0;
            },
            [](const DbResult<int> &) {});
        entered.acquire();
        const auto unblock = qScopeGuard([&] { release.release(); });
        AddressFamily family;
        const quint64 generation = family.engine()->generation();
        family.start(service);
        QVERIFY(family.waitForLoad(60000));
        QCOMPARE(family.engine()->generation(), generation + 1);
        QCOMPARE(family.engine()->localData()->poiCount(), 4);
        // Its connection is gone once the data is installed.
        QVERIFY(connectionsNamed("address-load").isEmpty());
        // stop() waits for a load that is under way.
        family.stop();
    }

    void commandLine_data() { addBackendRows(); }
    void commandLine()
    {
        SY_OPEN_DB(t);
        Run r = cli(t, {"address", "import", "zipcodes", fixture("zipcodes-fixture.csv")});
        QCOMPARE(r.code, 3); // imported, but some rows were rejected
        QVERIFY2(r.out.contains("Imported 7 of 10 rows (7 new, 0 updated), 3 with errors"),
                 qPrintable(r.out));
        QVERIFY2(r.err.contains("zipcodes-fixture.csv:9: zipcode '31000' has 5 digits"),
                 qPrintable(r.err));
        QVERIFY(r.err.contains("zipcodes-fixture.csv:11: unknown region '杭洲市'"));
        r = cli(t, {"address", "import", "pois", fixture("pois-fixture.csv"), "--replace"});
        QCOMPARE(r.code, 3);
        QVERIFY(r.out.contains("4 points of interest in the database"));
        r = cli(t, {"address", "status"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("zipcodes\t7\n"));
        QVERIFY(r.out.contains("zipcode roads\t2\n"));
        QVERIFY(r.out.contains("pois\t4\n"));

        // A clean file exits 0; more than 20 bad rows are counted, not all listed.
        QTemporaryDir dir;
        QFile good(dir.filePath("good.csv"));
        QVERIFY(good.open(QIODevice::WriteOnly));
        good.write("zipcode,province,city\n310000,浙江省,杭州市\n");
        good.close();
        r = cli(t, {"address", "import", "zipcodes", good.fileName(), "--replace"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("replacing 7 rows"));
        QFile many(dir.filePath("many.csv"));
        QVERIFY(many.open(QIODevice::WriteOnly));
        many.write("zipcode,province\n");
        for (int i = 0; i < 25; ++i)
            many.write("1,浙江省\n");
        many.close();
        r = cli(t, {"address", "import", "zipcodes", many.fileName()});
        QCOMPARE(r.code, 3);
        QCOMPARE(r.err.count("has 1 digits"), 20);
        QVERIFY(r.err.contains("... and 5 more rows with errors"));
        QVERIFY(r.out.contains("Imported 0 of 25 rows"));

        // Errors: a file that cannot be used is 1, a usage mistake 2.
        r = cli(t, {"address", "import", "zipcodes", dir.filePath("missing.csv")});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.contains("cannot read"));
        r = cli(t, {"address", "import", "pois", good.fileName()});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.contains("unknown column 'zipcode'"));
        r = cli(t, {"address", "import", "streets", good.fileName()});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("zipcodes|pois"));
        r = cli(t, {"address", "import", "zipcodes"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("exactly one CSV file"));
        r = cli(t, {"address", "frobnicate"});
        QCOMPARE(r.code, 2);
        QProcess p;
        p.start(QStringLiteral(SERVER_BINARY), {"address", "import", "pois", "--help"});
        QVERIFY(p.waitForFinished(30'000));
        QCOMPARE(p.exitCode(), 0);
        const QString help = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY(help.contains("--replace"));
        QVERIFY(help.contains("name,province,city,district,town,address,lon,lat"));
    }
};

QTEST_GUILESS_MAIN(TestAddressData)
#include "tst_address_data.moc"
