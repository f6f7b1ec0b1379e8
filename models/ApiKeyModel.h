#pragma once

#include "CredentialModel.h"

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
        CreatedColumn,
        LastUsedColumn,
        StatusColumn,
        ColumnCount
    };

    explicit ApiKeyModel(DatabaseService &db, QObject *parent = nullptr);

    // done runs on this model's thread, unless a given context is gone. An empty tier means the
    // default tier.
    void createKey(const QString &name, const QString &tier, QObject *context, CreateDone done);
    // DbResult::value is false when the key was already revoked or does not exist.
    void revokeKey(qint64 id, QObject *context, RevokeDone done);

signals:
    void loaded();
    void loadFailed(const QString &error);

protected:
    QStringList headers() const override;
    QVariant otherCell(const ApiKeyRecord &key, int column, int role) const override;
    QString prefixHint() const override;
    void onLoaded() override { emit loaded(); }
    void onLoadFailed(const QString &error) override { emit loadFailed(error); }
};
