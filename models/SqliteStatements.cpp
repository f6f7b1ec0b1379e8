#include "SqliteStatements.h"

#include "DatabaseConfig.h"

#include <QSqlDriver>
#include <QVariant>
#include <sqlite3.h>

SqliteStatements::SqliteStatements(const QSqlDatabase &db)
{
    const QVariant v = db.driver() ? db.driver()->handle() : QVariant();
    if (!v.isValid() || qstrcmp(v.typeName(), "sqlite3*") != 0)
        throw StoreError("not an SQLite connection");
    m_db = *static_cast<sqlite3 *const *>(v.constData());
    if (!m_db)
        throw StoreError("the SQLite connection is not open");
}

SqliteStatements::~SqliteStatements()
{
    for (auto &[sql, statement] : m_statements)
        sqlite3_finalize(statement);
}

sqlite3_stmt *SqliteStatements::get(const char *sql)
{
    auto it = m_statements.find(sql);
    if (it == m_statements.end()) {
        sqlite3_stmt *statement = nullptr;
        if (sqlite3_prepare_v3(m_db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, nullptr) !=
            SQLITE_OK)
            fail();
        it = m_statements.emplace(sql, statement).first;
    } else {
        sqlite3_reset(it->second);
        sqlite3_clear_bindings(it->second);
    }
    return it->second;
}

void SqliteStatements::fail() const
{
    throw StoreError(sqlite3_errmsg(m_db));
}
