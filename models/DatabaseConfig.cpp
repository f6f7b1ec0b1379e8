#include "DatabaseConfig.h"

#include <fcntl.h>
#include <QFile>
#include <QSqlError>
#include <QSqlQuery>
#include <QThread>
#include <QUrl>
#include <QUrlQuery>
#include <unistd.h>

namespace {

// SQLite would create the file with 0644 less the umask, and give that mode to every -wal and
// -shm file after it. An empty file is a valid new database.
//
// Only a file that does not exist is opened (O_EXCL): closing any descriptor of a file drops
// every POSIX lock the process holds on it, SQLite's included. Opening and closing the database
// while this process's other connections had it open let the command line take it for unused,
// checkpoint and delete the WAL under the server, whose later commits then wrote over the command
// line's (a revoked key came back when the server stopped).
void createOwnerOnly(const QString &path)
{
    if (path.isEmpty() || path.startsWith(u':')) // ":memory:" and the like: no file
        return;
    const int fd =
        ::open(QFile::encodeName(path).constData(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        ::close(fd); // when it fails (it exists, mostly), SQLite's own open says what is wrong
}

} // namespace

DatabaseConfig DatabaseConfig::sqlite(const QString &filePath)
{
    DatabaseConfig c;
    c.m_kind = Kind::Sqlite;
    c.m_path = filePath;
    return c;
}

DatabaseConfig DatabaseConfig::fromUrl(const QString &text)
{
    const QUrl url(text, QUrl::StrictMode);
    if (!url.isValid() || (url.scheme() != u"postgresql" && url.scheme() != u"postgres"))
        throw StoreError("database URL must look like postgresql://user:password@host:port/db");
    DatabaseConfig c;
    c.m_kind = Kind::Postgres;
    c.m_host = url.host().isEmpty() ? QStringLiteral("127.0.0.1") : url.host();
    c.m_port = url.port(5432);
    c.m_user = url.userName();
    c.m_password = url.password();
    c.m_database = url.path().mid(1);
    if (c.m_database.isEmpty())
        throw StoreError("database URL names no database (postgresql://host/DBNAME)");
    return c;
}

QString DatabaseConfig::describe() const
{
    if (m_kind == Kind::Sqlite)
        return QStringLiteral("sqlite:%1").arg(m_path);
    return QStringLiteral("postgresql://%1@%2:%3/%4")
        .arg(m_user, m_host)
        .arg(m_port)
        .arg(m_database);
}

QStringList DatabaseConfig::sqliteFiles() const
{
    if (m_kind != Kind::Sqlite)
        return {};
    return {m_path, m_path + QStringLiteral("-wal"), m_path + QStringLiteral("-shm")};
}

QSqlDatabase DatabaseConfig::open(const QString &purpose) const
{
    // One named connection per thread and purpose: Qt SQL connections are thread-bound.
    // The name also carries the target, so a thread can hold connections to two databases.
    const QString name = QStringLiteral("sy-%1-%2-%3")
                             .arg(purpose)
                             .arg(reinterpret_cast<quintptr>(QThread::currentThreadId()))
                             .arg(qHash(describe()), 0, 16);
    if (QSqlDatabase::contains(name)) {
        {
            QSqlDatabase db = QSqlDatabase::database(name, false);
            if (db.isOpen())
                return db;
        }
        QSqlDatabase::removeDatabase(name); // one that did not open: tried again from scratch
    }
    QSqlDatabase db;
    if (m_kind == Kind::Sqlite) {
        createOwnerOnly(m_path);
        db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(m_path);
        db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=10000"));
    } else {
        db = QSqlDatabase::addDatabase(QStringLiteral("QPSQL"), name);
        db.setHostName(m_host);
        db.setPort(m_port);
        db.setUserName(m_user);
        db.setPassword(m_password);
        db.setDatabaseName(m_database);
        db.setConnectOptions(QStringLiteral("connect_timeout=10"));
    }
    if (!db.isValid())
        throw StoreError("the Qt SQL driver for this database is not installed");
    if (!db.open()) {
        const QString err = db.lastError().text();
        throw StoreError(QStringLiteral("cannot open %1: %2").arg(describe(), err).toStdString());
    }
    if (m_kind == Kind::Sqlite) {
        QSqlQuery q(db);
        // WAL lets readers run beside the single writer. In WAL mode NORMAL keeps every commit
        // once the process dies (it is in the WAL file); FULL also survives a power loss.
        const char *sync = m_fullSync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
        for (const char *pragma : {"PRAGMA journal_mode=WAL", sync, "PRAGMA foreign_keys=ON"}) {
            if (!q.exec(QString::fromLatin1(pragma)))
                throw StoreError(q.lastError().text().toStdString());
        }
    }
    return db;
}

void DatabaseConfig::close(const QString &connectionName)
{
    {
        QSqlDatabase db = QSqlDatabase::database(connectionName, false);
        if (db.isOpen())
            db.close();
    }
    QSqlDatabase::removeDatabase(connectionName);
}
