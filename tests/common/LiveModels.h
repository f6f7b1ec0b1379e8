#pragma once

#include "LedgerModel.h"
#include "UsageModel.h"

#include <QAbstractItemModelTester>

// The window's live ledger and usage models on a DatabaseService, each watched by a
// QAbstractItemModelTester that fails the running test when the model breaks its contract
// (rows inserted out of order, wrong signals). Wait for isLoaded() before counting rows.
struct LiveModels
{
    explicit LiveModels(DatabaseService &db) : ledger(db), usage(db) {}
    bool isLoaded() const { return ledger.isLoaded() && usage.isLoaded(); }

    LedgerModel ledger;
    UsageModel usage;

private:
    QAbstractItemModelTester m_ledgerTester{&ledger,
                                            QAbstractItemModelTester::FailureReportingMode::QtTest};
    QAbstractItemModelTester m_usageTester{&usage,
                                           QAbstractItemModelTester::FailureReportingMode::QtTest};
};
