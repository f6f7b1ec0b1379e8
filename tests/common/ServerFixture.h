#pragma once

#include "DatabaseService.h"
#include "HttpClient.h"
#include "ServerHost.h"
#include "Services.h"
#include "TestSupport.h"

#include <functional>
#include <memory>

class Pipeline;

// A real server on 127.0.0.1 and an ephemeral port, on its own thread, over a test database:
// the program's own wiring (Services) with every family, configured from settings (family
// sections in settings.familySections), plus any extra routes a test installs and any
// families of its own (after the build's, registered as they would be).
class ServerFixture
{
public:
    explicit ServerFixture(const QString &backend,
                           ServerSettings settings = ServerSettings::defaults(),
                           std::function<void(Pipeline &)> routes = {}, FamilyList extra = {});
    ~ServerFixture();
    bool ready() const { return m_ready; }
    QString skipReason() const { return m_db.skipReason(); }

    quint16 port() const { return quint16(m_services->host()->url().port()); }
    // Stops the server and its Services and starts new ones over the same database (a
    // restart), on a new port.
    void restart(ServerSettings settings);
    Services &services() { return *m_services; }
    // The database under the server (for the command line: testDatabase().cliArgs()).
    const TestDatabase &testDatabase() const { return m_db; }
    DatabaseService &service() { return m_services->database(); }
    ServerHost &host() { return *m_services->host(); }
    HttpClient client() const { return HttpClient(port()); }

    // Direct store access on the test thread (own connection), for setup and checks.
    Store &store();
    QByteArray createKey(const QString &name = QStringLiteral("test"), qint64 *id = nullptr);
    QByteArray createToken(const QStringList &scopes, const QDateTime &expires = {},
                           qint64 *id = nullptr);
    void grant(qint64 units);
    // A new API key on the default account (createKey), and `units` granted to that account.
    QByteArray fundedKey(qint64 units)
    {
        const QByteArray key = createKey();
        grant(units);
        return key;
    }

private:
    TestDatabase m_db;
    std::unique_ptr<Services> m_services;
    std::optional<Store> m_store;
    bool m_ready = false;
};

#define SY_START_SERVER(var, ...)                                                                  \
    QFETCH(QString, backend);                                                                      \
    ServerFixture var(backend, ##__VA_ARGS__);                                                     \
    if (!var.ready()) {                                                                            \
        if (qEnvironmentVariable("SWITCHYARD_REQUIRE_PG") == QLatin1String("1"))                   \
            QFAIL(qPrintable(var.skipReason()));                                                   \
        QSKIP(qPrintable(var.skipReason()));                                                       \
    }
