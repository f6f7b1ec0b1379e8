#include "Metrics.h"

void Metrics::observe(const QString &family, int status, double seconds)
{
    ++m_requests[{family, status}];
    Histogram &h = m_latency[family];
    ++h.count;
    h.sum += seconds;
    for (size_t i = 0; i < kBuckets.size(); ++i)
        if (seconds <= kBuckets[i])
            ++h.counts[i];
}

QByteArray Metrics::render()
{
    for (const auto &collect : m_collectors)
        collect(*this);
    QByteArray out;
    out += "# HELP switchyard_requests_total Requests answered, by route family and status.\n"
           "# TYPE switchyard_requests_total counter\n";
    for (auto it = m_requests.cbegin(); it != m_requests.cend(); ++it)
        out += QStringLiteral("switchyard_requests_total{family=\"%1\",status=\"%2\"} %3\n")
                   .arg(it.key().first)
                   .arg(it.key().second)
                   .arg(it.value())
                   .toUtf8();
    out += "# HELP switchyard_request_duration_seconds Time from the request's head to its "
           "response complete.\n# TYPE switchyard_request_duration_seconds histogram\n";
    for (auto it = m_latency.cbegin(); it != m_latency.cend(); ++it) {
        const QString f = it.key();
        for (size_t i = 0; i < kBuckets.size(); ++i)
            out += QStringLiteral(
                       "switchyard_request_duration_seconds_bucket{family=\"%1\",le=\"%2\"} %3\n")
                       .arg(f)
                       .arg(kBuckets[i])
                       .arg(it->counts[i])
                       .toUtf8();
        out += QStringLiteral(
                   "switchyard_request_duration_seconds_bucket{family=\"%1\",le=\"+Inf\"} %2\n"
                   "switchyard_request_duration_seconds_sum{family=\"%1\"} %3\n"
                   "switchyard_request_duration_seconds_count{family=\"%1\"} %2\n")
                   .arg(f)
                   .arg(it->count)
                   .arg(it->sum, 0, 'g', 12)
                   .toUtf8();
    }
    for (const auto &[values, type] : {std::pair{&m_gauges, "gauge"}, {&m_counters, "counter"}})
        for (auto it = values->cbegin(); it != values->cend(); ++it)
            out += QStringLiteral("# TYPE %1 %2\n%1 %3\n")
                       .arg(it.key(), QLatin1String(type))
                       .arg(it.value(), 0, 'g', 12)
                       .toUtf8();
    return out;
}
