#include "HttpServer.h"

HttpServer::HttpServer(HttpHandler &handler, HttpLimits limits, int maxConnections, QObject *parent)
    : QTcpServer(parent), m_handler(handler), m_limits(limits), m_maxConnections(maxConnections)
{
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
    auto *connection = new HttpConnection(descriptor, m_handler, m_limits, this);
    m_connections.insert(connection);
    connect(connection, &HttpConnection::closed, this, [this](HttpConnection *c) {
        m_connections.remove(c);
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
