#include "DatabaseService.h"
#include "HttpClient.h"
#include "Scopes.h"
#include "ServerHost.h"
#include "Services.h"
#include "Store.h"
#include "TestSupport.h"

#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

// Who may read GET /metrics: anyone when the server listens on loopback, else a control token
// with the metrics:read scope, unless server.metrics_public says anyone. The server listens on
// the wildcard address for real and the test reaches it through 127.0.0.1.
class TestMetricsAccess : public QObject
{
    Q_OBJECT

    // The program's own wiring over a test database, listening on address.
    struct Running
    {
        Running(const TestDatabase &db, const QHostAddress &address, ServerSettings settings)
            : services(std::move(settings), db.config())
        {
            services.start();
            QString error;
            ok = services.listen(address, 0, &error);
            if (!ok)
                qWarning("cannot listen on %s: %s", qPrintable(address.toString()),
                         qPrintable(error));
        }
        ~Running() { services.stop(); }
        HttpClient client() const { return HttpClient(quint16(services.host()->url().port())); }
        QByteArray token(const QStringList &scopes)
        {
            Store store(services.database().config().open(QStringLiteral("test")),
                        services.database().config().kind());
            return store.createControlToken(store.defaultAccountId(), "test", scopes, {})
                .secret.toLatin1();
        }
        QByteArray apiKey()
        {
            Store store(services.database().config().open(QStringLiteral("test")),
                        services.database().config().kind());
            return store.createApiKey(store.defaultAccountId(), "test", "default")
                .secret.toLatin1();
        }
        Services services;
        bool ok = false;
    };

    static QString errorType(const HttpReply &r)
    {
        return r.json().value("error").toObject().value("type").toString();
    }

private slots:
    void publicOnLoopback_data() { addBackendRows(); }
    void publicOnLoopback()
    {
        SY_OPEN_DB(db);
        Running server(db, QHostAddress(QHostAddress::LocalHost), ServerSettings::defaults());
        QVERIFY(server.ok);
        const HttpReply r = server.client().get("/metrics");
        QCOMPARE(r.status, 200);
        QVERIFY(r.header("content-type").startsWith("text/plain"));
        QVERIFY(r.body.contains("switchyard_open_connections"));
    }

    void tokenOffLoopback_data() { addBackendRows(); }
    void tokenOffLoopback()
    {
        SY_OPEN_DB(db);
        Running server(db, QHostAddress(QHostAddress::AnyIPv4), ServerSettings::defaults());
        QVERIFY(server.ok);
        HttpClient c = server.client();

        HttpReply r = c.get("/metrics");
        QCOMPARE(r.status, 401);
        QCOMPARE(errorType(r), QStringLiteral("authentication_error"));
        QVERIFY2(r.errorMessage().contains("metrics:read"), qPrintable(r.errorMessage()));
        QVERIFY(!r.body.contains("switchyard_"));

        r = c.get("/metrics", "lpc_not-a-real-token");
        QCOMPARE(r.status, 401);
        r = c.get("/metrics", server.apiKey()); // an API key is no control token
        QCOMPARE(r.status, 401);
        QVERIFY(!r.body.contains("switchyard_"));

        r = c.get("/metrics", server.token({Scopes::CreditsRead, Scopes::UsageRead}));
        QCOMPARE(r.status, 403);
        QCOMPARE(errorType(r), QStringLiteral("permission_error"));
        QVERIFY2(r.errorMessage().contains("metrics:read"), qPrintable(r.errorMessage()));
        QVERIFY(!r.body.contains("switchyard_"));

        r = c.get("/metrics", server.token({Scopes::MetricsRead}));
        QCOMPARE(r.status, 200);
        QVERIFY(r.header("content-type").startsWith("text/plain"));
        QVERIFY(r.body.contains("switchyard_open_connections"));
        // The refusals above were counted like any request.
        QVERIFY2(r.body.contains("switchyard_requests_total{family=\"public\",status=\"403\"} 1"),
                 r.body.constData());
    }

    void publicBySetting_data() { addBackendRows(); }
    void publicBySetting()
    {
        SY_OPEN_DB(db);
        ServerSettings settings = ServerSettings::defaults();
        settings.metricsPublic = true;
        Running server(db, QHostAddress(QHostAddress::AnyIPv4), settings);
        QVERIFY(server.ok);
        const HttpReply r = server.client().get("/metrics");
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains("switchyard_open_connections"));
    }

    void settingParsed()
    {
        QTemporaryDir dir;
        const auto load = [&](const QByteArray &json) {
            QFile f(dir.filePath("config.json"));
            if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(json) != json.size())
                qFatal("cannot write the config file");
            f.close();
            return ServerSettings::fromConfigFile(f.fileName());
        };
        QVERIFY(!ServerSettings::defaults().metricsPublic);
        QVERIFY(!load("{}").metricsPublic);
        QVERIFY(load(R"({"server": {"metrics_public": true}})").metricsPublic);
        QVERIFY(!load(R"({"server": {"metrics_public": false}})").metricsPublic);
        try {
            load(R"({"server": {"metrics_public": "yes"}})");
            QFAIL("a string was taken for metrics_public");
        } catch (const std::runtime_error &e) {
            QVERIFY2(QByteArray(e.what()).contains("server.metrics_public"), e.what());
        }
    }

    void scopeIsListed()
    {
        // Offered wherever tokens are made: tokens create --help, the window's token dialog.
        QVERIFY(Scopes::core().contains(Scopes::MetricsRead));
        QVERIFY(Services::scopesOf(createFamilies()).contains(Scopes::MetricsRead));
    }
};

QTEST_GUILESS_MAIN(TestMetricsAccess)
#include "tst_metrics_access.moc"
