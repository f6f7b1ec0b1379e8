#pragma once

#include <array>
#include <QByteArray>
#include <QMap>
#include <QString>

// Prometheus counters kept on the server thread: requests by route family and status, and a
// latency histogram by family.
class Metrics
{
public:
    void observe(const QString &family, int status, double seconds);
    void setGauge(const QString &name, double value) { m_gauges[name] = value; }
    QByteArray render() const;

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
};
