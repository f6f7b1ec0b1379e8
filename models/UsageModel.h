#pragma once

#include "PagedRecordModel.h"
#include "UsageMeters.h"

#include <QStringList>

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
// short interval (PagedRecordModel.h). After the fixed columns, one column per meter
// (UsageMeters.h) that any record shown so far has, in name order, headed by the label of its
// description (setMeterSpecs) or by its name when it has none: a family's new meter is a new
// column without a change here. Meter columns stay once they appear (a record without the
// meter shows an empty cell).
class UsageModel : public PagedRecordModel<UsageRecord>
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
        ColumnCount // the first meter column
    };

    explicit UsageModel(DatabaseService &db, QObject *parent = nullptr, int pageSize = 200,
                        int maxRows = 5000);

    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    const UsageFilter &filter() const { return m_filter; }
    // Replaces the rows with the first page matching the filter.
    void setFilter(const UsageFilter &filter);
    // The meters with a column, in column order (from ColumnCount on).
    const QStringList &meterColumns() const { return m_meters; }
    // How meters are shown: the descriptions the owner has (Services::meters(), the families'
    // registrations). Replaces the earlier ones; headers of existing columns follow.
    void setMeterSpecs(const QList<MeterSpec> &specs);
    const QList<MeterSpec> &meterSpecs() const { return m_specs; }

signals:
    void loaded();
    void loadFailed(const QString &error);

protected:
    QVariant cellData(const UsageRecord &record, int column, int role) const override;
    std::function<Page(Store &)> pageRead(qint64 beforeId, int limit) const override;
    void announceLoaded() override { emit loaded(); }
    void announceFailed(const QString &error) override { emit loadFailed(error); }
    void showRecords(const QList<UsageRecord> &records) override;

private:
    void onRecorded(const UsageRecord &record);

    UsageFilter m_filter;
    QStringList m_meters;
    QList<MeterSpec> m_specs;
};
