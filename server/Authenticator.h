#pragma once

#include "Records.h"

#include <functional>
#include <optional>
#include <QHash>
#include <QObject>
#include <variant>

class DatabaseService;

// Looks up API keys and control tokens by hash, with a short-lived cache on the server thread
// so the hot path does not touch the database on every request. Local revocations clear the
// cache at once, and so do changes another instance or process made (DatabaseService's
// apiKeysChanged and controlTokensChanged, from the change feed); ttlMs bounds the rest.
class Authenticator : public QObject
{
    Q_OBJECT
public:
    using Record = std::variant<std::monostate, ApiKeyRecord, ControlTokenRecord>;
    // error is non-empty when the store could not be asked.
    using Done = std::function<void(const Record &record, const QString &error)>;

    Authenticator(DatabaseService &db, int ttlMs, QObject *parent = nullptr);

    // done runs on this object's thread, at once on a cache hit.
    void lookupApiKey(const QString &secret, Done done);
    void lookupControlToken(const QString &secret, Done done);
    void invalidate()
    {
        m_cache.clear();
        ++m_generation; // a lookup in flight may have read the row before the change
    }
    // Marks the credential used (written at most once a minute per credential).
    void noteUse(const Record &record);

private:
    struct Entry
    {
        Record record;
        qint64 fetchedMs = 0;
    };
    void lookup(const QString &secret, bool token, Done done);

    DatabaseService &m_db;
    int m_ttlMs;
    quint64 m_generation = 0;
    QHash<QByteArray, Entry> m_cache;
    QHash<qint64, qint64> m_lastTouch; // key id, or -(token id) -> when last touched
};
