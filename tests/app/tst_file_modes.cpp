#include "DatabaseService.h"
#include "FileModes.h"
#include "TestSupport.h"

#include <csignal>
#include <QDir>
#include <QProcess>
#include <QRegularExpression>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <sys/stat.h>
#include <unistd.h>

// The data directory (0700) and the files that hold secrets (database, -wal, -shm, config:
// 0600), as the programs leave them: fresh ones made owner-only whatever the umask, wider ones
// tightened at start with a line saying so, another user's config file left with a warning.
class TestFileModes : public QObject
{
    Q_OBJECT

    struct Run
    {
        int code = -1;
        QString out;
        QString err;
    };

    // "0600", or "missing": failures read like ls -l.
    static QString modeOf(const QString &path)
    {
        struct stat st = {};
        if (::stat(QFile::encodeName(path).constData(), &st) != 0)
            return QStringLiteral("missing");
        return QStringLiteral("%1").arg(uint(st.st_mode & 07777), 4, 8, QLatin1Char('0'));
    }

    static void setMode(const QString &path, int mode)
    {
        if (::chmod(QFile::encodeName(path).constData(), mode_t(mode)) != 0)
            qFatal("chmod %s failed", qPrintable(path));
    }

    static void writeFile(const QString &path, const QByteArray &content)
    {
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
            f.write(content) != content.size())
            qFatal("cannot write %s", qPrintable(path));
    }

    // The server binary with the given umask (0: every file it does not restrict itself would
    // come out readable and writable by all).
    static void start(QProcess &p, const QStringList &args, mode_t mask)
    {
        p.setChildProcessModifier([mask] { ::umask(mask); });
        p.start(QStringLiteral(SERVER_BINARY), args);
    }

    static Run run(const QStringList &args, mode_t mask = 022)
    {
        QProcess p;
        start(p, args, mask);
        p.waitForFinished(30'000);
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
                QString::fromUtf8(p.readAllStandardOutput()),
                QString::fromUtf8(p.readAllStandardError())};
    }

    // Starts serve on a free loopback port; returns its standard error up to the banner.
    static QString serve(QProcess &server, const QStringList &args, mode_t mask = 022)
    {
        start(server, QStringList{"serve", "--listen", "127.0.0.1:0"} + args, mask);
        QString banner;
        QElapsedTimer t;
        t.start();
        while (!banner.contains("listening on") && t.elapsed() < 10'000 &&
               server.state() != QProcess::NotRunning) {
            server.waitForReadyRead(200);
            banner += QString::fromUtf8(server.readAllStandardError());
        }
        return banner;
    }

    static void stop(QProcess &server)
    {
        ::kill(pid_t(server.processId()), SIGTERM);
        if (!server.waitForFinished(10'000))
            qFatal("serve did not stop on SIGTERM");
    }

    static QStringList tightened(const QString &err)
    {
        QStringList lines;
        for (const QString &line : err.split(u'\n'))
            if (line.startsWith("switchyard: "))
                lines.append(line);
        return lines;
    }

    // Restores the test's umask when it goes.
    struct Umask
    {
        explicit Umask(mode_t mask) : old(::umask(mask)) {}
        ~Umask() { ::umask(old); }
        mode_t old;
    };

private slots:
    void freshDataDirectory()
    {
        QTemporaryDir tmp;
        const QString dir = tmp.filePath("nested/data");
        const QString db = dir + "/switchyard.db";
        QProcess server;
        const QString banner = serve(server, {"--data-dir", dir}, 0);
        QVERIFY2(banner.contains("listening on"), qPrintable(banner));
        QCOMPARE(tightened(banner), QStringList()); // made right: nothing to fix
        QCOMPARE(modeOf(dir), QStringLiteral("0700"));
        QCOMPARE(modeOf(db), QStringLiteral("0600"));
        // The server's connections keep the WAL and its index while it runs.
        QTRY_VERIFY(QFile::exists(db + "-wal") && QFile::exists(db + "-shm"));
        QCOMPARE(modeOf(db + "-wal"), QStringLiteral("0600"));
        QCOMPARE(modeOf(db + "-shm"), QStringLiteral("0600"));
        // An admin command beside it (umask 0 too) leaves them so.
        const Run key = run({"keys", "create", "--name", "k", "--data-dir", dir}, 0);
        QVERIFY2(key.code == 0, qPrintable(key.err));
        QCOMPARE(tightened(key.err), QStringList());
        stop(server);
        QCOMPARE(server.exitCode(), 0);
        QCOMPARE(modeOf(dir), QStringLiteral("0700"));
        QCOMPARE(modeOf(db), QStringLiteral("0600"));
    }

    void wideModesTightened_data() { addBackendRows(); }
    void wideModesTightened()
    {
        SY_OPEN_DB(testDb);
        QTemporaryDir tmp;
        const QString dir = tmp.filePath("data");
        const QString db = dir + "/switchyard.db";
        const QString config = dir + "/config.json";
        const bool sqlite = testDb.url().isEmpty();
        QStringList where{"--data-dir", dir};
        if (!sqlite)
            where << "--database" << testDb.url();
        if (!sqlite) // the data directory holds only the config file then; nothing makes it
            QVERIFY(QDir().mkpath(dir));
        Run r = run(QStringList{"keys", "create", "--name", "k"} + where);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(QDir().exists(dir));
        QCOMPARE(QFile::exists(db), sqlite);
        writeFile(config, "{}");

        // Another process's connection keeps a WAL and its index there, as a running server's
        // do; everything is then opened up as an older release or a careless copy left it.
        std::optional<DatabaseConfig> held;
        QString heldName;
        QStringList expected{QStringLiteral("switchyard: tightened permissions of %1 from 0755 "
                                            "to 0700")
                                 .arg(dir)};
        if (sqlite) {
            held = DatabaseConfig::sqlite(db);
            QSqlDatabase c = held->open(QStringLiteral("holder"));
            heldName = c.connectionName();
            QSqlQuery q(c);
            QVERIFY(q.exec("SELECT count(*) FROM api_keys") && q.next());
            QCOMPARE(q.value(0).toInt(), 1);
            QVERIFY(QFile::exists(db + "-wal") && QFile::exists(db + "-shm"));
            for (const QString &f : {db, db + "-wal", db + "-shm"}) {
                setMode(f, 0644);
                expected << QStringLiteral("switchyard: tightened permissions of %1 from 0644 to "
                                           "0600")
                                .arg(f);
            }
        }
        setMode(config, 0644);
        expected << QStringLiteral("switchyard: tightened permissions of %1 from 0644 to 0600")
                        .arg(config);
        setMode(dir, 0755);

        r = run(QStringList{"keys", "list"} + where);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(r.out.contains("\tk\t"));
        QCOMPARE(tightened(r.err), expected);
        QCOMPARE(modeOf(dir), QStringLiteral("0700"));
        QCOMPARE(modeOf(config), QStringLiteral("0600"));
        if (sqlite) {
            for (const QString &f : {db, db + "-wal", db + "-shm"})
                QCOMPARE(modeOf(f), QStringLiteral("0600"));
        } else {
            QVERIFY(!QFile::exists(db)); // PostgreSQL: no database file in the data directory
        }
        // Once is enough: the next start has nothing to say.
        r = run(QStringList{"credits", "balance"} + where);
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QCOMPARE(tightened(r.err), QStringList());
        if (held)
            DatabaseConfig::close(heldName);

        // serve does the same, the config file included.
        setMode(dir, 0750);
        setMode(config, 0640);
        QProcess server;
        const QString banner = serve(server, where);
        QVERIFY2(banner.contains("listening on"), qPrintable(banner));
        QCOMPARE(tightened(banner),
                 QStringList({QStringLiteral("switchyard: tightened permissions of %1 from 0750 "
                                             "to 0700")
                                  .arg(dir),
                              QStringLiteral("switchyard: tightened permissions of %1 from 0640 "
                                             "to 0600")
                                  .arg(config)}));
        stop(server);
        QCOMPARE(modeOf(dir), QStringLiteral("0700"));
        QCOMPARE(modeOf(config), QStringLiteral("0600"));
    }

    void namedConfigFile_data()
    {
        QTest::addColumn<bool>("others");
        QTest::newRow("the user's own") << false;
        QTest::newRow("another user's") << true;
    }
    void namedConfigFile()
    {
        QFETCH(bool, others);
        if (others && ::geteuid() != 0)
            QSKIP("giving the config file to another user needs root");
        QTemporaryDir tmp;
        const QString config = tmp.filePath("switchyard.json");
        writeFile(config, R"({"server": {"idle_timeout_ms": 60000}})");
        setMode(config, 0644);
        const uid_t nobody = 65534;
        if (others)
            QVERIFY(::chown(QFile::encodeName(config).constData(), nobody, nobody) == 0);
        QProcess server;
        const QString banner =
            serve(server, {"--data-dir", tmp.filePath("data"), "--config", config});
        // Another user's is not ours to change: a warning, and the server goes on.
        QVERIFY2(banner.contains("listening on"), qPrintable(banner));
        const QString line =
            others ? QStringLiteral("switchyard: warning: %1 is open to other users (0644) and "
                                    "belongs to another user (uid 65534); left as it is")
                   : QStringLiteral("switchyard: tightened permissions of %1 from 0644 to 0600");
        QCOMPARE(tightened(banner), QStringList{line.arg(config)});
        QCOMPARE(modeOf(config), others ? QStringLiteral("0644") : QStringLiteral("0600"));
        stop(server);
        QCOMPARE(server.exitCode(), 0);
    }

    void walMadeLaterIsOwnerOnly()
    {
        // With umask 0 nothing but the server's own care keeps these files private.
        const Umask everyone(0);
        QTemporaryDir tmp;
        const QString db = tmp.filePath("switchyard.db");
        {
            // A database made as an older release made it: by SQLite, mode 0666 less the umask.
            QSqlDatabase c = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), "older");
            c.setDatabaseName(db);
            QVERIFY(c.open());
            QSqlQuery q(c);
            QVERIFY(q.exec("PRAGMA journal_mode=WAL") && q.exec("CREATE TABLE t (x)"));
        }
        QSqlDatabase::removeDatabase("older");
        QCOMPARE(modeOf(db),
                 QStringLiteral("0644")); // SQLite's default mode, which the umask 0 leaves whole
        QVERIFY(!QFile::exists(db + "-wal")); // the last connection took it away
        QCOMPARE(FileModes::restrictToOwner(db),
                 QStringLiteral("tightened permissions of %1 from 0644 to 0600").arg(db));

        for (int round = 0; round < 2; ++round) {
            {
                DatabaseService service(DatabaseConfig::sqlite(db));
                service.start();
                std::optional<DbResult<ChargeResult>> granted;
                service.applyLedger(nullptr, service.defaultAccountId(), "grant", 1000, "test", {},
                                    0, [&](const DbResult<ChargeResult> &r) { granted = r; });
                service.flush();
                QVERIFY(granted && granted->ok());
                // Made after start: in the second round, again after the first one's went.
                QVERIFY(QFile::exists(db + "-wal") && QFile::exists(db + "-shm"));
                QCOMPARE(modeOf(db + "-wal"), QStringLiteral("0600"));
                QCOMPARE(modeOf(db + "-shm"), QStringLiteral("0600"));
            }
            QVERIFY(!QFile::exists(db + "-wal")); // the last connection closed: made anew next
        }
        QCOMPARE(modeOf(db), QStringLiteral("0600"));

        // A database the server makes itself is owner-only from the start.
        const QString fresh = tmp.filePath("fresh.db");
        {
            DatabaseService service(DatabaseConfig::sqlite(fresh));
            service.start();
            QCOMPARE(modeOf(fresh), QStringLiteral("0600"));
            QTRY_VERIFY(QFile::exists(fresh + "-wal"));
            QCOMPARE(modeOf(fresh + "-wal"), QStringLiteral("0600"));
        }
    }

    void restrictToOwnerRules()
    {
        QTemporaryDir tmp;
        const QString file = tmp.filePath("f");
        writeFile(file, "x");
        QCOMPARE(FileModes::restrictToOwner(tmp.filePath("missing")), QString());
        setMode(file, 0600);
        QCOMPARE(FileModes::restrictToOwner(file), QString());
        setMode(file, 0400);
        QCOMPARE(FileModes::restrictToOwner(file), QString()); // never adds a permission
        setMode(file, 0754);
        QCOMPARE(FileModes::restrictToOwner(file),
                 QStringLiteral("tightened permissions of %1 from 0754 to 0700").arg(file));
        QCOMPARE(modeOf(file), QStringLiteral("0700"));
        setMode(file, 0604);
        QCOMPARE(FileModes::restrictToOwner(file),
                 QStringLiteral("tightened permissions of %1 from 0604 to 0600").arg(file));
        // A shared directory (--data-dir /tmp) is not taken from the others who use it.
        const QString shared = tmp.filePath("shared");
        QVERIFY(QDir().mkpath(shared));
        setMode(shared, 01777);
        QVERIFY(FileModes::restrictToOwner(shared).startsWith("warning: " + shared));
        QCOMPARE(modeOf(shared), QStringLiteral("1777"));

        // A directory made private is 0700 whatever the umask; an existing one is left alone.
        const Umask everyone(0);
        const QString dir = tmp.filePath("a/b/c");
        QString error;
        QVERIFY2(FileModes::makePrivateDirectory(dir, &error), qPrintable(error));
        QCOMPARE(modeOf(dir), QStringLiteral("0700"));
        setMode(dir, 0750);
        QVERIFY(FileModes::makePrivateDirectory(dir, &error));
        QCOMPARE(modeOf(dir), QStringLiteral("0750"));
        QVERIFY(!FileModes::makePrivateDirectory(file + "/sub", &error)); // under a file
        QVERIFY(!error.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestFileModes)
#include "tst_file_modes.moc"
