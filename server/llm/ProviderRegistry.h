#pragma once

#include "GatewayConfig.h"
#include "ModelCatalog.h"

#include <functional>
#include <memory>
#include <QDateTime>
#include <QHash>
#include <QMutex>
#include <QObject>
#include <QSet>
#include <QTimer>

class DatabaseService;
class UpstreamClient;

// A model of a catalog provider's live list.
struct CatalogModel
{
    QString id; // the upstream's id, e.g. "vendor/model-name"
    QString name;
    ModelPrice price;        // as listed (credits = USD per 1M tokens)
    bool overridden = false; // a local price override applies
    // As listed (top_provider.max_completion_tokens, context_length); 0 when the list says
    // nothing, and the gateway's defaults apply.
    qint64 maxOutputTokens = 0;
    qint64 contextWindow = 0;
};

// What one request needs to route: immutable, shared between threads, swapped as a whole.
struct GatewaySnapshot
{
    GatewayConfig config;
    ModelCatalog catalog;
    // catalog provider -> model id -> model
    QHash<QString, QHash<QString, CatalogModel>> live;
    QHash<QString, QDateTime> liveFetched;
};

// The resolution of a model ID for an endpoint.
struct ResolvedModel
{
    QString error;    // non-empty: a 400 naming the model
    ModelEntry entry; // entry.id is the resolved ID (auto -> its target)
    ProviderConfig provider;
};

// The gateway's providers, catalog and upstream-key state, shared by the server thread (which
// reads snapshots and rotates keys) and the thread it lives on (the main or GUI thread, which
// edits the config, tests connections and refreshes live catalogs). Thread-safe.
class ProviderRegistry : public QObject
{
    Q_OBJECT
public:
    // configPath: where save() writes the "gateway" section (may be empty: not saved).
    ProviderRegistry(GatewayConfig config, QString configPath, QObject *parent = nullptr);
    ~ProviderRegistry() override;

    std::shared_ptr<const GatewaySnapshot> snapshot() const;
    GatewayConfig config() const { return snapshot()->config; }
    QString configPath() const { return m_configPath; }

    // Validates and applies a new config (live: the next request uses it). Returns an error
    // message, empty on success. save() also writes it to the config file.
    QString apply(const GatewayConfig &config);
    QString applyAndSave(const GatewayConfig &config);

    // model: a catalog ID, "auto" or "gateway/{provider}/{model}"; endpoint: chat.completions,
    // responses or messages.
    static ResolvedModel resolve(const GatewaySnapshot &s, const QString &model,
                                 const QString &endpoint);
    // A live catalog's model as a catalog entry (id gateway/{provider}/{model}), its limits
    // filled from the config's defaults where the list states none.
    static ModelEntry liveEntry(const GatewayConfig &config, const QString &provider,
                                const CatalogModel &m);

    // Upstream keys, round-robin, skipping rested keys and those in `tried`. Empty when none is
    // left. A key answering 429 or 5xx is rested for the provider's restMs.
    QString pickKey(const ProviderConfig &provider, const QStringList &tried);
    void restKey(const ProviderConfig &provider, const QString &key);
    // The rotation itself, for the calls (ProviderCall) that pick and rest keys.
    KeyRotation &keys() { return m_keys; }

    // Live catalogs: loads the database cache, then refreshes each catalog provider now and on
    // its timer. Call once, on the registry's thread. A catalog another instance (or process)
    // stored is installed as soon as the change feed says so ("catalogs"), when it is newer.
    void startCatalogSync(DatabaseService *db);
    // Stops the timers and forgets the database (before it stops); refreshes on demand still
    // work, without writing the cache.
    void stopCatalogSync();
    // Refreshes one catalog provider now; done(error) on this object's thread (empty: ok).
    void refreshCatalog(const QString &provider, std::function<void(QString error)> done = {});

    // GET {base}/models with the provider's first key; done(ok, human-readable result).
    void testConnection(const ProviderConfig &provider,
                        std::function<void(bool ok, QString message)> done);

    // Parses an OpenRouter-style model list ({"data":[{"id","name","pricing":{"prompt",
    // "completion","input_cache_read","input_cache_write"},"context_length","top_provider":
    // {"context_length","max_completion_tokens"}}]}, prices in credits per token). Models with a
    // negative (variable) price are skipped. Throws on a malformed list.
    static QHash<QString, CatalogModel> parseCatalog(const QByteArray &json);

signals:
    void changed();
    void catalogRefreshed(const QString &provider, int models, const QString &error);

private:
    // A provider's list with its local price overrides applied; throws like parseCatalog.
    static QHash<QString, CatalogModel> liveModels(const QByteArray &json,
                                                   const ProviderConfig &provider);
    void publish(std::shared_ptr<GatewaySnapshot> s);
    void installLive(const QString &provider, const QByteArray &json, const QDateTime &fetched);
    void scheduleRefreshes();
    UpstreamClient &client();

    QString m_configPath;
    mutable QMutex m_mutex;
    std::shared_ptr<const GatewaySnapshot> m_snapshot;
    QHash<QString, QByteArray> m_liveBodies; // provider -> last good model list
    KeyRotation m_keys;
    DatabaseService *m_db = nullptr;
    QMetaObject::Connection m_catalogsChanged;
    UpstreamClient *m_client = nullptr;
    QHash<QString, QTimer *> m_timers;
};
