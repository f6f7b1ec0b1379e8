#pragma once

#include "DatabaseService.h"
#include "RecordTableModel.h"
#include "Scopes.h"

#include <QTimer>

// The account's control tokens (lpc_): display prefix, scopes, lifetime and state. Like
// ApiKeyModel it never holds a full token; createToken()'s callback is the one place it exists.
// Reloads on controlTokensChanged and shortly after a listed token is used.
class ControlTokenModel : public RecordTableModel<ControlTokenRecord>
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

    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    void reload();
    bool isLoaded() const { return m_loaded; }

    using CreateDone = std::function<void(const DbResult<CreatedSecret> &)>;
    using RevokeDone = std::function<void(const DbResult<bool> &)>;
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
    QVariant cellData(const ControlTokenRecord &token, int column, int role) const override;

private:
    void refreshExpiry();

    DatabaseService &m_db;
    qint64 m_account;
    bool m_loaded = false;
    bool m_loading = false;
    bool m_stale = false;
    QTimer m_lastUsedRefresh;
    QTimer m_expiryTick;
    QStringList m_knownScopes = Scopes::core();
};
