#include "ApiKeyModel.h"

#include "ModelFormat.h"

namespace {

bool sameKey(const ApiKeyRecord &a, const ApiKeyRecord &b)
{
    return a.name == b.name && a.prefix == b.prefix && a.tier == b.tier && a.created == b.created &&
           a.lastUsed == b.lastUsed && a.revoked == b.revoked;
}

} // namespace

ApiKeyModel::ApiKeyModel(DatabaseService &db, QObject *parent)
    : CredentialModel(db,
                      {&Store::listApiKeys, sameKey, &UsageRecord::keyId,
                       &DatabaseService::apiKeysChanged, &DatabaseService::announceApiKeysChanged,
                       NameColumn, PrefixColumn, CreatedColumn, LastUsedColumn},
                      parent)
{
}

QStringList ApiKeyModel::headers() const
{
    return {tr("Name"), tr("Key"), tr("Tier"), tr("Created"), tr("Last used"), tr("Status")};
}

QString ApiKeyModel::prefixHint() const
{
    return tr("Only this prefix is kept; the full key was shown once, at creation.");
}

QVariant ApiKeyModel::otherCell(const ApiKeyRecord &key, int column, int role) const
{
    if (column == TierColumn && (role == Qt::DisplayRole || role == SortRole))
        return key.tier;
    if (column != StatusColumn)
        return {};
    if (role == Qt::DisplayRole)
        return key.isRevoked() ? tr("Revoked") : tr("Active");
    if (role == SortRole)
        return key.isRevoked() ? 1 : 0;
    if (role == Qt::ToolTipRole && key.isRevoked())
        return tr("Revoked %1").arg(ModelFormat::time(key.revoked));
    return {};
}

void ApiKeyModel::createKey(const QString &name, const QString &tier, QObject *context,
                            CreateDone done)
{
    write<CreatedSecret>(
        [=](Store &s, qint64 account) { return s.createApiKey(account, name, tier); }, context,
        std::move(done));
}

void ApiKeyModel::revokeKey(qint64 id, QObject *context, RevokeDone done)
{
    write<bool>([id](Store &s, qint64 account) { return s.revokeApiKey(account, id); }, context,
                std::move(done));
}
