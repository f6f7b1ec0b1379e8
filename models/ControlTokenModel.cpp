#include "ControlTokenModel.h"

#include "ModelFormat.h"
#include "Scopes.h"

namespace {

bool sameToken(const ControlTokenRecord &a, const ControlTokenRecord &b)
{
    return a.name == b.name && a.prefix == b.prefix && a.scopes == b.scopes &&
           a.created == b.created && a.expires == b.expires && a.lastUsed == b.lastUsed &&
           a.revoked == b.revoked;
}

} // namespace

ControlTokenModel::ControlTokenModel(DatabaseService &db, QObject *parent)
    : CredentialModel(db,
                      {&Store::listControlTokens, sameToken, &UsageRecord::tokenId,
                       &DatabaseService::controlTokensChanged,
                       &DatabaseService::announceControlTokensChanged, NameColumn, PrefixColumn,
                       CreatedColumn, LastUsedColumn},
                      parent)
{
    // "Expired" depends on the clock, not on a write: re-evaluate it while tokens can expire.
    m_expiryTick.setInterval(15'000);
    connect(&m_expiryTick, &QTimer::timeout, this, &ControlTokenModel::refreshExpiry);
}

QStringList ControlTokenModel::headers() const
{
    return {tr("Name"),    tr("Token"),     tr("Scopes"), tr("Created"),
            tr("Expires"), tr("Last used"), tr("Status")};
}

QString ControlTokenModel::prefixHint() const
{
    return tr("Only this prefix is kept; the full token was shown once, at creation.");
}

QVariant ControlTokenModel::otherCell(const ControlTokenRecord &token, int column, int role) const
{
    const QDateTime now = QDateTime::currentDateTimeUtc();
    switch (column) {
    case ScopesColumn:
        if (role == Qt::DisplayRole)
            return token.scopes.join(QStringLiteral(", "));
        if (role == SortRole)
            return token.scopes.join(u' ');
        if (role == Qt::ToolTipRole)
            return token.scopes.join(u'\n');
        break;
    case ExpiresColumn:
        // Never-expiring tokens sort after every dated one.
        if (role == SortRole)
            return token.expires.isValid() ? token.expires.toMSecsSinceEpoch()
                                           : std::numeric_limits<qint64>::max();
        return timeCell(token.expires, role, tr("Never"));
    case StatusColumn:
        if (role == Qt::DisplayRole)
            return token.isRevoked()      ? tr("Revoked")
                   : token.isExpired(now) ? tr("Expired")
                                          : tr("Active");
        if (role == SortRole)
            return token.isRevoked() ? 2 : token.isExpired(now) ? 1 : 0;
        if (role == Qt::ToolTipRole && token.isRevoked())
            return tr("Revoked %1").arg(ModelFormat::time(token.revoked));
        break;
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

void ControlTokenModel::onLoaded()
{
    const QDateTime now = QDateTime::currentDateTimeUtc();
    const bool canExpire = std::any_of(m_rows.cbegin(), m_rows.cend(), [&](const auto &t) {
        return !t.isRevoked() && t.expires.isValid() && !t.isExpired(now);
    });
    if (canExpire && !m_expiryTick.isActive())
        m_expiryTick.start();
    else if (!canExpire)
        m_expiryTick.stop();
    emit loaded();
}

void ControlTokenModel::createToken(const QString &name, const QStringList &scopes,
                                    const QDateTime &expires, QObject *context, CreateDone done)
{
    const auto unknown = std::find_if(scopes.cbegin(), scopes.cend(), [this](const QString &s) {
        return !m_knownScopes.contains(s);
    });
    if (scopes.isEmpty() || unknown != scopes.cend()) {
        const QString error = scopes.isEmpty() ? tr("Choose at least one scope.")
                                               : tr("Unknown scope: %1").arg(*unknown);
        // Reported asynchronously, like every other outcome.
        QMetaObject::invokeMethod(
            this,
            [error, done = guarded(context, std::move(done))] {
                done({{}, error});
            },
            Qt::QueuedConnection);
        return;
    }
    write<CreatedSecret>(
        [=](Store &s, qint64 account) {
            return s.createControlToken(account, name, scopes, expires);
        },
        context, std::move(done));
}

void ControlTokenModel::revokeToken(qint64 id, QObject *context, RevokeDone done)
{
    write<bool>([id](Store &s, qint64 account) { return s.revokeControlToken(account, id); },
                context, std::move(done));
}
