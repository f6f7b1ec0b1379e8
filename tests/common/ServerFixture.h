#pragma once

#include "DatabaseService.h"
#include "HttpClient.h"
#include "ServerHost.h"
#include "TestSupport.h"

#include <functional>
#include <memory>

class Pipeline;
class ProviderRegistry;

// A real server on 127.0.0.1 and an ephemeral port, on its own thread, over a test database.
class ServerFixture
{
public:
    explicit ServerFixture(const QString &backend,
                           ServerSettings settings = ServerSettings::defaults(),
                           std::function<void(Pipeline &)> routes = {},
                           ProviderRegistry *registry = nullptr);
    ~ServerFixture();
    bool ready() const { return m_ready; }
    QString skipReason() const { return m_db.skipReason(); }

    quint16 port() const { return quint16(m_host->url().port()); }
    DatabaseService &service() { return *m_service; }
    ServerHost &host() { return *m_host; }
    HttpClient client() const { return HttpClient(port()); }

    // Direct store access on the test thread (own connection), for setup and checks.
    Store &store();
    QByteArray createKey(const QString &name = QStringLiteral("test"), qint64 *id = nullptr);
    QByteArray createToken(const QStringList &scopes, const QDateTime &expires = {},
                           qint64 *id = nullptr);
    void grant(qint64 units);

private:
    TestDatabase m_db;
    std::unique_ptr<DatabaseService> m_service;
    std::unique_ptr<ServerHost> m_host;
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
