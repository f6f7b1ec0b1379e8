#pragma once

#include "DatabaseConfig.h"
#include "ServerSettings.h"
#include "ServiceFamily.h"

#include <memory>
#include <QHostAddress>
#include <QObject>

class DatabaseService;
class ServerHost;

// The long-lived objects of one Switchyard: the database, the service families and the HTTP
// server host, wired in this one place so that the window (switchyard) and the headless server
// (switchyard-server serve) cannot drift apart, and so that a test can run several independent
// ones in one process. Lives on the thread that made it (the main or GUI thread).
class Services : public QObject
{
    Q_OBJECT
public:
    // Configures every family from its section of settings.familySections; a bad section
    // throws std::runtime_error naming the field. Nothing is opened yet.
    Services(ServerSettings settings, DatabaseConfig database,
             FamilyList families = createFamilies(), QObject *parent = nullptr);
    ~Services() override;

    // Opens and migrates the database (the core's tables and every family's), then runs the
    // families' start hooks. Throws StoreError or std::runtime_error.
    void start();
    // Builds the server on a thread of its own and listens (port 0: a free port); may be called
    // again after a failure. false with *error when it cannot.
    bool listen(const QHostAddress &address, quint16 port, QString *error);
    // Stops serving (in-flight requests drain), runs the families' stop hooks, then flushes and
    // stops the database. Safe to call more than once.
    void stop();

    const ServerSettings &settings() const { return m_settings; }
    DatabaseService &database() { return *m_db; }
    // Null before start(); routes a test adds (ServerHost::addRoutes) go in before listen().
    ServerHost *host() const { return m_host.get(); }
    bool isServing() const { return m_serving; }

    QList<ServiceFamily *> families() const;
    // The family of type T, or null when this build has none.
    template <class T> T *family() const
    {
        for (const auto &f : m_families)
            if (auto *t = dynamic_cast<T *>(f.get()))
                return t;
        return nullptr;
    }

    // Scopes a control token may carry: the core's and every family's.
    QStringList scopes() const { return scopesOf(m_families); }
    static QStringList scopesOf(const FamilyList &families);
    // How usage meters are shown: every family's registration (ServiceFamily::meters()).
    QList<MeterSpec> meters() const { return metersOf(families()); }
    static QList<Migrations::Component> migrationsOf(const FamilyList &families);

private:
    ServerSettings m_settings;
    FamilyList m_families;
    std::unique_ptr<DatabaseService> m_db;
    std::unique_ptr<ServerHost> m_host;
    bool m_started = false;
    bool m_serving = false;
};
