#pragma once

#include <QChartView>
#include <QTimer>

class QDateTimeAxis;
class QLineSeries;
class QValueAxis;
class UsageBucketModel;

// Requests and credits per bucket from a UsageBucketModel: requests on the left axis, credits
// on the right, time along the bottom. Redrawn whenever the model changes.
class UsageChartView : public QChartView
{
    Q_OBJECT
public:
    explicit UsageChartView(UsageBucketModel *model, QWidget *parent = nullptr);

    QLineSeries *requestSeries() const { return m_requests; }
    QLineSeries *creditSeries() const { return m_credits; }

private:
    void rebuild();

    UsageBucketModel *m_model;
    QLineSeries *m_requests;
    QLineSeries *m_credits;
    QDateTimeAxis *m_time;
    QValueAxis *m_requestAxis;
    QValueAxis *m_creditAxis;
    QTimer m_rebuild;
};
