#pragma once

#include "Store.h"

#include <QWidget>

class ApiKeyModel;
class QComboBox;
class QDateTimeEdit;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class QTableWidget;
class UsageBucketModel;
class UsageChartView;
class UsageModel;

// Usage: the records table, filtered by key and time range (applied by the model's query) and
// by model name text (applied to the loaded rows), above a chart of requests and credits per
// hour or per day, and a breakdown of requests, credits and tokens per key or per model over the
// same filters. The table and chart update live as the server records usage. The table has a
// column for every meter the records shown have (UsageModel.h). Export CSV writes every record
// the key and time filters match.
class UsagePanel : public QWidget
{
    Q_OBJECT
public:
    UsagePanel(UsageModel *usage, UsageBucketModel *buckets, ApiKeyModel *keys,
               QWidget *parent = nullptr);

    QTableView *view() const { return m_view; }
    QSortFilterProxyModel *proxy() const { return m_proxy; }

public slots:
    // Re-reads the records with the chosen filters ("Last hour" and the like start from now).
    void applyFilter();
    // Writes every record the key and time filters match to `path` as CSV (the API's bytes);
    // the message line shows the progress and the outcome. Export CSV asks for the file.
    void exportCsv(const QString &path);
    // Reads the breakdown by the chosen grouping (key or model) over the filters.
    void refreshBreakdown();

signals:
    // An export ended (exportCsv): every row written, or not.
    void exported(bool ok);

private:
    enum Range
    {
        LastHour,
        LastDay,
        LastWeek,
        LastMonth,
        AllTime,
        Custom
    };
    void rebuildKeyChoices();
    void applyBuckets();
    UsageQuery query() const;

    UsageModel *m_usage;
    UsageBucketModel *m_buckets;
    ApiKeyModel *m_keys;
    QSortFilterProxyModel *m_proxy;
    QTableView *m_view;
    QComboBox *m_key;
    QLineEdit *m_modelText;
    QComboBox *m_range;
    QDateTimeEdit *m_from;
    QDateTimeEdit *m_to;
    QComboBox *m_bucket;
    UsageChartView *m_chart;
    QLabel *m_message;
    QComboBox *m_groupBy;
    QTableWidget *m_breakdown;
    bool m_columnsFitted = false;
};
