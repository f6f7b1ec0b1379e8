#pragma once

#include <QWidget>

class ApiKeyModel;
class QComboBox;
class QDateTimeEdit;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class UsageBucketModel;
class UsageChartView;
class UsageModel;

// Usage: the records table, filtered by key and time range (applied by the model's query) and
// by model name text (applied to the loaded rows), above a chart of requests and credits per
// hour or per day. Both update live as the server records usage. The table has a column for
// every meter the records shown have (UsageModel.h).
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
    bool m_columnsFitted = false;
};
