#pragma once

#include "Relay.h"

#include <memory>
#include <QElapsedTimer>
#include <QObject>
#include <QSet>
#include <QTimer>

class Pipeline;
class ProviderRegistry;
class UpstreamClient;
class GatewayCall;
class RequestContext;

// The text-generation gateway (spec 4.1 to 4.3): POST /v1/chat/completions, /v1/responses and
// /v1/messages, routed by model to upstream providers, relayed (streamed or whole), billed per
// token. Lives on the server thread, with one upstream client for every call.
class Gateway : public QObject
{
    Q_OBJECT
public:
    // maxUnsent: bytes a stream may have waiting for a client that does not read.
    Gateway(ProviderRegistry &registry, qint64 maxUnsent, QObject *parent = nullptr);
    ~Gateway() override;

    void install(Pipeline &pipeline, qint64 minimumReservation);

    ProviderRegistry &registry() { return m_registry; }
    UpstreamClient &client() { return *m_client; }
    qint64 nowMs() const { return m_clock.elapsed(); }
    qint64 maxUnsent() const { return m_maxUnsent; }

    // Streams get keep-alive comments while their upstream is silent.
    void streamStarted(const std::shared_ptr<GatewayCall> &call);
    void streamEnded(GatewayCall *call);

private:
    void installControl(Pipeline &pipeline);
    void catalogRefreshed(const QString &provider, int models, const QString &error);
    void sendKeepAlives();

    ProviderRegistry &m_registry;
    qint64 m_maxUnsent;
    UpstreamClient *m_client;
    QElapsedTimer m_clock;
    QTimer m_keepAlive;
    QHash<GatewayCall *, std::weak_ptr<GatewayCall>> m_streams;
    QHash<QString, QList<std::shared_ptr<RequestContext>>> m_pendingRefreshes;
};
