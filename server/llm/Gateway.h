#pragma once

#include <memory>
#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QTimer>

class ProviderRegistry;
class UpstreamClient;
class GatewayCall;

// What the text gateway keeps for one server, on the server thread: the upstream client every
// call uses, and the open streams that get keep-alive comments while their upstream is silent.
// The routes (GatewayRoutes.h) start a GatewayCall per request on it.
class Gateway : public QObject
{
    Q_OBJECT
public:
    // maxUnsent: bytes a stream may have waiting for a client that does not read.
    Gateway(ProviderRegistry &registry, qint64 maxUnsent, QObject *parent = nullptr);
    ~Gateway() override;

    ProviderRegistry &registry() { return m_registry; }
    UpstreamClient &client() { return *m_client; }
    qint64 nowMs() const { return m_clock.elapsed(); }
    qint64 maxUnsent() const { return m_maxUnsent; }

    void streamStarted(const std::shared_ptr<GatewayCall> &call);
    void streamEnded(GatewayCall *call);

private:
    void sendKeepAlives();

    ProviderRegistry &m_registry;
    qint64 m_maxUnsent;
    UpstreamClient *m_client;
    QElapsedTimer m_clock;
    QTimer m_keepAlive;
    QHash<GatewayCall *, std::weak_ptr<GatewayCall>> m_streams;
};
