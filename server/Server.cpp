#include "Server.h"

#include "address/AddressRoutes.h"
#include "control/ControlRoutes.h"
#include "DatabaseService.h"
#include "http/HttpServer.h"
#include "llm/Gateway.h"
#include "llm/ProviderRegistry.h"
#include "Pipeline.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonObject>
#include <QTimer>

Server::Server(DatabaseService &db, ServerSettings settings, ProviderRegistry *registry,
               QObject *parent)
    : QObject(parent), m_db(db), m_settings(std::move(settings)),
      m_registry(registry ? registry : new ProviderRegistry(m_settings.gateway, {}, this)),
      m_pipeline(new Pipeline(db, m_settings, this))
{
    HttpLimits limits;
    limits.maxHeaderBytes = m_settings.maxHeaderBytes;
    limits.maxHeaderCount = m_settings.maxHeaderCount;
    limits.idleTimeoutMs = m_settings.idleTimeoutMs;
    m_http = new HttpServer(*m_pipeline, limits, m_settings.maxConnections, this);
    connect(m_pipeline, &Pipeline::requestServed, this, &Server::requestServed);
    connect(m_http, &HttpServer::drained, this, &Server::drained);
    registerPublicRoutes();
    registerControlRoutes(*m_pipeline);
    registerAddressRoutes(*m_pipeline, m_settings);
    m_gateway = new Gateway(*m_registry, m_settings.maxStreamBuffer, this);
    m_gateway->install(*m_pipeline, m_settings.llmMinimumReservation);
}

Server::~Server()
{
    // Connections first: closing them reaches the pipeline and the gateway.
    delete m_http;
    m_http = nullptr;
    delete m_gateway;
    m_gateway = nullptr;
}

void Server::abortRemaining()
{
    if (m_http)
        m_http->abortAll();
}

bool Server::listen(const QHostAddress &address, quint16 port, QString *error)
{
    if (m_http->listen(address, port))
        return true;
    if (error)
        *error = m_http->errorString();
    return false;
}

quint16 Server::port() const
{
    return m_http->serverPort();
}

void Server::shutdown()
{
    QTimer::singleShot(m_settings.drainTimeoutMs, this, &Server::drained);
    m_http->beginShutdown();
}

void Server::registerPublicRoutes()
{
    RouteSpec health;
    health.method = "GET";
    health.pattern = QStringLiteral("/healthz");
    health.family = QStringLiteral("public");
    health.auth = AuthMode::Public;
    health.handler = [](const ContextPtr &ctx) {
        ctx->respondRaw(200, "application/json", QByteArrayLiteral("{\"status\":\"ok\"}"));
    };
    m_pipeline->addRoute(health);

    RouteSpec metrics = health;
    metrics.pattern = QStringLiteral("/metrics");
    metrics.handler = [this](const ContextPtr &ctx) {
        Metrics &m = m_pipeline->metrics();
        m.setGauge(QStringLiteral("switchyard_open_connections"), m_http->connectionCount());
        m.setGauge(QStringLiteral("switchyard_writer_batches_total"), double(m_db.writerBatches()));
        ctx->respondRaw(200, "text/plain; version=0.0.4; charset=utf-8", m.render());
    };
    m_pipeline->addRoute(metrics);

    RouteSpec models = health;
    models.pattern = QStringLiteral("/v1/models");
    models.family = QStringLiteral("models");
    models.handler = [this](const ContextPtr &ctx) {
        const auto snapshot = m_registry->snapshot();
        QJsonArray data = snapshot->catalog.toJson();
        // Live-catalog models, priced as listed (or as overridden locally).
        for (auto p = snapshot->live.cbegin(); p != snapshot->live.cend(); ++p) {
            for (const CatalogModel &m : p.value()) {
                ModelEntry e;
                e.id = QStringLiteral("gateway/%1/%2").arg(p.key(), m.id);
                e.ownedBy = p.key();
                e.endpoints = {QStringLiteral("chat.completions")};
                e.price = m.price;
                data.append(ModelCatalog::entryJson(e));
            }
        }
        ctx->respondJson(200, QJsonObject{{"object", "list"}, {"data", data}});
    };
    m_pipeline->addRoute(models);
}
