#pragma once

#include "ServerSettings.h"

#include <memory>
#include <QHostAddress>
#include <QObject>

class DatabaseService;
class HttpServer;
class Pipeline;
class ProviderRegistry;
class Gateway;

// The HTTP API: the pipeline with every route family registered, and the listening socket.
// Lives on one thread (ServerHost's); all of its work happens there.
class Server : public QObject
{
    Q_OBJECT
public:
    Server(DatabaseService &db, ServerSettings settings, ProviderRegistry *registry = nullptr,
           QObject *parent = nullptr);
    ~Server() override;

    bool listen(const QHostAddress &address, quint16 port, QString *error);
    quint16 port() const;
    Pipeline &pipeline() { return *m_pipeline; }
    // Stops accepting and emits drained() when every in-flight response has finished (or the
    // drain timeout passed).
    void shutdown();
    // Ends whatever the drain left open: connections are dropped, their streams billed as
    // abandoned (the database writes are queued before this returns).
    void abortRemaining();

signals:
    void requestServed(const QString &family, int status, int latencyMs);
    void drained();

private:
    void registerPublicRoutes();

    DatabaseService &m_db;
    ServerSettings m_settings;
    ProviderRegistry *m_registry;
    Pipeline *m_pipeline;
    Gateway *m_gateway = nullptr;
    HttpServer *m_http;
};
