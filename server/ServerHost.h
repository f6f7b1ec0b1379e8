#pragma once

#include "ServerSettings.h"

#include <functional>
#include <QHostAddress>
#include <QList>
#include <QObject>
#include <QThread>
#include <QUrl>
#include <vector>

class DatabaseService;
class Pipeline;
class Server;
class ServiceFamily;

// Runs the HTTP server on a thread of its own, so that neither the window's GUI thread nor the
// headless main thread (signal handling, admin work) ever serves requests.
class ServerHost : public QObject
{
    Q_OBJECT
public:
    // families: whose routes the server serves (they must outlive this host); Services makes
    // them, and the database must be started with their migrations.
    ServerHost(DatabaseService &db, ServerSettings settings, QList<ServiceFamily *> families,
               QObject *parent = nullptr);
    ~ServerHost() override;

    // Registers extra routes (a service family, or a test's) when the server is built on its
    // thread. Call before start().
    void addRoutes(std::function<void(Pipeline &)> installer) { m_installers.push_back(installer); }

    // Binds and starts serving; blocks until listening or failed. port 0 picks a free port.
    bool start(const QHostAddress &address, quint16 port, QString *error);
    // Stops accepting, lets in-flight requests finish (bounded by the drain timeout), stops.
    void stop();

    QUrl url() const { return m_url; }
    Server *server() const { return m_server; }

signals:
    // Emitted on the server thread for every finished request (connect queued).
    void requestServed(const QString &family, int status, int latencyMs);
    // An alert that fired (server/Alerts.h), emitted on the server thread (connect queued).
    void alertFired(const QJsonObject &alert);

private:
    DatabaseService &m_db;
    ServerSettings m_settings;
    QList<ServiceFamily *> m_families;
    QThread m_thread;
    QObject *m_anchor = nullptr; // lives on the server thread; owns the server
    Server *m_server = nullptr;
    QUrl m_url;
    std::vector<std::function<void(Pipeline &)>> m_installers;
};
