#include "Server.h"

#include "DatabaseService.h"
#include "http/HttpServer.h"
#include "Pipeline.h"
#include "Scopes.h"
#include "ServiceFamily.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QTimer>

namespace {

// The settings with every family's rate-limit buckets at their default limits where the
// configuration sets none.
ServerSettings withBuckets(ServerSettings settings, const QList<ServiceFamily *> &families)
{
    for (const ServiceFamily *family : families)
        for (const RateBucket &bucket : family->rateBuckets())
            settings.addBucketDefault(bucket.name, bucket.perMinute);
    return settings;
}

} // namespace

Server::Server(DatabaseService &db, ServerSettings settings, const QList<ServiceFamily *> &families,
               QObject *parent)
    : QObject(parent), m_db(db), m_settings(withBuckets(std::move(settings), families)),
      m_pipeline(new Pipeline(db, m_settings, this)), m_familyObjects(new QObject(this))
{
    HttpLimits limits;
    limits.maxHeaderBytes = m_settings.maxHeaderBytes;
    limits.maxHeaderCount = m_settings.maxHeaderCount;
    limits.idleTimeoutMs = m_settings.idleTimeoutMs;
    limits.headerTimeoutMs = m_settings.headerTimeoutMs;
    limits.bodyTimeoutMs = m_settings.bodyTimeoutMs;
    limits.minBodyRate = m_settings.minBodyRate;
    limits.maxBufferedBytes = m_settings.maxBufferedBytes;
    limits.maxConnectionsPerClient = m_settings.maxConnectionsPerClient;
    m_http = new HttpServer(*m_pipeline, limits, m_settings.maxConnections, this);
    m_pipeline->metrics().addCollector([http = m_http](Metrics &m) {
        const HttpBufferBudget &budget = http->budget();
        m.setGauge(QStringLiteral("switchyard_open_connections"), http->connectionCount());
        m.setGauge(QStringLiteral("switchyard_http_buffered_bytes"), double(budget.held));
        m.setCounter(QStringLiteral("switchyard_http_buffer_refusals_total"),
                     double(budget.refusals));
        m.setCounter(QStringLiteral("switchyard_http_streams_dropped_total"),
                     double(budget.droppedStreams));
        m.setCounter(QStringLiteral("switchyard_http_stalled_readers_total"),
                     double(budget.stalledReaders));
        m.setCounter(QStringLiteral("switchyard_http_connections_refused_total"),
                     double(http->refusedConnections()));
    });
    connect(m_pipeline, &Pipeline::requestServed, this, &Server::requestServed);
    connect(m_pipeline, &Pipeline::alertFired, this, &Server::alertFired);
    connect(m_http, &HttpServer::drained, this, &Server::drained);
    registerCoreRoutes(families);
    m_scope.reset(new ServerScope(*m_pipeline, m_db, m_familyObjects));
    for (ServiceFamily *family : families) {
        for (RouteSpec &route : family->routes(*m_scope)) {
            if (route.family.isEmpty())
                route.family = family->name();
            m_pipeline->addRoute(std::move(route));
        }
        for (const ErrorPrefix &p : family->errorPrefixes())
            m_pipeline->addErrorPrefix(p.prefix, p.style);
    }
}

Server::~Server()
{
    // Connections first: closing them reaches the pipeline and the families' objects.
    delete m_http;
    m_http = nullptr;
    delete m_familyObjects;
    m_familyObjects = nullptr;
}

void Server::abortRemaining()
{
    if (m_http)
        m_http->abortAll();
}

bool Server::listen(const QHostAddress &address, quint16 port, QString *error)
{
    if (m_http->listen(address, port)) {
        // Before the event loop runs again: no request is read before the route is there.
        addMetricsRoute(address);
        return true;
    }
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

void Server::registerCoreRoutes(const QList<ServiceFamily *> &families)
{
    RouteSpec health;
    health.method = "GET";
    health.pattern = QStringLiteral("/healthz");
    health.family = QStringLiteral("public");
    health.auth = AuthMode::Public;
    health.handler = [shared = m_pipeline->sharedState()](const ContextPtr &ctx) {
        if (!shared) {
            ctx->respondRaw(200, "application/json", QByteArrayLiteral("{\"status\":\"ok\"}"));
            return;
        }
        // An instance that cannot reach the state it shares refuses billed requests: a load
        // balancer's check takes it out while others can still serve.
        const bool up = shared->isUp();
        ctx->respondJson(up ? 200 : 503, QJsonObject{{"status", up ? "ok" : "degraded"},
                                                     {"shared_state", shared->health()}});
    };
    m_pipeline->addRoute(health);

    // Public model discovery: every family's models in one list, in family order.
    RouteSpec models = health;
    models.pattern = QStringLiteral("/v1/models");
    models.family = QStringLiteral("models");
    models.handler = [families](const ContextPtr &ctx) {
        QJsonArray data;
        for (const ServiceFamily *family : families)
            for (const QJsonValue &m : family->models())
                data.append(m);
        ctx->respondJson(200, QJsonObject{{"object", "list"}, {"data", data}});
    };
    m_pipeline->addRoute(models);
}

void Server::addMetricsRoute(const QHostAddress &address)
{
    if (m_metricsRoute)
        return;
    m_metricsRoute = true;
    // Counts by family and status, connections, latencies: no secret, but not for everyone
    // who can reach a server listening beyond this machine.
    RouteSpec metrics;
    metrics.method = "GET";
    metrics.pattern = QStringLiteral("/metrics");
    metrics.family = QStringLiteral("public");
    if (m_settings.metricsPublic || address.isLoopback()) {
        metrics.auth = AuthMode::Public;
    } else {
        metrics.auth = AuthMode::ControlToken;
        metrics.scope = Scopes::MetricsRead;
        metrics.bucket = QStringLiteral("control");
    }
    metrics.handler = [this](const ContextPtr &ctx) {
        Metrics &m = m_pipeline->metrics();
        m.setGauge(QStringLiteral("switchyard_writer_batches_total"), double(m_db.writerBatches()));
        ctx->respondRaw(200, "text/plain; version=0.0.4; charset=utf-8",
                        m.render() + m_db.moneyCounters().render());
    };
    m_pipeline->addRoute(std::move(metrics));
}
