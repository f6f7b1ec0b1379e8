#include "ApiKeyModel.h"

#include "ModelFormat.h"

namespace {

bool sameKey(const ApiKeyRecord &a, const ApiKeyRecord &b)
{
    return a.name == b.name && a.prefix == b.prefix && a.tier == b.tier && a.created == b.created &&
           a.lastUsed == b.lastUsed && a.revoked == b.revoked && a.rules == b.rules;
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
    return {tr("Name"),    tr("Key"),     tr("Tier"),      tr("Budget"),
            tr("Expires"), tr("Created"), tr("Last used"), tr("Status")};
}

QString ApiKeyModel::prefixHint() const
{
    return tr("Only this prefix is kept; the full key was shown once, at creation.");
}

QVariant ApiKeyModel::otherCell(const ApiKeyRecord &key, int column, int role) const
{
    if (column == TierColumn && (role == Qt::DisplayRole || role == SortRole))
        return key.tier;
    if (column == BudgetColumn) {
        if (!key.rules.budget)
            return role == Qt::DisplayRole ? QVariant(tr("None")) : QVariant();
        const qint64 spent = m_spent.value(key.id);
        const qint64 amount = key.rules.budget->amount;
        if (role == Qt::DisplayRole)
            return tr("%1 of %2 / %3")
                .arg(ModelFormat::credits(spent), ModelFormat::credits(amount),
                     KeyRules::periodName(key.rules.budget->period));
        if (role == SpentFractionRole || role == SortRole)
            return double(spent) / double(amount);
        if (role == Qt::ToolTipRole)
            return tr("Spent %1 of %2 credits this %3 (settled charges; requests in progress "
                      "hold more while they run).")
                .arg(ModelFormat::credits(spent), ModelFormat::credits(amount),
                     KeyRules::periodName(key.rules.budget->period));
        return {};
    }
    if (column == ExpiresColumn)
        return timeCell(key.rules.expires, role, tr("Never"));
    if (column != StatusColumn)
        return {};
    const QString refused = refusal(key);
    if (role == Qt::DisplayRole)
        return key.isRevoked() ? tr("Revoked") : !refused.isEmpty() ? tr("Refused") : tr("Active");
    if (role == SortRole)
        return key.isRevoked() ? 2 : !refused.isEmpty() ? 1 : 0;
    if (role == Qt::ToolTipRole && key.isRevoked())
        return tr("Revoked %1").arg(ModelFormat::time(key.revoked));
    if (role == Qt::ToolTipRole && !refused.isEmpty())
        return refused;
    return {};
}

QString ApiKeyModel::refusal(const ApiKeyRecord &key) const
{
    if (key.isRevoked())
        return {};
    if (key.rules.isExpired(m_now()))
        return tr("Expired %1: every request is refused (401 key_expired).")
            .arg(ModelFormat::time(key.rules.expires));
    if (key.rules.budget && m_spent.value(key.id) >= key.rules.budget->amount)
        return tr("Its budget for this %1 is used up: requests are refused (402 "
                  "key_budget_exceeded) until it resets.")
            .arg(KeyRules::periodName(key.rules.budget->period));
    return {};
}

QVariant ApiKeyModel::data(const QModelIndex &index, int role) const
{
    // On every cell of its row, so that the window can make such a key stand out.
    if (role == RefusedRole)
        return index.isValid() && index.row() < rowCount() &&
               !refusal(recordAt(index.row())).isEmpty();
    return CredentialModel::data(index, role);
}

void ApiKeyModel::onLoaded()
{
    readSpending();
    emit loaded();
}

void ApiKeyModel::readSpending()
{
    QList<QPair<qint64, QPair<qint64, qint64>>> wanted; // key -> [from, to) in ms
    const QDateTime now = m_now();
    for (int row = 0; row < rowCount(); ++row) {
        const ApiKeyRecord &k = recordAt(row);
        if (!k.rules.budget)
            continue;
        const auto [start, end] = KeyRules::periodAt(k.rules.budget->period, now, m_zone);
        wanted.append(
            {k.id, {start.toMSecsSinceEpoch(), end.isValid() ? end.toMSecsSinceEpoch() : 0}});
    }
    if (wanted.isEmpty())
        return;
    database().read<QHash<qint64, qint64>>(
        this,
        [wanted](Store &s) {
            QHash<qint64, qint64> spent;
            for (const auto &[id, range] : wanted)
                spent.insert(id, s.keySpent(id, range.first, range.second));
            return spent;
        },
        [this](const DbResult<QHash<qint64, qint64>> &r) {
            if (!r.ok())
                return;
            m_spent = r.value;
            if (rowCount() > 0)
                emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
        });
}

void ApiKeyModel::createKey(const QString &name, const QString &tier, const KeyRules &rules,
                            QObject *context, CreateDone done)
{
    write<CreatedSecret>(
        [=](Store &s, qint64 account) { return s.createApiKey(account, name, tier, rules); },
        context, std::move(done));
}

void ApiKeyModel::updateKey(qint64 id, const QString &name, const QString &tier,
                            const KeyRules &rules, QObject *context, RevokeDone done)
{
    write<bool>(
        [=](Store &s, qint64 account) { return s.updateApiKey(account, id, name, tier, rules); },
        context, std::move(done));
}

void ApiKeyModel::revokeKey(qint64 id, QObject *context, RevokeDone done)
{
    write<bool>([id](Store &s, qint64 account) { return s.revokeApiKey(account, id); }, context,
                std::move(done));
}
