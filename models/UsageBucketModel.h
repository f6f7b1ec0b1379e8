#pragma once

#include "DatabaseService.h"

#include <QAbstractTableModel>
#include <QTimer>

// Requests and cost per time bucket (an hour, a day) over the last `count` buckets, ending
// with the current one; buckets without usage are present with zeros so that a chart's time
// axis has no gaps. Refreshed shortly after usage is recorded (a burst becomes one query) and
// once a minute so the window moves on with the clock. Buckets are aligned to UTC, as the
// store groups them.
class UsageBucketModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        StartColumn,
        RequestsColumn,
        CostColumn,
        ColumnCount
    };
    enum Role
    {
        ValueRole = Qt::UserRole, // start in ms since the epoch, request count, cost in units
    };

    static constexpr qint64 kHourMs = 3'600'000;
    static constexpr qint64 kDayMs = 24 * kHourMs;

    explicit UsageBucketModel(DatabaseService &db, QObject *parent = nullptr,
                              int refreshDelayMs = 500);

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    // Chooses the bucket size and how many buckets, then reloads.
    void setBuckets(qint64 bucketMs, int count);
    qint64 bucketMs() const { return m_bucketMs; }
    int bucketCount() const { return m_count; }
    const UsageBucket &bucketAt(int row) const { return m_buckets.at(row); }

    void reload();
    bool isLoaded() const { return m_loaded; }

signals:
    void loaded();
    void loadFailed(const QString &error);

private:
    void apply(QList<UsageBucket> buckets);

    DatabaseService &m_db;
    qint64 m_account;
    qint64 m_bucketMs = kHourMs;
    int m_count = 48;
    quint64 m_generation = 0;
    bool m_loaded = false;
    bool m_loading = false;
    bool m_stale = false;
    QList<UsageBucket> m_buckets;
    QTimer m_coalesce;
    QTimer m_rollover;
};
