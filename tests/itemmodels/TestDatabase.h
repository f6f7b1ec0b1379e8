#pragma once

#include "DatabaseService.h"

#include <future>
#include <memory>
#include <QTemporaryDir>
#include <QTest>

// A real SQLite database in a temporary directory behind a started DatabaseService, plus a
// blocking write for test setup (the writer thread never needs the test's event loop).
class TestDatabase
{
public:
    TestDatabase()
    {
        if (!m_dir.isValid())
            qFatal("no temporary directory");
        m_db = std::make_unique<DatabaseService>(
            DatabaseConfig::sqlite(m_dir.filePath(QStringLiteral("switchyard.db"))));
        m_db->start();
    }

    DatabaseService &db() { return *m_db; }
    qint64 account() const { return m_db->defaultAccountId(); }

    template <class R, class Fn> R writeNow(Fn fn) { return runNow<R>(fn, true); }

    template <class R, class Fn> R readNow(Fn fn) { return runNow<R>(fn, false); }

private:
    template <class R, class Fn> R runNow(Fn fn, bool write)
    {
        auto promise = std::make_shared<std::promise<DbResult<R>>>();
        auto done = [promise](const DbResult<R> &r) { promise->set_value(r); };
        if (write)
            m_db->write<R>(nullptr, fn, done);
        else
            m_db->read<R>(nullptr, fn, done);
        const DbResult<R> result = promise->get_future().get();
        if (!result.ok())
            qFatal("test database call failed: %s", qPrintable(result.error));
        return result.value;
    }

    QTemporaryDir m_dir;
    std::unique_ptr<DatabaseService> m_db;
};

// Every role a view or delegate might ask for, to check what a model could ever reveal.
inline QList<int> allRolesToProbe()
{
    QList<int> roles;
    for (int role = 0; role <= Qt::UserRole + 16; ++role)
        if (role < 64 || role >= Qt::UserRole)
            roles.append(role);
    return roles;
}

// True if any cell or header of the model shows `needle` for any role.
inline bool modelContains(const QAbstractItemModel &model, const QString &needle)
{
    const QList<int> roles = allRolesToProbe();
    for (int c = 0; c < model.columnCount(); ++c)
        for (int role : roles)
            if (model.headerData(c, Qt::Horizontal, role).toString().contains(needle))
                return true;
    for (int r = 0; r < model.rowCount(); ++r)
        for (int c = 0; c < model.columnCount(); ++c)
            for (int role : roles)
                if (model.data(model.index(r, c), role).toString().contains(needle))
                    return true;
    return false;
}
