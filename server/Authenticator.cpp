#include "Authenticator.h"

#include "DatabaseService.h"
#include "Secrets.h"

#include <QDateTime>

namespace {
constexpr int kMaxCacheEntries = 50'000;
}

Authenticator::Authenticator(DatabaseService &db, int ttlMs, QObject *parent)
    : QObject(parent), m_db(db), m_ttlMs(ttlMs)
{
    connect(&db, &DatabaseService::apiKeysChanged, this, &Authenticator::invalidate);
    connect(&db, &DatabaseService::controlTokensChanged, this, &Authenticator::invalidate);
}

void Authenticator::lookupApiKey(const QString &secret, Done done)
{
    lookup(secret, false, std::move(done));
}

void Authenticator::lookupControlToken(const QString &secret, Done done)
{
    lookup(secret, true, std::move(done));
}

void Authenticator::lookup(const QString &secret, bool token, Done done)
{
    const QByteArray hash = Secrets::hash(secret);
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const auto it = m_cache.constFind(hash);
    if (it != m_cache.constEnd() && now - it->fetchedMs < m_ttlMs) {
        done(it->record, QString());
        return;
    }
    auto store = [this, hash, now, generation = m_generation,
                  done = std::move(done)](const DbResult<Record> &r) {
        if (r.ok() && generation == m_generation) {
            if (m_cache.size() >= kMaxCacheEntries)
                m_cache.clear();
            // Unknown secrets are not cached: guessing must not fill memory.
            if (!std::holds_alternative<std::monostate>(r.value))
                m_cache.insert(hash, Entry{r.value, now});
        }
        done(r.value, r.error);
    };
    m_db.read<Record>(
        this,
        [hash, token](Store &s) -> Record {
            if (token) {
                if (auto t = s.findControlTokenByHash(hash))
                    return *t;
            } else if (auto k = s.findApiKeyByHash(hash)) {
                return *k;
            }
            return std::monostate{};
        },
        std::move(store));
}

void Authenticator::noteUse(const Record &record)
{
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    if (const auto *k = std::get_if<ApiKeyRecord>(&record)) {
        const qint64 id = k->id;
        if (now - m_lastTouch.value(id, 0) >= 60'000) {
            m_lastTouch.insert(id, now);
            m_db.touchApiKey(k->id);
        }
    } else if (const auto *t = std::get_if<ControlTokenRecord>(&record)) {
        const qint64 id = -t->id;
        if (now - m_lastTouch.value(id, 0) >= 60'000) {
            m_lastTouch.insert(id, now);
            m_db.touchControlToken(t->id);
        }
    }
}
