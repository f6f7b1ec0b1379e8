#pragma once

#include "DatabaseConfig.h"

#include <functional>
#include <memory>
#include <optional>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

class QThread;
class Store;

// The address family's imported data in the database (tables address_zipcodes and
// address_pois, AddressTables.h), so that every instance sharing a PostgreSQL database answers
// from the same data. Rows come and go as plain values: reading CSV files and resolving region
// names into division codes is the address engine's (server/address/LocalData.h), which models/
// does not depend on; server/address/AddressData.h joins the two.
namespace AddressStore {

enum class Kind
{
    Zipcodes,
    Pois
};

// "zipcodes" or "pois" (also the singular); nullopt otherwise.
std::optional<Kind> parseKind(const QString &name);
QString kindName(Kind kind);

// The zip code of a division (12-digit national code), or of one road in it. Key: divcode, road.
struct ZipRow
{
    int line = 0; // the file's line (0 for rows loaded from the database)
    qint64 divcode = 0;
    QString road; // empty: the whole division
    QString zipcode;
};

// A point of interest, GCJ-02. Key: divcode, name.
struct PoiRow
{
    int line = 0;
    qint64 divcode = 0;
    QString name;
    QString address;
    double lon = 0;
    double lat = 0;
    QString category;
    QStringList aliases; // stored joined by '|'
};

struct RowError
{
    int line = 0;
    QString reason;
};

// What an import did.
struct ImportReport
{
    QString kind;     // "zipcodes" or "pois"
    int records = 0;  // data rows read (good and bad)
    int imported = 0; // good rows written
    int inserted = 0; // new keys
    int updated = 0;  // keys that existed (or repeated in the file: the last row wins)
    int removed = 0;  // rows deleted first (replace)
    qint64 total = 0; // rows of this kind in the database afterwards
    QList<RowError> errors;
    QString fatal; // the file could not be imported at all; nothing was written
    bool ok() const { return fatal.isEmpty(); }
    // "Imported 12 of 14 rows (10 new, 2 updated), 2 with errors; 12 zip codes in the database."
    QString summary() const;
};

// Called while rows are staged (every few thousand rows and once at the end): staged of rows.
using Progress = std::function<void(qsizetype staged, qsizetype rows)>;

// Writes the good rows of one file: appended (a row whose key exists is updated; a key repeated
// in `rows` keeps its last row) or, with replace, instead of every row of that kind. The rows
// are staged in a TEMP table on store's connection, which takes no lock on the data tables
// (the server's billing writer goes on writing), then applied in one short transaction. Sets
// report's imported, inserted, updated, removed and total. Throws StoreError when the database
// fails; then nothing is written.
void write(Store &store, const QList<ZipRow> &rows, bool replace, ImportReport &report,
           const Progress &progress = {});
void write(Store &store, const QList<PoiRow> &rows, bool replace, ImportReport &report,
           const Progress &progress = {});

// Every stored row: zip codes by divcode and road, POIs in import order.
struct Rows
{
    QList<ZipRow> zipcodes;
    QList<PoiRow> pois;
};
Rows load(Store &store);

struct Counts
{
    qint64 zipcodes = 0;
    qint64 zipRoads = 0; // of which road rows
    qint64 pois = 0;
};
Counts counts(Store &store);

// What the stored data looks like, cheaply: rows and the newest import time of each table. Every
// import changes it (an insert or update stamps imported_ms; replace deletes and re-stamps).
struct DataVersion
{
    qint64 zipcodes = 0;
    qint64 zipcodesMs = 0;
    qint64 pois = 0;
    qint64 poisMs = 0;
    bool operator==(const DataVersion &) const = default;
};
DataVersion dataVersion(Store &store);

// Runs fn on a connection to config's database opened for this call alone (named after purpose
// and a serial number) and removed afterwards, even when opening it failed: DatabaseConfig names
// connections by thread, and pool threads (or a new thread reusing an old id) would otherwise
// find, or leak, a connection of an earlier call. Throws what opening or fn throws.
void withOwnConnection(const DatabaseConfig &config, const QString &purpose,
                       const std::function<void(Store &)> &fn);

} // namespace AddressStore

// An import that runs on a thread of its own, with a connection of its own (never one of the
// DatabaseService's readers or its writer, never the caller's thread): read() turns the file
// into rows there, they are written (AddressStore::write, after the address tables are
// migrated), and when rows were written or removed, committed() runs on that thread and
// connection (to load the new data into an engine). Progress and the report come back as
// signals on the thread that called start(), which needs an event loop. A database failure is
// the report's fatal, never an exception.
//
// The job is a child of `context`; it deletes itself after finished(). Destroying it (or its
// context) earlier waits for its thread, whose results are then dropped.
class AddressImportJob : public QObject
{
    Q_OBJECT
public:
    // What read() gives: the rows of `kind` to write, and the report so far (records, rejected
    // rows); a report with a fatal error writes nothing.
    struct Input
    {
        AddressStore::ImportReport report;
        QList<AddressStore::ZipRow> zipcodes;
        QList<AddressStore::PoiRow> pois;
    };
    using Read = std::function<Input()>;
    using Committed = std::function<void(Store &store)>;

    static AddressImportJob *start(const DatabaseConfig &config, AddressStore::Kind kind,
                                   bool replace, Read read, Committed committed, QObject *context);
    ~AddressImportJob() override;

signals:
    void progress(qsizetype staged, qsizetype rows);
    void finished(const AddressStore::ImportReport &report);

private:
    explicit AddressImportJob(QObject *context);

    QThread *m_thread = nullptr;
};
