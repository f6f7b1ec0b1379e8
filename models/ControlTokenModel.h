#pragma once

#include "CredentialModel.h"
#include "Scopes.h"

#include <QTimer>

// The account's control tokens (lpc_): display prefix, scopes, lifetime and state. Like
// ApiKeyModel it never holds a full token; createToken()'s callback is the one place it exists.
// Reloads on controlTokensChanged and shortly after a listed token is used (CredentialModel).
class ControlTokenModel : public CredentialModel<ControlTokenRecord>
{
    Q_OBJECT
public:
    enum Column
    {
        NameColumn,
        PrefixColumn,
        ScopesColumn,
        CreatedColumn,
        ExpiresColumn,
        LastUsedColumn,
        StatusColumn,
        ColumnCount
    };

    explicit ControlTokenModel(DatabaseService &db, QObject *parent = nullptr);

    // The scopes a token may carry (default: the core's; the window sets Services::scopes()).
    void setKnownScopes(const QStringList &scopes) { m_knownScopes = scopes; }
    const QStringList &knownScopes() const { return m_knownScopes; }

    // scopes must be known (knownScopes()) and not empty, otherwise done gets an error and
    // nothing is written. An invalid expires means the token never expires. done runs on this
    // model's thread, unless a given context is gone.
    void createToken(const QString &name, const QStringList &scopes, const QDateTime &expires,
                     QObject *context, CreateDone done);
    void revokeToken(qint64 id, QObject *context, RevokeDone done);

signals:
    void loaded();
    void loadFailed(const QString &error);

protected:
    QStringList headers() const override;
    QVariant otherCell(const ControlTokenRecord &token, int column, int role) const override;
    QString prefixHint() const override;
    void onLoaded() override;
    void onLoadFailed(const QString &error) override { emit loadFailed(error); }

private:
    void refreshExpiry();

    QTimer m_expiryTick;
    QStringList m_knownScopes = Scopes::core();
};
