#pragma once

#include "CredentialModel.h"

#include <functional>
#include <QHash>
#include <QTimeZone>

// The account's API keys, as the Settings > API Keys table shows them: only the display prefix
// ever reaches this model; the full value exists once, in createKey()'s callback.
// Reloads on apiKeysChanged; a key's "last used" is refreshed shortly after usage for that key
// is recorded (CredentialModel).
class ApiKeyModel : public CredentialModel<ApiKeyRecord>
{
    Q_OBJECT
public:
    enum Column
    {
        NameColumn,
        PrefixColumn,
        TierColumn,
        BudgetColumn,  // spent of the budget in its period; SpentFractionRole for a bar
        ExpiresColumn, // the key's expiry, "Never" without one
        CreatedColumn,
        LastUsedColumn,
        StatusColumn,
        ColumnCount
    };

    // Spent over budget in the current period (0 to 1, more when an upstream over-reported);
    // invalid without a budget.
    static constexpr int SpentFractionRole = Qt::UserRole + 20;
    // true on every cell of a key whose rules refuse it now (refusal()).
    static constexpr int RefusedRole = Qt::UserRole + 21;

    explicit ApiKeyModel(DatabaseService &db, QObject *parent = nullptr);

    // Where budget periods start (the server's budget_time_zone; UTC unless set) and the clock
    // they are reckoned by (tests).
    void setBudgetZone(const QTimeZone &zone) { m_zone = zone; }
    void setClock(std::function<QDateTime()> now) { m_now = std::move(now); }
    // What the key spent in its budget's current period, as last read (0 without a budget).
    qint64 spent(qint64 keyId) const { return m_spent.value(keyId); }
    // Why the key's rules refuse every request now (expired, budget used up), or empty.
    QString refusal(const ApiKeyRecord &key) const;

    QVariant data(const QModelIndex &index, int role) const override;

    // done runs on this model's thread, unless a given context is gone. An empty tier means the
    // default tier.
    void createKey(const QString &name, const QString &tier, const KeyRules &rules,
                   QObject *context, CreateDone done);
    // Changes a key's tier and rules (and its name when not empty); false: no such key.
    void updateKey(qint64 id, const QString &name, const QString &tier, const KeyRules &rules,
                   QObject *context, RevokeDone done);
    // DbResult::value is false when the key was already revoked or does not exist.
    void revokeKey(qint64 id, QObject *context, RevokeDone done);

signals:
    void loaded();
    void loadFailed(const QString &error);

protected:
    QStringList headers() const override;
    QVariant otherCell(const ApiKeyRecord &key, int column, int role) const override;
    QString prefixHint() const override;
    void onLoaded() override;
    void onLoadFailed(const QString &error) override { emit loadFailed(error); }

private:
    void readSpending();

    QTimeZone m_zone = QTimeZone::utc();
    std::function<QDateTime()> m_now = [] { return QDateTime::currentDateTimeUtc(); };
    QHash<qint64, qint64> m_spent;
};
