#pragma once

#include "PagedRecordModel.h"

// The account's credit ledger, newest first, and its balance. Pages in older entries through
// fetchMore(); entries appended anywhere in this process (grants from the window, charges from
// the server) arrive through ledgerAppended and are inserted in bursts (PagedRecordModel.h).
class LedgerModel : public PagedRecordModel<LedgerEntry>
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
    std::function<Page(Store &)> pageRead(qint64 beforeId, int limit) const override;
    void announceLoaded() override { emit loaded(); }
    void announceFailed(const QString &error) override { emit loadFailed(error); }
    void reloaded(const Page &page, bool first) override;
    void noteLive(const LedgerEntry &entry) override;

private:
    qint64 m_balance = 0;
    qint64 m_balanceEntryId = -1; // id of the entry m_balance follows; -1: not yet known
};
