#include "ControlTokenModel.h"

#include "ModelFormat.h"
#include "Scopes.h"

#include <QPointer>

namespace {

bool sameToken(const ControlTokenRecord &a, const ControlTokenRecord &b)
{
    return a.name == b.name && a.prefix == b.prefix && a.scopes == b.scopes &&
           a.created == b.created && a.expires == b.expires && a.lastUsed == b.lastUsed &&
           a.revoked == b.revoked;
}

QVariant msOf(const QDateTime &t)
{
    return t.isValid() ? t.toMSecsSinceEpoch() : qint64(-1);
}

} // namespace

ControlTokenModel::ControlTokenModel(DatabaseService &db, QObject *parent)
    : RecordTableModel(Order::Ascending, parent), m_db(db), m_account(db.defaultAccountId())
{
    connect(&db, &DatabaseService::controlTokensChanged, this, &ControlTokenModel::reload);
    m_lastUsedRefresh.setSingleShot(true);
    m_lastUsedRefresh.setInterval(1000);
    connect(&m_lastUsedRefresh, &QTimer::timeout, this, &ControlTokenModel::reload);
    connect(&db, &DatabaseService::usageRecorded, this, [this](const UsageRecord &r) {
        if (r.tokenId && rowOfId(r.tokenId) >= 0 && !m_lastUsedRefresh.isActive())
            m_lastUsedRefresh.start();
    });
    // "Expired" depends on the clock, not on a write: re-evaluate it while tokens can expire.
    m_expiryTick.setInterval(15'000);
    connect(&m_expiryTick, &QTimer::timeout, this, &ControlTokenModel::refreshExpiry);
    reload();
}

int ControlTokenModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ControlTokenModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case NameColumn:
        return tr("Name");
    case PrefixColumn:
        return tr("Token");
    case ScopesColumn:
        return tr("Scopes");
    case CreatedColumn:
        return tr("Created");
    case ExpiresColumn:
        return tr("Expires");
    case LastUsedColumn:
        return tr("Last used");
    case StatusColumn:
        return tr("Status");
    }
    return {};
}

QVariant ControlTokenModel::cellData(const ControlTokenRecord &token, int column, int role) const
{
    const QDateTime now = QDateTime::currentDateTimeUtc();
    if (role == Qt::DisplayRole) {
        switch (column) {
        case NameColumn:
            return token.name;
        case PrefixColumn:
            return token.prefix;
        case ScopesColumn:
            return token.scopes.join(QStringLiteral(", "));
        case CreatedColumn:
            return ModelFormat::time(token.created);
        case ExpiresColumn:
            return ModelFormat::time(token.expires, tr("Never"));
        case LastUsedColumn:
            return ModelFormat::time(token.lastUsed, tr("Never"));
        case StatusColumn:
            if (token.isRevoked())
                return tr("Revoked");
            return token.isExpired(now) ? tr("Expired") : tr("Active");
        }
    } else if (role == SortRole) {
        switch (column) {
        case NameColumn:
            return token.name;
        case PrefixColumn:
            return token.prefix;
        case ScopesColumn:
            return token.scopes.join(u' ');
        case CreatedColumn:
            return msOf(token.created);
        case ExpiresColumn:
            // Never-expiring tokens sort after every dated one.
            return token.expires.isValid() ? token.expires.toMSecsSinceEpoch()
                                           : std::numeric_limits<qint64>::max();
        case LastUsedColumn:
            return msOf(token.lastUsed);
        case StatusColumn:
            return token.isRevoked() ? 2 : token.isExpired(now) ? 1 : 0;
        }
    } else if (role == Qt::ToolTipRole) {
        switch (column) {
        case PrefixColumn:
            return tr("Only this prefix is kept; the full token was shown once, at creation.");
        case ScopesColumn:
            return token.scopes.join(u'\n');
        case CreatedColumn:
            return token.created.toUTC().toString(Qt::ISODateWithMs);
        case ExpiresColumn:
            return token.expires.toUTC().toString(Qt::ISODateWithMs);
        case LastUsedColumn:
            return token.lastUsed.toUTC().toString(Qt::ISODateWithMs);
        case StatusColumn:
            if (token.isRevoked())
                return tr("Revoked %1").arg(ModelFormat::time(token.revoked));
            break;
        }
    }
    return {};
}

void ControlTokenModel::refreshExpiry()
{
    if (m_rows.isEmpty())
        return;
    emit dataChanged(index(0, StatusColumn), index(int(m_rows.size()) - 1, StatusColumn),
                     {Qt::DisplayRole, SortRole});
}

void ControlTokenModel::reload()
{
    if (m_loading) {
        m_stale = true;
        return;
    }
    m_loading = true;
    const qint64 account = m_account;
    m_db.read<QList<ControlTokenRecord>>(
        this, [account](Store &s) { return s.listControlTokens(account); },
        [this](const DbResult<QList<ControlTokenRecord>> &r) {
            m_loading = false;
            if (r.ok()) {
                mergeRows(r.value, sameToken);
                m_loaded = true;
                const QDateTime now = QDateTime::currentDateTimeUtc();
                const bool canExpire =
                    std::any_of(m_rows.cbegin(), m_rows.cend(), [&](const auto &t) {
                        return !t.isRevoked() && t.expires.isValid() && !t.isExpired(now);
                    });
                if (canExpire && !m_expiryTick.isActive())
                    m_expiryTick.start();
                else if (!canExpire)
                    m_expiryTick.stop();
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

void ControlTokenModel::createToken(const QString &name, const QStringList &scopes,
                                    const QDateTime &expires, QObject *context, CreateDone done)
{
    QPointer<QObject> guard(context);
    const bool hasContext = context != nullptr;
    const auto unknown = std::find_if(scopes.cbegin(), scopes.cend(), [this](const QString &s) {
        return !m_knownScopes.contains(s);
    });
    if (scopes.isEmpty() || unknown != scopes.cend()) {
        const QString error = scopes.isEmpty() ? tr("Choose at least one scope.")
                                               : tr("Unknown scope: %1").arg(*unknown);
        // Reported asynchronously, like every other outcome.
        QMetaObject::invokeMethod(
            this,
            [guard, hasContext, error, done = std::move(done)] {
                if (done && (guard || !hasContext))
                    done(DbResult<CreatedSecret>{{}, error});
            },
            Qt::QueuedConnection);
        return;
    }
    const qint64 account = m_account;
    m_db.write<CreatedSecret>(
        this, [=](Store &s) { return s.createControlToken(account, name, scopes, expires); },
        [this, guard, hasContext, done = std::move(done)](const DbResult<CreatedSecret> &r) {
            if (r.ok())
                m_db.announceControlTokensChanged();
            if (done && (guard || !hasContext))
                done(r);
        });
}

void ControlTokenModel::revokeToken(qint64 id, QObject *context, RevokeDone done)
{
    const qint64 account = m_account;
    QPointer<QObject> guard(context);
    const bool hasContext = context != nullptr;
    m_db.write<bool>(
        this, [=](Store &s) { return s.revokeControlToken(account, id); },
        [this, guard, hasContext, done = std::move(done)](const DbResult<bool> &r) {
            if (r.ok())
                m_db.announceControlTokensChanged();
            if (done && (guard || !hasContext))
                done(r);
        });
}
