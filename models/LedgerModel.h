#pragma once

#include "DatabaseService.h"
#include "RecordTableModel.h"

#include <QTimer>

// The account's credit ledger, newest first, and its balance. Pages in older entries through
// fetchMore(); entries appended anywhere in this process (grants from the window, charges from
// the server) arrive through ledgerAppended and are inserted in bursts, so a busy server costs
// the GUI one row insertion per flush, not per request. Only the newest maxRows live-inserted
// rows are kept; older ones can be fetched again.
class LedgerModel : public RecordTableModel<LedgerEntry>
{
    Q_OBJECT
public:
    enum Column
    {
        TimeColumn,
        KindColumn,
        AmountColumn,
        BalanceColumn,
        ReasonColumn,
        RequestIdColumn,
        ColumnCount
    };

    explicit LedgerModel(DatabaseService &db, QObject *parent = nullptr, int pageSize = 200,
                         int maxRows = 5000);

    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    bool canFetchMore(const QModelIndex &parent) const override;
    void fetchMore(const QModelIndex &parent) override;

    void reload();
    bool isLoaded() const { return m_loaded; }
    // The balance in units, as of the newest entry seen; 0 until loaded.
    qint64 balance() const { return m_balance; }

    // Grants units (> 0) with a note; done runs on this model's thread unless a given context
    // is gone. The new entry arrives through ledgerAppended like any other.
    void grantCredits(qint64 units, const QString &note, QObject *context,
                      std::function<void(const DbResult<ChargeResult> &)> done);

signals:
    void balanceChanged(qint64 units);
    void loaded();
    void loadFailed(const QString &error);

protected:
    QVariant cellData(const LedgerEntry &entry, int column, int role) const override;

private:
    void onAppended(const LedgerEntry &entry);
    void flushPending();
    void noteBalance(qint64 entryId, qint64 balanceAfter);

    DatabaseService &m_db;
    qint64 m_account;
    int m_pageSize;
    int m_maxRows;
    quint64 m_generation = 0; // a reload makes answers to earlier reads stale
    bool m_loaded = false;
    bool m_loading = false;
    bool m_fetching = false;
    bool m_hasMore = false;
    qint64 m_balance = 0;
    qint64 m_balanceEntryId = -1; // id of the entry m_balance follows; -1: not yet known
    QList<LedgerEntry> m_pending;
    QTimer m_flush;
};
