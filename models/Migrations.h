#pragma once

#include "DatabaseConfig.h"

// Versioned schema migrations, applied in order at start. Each runs in its own transaction;
// on PostgreSQL an advisory lock keeps several instances starting together from racing.
namespace Migrations {

int latestVersion();
// Applies what is missing and returns the version the database is at. Throws StoreError.
int apply(QSqlDatabase db, DatabaseConfig::Kind kind);

} // namespace Migrations
