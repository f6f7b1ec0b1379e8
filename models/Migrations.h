#pragma once

#include "DatabaseConfig.h"

#include <QList>
#include <QString>
#include <QStringList>

// Versioned schema migrations by component: the core's tables (accounts, keys, tokens, ledger,
// usage) and each service family's own. A component's steps are applied in order (step i is
// version i + 1), each in its own transaction, and recorded in schema_components; on PostgreSQL
// an advisory lock keeps several instances starting together from racing. SQL is
// dialect-neutral: {ID} is the auto-increment primary key, {BLOB} the binary type (BLOB, BYTEA),
// {NOW} the time in milliseconds. A statement that starts with {SQLITE} runs on SQLite only,
// one that starts with {POSTGRES} on PostgreSQL only.
namespace Migrations {

struct Component
{
    QString name;             // "core", or the family's name
    QList<QStringList> steps; // append only: a released step is never edited
    // Databases made before migrations had components kept one sequence in schema_migrations,
    // one version per component that existed then: the version that stood for this
    // component's step 1 (0: the component came later). Such a database is adopted once,
    // without running those steps again.
    int legacyVersion = 0;
};

const Component &coreComponent();
// The number of steps of the core and `families` together.
int latestVersion(const QList<Component> &families = {});
// Applies what is missing of the core and `families` and returns the number of their steps now
// recorded. coreVersion below the core's latest stops the core there (to build a database as
// an earlier release left it, for tests of the steps after). Throws StoreError.
int apply(QSqlDatabase db, DatabaseConfig::Kind kind, const QList<Component> &families = {},
          int coreVersion = -1);

} // namespace Migrations
