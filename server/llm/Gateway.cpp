#include "Gateway.h"

#include "GatewayCall.h"
#include "ProviderRegistry.h"
#include "upstream/UpstreamClient.h"

Gateway::Gateway(ProviderRegistry &registry, qint64 maxUnsent, QObject *parent)
    : QObject(parent), m_registry(registry), m_maxUnsent(maxUnsent),
      m_client(new UpstreamClient(this))
{
    m_clock.start();
    m_keepAlive.setInterval(1000);
    connect(&m_keepAlive, &QTimer::timeout, this, &Gateway::sendKeepAlives);
}

Gateway::~Gateway() = default;

void Gateway::streamStarted(const std::shared_ptr<GatewayCall> &call)
{
    m_streams.insert(call.get(), call);
    if (!m_keepAlive.isActive() && m_registry.snapshot()->config.keepAliveMs > 0) {
        // Often enough to keep each stream's silence close to keepalive_ms.
        m_keepAlive.start(qBound(50, m_registry.snapshot()->config.keepAliveMs / 4, 1000));
    }
}

void Gateway::streamEnded(GatewayCall *call)
{
    m_streams.remove(call);
    if (m_streams.isEmpty())
        m_keepAlive.stop();
}

void Gateway::sendKeepAlives()
{
    const int period = m_registry.snapshot()->config.keepAliveMs;
    const qint64 now = nowMs();
    const auto streams = m_streams;
    for (const auto &weak : streams)
        if (auto call = weak.lock())
            call->keepAlive(now, period);
}
