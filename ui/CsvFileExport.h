#pragma once

#include "CsvExport.h"

#include <functional>
#include <QFile>
#include <QObject>

class DatabaseService;
class Store;

// The window's Export CSV: every row of an export written to a file, a page at a time (read and
// formatted on a database reader, appended here), so that neither the window's memory nor its
// event loop depends on how many rows there are. The same bytes as the API's and the command
// line's exports (models/CsvExport.h). Deletes itself when it has finished.
class CsvFileExport : public QObject
{
    Q_OBJECT
public:
    using Page = CsvExport::Page;
    using PageReader = std::function<Page(Store &, qint64 cursor)>;

    // Starts writing `header` and then every page to `path` (replaced).
    static CsvFileExport *start(DatabaseService &db, const QString &path, const QByteArray &header,
                                PageReader read, QObject *parent);

signals:
    void progress(qint64 rows);
    // ok: every row written; else `message` says what failed (the file is removed).
    void finished(bool ok, qint64 rows, const QString &message);

private:
    CsvFileExport(DatabaseService &db, const QString &path, PageReader read, QObject *parent);
    void readFrom(qint64 cursor);
    void fail(const QString &message);

    DatabaseService &m_db;
    QFile m_file;
    PageReader m_read;
    qint64 m_rows = 0;
};
