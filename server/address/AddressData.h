#pragma once

#include "address/AddressStore.h"
#include "LocalData.h"

#include <memory>
#include <QByteArrayView>
#include <QString>

class Store;

// The imported zip codes and POIs between their three homes: CSV files (read by the engine's
// rules, LocalData.h), the database (models/address/AddressStore.h, which deals in plain rows)
// and an engine's snapshot (LocalData, AddressEngine::install).
namespace AddressData {

using AddressStore::ImportReport;
using AddressStore::Kind;

// Parses csv (LocalDataCsv), reports its rejected rows, and writes its good rows
// (AddressStore::write: appended, or instead of every row of that kind with replace). A file
// that cannot be used as a whole is the report's fatal, with nothing written; throws
// StoreError when the database fails (then nothing is written either).
ImportReport importData(Store &store, Kind kind, QByteArrayView csv, bool replace,
                        const AddressStore::Progress &progress = {});
ImportReport importFile(Store &store, Kind kind, const QString &path, bool replace,
                        const AddressStore::Progress &progress = {});

// What AddressImportJob writes for a file: its rows, or the report of why there are none.
AddressImportJob::Input readFile(Kind kind, const QString &path);

// The stored data as a snapshot.
std::shared_ptr<const LocalData> load(Store &store);

} // namespace AddressData
