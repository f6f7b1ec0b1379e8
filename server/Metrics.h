#pragma once

#include <array>
#include <functional>
#include <QByteArray>
#include <QMap>
#include <QString>
#include <vector>

// Prometheus metrics kept on the server thread: requests by route family and status, a latency
// histogram by family, and named gauges and counters that their owners set, at once or from a
// collector that render() runs first.
class Metrics
{
public:
    void observe(const QString &family, int status, double seconds);
    void setGauge(const QString &name, double value) { m_gauges[name] = value; }
    // A total that only grows (its owner keeps it; this is its value now).
    void setCounter(const QString &name, double value) { m_counters[name] = value; }
    // Called by every render(), to set the gauges and counters of what it reads.
    void addCollector(std::function<void(Metrics &)> collect)
    {
        m_collectors.push_back(std::move(collect));
    }
    QByteArray render();

private:
    static constexpr std::array<double, 12> kBuckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1.0,  5.0};
    struct Histogram
    {
        std::array<quint64, kBuckets.size()> counts{};
        quint64 count = 0;
        double sum = 0;
    };
    QMap<QPair<QString, int>, quint64> m_requests;
    QMap<QString, Histogram> m_latency;
    QMap<QString, double> m_gauges;
    QMap<QString, double> m_counters;
    std::vector<std::function<void(Metrics &)>> m_collectors;
};
