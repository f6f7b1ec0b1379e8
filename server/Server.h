#pragma once

#include "ServerSettings.h"

#include <memory>
#include <QHostAddress>
#include <QList>
#include <QObject>

class DatabaseService;
class HttpServer;
class Pipeline;
class ServerScope;
class ServiceFamily;

// The HTTP API: the pipeline with the core's routes (/healthz, /metrics) and every family's,
// and the listening socket. Lives on one thread (ServerHost's); all of its work happens there.
class Server : public QObject
{
    Q_OBJECT
public:
    // Asks each family for its routes, error prefixes and rate-limit buckets (whose default
    // limits join the settings' tiers); the families outlive the server.
    Server(DatabaseService &db, ServerSettings settings, const QList<ServiceFamily *> &families,
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
    void alertFired(const QJsonObject &alert);
    void drained();

private:
    void registerCoreRoutes(const QList<ServiceFamily *> &families);
    // GET /metrics, once the address is known: public on loopback or with
    // server.metrics_public, else for control tokens with the metrics:read scope.
    void addMetricsRoute(const QHostAddress &address);

    DatabaseService &m_db;
    ServerSettings m_settings;
    Pipeline *m_pipeline;
    // Parent of what families make for this server; deleted before the connections' owner so
    // that closing connections still finds the family objects they reach.
    QObject *m_familyObjects;
    // What the families' routes were given; kept for the server's life (handlers reach it).
    std::unique_ptr<ServerScope> m_scope;
    HttpServer *m_http;
    bool m_metricsRoute = false;
};
