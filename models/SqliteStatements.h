#pragma once

#include <QSqlDatabase>
#include <unordered_map>

struct sqlite3;
struct sqlite3_stmt;

// SQLite statements prepared once on a Qt SQL connection's own handle, for the writer's hot
// path (Store::settleBatch): Qt SQL costs about 2,800 instructions per bound value (it names
// each position with QString::arg) and fills a result cache per execution, more than SQLite
// itself spends on a row. The handle is the one the QSQLITE driver opened (the system's
// libsqlite3), so these statements run inside the connection's transaction. Not thread-safe:
// the connection's thread only. Finalizes its statements when destroyed, which must happen
// before the connection closes.
class SqliteStatements
{
public:
    // Throws StoreError when the connection is not an open SQLite one.
    explicit SqliteStatements(const QSqlDatabase &db);
    ~SqliteStatements();
    SqliteStatements(const SqliteStatements &) = delete;
    SqliteStatements &operator=(const SqliteStatements &) = delete;

    sqlite3 *handle() const { return m_db; }
    // The statement of this text (keyed by its address: a literal or static storage), reset
    // and without bindings. Throws StoreError when it does not prepare.
    sqlite3_stmt *get(const char *sql);
    // Throws StoreError with the connection's message.
    [[noreturn]] void fail() const;

private:
    sqlite3 *m_db = nullptr;
    std::unordered_map<const char *, sqlite3_stmt *> m_statements;
};
