#pragma once

#include "DatabaseService.h"
#include "RecordTableModel.h"

#include <QTimer>

// Which usage records the model holds; applied by the store's query and to live records alike.
struct UsageFilter
{
    qint64 keyId = 0; // 0: every key (and control-token requests)
    QDateTime from;   // inclusive; invalid: unbounded
    QDateTime to;     // exclusive; invalid: unbounded

    bool matches(const UsageRecord &record) const;
    bool operator==(const UsageFilter &other) const = default;
};

// Usage records, newest first, one page at a time (fetchMore for older pages). Records the
// server settles arrive through usageRecorded without a reload, gathered into one insertion per
// short interval so that a busy server does not flood the view; the newest maxRows live rows
// are kept and older ones can be fetched again.
class UsageModel : public RecordTableModel<UsageRecord>
{
    Q_OBJECT
public:
    enum Column
    {
        TimeColumn,
        KeyColumn,
        EndpointColumn,
        ModelColumn,
        InputTokensColumn,
        OutputTokensColumn,
        CostColumn,
        StatusColumn,
        LatencyColumn,
        RequestIdColumn,
        ColumnCount
    };

    explicit UsageModel(DatabaseService &db, QObject *parent = nullptr, int pageSize = 200,
                        int maxRows = 5000);

    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    bool canFetchMore(const QModelIndex &parent) const override;
    void fetchMore(const QModelIndex &parent) override;

    const UsageFilter &filter() const { return m_filter; }
    // Replaces the rows with the first page matching the filter.
    void setFilter(const UsageFilter &filter);
    void reload();
    bool isLoaded() const { return m_loaded; }

signals:
    void loaded();
    void loadFailed(const QString &error);

protected:
    QVariant cellData(const UsageRecord &record, int column, int role) const override;

private:
    void onRecorded(const UsageRecord &record);
    void flushPending();

    DatabaseService &m_db;
    qint64 m_account;
    int m_pageSize;
    int m_maxRows;
    UsageFilter m_filter;
    quint64 m_generation = 0;
    bool m_loaded = false;
    bool m_loading = false;
    bool m_fetching = false;
    bool m_hasMore = false;
    QList<UsageRecord> m_pending;
    QTimer m_flush;
};
