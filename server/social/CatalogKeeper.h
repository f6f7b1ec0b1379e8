#pragma once

#include "SocialCatalog.h"
#include "SocialConfig.h"

#include <functional>
#include <memory>
#include <QMutex>
#include <QObject>
#include <QPointer>
#include <QTimer>

class DatabaseService;
class UpstreamCall;
class UpstreamClient;

// Where the served catalog stands, for the control API and the window.
struct CatalogStatus
{
    QString source;       // "upstream", "database", "file", or empty: no catalog yet
    QString url;          // where the catalog came from
    qint64 fetchedMs = 0; // when that copy was fetched from its source
    int actions = 0;
    QString version; // the upstream's info.version
    qint64 lastAttemptMs = 0;
    QString lastError; // of the last refresh; empty when it succeeded
    bool refreshing = false;
    qint64 nextRefreshMs = 0; // 0: no timer (refresh_hours 0)
};

// The catalog the family serves. At start: the database's copy (the last one that parsed,
// shared by every instance), else the configured file. Then refreshed from the upstream
// ({base_url}{catalog_path}) right away, every refresh_hours, and on demand; a refresh that
// fails (unreachable, not 2xx, not a usable OpenAPI document) keeps the catalog served and
// records the error. A catalog that parsed is saved to the database before it is served.
// Lives on the family's thread; current() and status() are safe from any thread.
class CatalogKeeper : public QObject
{
    Q_OBJECT
public:
    using Done = std::function<void(bool ok, const QString &message)>;

    CatalogKeeper(const SocialConfig &config, DatabaseService &db, KeyRotation &keys);
    ~CatalogKeeper() override;

    // Loads the stored copy or the file; call before the keeper moves to its thread (start-up
    // may block). Returns a message for the log.
    QString loadAtStart();
    // Starts the timer and the first refresh, when the provider is usable (a base URL and a
    // key): without a key no call goes out; on the keeper's thread.
    void begin();

    std::shared_ptr<const SocialCatalog> current() const;
    CatalogStatus status() const;
    // Switchyard's /openapi.json of the current catalog (SocialCatalog::document with the
    // configured platforms), serialized once per catalog on the thread that installed it, so a
    // server thread never builds it. Its server URL is kServerUrlMark, which the route replaces
    // with the URL the client sees (openApiFor). Empty before the first catalog.
    QByteArray openApiDocument() const;
    static constexpr QByteArrayView kServerUrlMark = "\"@@switchyard-server-url@@\"";
    // The document with `serverUrl` as its server.
    static QByteArray openApiFor(const QByteArray &document, const QString &serverUrl);

    // Refreshes now (coalesced with one in flight); done runs on the keeper's thread.
    void refresh(Done done = {});

signals:
    void changed(); // a new catalog or a new status

private:
    void finishRefresh(bool ok, const QString &message, qint64 nowMs);
    void install(std::shared_ptr<const SocialCatalog> catalog, const CatalogStatus &status);

    SocialConfig m_config;
    DatabaseService &m_db;
    KeyRotation &m_keys;
    UpstreamClient *m_client = nullptr;
    std::shared_ptr<UpstreamCall> m_call;
    QByteArray m_body;
    int m_httpStatus = 0;
    QList<Done> m_waiting;
    QTimer *m_timer = nullptr;

    mutable QMutex m_mutex;
    std::shared_ptr<const SocialCatalog> m_catalog;
    QByteArray m_openApi;
    CatalogStatus m_status;
};
