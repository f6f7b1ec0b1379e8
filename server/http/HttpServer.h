#pragma once

#include "HttpConnection.h"

#include <QSet>
#include <QTcpServer>

class HttpHandler;

// Accepts connections up to a cap and hands them to HttpConnection.
class HttpServer : public QTcpServer
{
    Q_OBJECT
public:
    HttpServer(HttpHandler &handler, HttpLimits limits, int maxConnections,
               QObject *parent = nullptr);

    int connectionCount() const { return int(m_connections.size()); }
    bool hasActiveExchanges() const;
    // Stop accepting; idle keep-alive connections close now, busy ones after their response.
    void beginShutdown();
    // After the drain timeout: drops every remaining connection (streams end as abandoned).
    void abortAll();

signals:
    void drained();

protected:
    void incomingConnection(qintptr descriptor) override;

private:
    HttpHandler &m_handler;
    HttpLimits m_limits;
    int m_maxConnections;
    bool m_shuttingDown = false;
    bool m_paused = false;
    QSet<HttpConnection *> m_connections;
};
