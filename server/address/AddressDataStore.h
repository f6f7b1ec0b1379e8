#pragma once

#include "DatabaseConfig.h"
#include "LocalData.h"

#include <functional>
#include <memory>
#include <optional>
#include <QByteArrayView>
#include <QList>
#include <QString>

class DatabaseService;
class QObject;
class Store;

// The imported address data in the database (tables address_zipcodes and address_pois), so that
// every instance sharing a PostgreSQL database answers from the same data. The CSV formats are
// described in LocalData.h. An import writes its good rows in one transaction: appended (a row
// whose key exists is updated: zip codes by division and road, POIs by division and name) or,
// with replace, instead of everything of that kind.
struct ImportReport
{
    QString kind;     // "zipcodes" or "pois"
    int records = 0;  // data rows read (good and bad)
    int imported = 0; // good rows written
    int inserted = 0; // new keys
    int updated = 0;  // keys that existed (or repeated in the file: the last row wins)
    int removed = 0;  // rows deleted first (replace)
    qint64 total = 0; // rows of this kind in the database afterwards
    QList<LocalDataCsv::RowError> errors;
    QString fatal; // the file could not be imported at all; nothing was written
    bool ok() const { return fatal.isEmpty(); }
    // "Imported 12 of 14 rows (10 new, 2 updated), 2 with errors; 12 zip codes in the database."
    QString summary() const;
};

namespace AddressDataStore {

enum class Kind
{
    Zipcodes,
    Pois
};

// "zipcodes" or "pois" (also the singular); nullopt otherwise.
std::optional<Kind> parseKind(const QString &name);
QString kindName(Kind kind);

// Called while the rows are staged (every few thousand rows and once at the end): staged of
// rows. Staging holds no lock on the data tables, so other connections write meanwhile.
using Progress = std::function<void(qsizetype staged, qsizetype rows)>;

// Parses csv, stages its good rows in a TEMP table on store's connection, then writes them to
// the data table in one short transaction (throws StoreError when the database fails; then
// nothing is written). Leaves the snapshot alone.
ImportReport importData(Store &store, Kind kind, QByteArrayView csv, bool replace,
                        const Progress &progress = {});
ImportReport importFile(Store &store, Kind kind, const QString &path, bool replace,
                        const Progress &progress = {});

// For the window (from a worker thread, or the GUI thread for small files): opens this
// thread's own connection, imports, and installs the new data in this process's snapshot
// (LocalData::current) so the server answers from it at once. Never throws: a database
// failure is the report's fatal.
ImportReport importCsv(const DatabaseConfig &config, Kind kind, const QString &path, bool replace);

// The stored data as a snapshot.
std::shared_ptr<const LocalData> load(Store &store);

struct Counts
{
    qint64 zipcodes = 0;
    qint64 zipRoads = 0; // of which road rows
    qint64 pois = 0;
};
Counts counts(Store &store);

// What the stored data looks like, cheaply: rows and the newest import time of each table. Every
// import changes it (an insert or update stamps imported_ms; --replace deletes and re-stamps).
struct DataVersion
{
    qint64 zipcodes = 0;
    qint64 zipcodesMs = 0;
    qint64 pois = 0;
    qint64 poisMs = 0;
    bool operator==(const DataVersion &) const = default;
};
DataVersion dataVersion(Store &store);

// At server start: loads on a pool thread with a connection of its own (not one of the
// service's readers, which requests need) and installs the snapshot there (unless an import
// installed newer data meanwhile); the caller does not wait.
void loadAsync(DatabaseService &db);
// Blocks until no load started by loadAsync is running (for tests and orderly shutdown);
// false if msecs (-1: no limit) passed first.
bool waitForLoad(int msecs = -1);

// Every intervalMs (0: never), compares the stored data's version with the loaded one on a
// reader thread and reloads when another process (the CLI, another instance sharing the
// database) imported. Runs on context's thread; stops when context is destroyed.
void watch(DatabaseService &db, QObject *context, int intervalMs);

} // namespace AddressDataStore
