#pragma once

#include "DatabaseConfig.h"

#include <memory>
#include <QStringList>
#include <QTemporaryDir>
#include <QTest>

class DatabaseService;

// Storage and pipeline suites run against both databases: SQLite in a temporary directory and
// PostgreSQL in a fresh database on the server named by SWITCHYARD_TEST_PG_URL (tests/run-all.sh
// starts one). Without that variable the PostgreSQL rows are skipped, unless
// SWITCHYARD_REQUIRE_PG=1, in which case they fail.
class TestDatabase
{
public:
    explicit TestDatabase(const QString &backend);
    ~TestDatabase();
    bool ready() const { return m_ready; }
    QString skipReason() const { return m_skip; }
    const DatabaseConfig &config() const { return *m_config; }
    QString url() const { return m_url; } // for child processes: --database URL or empty
    QString dataDir() const { return m_dir.path(); }
    // What a switchyard-server command needs to open this database: --data-dir, --database.
    QStringList cliArgs() const;

private:
    QTemporaryDir m_dir;
    std::optional<DatabaseConfig> m_config;
    QString m_url;
    QString m_adminUrl;
    QString m_dbName;
    QString m_skip;
    bool m_ready = false;
};

// Adds a "backend" column with rows sqlite and postgres.
void addBackendRows();

// Runs a program to its end (30 s at most): an empty string when it exited 0, else its
// standard error. *out gets its standard output, trimmed.
QString runProgram(const QString &program, const QStringList &args, QByteArray *out = nullptr);

// Keeps a DatabaseService's writer busy from construction (which returns once the writer is
// held) until release() or destruction: writes posted meanwhile queue behind it, and none
// commits.
class WriterHold
{
public:
    explicit WriterHold(DatabaseService &db);
    ~WriterHold() { release(); }
    WriterHold(const WriterHold &) = delete;
    WriterHold &operator=(const WriterHold &) = delete;
    void release();

private:
    struct State;
    std::shared_ptr<State> m_state; // shared with the writer's job, which may end after this
};

#define SY_OPEN_DB(var)                                                                            \
    QFETCH(QString, backend);                                                                      \
    TestDatabase var(backend);                                                                     \
    if (!var.ready()) {                                                                            \
        if (qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") == QLatin1String("1"))                   \
            QFAIL(qPrintable(var.skipReason()));                                                   \
        QSKIP(qPrintable(var.skipReason()));                                                       \
    }
