#pragma once

#include "HttpConnection.h"

#include <QHash>
#include <QSet>
#include <QTcpServer>

class HttpHandler;

// Accepts connections up to a cap (and, when limits.maxConnectionsPerClient is set, up to that
// many per client address: one more is closed at once, unread and unanswered) and hands them to
// HttpConnection. Keeps the budget its connections' buffers count against.
class HttpServer : public QTcpServer
{
    Q_OBJECT
public:
    HttpServer(HttpHandler &handler, HttpLimits limits, int maxConnections,
               QObject *parent = nullptr);
    ~HttpServer() override;

    int connectionCount() const { return int(m_connections.size()); }
    const HttpBufferBudget &budget() const { return m_budget; }
    // Connections closed at once for being over the per-client cap.
    quint64 refusedConnections() const { return m_refusedConnections; }
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
    HttpBufferBudget m_budget;
    QHash<QHostAddress, int> m_perClient; // open connections by client, with a per-client cap
    quint64 m_refusedConnections = 0;
};
