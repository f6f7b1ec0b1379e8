#include "CatalogKeeper.h"

#include "DatabaseService.h"
#include "social/SocialStore.h"
#include "upstream/UpstreamClient.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

namespace {

// A description larger than this is not a catalog (TikHub's is about 3 MB).
constexpr qsizetype kMaxCatalogBytes = 64 * 1024 * 1024;

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

} // namespace

CatalogKeeper::CatalogKeeper(const SocialConfig &config, DatabaseService &db, KeyRotation &keys)
    : m_config(config), m_db(db), m_keys(keys)
{
}

CatalogKeeper::~CatalogKeeper()
{
    if (m_call)
        m_call->abort();
}

QString CatalogKeeper::loadAtStart()
{
    std::optional<SocialStore::CachedCatalog> stored;
    QString error;
    m_db.read<std::optional<SocialStore::CachedCatalog>>(
        nullptr, [](Store &s) { return SocialStore::load(s); },
        [&](const DbResult<std::optional<SocialStore::CachedCatalog>> &r) {
            stored = r.value;
            error = r.error;
        });
    m_db.flush();
    QString why;
    if (stored) {
        if (auto c = SocialCatalog::parse(stored->document, &why)) {
            CatalogStatus s;
            s.source = QStringLiteral("database");
            s.url = stored->source;
            s.fetchedMs = stored->fetchedMs;
            s.actions = int(c->size());
            s.version = c->version();
            install(std::make_shared<const SocialCatalog>(std::move(*c)), s);
            return QStringLiteral("social: %1 actions from the database (fetched from %2)")
                .arg(s.actions)
                .arg(stored->source);
        }
    }
    if (!m_config.catalogFile.isEmpty()) {
        QFile f(m_config.catalogFile);
        if (!f.open(QIODevice::ReadOnly))
            return QStringLiteral("social: cannot read catalog.file %1: %2")
                .arg(m_config.catalogFile, f.errorString());
        if (auto c = SocialCatalog::parse(f.readAll(), &why)) {
            CatalogStatus s;
            s.source = QStringLiteral("file");
            s.url = m_config.catalogFile;
            s.fetchedMs = QFileInfo(f).lastModified().toMSecsSinceEpoch();
            s.actions = int(c->size());
            s.version = c->version();
            install(std::make_shared<const SocialCatalog>(std::move(*c)), s);
            return QStringLiteral("social: %1 actions from %2").arg(s.actions).arg(s.url);
        }
        return QStringLiteral("social: catalog.file %1 is not usable: %2")
            .arg(m_config.catalogFile, why);
    }
    if (!error.isEmpty())
        return QStringLiteral("social: the stored catalog could not be read: %1").arg(error);
    // begin() says why nothing is fetched when the configuration is not usable.
    if (!m_config.unusableReason().isEmpty())
        return QStringLiteral("social: no catalog yet");
    return QStringLiteral("social: no catalog yet; fetching it from %1")
        .arg(m_config.provider.baseUrl + m_config.provider.catalogPath);
}

void CatalogKeeper::begin()
{
    m_client = new UpstreamClient(this);
    // Without a key nothing can be relayed: no call goes out until the operator sets one (a
    // refresh on demand still does).
    if (!m_config.unusableReason().isEmpty()) {
        qInfo("social: no catalog fetch: %s", qPrintable(m_config.unusableReason()));
        return;
    }
    if (m_config.refreshHours > 0) {
        m_timer = new QTimer(this);
        m_timer->setInterval(std::chrono::hours(m_config.refreshHours));
        connect(m_timer, &QTimer::timeout, this, [this] { refresh(); });
        m_timer->start();
    }
    refresh();
}

std::shared_ptr<const SocialCatalog> CatalogKeeper::current() const
{
    QMutexLocker lock(&m_mutex);
    return m_catalog;
}

CatalogStatus CatalogKeeper::status() const
{
    QMutexLocker lock(&m_mutex);
    return m_status;
}

QByteArray CatalogKeeper::openApiDocument() const
{
    QMutexLocker lock(&m_mutex);
    return m_openApi;
}

QByteArray CatalogKeeper::openApiFor(const QByteArray &document, const QString &serverUrl)
{
    // The URL as a JSON string: whatever the Host header held stays a string.
    QByteArray url = QJsonDocument(QJsonArray{serverUrl}).toJson(QJsonDocument::Compact);
    url = url.mid(1, url.size() - 2);
    QByteArray out = document;
    const qsizetype at = out.indexOf(kServerUrlMark);
    if (at >= 0)
        out.replace(at, kServerUrlMark.size(), url);
    return out;
}

void CatalogKeeper::install(std::shared_ptr<const SocialCatalog> catalog,
                            const CatalogStatus &status)
{
    QByteArray document;
    if (catalog) {
        SocialCatalog::DocumentOptions o;
        o.serverUrl = m_config.publicBaseUrl.isEmpty() ? QStringLiteral("@@switchyard-server-url@@")
                                                       : m_config.publicBaseUrl;
        o.version = QCoreApplication::applicationVersion();
        o.publicName = [this](const QString &p) { return m_config.publicName(p); };
        document = QJsonDocument(catalog->document(o)).toJson(QJsonDocument::Compact);
    }
    {
        QMutexLocker lock(&m_mutex);
        if (catalog) {
            m_catalog = std::move(catalog);
            m_openApi = std::move(document);
        }
        m_status = status;
    }
    emit changed();
}

void CatalogKeeper::refresh(Done done)
{
    if (done)
        m_waiting.append(std::move(done));
    if (m_call)
        return; // the one in flight answers every waiter
    if (m_config.provider.baseUrl.isEmpty()) {
        finishRefresh(
            false,
            QStringLiteral("social.providers.%1.base_url is not set").arg(m_config.provider.name),
            nowMs());
        return;
    }
    CatalogStatus s = status();
    s.refreshing = true;
    s.lastAttemptMs = nowMs();
    install(nullptr, s);

    UpstreamRequest req;
    req.method = "GET";
    req.url = (m_config.provider.baseUrl + m_config.provider.catalogPath).toUtf8();
    req.headers = {"Accept: application/json"};
    const QString key = m_keys.pick(m_config.provider);
    if (!key.isEmpty())
        req.headers.append("Authorization: Bearer " + key.toUtf8());
    m_config.provider.applyTimeouts(req);
    m_body.clear();
    m_httpStatus = 0;
    m_call = m_client->start(req);
    m_call->onHead = [this](int status, const HttpHeaders &) { m_httpStatus = status; };
    m_call->onData = [this](const QByteArray &data) {
        m_body += data;
        if (m_body.size() > kMaxCatalogBytes) {
            m_call->abort();
            m_call.reset();
            finishRefresh(
                false,
                QStringLiteral("the catalog is larger than %1 MiB").arg(kMaxCatalogBytes >> 20),
                nowMs());
        }
    };
    m_call->onDone = [this](UpstreamError error, const QString &message) {
        m_call.reset();
        const QByteArray body = std::exchange(m_body, {});
        if (error != UpstreamError::None)
            return finishRefresh(
                false, QStringLiteral("the upstream could not be reached: %1").arg(message),
                nowMs());
        if (m_httpStatus != 200)
            return finishRefresh(
                false, QStringLiteral("the upstream answered HTTP %1").arg(m_httpStatus), nowMs());
        QString why;
        auto parsed = SocialCatalog::parse(body, &why);
        if (!parsed)
            return finishRefresh(
                false, QStringLiteral("the upstream's catalog is not usable: %1").arg(why),
                nowMs());
        auto catalog = std::make_shared<const SocialCatalog>(std::move(*parsed));
        SocialStore::CachedCatalog row{body,
                                       m_config.provider.baseUrl + m_config.provider.catalogPath,
                                       nowMs(), int(catalog->size())};
        // Saved before it is served: a restart serves what clients were served.
        m_db.write<bool>(
            this,
            [row](Store &s) {
                SocialStore::save(s, row);
                return true;
            },
            [this, catalog, row](const DbResult<bool> &r) {
                CatalogStatus s = status();
                s.source = QStringLiteral("upstream");
                s.url = row.source;
                s.fetchedMs = row.fetchedMs;
                s.actions = row.actions;
                s.version = catalog->version();
                install(catalog, s);
                finishRefresh(true,
                              r.ok() ? QStringLiteral("%1 actions").arg(row.actions)
                                     : QStringLiteral("%1 actions (not saved: %2)")
                                           .arg(row.actions)
                                           .arg(r.error),
                              row.fetchedMs);
            });
    };
}

void CatalogKeeper::finishRefresh(bool ok, const QString &message, qint64 now)
{
    CatalogStatus s = status();
    s.refreshing = false;
    s.lastAttemptMs = qMax(s.lastAttemptMs, now);
    s.lastError = ok ? QString() : message;
    s.nextRefreshMs = m_timer ? nowMs() + m_timer->remainingTime() : 0;
    install(nullptr, s);
    if (!ok)
        qWarning("social: catalog refresh failed: %s", qPrintable(message));
    const QList<Done> waiting = std::exchange(m_waiting, {});
    for (const Done &d : waiting)
        d(ok, message);
}
