#include "ProviderRegistry.h"

#include "DatabaseService.h"
#include "Money.h"
#include "Store.h"
#include "upstream/UpstreamClient.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMutexLocker>
#include <QPointer>
#include <stdexcept>

namespace {

// A catalog provider is fetched on its own (at start and every refresh_minutes) only once it
// has a key, since it cannot serve requests without one: a fresh install makes no outbound
// call until the operator sets a provider up.
bool autoRefreshes(const ProviderConfig &p)
{
    return p.type == ProviderType::Catalog && !p.allKeys().isEmpty() && p.refreshMinutes > 0;
}

// Authentication headers for a provider type.
QList<QByteArray> authHeaders(const ProviderConfig &p, const QString &key)
{
    if (key.isEmpty())
        return {};
    if (p.type == ProviderType::Anthropic)
        return {"x-api-key: " + key.toUtf8(), "anthropic-version: 2023-06-01"};
    return {"Authorization: Bearer " + key.toUtf8()};
}

} // namespace

ProviderRegistry::ProviderRegistry(GatewayConfig config, QString configPath, QObject *parent)
    : QObject(parent), m_configPath(std::move(configPath))
{
    const QString error = apply(config);
    if (!error.isEmpty())
        throw std::runtime_error(error.toStdString());
}

ProviderRegistry::~ProviderRegistry() = default;

std::shared_ptr<const GatewaySnapshot> ProviderRegistry::snapshot() const
{
    QMutexLocker lock(&m_mutex);
    return m_snapshot;
}

void ProviderRegistry::publish(std::shared_ptr<GatewaySnapshot> s)
{
    {
        QMutexLocker lock(&m_mutex);
        m_snapshot = std::move(s);
    }
    emit changed();
}

QString ProviderRegistry::apply(const GatewayConfig &config)
{
    auto s = std::make_shared<GatewaySnapshot>();
    s->config = config;
    try {
        s->catalog = config.buildCatalog(ModelCatalog::builtin());
        QSet<QString> names;
        for (const ProviderConfig &p : config.providers) {
            if (p.name.isEmpty() || p.name.contains(u'/'))
                return QStringLiteral("'%1' is not a valid provider name").arg(p.name);
            if (names.contains(p.name))
                return QStringLiteral("provider '%1' is listed twice").arg(p.name);
            names.insert(p.name);
        }
    } catch (const std::exception &e) {
        return QString::fromUtf8(e.what());
    }
    // Live lists survive a config change for the providers that are still catalogs.
    QHash<QString, QByteArray> bodies;
    QHash<QString, QDateTime> fetched;
    {
        QMutexLocker lock(&m_mutex);
        bodies = m_liveBodies;
        if (m_snapshot)
            fetched = m_snapshot->liveFetched;
    }
    for (auto it = bodies.cbegin(); it != bodies.cend(); ++it) {
        const ProviderConfig *p = config.provider(it.key());
        if (!p || p->type != ProviderType::Catalog)
            continue;
        try {
            s->live.insert(it.key(), liveModels(it.value(), *p));
            s->liveFetched.insert(it.key(), fetched.value(it.key()));
        } catch (const std::exception &) {
        }
    }
    publish(std::move(s));
    if (m_db)
        scheduleRefreshes();
    return {};
}

QString ProviderRegistry::applyAndSave(const GatewayConfig &config)
{
    if (const QString error = apply(config); !error.isEmpty())
        return error;
    if (m_configPath.isEmpty())
        return QStringLiteral("applied, but there is no config file to save it to (start with "
                              "--config FILE)");
    return config.saveTo(m_configPath);
}

ResolvedModel ProviderRegistry::resolve(const GatewaySnapshot &s, const QString &model,
                                        const QString &endpoint)
{
    ResolvedModel r;
    if (model.startsWith(QLatin1String("gateway/"))) {
        const qsizetype slash = model.indexOf(u'/', 8);
        const QString providerName = slash < 0 ? QString() : model.mid(8, slash - 8);
        const QString upstream = slash < 0 ? QString() : model.mid(slash + 1);
        const ProviderConfig *p = s.config.provider(providerName);
        if (!p || p->type != ProviderType::Catalog || upstream.isEmpty()) {
            r.error = QStringLiteral("The model '%1' does not exist: gateway models are written "
                                     "gateway/{provider}/{model} with a catalog provider.")
                          .arg(model);
            return r;
        }
        if (endpoint != u"chat.completions") {
            r.error =
                QStringLiteral("The model '%1' is served on /v1/chat/completions only.").arg(model);
            return r;
        }
        const auto live = s.live.value(providerName);
        const auto it = live.constFind(upstream);
        if (it == live.constEnd()) {
            r.error = s.live.contains(providerName)
                          ? QStringLiteral("The model '%1' is not in the %2 catalog.")
                                .arg(model, providerName)
                          : QStringLiteral("The %1 catalog has not been loaded yet, so '%2' "
                                           "cannot be priced; try again shortly.")
                                .arg(providerName, model);
            return r;
        }
        r.entry = liveEntry(s.config, providerName, *it);
        r.provider = *p;
        return r;
    }
    const QString id = model == u"auto" ? s.catalog.autoModel() : model;
    if (model == u"auto" && endpoint != u"chat.completions") {
        r.error = QStringLiteral("The model 'auto' is served on /v1/chat/completions only.");
        return r;
    }
    const auto entry = s.catalog.find(id);
    if (!entry) {
        r.error = QStringLiteral("The model '%1' does not exist; GET /v1/models lists the "
                                 "models.")
                      .arg(model);
        return r;
    }
    if (!entry->endpoints.contains(endpoint)) {
        static const QHash<QString, QString> paths = {
            {QStringLiteral("chat.completions"), QStringLiteral("/v1/chat/completions")},
            {QStringLiteral("responses"), QStringLiteral("/v1/responses")},
            {QStringLiteral("messages"), QStringLiteral("/v1/messages")}};
        QStringList where;
        for (const QString &e : entry->endpoints)
            where.append(paths.value(e, e));
        r.error = QStringLiteral("The model '%1' is not served on %2; use %3.")
                      .arg(model, paths.value(endpoint), where.join(QStringLiteral(" or ")));
        return r;
    }
    const ProviderConfig *p = s.config.provider(entry->provider);
    if (!p) {
        r.error = QStringLiteral("The model '%1' has no configured provider.").arg(model);
        return r;
    }
    r.entry = *entry;
    r.provider = *p;
    return r;
}

ModelEntry ProviderRegistry::liveEntry(const GatewayConfig &config, const QString &provider,
                                       const CatalogModel &m)
{
    ModelEntry e;
    e.id = QStringLiteral("gateway/%1/%2").arg(provider, m.id);
    e.ownedBy = provider;
    e.provider = provider;
    e.upstreamModel = m.id;
    e.endpoints = {QStringLiteral("chat.completions")};
    e.price = m.price;
    e.maxOutputTokens = m.maxOutputTokens > 0 ? m.maxOutputTokens : config.defaultMaxOutputTokens;
    e.contextWindow = m.contextWindow > 0 ? m.contextWindow : config.defaultContextWindow;
    return e;
}

QString ProviderRegistry::pickKey(const ProviderConfig &provider, const QStringList &tried)
{
    return m_keys.pick(provider, tried);
}

void ProviderRegistry::restKey(const ProviderConfig &provider, const QString &key)
{
    m_keys.rest(provider, key);
}

QHash<QString, CatalogModel> ProviderRegistry::parseCatalog(const QByteArray &json)
{
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject() ||
        !doc.object().value("data").isArray())
        throw std::runtime_error("the model list is not an object with a data array");
    QHash<QString, CatalogModel> out;
    for (const QJsonValue &v : doc.object().value("data").toArray()) {
        const QJsonObject o = v.toObject();
        CatalogModel m;
        m.id = o.value("id").toString();
        m.name = o.value("name").toString(m.id);
        if (m.id.isEmpty())
            continue;
        const QJsonObject pricing = o.value("pricing").toObject();
        bool ok = true;
        auto price = [&](const char *field) -> qint64 {
            const QJsonValue p = pricing.value(QLatin1String(field));
            if (p.isUndefined() || p.isNull())
                return 0;
            const QString text =
                p.isString() ? p.toString() : QString::number(p.toDouble(), 'f', 15);
            const auto units = Money::parsePerTokenPrice(text);
            if (!units || *units < 0)
                ok = false;
            return units.value_or(0);
        };
        m.price = {price("prompt"), price("completion"), price("input_cache_read"),
                   price("input_cache_write")};
        // Limits as listed; anything but a positive whole number of tokens is not stated.
        auto limit = [](const QJsonValue &v) -> qint64 {
            const double d = v.toDouble();
            return v.isDouble() && d >= 1 && d <= double(ModelCatalog::kMaxTokenLimit) &&
                           d == qint64(d)
                       ? qint64(d)
                       : 0;
        };
        const QJsonObject top = o.value("top_provider").toObject();
        m.maxOutputTokens = limit(top.value("max_completion_tokens"));
        m.contextWindow = limit(o.value("context_length"));
        if (!m.contextWindow)
            m.contextWindow = limit(top.value("context_length"));
        if (ok)
            out.insert(m.id, m);
    }
    return out;
}

void ProviderRegistry::installLive(const QString &provider, const QByteArray &json,
                                   const QDateTime &fetched)
{
    auto s = std::make_shared<GatewaySnapshot>(*snapshot());
    const ProviderConfig *p = s->config.provider(provider);
    // Throws on a broken list, before anything changes: the last good one stays.
    QHash<QString, CatalogModel> models = p ? liveModels(json, *p) : parseCatalog(json);
    {
        QMutexLocker lock(&m_mutex);
        m_liveBodies.insert(provider, json);
    }
    s->live.insert(provider, models);
    s->liveFetched.insert(provider, fetched);
    publish(std::move(s));
}

QHash<QString, CatalogModel> ProviderRegistry::liveModels(const QByteArray &json,
                                                          const ProviderConfig &provider)
{
    QHash<QString, CatalogModel> models = parseCatalog(json);
    for (auto o = provider.priceOverrides.cbegin(); o != provider.priceOverrides.cend(); ++o) {
        auto m = models.find(o.key());
        if (m != models.end()) {
            m->price = o.value();
            m->overridden = true;
        }
    }
    return models;
}

UpstreamClient &ProviderRegistry::client()
{
    if (!m_client)
        m_client = new UpstreamClient(this);
    return *m_client;
}

void ProviderRegistry::startCatalogSync(DatabaseService *db)
{
    m_db = db;
    m_catalogsChanged =
        connect(db, &DatabaseService::changed, this, [this](const QStringList &topics) {
            if (!m_db || !topics.contains(QLatin1String("catalogs")))
                return;
            QPointer<ProviderRegistry> self = this;
            m_db->read<QList<Store::CatalogCacheEntry>>(
                this, [](Store &store) { return store.catalogCache(); },
                [self](const DbResult<QList<Store::CatalogCacheEntry>> &r) {
                    if (!self || !self->m_db || !r.ok())
                        return;
                    const auto installed = self->snapshot()->liveFetched;
                    for (const auto &e : r.value) {
                        if (installed.value(e.provider) >= e.fetched)
                            continue; // this instance's own, or older
                        try {
                            self->installLive(e.provider, e.body, e.fetched);
                        } catch (const std::exception &ex) {
                            qWarning("stored catalog of %s is unreadable: %s",
                                     qPrintable(e.provider), ex.what());
                        }
                    }
                });
        });
    QPointer<ProviderRegistry> self = this;
    db->read<QList<Store::CatalogCacheEntry>>(
        this, [](Store &store) { return store.catalogCache(); },
        [self](const DbResult<QList<Store::CatalogCacheEntry>> &r) {
            if (!self || !self->m_db) // gone, or stopped meanwhile
                return;
            if (r.ok()) {
                for (const auto &e : r.value) {
                    try {
                        self->installLive(e.provider, e.body, e.fetched);
                    } catch (const std::exception &ex) {
                        qWarning("cached catalog of %s is unreadable: %s", qPrintable(e.provider),
                                 ex.what());
                    }
                }
            }
            self->scheduleRefreshes();
            for (const ProviderConfig &p : self->config().providers)
                if (autoRefreshes(p))
                    self->refreshCatalog(p.name);
        });
}

void ProviderRegistry::stopCatalogSync()
{
    disconnect(m_catalogsChanged);
    m_db = nullptr;
    qDeleteAll(m_timers);
    m_timers.clear();
}

void ProviderRegistry::scheduleRefreshes()
{
    const GatewayConfig cfg = config();
    for (auto it = m_timers.begin(); it != m_timers.end();) {
        const ProviderConfig *p = cfg.provider(it.key());
        if (!p || !autoRefreshes(*p)) {
            delete it.value();
            it = m_timers.erase(it);
        } else {
            ++it;
        }
    }
    for (const ProviderConfig &p : cfg.providers) {
        if (!autoRefreshes(p))
            continue;
        QTimer *&t = m_timers[p.name];
        if (!t) {
            t = new QTimer(this);
            const QString name = p.name;
            connect(t, &QTimer::timeout, this, [this, name] { refreshCatalog(name); });
        }
        const int interval = p.refreshMinutes * 60'000;
        if (t->interval() != interval || !t->isActive())
            t->start(interval);
    }
}

void ProviderRegistry::refreshCatalog(const QString &provider, std::function<void(QString)> done)
{
    const GatewayConfig cfg = config();
    const ProviderConfig *p = cfg.provider(provider);
    if (!p || p->type != ProviderType::Catalog) {
        const QString error = QStringLiteral("'%1' is not a catalog provider").arg(provider);
        if (done)
            done(error);
        return;
    }
    UpstreamRequest req;
    req.method = "GET";
    req.url = (p->baseUrl + QStringLiteral("/models")).toUtf8();
    req.headers = authHeaders(*p, p->allKeys().value(0));
    req.connectTimeoutMs = p->connectTimeoutMs;
    req.firstByteTimeoutMs = p->firstByteTimeoutMs;
    req.idleTimeoutMs = p->idleTimeoutMs;
    req.totalTimeoutMs = 120'000;
    UpstreamCallPtr call = client().start(req);
    auto body = std::make_shared<QByteArray>();
    auto status = std::make_shared<int>(0);
    call->onHead = [status](int s, const HttpHeaders &) { *status = s; };
    call->onData = [body](const QByteArray &d) {
        if (body->size() < 64 * 1024 * 1024)
            body->append(d);
    };
    QPointer<ProviderRegistry> self = this;
    call->onDone = [self, call, body, status, provider, done](UpstreamError e, const QString &msg) {
        if (!self)
            return;
        QString error;
        if (e != UpstreamError::None)
            error = QStringLiteral("could not fetch the model list: %1").arg(msg);
        else if (*status != 200)
            error = QStringLiteral("the model list request answered HTTP %1").arg(*status);
        int count = 0;
        if (error.isEmpty()) {
            try {
                const QDateTime now = QDateTime::currentDateTimeUtc();
                self->installLive(provider, *body, now);
                count = int(self->snapshot()->live.value(provider).size());
                if (self->m_db)
                    self->m_db->write<bool>(
                        nullptr,
                        [provider, b = *body, now](Store &s) {
                            s.saveCatalogCache(provider, b, now);
                            return true;
                        },
                        [](const DbResult<bool> &) {});
            } catch (const std::exception &ex) {
                error = QStringLiteral("the model list is malformed: %1")
                            .arg(QString::fromUtf8(ex.what()));
            }
        }
        if (!error.isEmpty())
            qWarning("catalog %s: %s", qPrintable(provider), qPrintable(error));
        emit self->catalogRefreshed(provider, count, error);
        if (done)
            done(error);
    };
}

void ProviderRegistry::testConnection(const ProviderConfig &provider,
                                      std::function<void(bool, QString)> done)
{
    UpstreamRequest req;
    req.method = "GET";
    req.url = (provider.baseUrl + QStringLiteral("/models")).toUtf8();
    req.headers = authHeaders(provider, provider.allKeys().value(0));
    req.connectTimeoutMs = qMin(provider.connectTimeoutMs, 10'000);
    req.firstByteTimeoutMs = 15'000;
    req.idleTimeoutMs = 15'000;
    req.totalTimeoutMs = 30'000;
    UpstreamCallPtr call = client().start(req);
    auto status = std::make_shared<int>(0);
    auto body = std::make_shared<QByteArray>();
    auto timer = std::make_shared<QElapsedTimer>();
    timer->start();
    call->onHead = [status](int s, const HttpHeaders &) { *status = s; };
    call->onData = [body](const QByteArray &d) {
        if (body->size() < 1024 * 1024)
            body->append(d);
    };
    QPointer<ProviderRegistry> self = this;
    call->onDone = [self, call, status, body, timer, done](UpstreamError e, const QString &msg) {
        if (!self)
            return;
        const qint64 ms = timer->elapsed();
        if (e != UpstreamError::None) {
            done(false, QStringLiteral("Could not connect: %1").arg(msg));
            return;
        }
        if (*status == 401 || *status == 403) {
            done(false, QStringLiteral("Reached the provider, but it refused the key (HTTP %1).")
                            .arg(*status));
            return;
        }
        if (*status != 200) {
            done(false, QStringLiteral("The provider answered HTTP %1.").arg(*status));
            return;
        }
        const int models =
            int(QJsonDocument::fromJson(*body).object().value("data").toArray().size());
        done(true, QStringLiteral("Connected in %1 ms; %2 models listed.").arg(ms).arg(models));
    };
}
