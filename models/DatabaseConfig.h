#pragma once

#include <QSqlDatabase>
#include <QString>
#include <QStringList>
#include <stdexcept>

class StoreError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

// Where the data lives: a SQLite file in the data directory (default) or a PostgreSQL URL
// (postgresql://user:password@host:port/dbname). Each thread opens its own connection.
class DatabaseConfig
{
public:
    enum class Kind
    {
        Sqlite,
        Postgres
    };

    static DatabaseConfig sqlite(const QString &filePath);
    // Throws StoreError on a malformed URL.
    static DatabaseConfig fromUrl(const QString &url);

    Kind kind() const { return m_kind; }
    bool isPostgres() const { return m_kind == Kind::Postgres; }
    QString describe() const; // for logs: never includes the password
    // SQLite: fsync every commit (synchronous=FULL) so a commit also survives power loss. The
    // default (WAL with synchronous=NORMAL) is durable when the process is killed, without a
    // disk flush on every commit.
    void setSqliteFullSync(bool on) { m_fullSync = on; }
    bool sqliteFullSync() const { return m_fullSync; }

    // The SQLite file (empty for PostgreSQL).
    QString sqlitePath() const { return m_path; }
    // The SQLite file and the -wal and -shm files beside it (none for PostgreSQL).
    QStringList sqliteFiles() const;

    // Opens (or reuses) this thread's connection with the given name suffix. Throws StoreError.
    // A SQLite file that does not exist yet is created owner-only (0600) first; SQLite gives
    // the -wal and -shm files it makes the database file's mode, so they are owner-only too,
    // whatever the umask, also when it makes them again later.
    QSqlDatabase open(const QString &purpose) const;
    static void close(const QString &connectionName);

private:
    Kind m_kind = Kind::Sqlite;
    QString m_path;
    QString m_host;
    int m_port = 5432;
    QString m_user;
    QString m_password;
    QString m_database;
    bool m_fullSync = false;
};
