#include "HttpServer.h"

HttpServer::HttpServer(HttpHandler &handler, HttpLimits limits, int maxConnections, QObject *parent)
    : QTcpServer(parent), m_handler(handler), m_limits(limits), m_maxConnections(maxConnections)
{
    m_budget.cap = m_limits.maxBufferedBytes;
}

HttpServer::~HttpServer()
{
    // The connections hand their share back to the budget as they go: before it does.
    qDeleteAll(findChildren<HttpConnection *>(Qt::FindDirectChildrenOnly));
}

bool HttpServer::hasActiveExchanges() const
{
    for (HttpConnection *c : m_connections)
        if (!c->isIdle())
            return true;
    return false;
}

void HttpServer::beginShutdown()
{
    m_shuttingDown = true;
    close();
    const auto connections = m_connections;
    for (HttpConnection *c : connections)
        c->closeWhenIdle();
    if (m_connections.isEmpty())
        emit drained();
}

void HttpServer::abortAll()
{
    const auto connections = m_connections;
    for (HttpConnection *c : connections)
        c->abortNow();
}

void HttpServer::incomingConnection(qintptr descriptor)
{
    auto *connection = new HttpConnection(descriptor, m_handler, m_limits, m_budget, this);
    const QHostAddress client = connection->clientAddress();
    if (m_limits.maxConnectionsPerClient > 0) {
        int &open = m_perClient[client];
        if (open >= m_limits.maxConnectionsPerClient) {
            ++m_refusedConnections;
            delete connection; // closes the socket: nothing read, nothing answered
            return;
        }
        ++open;
    }
    m_connections.insert(connection);
    connect(connection, &HttpConnection::closed, this, [this, client](HttpConnection *c) {
        m_connections.remove(c);
        if (m_limits.maxConnectionsPerClient > 0) {
            const auto it = m_perClient.find(client);
            if (it != m_perClient.end() && --*it <= 0)
                m_perClient.erase(it);
        }
        if (m_paused && int(m_connections.size()) < m_maxConnections && !m_shuttingDown) {
            m_paused = false;
            resumeAccepting();
        }
        if (m_shuttingDown && m_connections.isEmpty())
            emit drained();
    });
    // At the cap, stop accepting until a connection closes (the kernel backlog holds the rest).
    if (int(m_connections.size()) >= m_maxConnections) {
        m_paused = true;
        pauseAccepting();
    }
}
