#include "UsageChartView.h"

#include "Money.h"
#include "UsageBucketModel.h"

#include <cmath>
#include <QChart>
#include <QDateTimeAxis>
#include <QLineSeries>
#include <QValueAxis>

namespace {

// A "nice" axis maximum (1, 2 or 5 times a power of ten) at or above value.
double niceCeiling(double value)
{
    if (value <= 0)
        return 1;
    const double magnitude = std::pow(10.0, std::floor(std::log10(value)));
    for (double step : {1.0, 2.0, 5.0, 10.0})
        if (value <= step * magnitude)
            return step * magnitude;
    return 10 * magnitude;
}

} // namespace

UsageChartView::UsageChartView(UsageBucketModel *model, QWidget *parent)
    : QChartView(parent), m_model(model)
{
    setObjectName(QStringLiteral("usageChart"));
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(220);

    auto *chart = new QChart;
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(4, 4, 4, 4));

    m_requests = new QLineSeries(chart);
    m_requests->setName(tr("Requests"));
    m_requests->setPointsVisible(true);
    m_credits = new QLineSeries(chart);
    m_credits->setName(tr("Credits"));
    m_credits->setPointsVisible(true);
    chart->addSeries(m_requests);
    chart->addSeries(m_credits);

    m_time = new QDateTimeAxis(chart);
    m_requestAxis = new QValueAxis(chart);
    m_requestAxis->setLabelFormat(QStringLiteral("%d"));
    m_requestAxis->setTitleText(tr("Requests"));
    m_creditAxis = new QValueAxis(chart);
    m_creditAxis->setLabelFormat(QStringLiteral("%.4g"));
    m_creditAxis->setTitleText(tr("Credits"));
    chart->addAxis(m_time, Qt::AlignBottom);
    chart->addAxis(m_requestAxis, Qt::AlignLeft);
    chart->addAxis(m_creditAxis, Qt::AlignRight);
    m_requests->attachAxis(m_time);
    m_requests->attachAxis(m_requestAxis);
    m_credits->attachAxis(m_time);
    m_credits->attachAxis(m_creditAxis);
    setChart(chart);

    // Model signals come in groups (a reset, or a dataChanged per bucket); draw once per group.
    m_rebuild.setSingleShot(true);
    m_rebuild.setInterval(0);
    connect(&m_rebuild, &QTimer::timeout, this, &UsageChartView::rebuild);
    auto schedule = [this] { m_rebuild.start(); };
    connect(model, &QAbstractItemModel::modelReset, this, schedule);
    connect(model, &QAbstractItemModel::dataChanged, this, schedule);
    connect(model, &QAbstractItemModel::rowsInserted, this, schedule);
    connect(model, &QAbstractItemModel::rowsRemoved, this, schedule);
    rebuild();
}

void UsageChartView::rebuild()
{
    QList<QPointF> requests;
    QList<QPointF> credits;
    const int rows = m_model->rowCount();
    requests.reserve(rows);
    credits.reserve(rows);
    double maxRequests = 0;
    double maxCredits = 0;
    for (int row = 0; row < rows; ++row) {
        const UsageBucket &b = m_model->bucketAt(row);
        const double x = double(b.start.toMSecsSinceEpoch());
        const double credit = double(b.cost) / double(Money::kUnitsPerCredit);
        requests.append({x, double(b.requests)});
        credits.append({x, credit});
        maxRequests = std::max(maxRequests, double(b.requests));
        maxCredits = std::max(maxCredits, credit);
    }
    m_requests->replace(requests);
    m_credits->replace(credits);

    const bool daily = m_model->bucketMs() >= UsageBucketModel::kDayMs;
    m_time->setFormat(daily ? QStringLiteral("MMM d") : QStringLiteral("ddd HH:mm"));
    m_time->setTitleText(daily ? tr("Day (UTC)") : tr("Hour"));
    if (rows > 0) {
        // The axis spans whole buckets and its ticks fall on bucket boundaries (every 6 hours
        // of 48, every 5 days of 30), so the labels are round times.
        const QDateTime first = m_model->bucketAt(0).start;
        m_time->setRange(first.toLocalTime(),
                         first.addMSecs(rows * m_model->bucketMs()).toLocalTime());
        int intervals = 6;
        for (int d = 8; d >= 4; --d) {
            if (rows % d == 0) {
                intervals = d;
                break;
            }
        }
        m_time->setTickCount(intervals + 1);
    }
    // Requests are counts: with few of them, one tick per whole number keeps labels honest.
    const double requestTop = niceCeiling(maxRequests);
    m_requestAxis->setRange(0, requestTop);
    m_requestAxis->setTickCount(requestTop <= 5 ? int(requestTop) + 1 : 6);
    m_creditAxis->setRange(0, niceCeiling(maxCredits));
    m_creditAxis->setTickCount(6);
}
