#pragma once

#include "DatabaseService.h"
#include "RecordTableModel.h"

#include <QTimer>

// The account's API keys, as the Settings > API Keys table shows them: only the display prefix
// ever reaches this model; the full value exists once, in createKey()'s callback.
// Loads through DatabaseService's readers and reloads on apiKeysChanged; a key's "last used"
// is refreshed shortly after usage for that key is recorded.
class ApiKeyModel : public RecordTableModel<ApiKeyRecord>
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

    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    // Re-reads the list; calls made while a read is in flight collapse into one more read.
    void reload();
    bool isLoaded() const { return m_loaded; }

    using CreateDone = std::function<void(const DbResult<CreatedSecret> &)>;
    using RevokeDone = std::function<void(const DbResult<bool> &)>;
    // done runs on this model's thread, unless a given context is gone. An empty tier means the
    // default tier.
    void createKey(const QString &name, const QString &tier, QObject *context, CreateDone done);
    // DbResult::value is false when the key was already revoked or does not exist.
    void revokeKey(qint64 id, QObject *context, RevokeDone done);

signals:
    void loaded();
    void loadFailed(const QString &error);

protected:
    QVariant cellData(const ApiKeyRecord &key, int column, int role) const override;

private:
    DatabaseService &m_db;
    qint64 m_account;
    bool m_loaded = false;
    bool m_loading = false;
    bool m_stale = false;
    QTimer m_lastUsedRefresh;
};
