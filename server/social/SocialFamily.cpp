#include "SocialFamily.h"

#include "CompactJson.h"
#include "ControlApi.h"
#include "DatabaseService.h"
#include "social/SocialStore.h"
#include "SocialExtract.h"
#include "SocialRoutes.h"

#include <QJsonArray>
#include <QJsonObject>

namespace {

// {"error":{"message","type"}}: invalid_request_error, or server_error from 500 up.
class SocialEnvelope final : public ErrorEnvelopeWriter
{
public:
    SocialEnvelope() : ErrorEnvelopeWriter({}, "invalid_request_error", "server_error") {}
    QByteArray body(const ErrorFields &e) const override
    {
        return CompactJson::encode(
            QJsonObject{{"error", QJsonObject{{"message", e.message}, {"type", e.type}}}});
    }
};

} // namespace

ErrorStyle SocialFamily::errorStyle()
{
    static const SocialEnvelope envelope;
    return ErrorStyle(envelope);
}

SocialFamily::SocialFamily() : m_config(SocialConfig::defaults()) {}

SocialFamily::~SocialFamily()
{
    stop();
}

void SocialFamily::configure(const QJsonObject &section, const ServerSettings &)
{
    m_config = SocialConfig::fromJson(section);
    m_cache = m_config.cache.enabled ? std::make_shared<ResponseCache>(m_config.cache.maxBytes,
                                                                       m_config.cache.maxEntryBytes)
                                     : nullptr;
}

QList<Migrations::Component> SocialFamily::migrations() const
{
    return {SocialStore::migrations()};
}

QStringList SocialFamily::scopes() const
{
    return {QStringLiteral("social:read"), QStringLiteral("social:write")};
}

QList<ErrorPrefix> SocialFamily::errorPrefixes() const
{
    return {{QStringLiteral("/v1/social-media"), errorStyle()}};
}

QList<RateBucket> SocialFamily::rateBuckets() const
{
    // The upstream's own limit is about 10 requests a second.
    return {{QStringLiteral("social"), 600}};
}

void SocialFamily::start(DatabaseService &db)
{
    if (m_cache && db.config().isPostgres())
        m_sharedCache = &db;
    // Made, run and destroyed on the family's thread: its client, timer and call belong to it.
    m_thread.start([this, &db] {
        auto *keeper = new CatalogKeeper(m_config, db, m_keys);
        qInfo("%s", qPrintable(keeper->loadAtStart()));
        m_keeper = keeper;
        // Once start() has returned: the first refresh need not hold up the server's start.
        QMetaObject::invokeMethod(
            keeper, [keeper] { keeper->begin(); }, Qt::QueuedConnection);
    });
}

void SocialFamily::stop()
{
    if (!m_thread.isRunning())
        return;
    m_thread.stop([this] { delete m_keeper.data(); });
    m_sharedCache = nullptr;
}

QList<RouteSpec> SocialFamily::routes(const ServerScope &scope)
{
    return socialRoutes(*this, scope) + extractRoutes(*this, scope);
}

QSet<QString> SocialFamily::platformNames(const std::shared_ptr<const SocialCatalog> &catalog) const
{
    QMutexLocker lock(&m_platformsMutex);
    if (m_platformsOf.lock() != catalog) {
        m_platforms.clear();
        if (catalog)
            for (const SocialPlatform &p : catalog->platforms())
                m_platforms.insert(p.name);
        m_platformsOf = catalog;
    }
    return m_platforms;
}

QJsonObject SocialFamily::statusJson() const
{
    const CatalogStatus s = m_keeper ? m_keeper->status() : CatalogStatus{};
    const auto catalog = m_keeper ? m_keeper->current() : nullptr;
    QJsonArray platforms;
    if (catalog)
        for (const SocialPlatform &p : catalog->platforms()) {
            const QString pub = m_config.publicName(p.name);
            platforms.append(QJsonObject{{"name", p.name},
                                         {"enabled", !pub.isEmpty()},
                                         {"public_name", pub.isEmpty() ? QJsonValue() : pub},
                                         {"actions", p.actions}});
        }
    return QJsonObject{
        {"object", "social.catalog"},
        {"source", s.source.isEmpty() ? QJsonValue() : s.source},
        {"url", s.url.isEmpty() ? QJsonValue() : s.url},
        {"fetched_at", ControlApi::timeJsonMs(s.fetchedMs)},
        {"actions", s.actions},
        {"version", s.version.isEmpty() ? QJsonValue() : s.version},
        {"last_attempt_at", ControlApi::timeJsonMs(s.lastAttemptMs)},
        {"last_error", s.lastError.isEmpty() ? QJsonValue() : s.lastError},
        {"refreshing", s.refreshing},
        {"next_refresh_at", ControlApi::timeJsonMs(s.nextRefreshMs)},
        {"platforms", platforms},
    };
}

std::unique_ptr<ServiceFamily> makeFamily_social()
{
    return std::make_unique<SocialFamily>();
}
