#include "ApiKeyModel.h"

#include "ModelFormat.h"

#include <QPointer>

namespace {

bool sameKey(const ApiKeyRecord &a, const ApiKeyRecord &b)
{
    return a.name == b.name && a.prefix == b.prefix && a.tier == b.tier && a.created == b.created &&
           a.lastUsed == b.lastUsed && a.revoked == b.revoked;
}

QVariant msOf(const QDateTime &t)
{
    return t.isValid() ? t.toMSecsSinceEpoch() : qint64(-1);
}

} // namespace

ApiKeyModel::ApiKeyModel(DatabaseService &db, QObject *parent)
    : RecordTableModel(Order::Ascending, parent), m_db(db), m_account(db.defaultAccountId())
{
    connect(&db, &DatabaseService::apiKeysChanged, this, &ApiKeyModel::reload);
    // Last-used times are written without an announcement (at most once a minute per key), so
    // usage by a listed key is the cue; the timer folds a burst of requests into one read.
    m_lastUsedRefresh.setSingleShot(true);
    m_lastUsedRefresh.setInterval(1000);
    connect(&m_lastUsedRefresh, &QTimer::timeout, this, &ApiKeyModel::reload);
    connect(&db, &DatabaseService::usageRecorded, this, [this](const UsageRecord &r) {
        if (r.keyId && rowOfId(r.keyId) >= 0 && !m_lastUsedRefresh.isActive())
            m_lastUsedRefresh.start();
    });
    reload();
}

int ApiKeyModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ApiKeyModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case NameColumn:
        return tr("Name");
    case PrefixColumn:
        return tr("Key");
    case TierColumn:
        return tr("Tier");
    case CreatedColumn:
        return tr("Created");
    case LastUsedColumn:
        return tr("Last used");
    case StatusColumn:
        return tr("Status");
    }
    return {};
}

QVariant ApiKeyModel::cellData(const ApiKeyRecord &key, int column, int role) const
{
    if (role == Qt::DisplayRole) {
        switch (column) {
        case NameColumn:
            return key.name;
        case PrefixColumn:
            return key.prefix;
        case TierColumn:
            return key.tier;
        case CreatedColumn:
            return ModelFormat::time(key.created);
        case LastUsedColumn:
            return ModelFormat::time(key.lastUsed, tr("Never"));
        case StatusColumn:
            return key.isRevoked() ? tr("Revoked") : tr("Active");
        }
    } else if (role == SortRole) {
        switch (column) {
        case NameColumn:
            return key.name;
        case PrefixColumn:
            return key.prefix;
        case TierColumn:
            return key.tier;
        case CreatedColumn:
            return msOf(key.created);
        case LastUsedColumn:
            return msOf(key.lastUsed);
        case StatusColumn:
            return key.isRevoked() ? 1 : 0;
        }
    } else if (role == Qt::ToolTipRole) {
        switch (column) {
        case PrefixColumn:
            return tr("Only this prefix is kept; the full key was shown once, at creation.");
        case CreatedColumn:
            return key.created.toUTC().toString(Qt::ISODateWithMs);
        case LastUsedColumn:
            return key.lastUsed.toUTC().toString(Qt::ISODateWithMs);
        case StatusColumn:
            if (key.isRevoked())
                return tr("Revoked %1").arg(ModelFormat::time(key.revoked));
            break;
        }
    }
    return {};
}

void ApiKeyModel::reload()
{
    if (m_loading) {
        m_stale = true;
        return;
    }
    m_loading = true;
    const qint64 account = m_account;
    m_db.read<QList<ApiKeyRecord>>(
        this, [account](Store &s) { return s.listApiKeys(account); },
        [this](const DbResult<QList<ApiKeyRecord>> &r) {
            m_loading = false;
            if (r.ok()) {
                mergeRows(r.value, sameKey);
                m_loaded = true;
                emit loaded();
            } else {
                emit loadFailed(r.error);
            }
            if (m_stale) {
                m_stale = false;
                reload();
            }
        });
}

void ApiKeyModel::createKey(const QString &name, const QString &tier, QObject *context,
                            CreateDone done)
{
    const qint64 account = m_account;
    QPointer<QObject> guard(context);
    const bool hasContext = context != nullptr;
    m_db.write<CreatedSecret>(
        this, [=](Store &s) { return s.createApiKey(account, name, tier); },
        [this, guard, hasContext, done = std::move(done)](const DbResult<CreatedSecret> &r) {
            if (r.ok())
                m_db.announceApiKeysChanged();
            if (done && (guard || !hasContext))
                done(r);
        });
}

void ApiKeyModel::revokeKey(qint64 id, QObject *context, RevokeDone done)
{
    const qint64 account = m_account;
    QPointer<QObject> guard(context);
    const bool hasContext = context != nullptr;
    m_db.write<bool>(
        this, [=](Store &s) { return s.revokeApiKey(account, id); },
        [this, guard, hasContext, done = std::move(done)](const DbResult<bool> &r) {
            // Announced even for a no-op so every cache (the server's authenticator included)
            // re-reads rather than trusting what it holds.
            if (r.ok())
                m_db.announceApiKeysChanged();
            if (done && (guard || !hasContext))
                done(r);
        });
}
