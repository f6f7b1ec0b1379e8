#pragma once

#include "DatabaseService.h"
#include "ModelFormat.h"
#include "RecordTableModel.h"

#include <functional>
#include <QPointer>
#include <QTimer>

// The account's credentials of one kind (API keys, control tokens) as a table. Only display
// prefixes ever reach it; a created secret exists once, in the create call's callback. Loads
// through DatabaseService's readers and reloads when the kind's change is announced, and
// shortly after usage by a listed credential is recorded: last-used times are written without
// an announcement (at most once a minute per credential), so usage is the cue, and a timer
// folds a burst of requests into one read. Writes announce the change when they succeed.
//
// A template without Q_OBJECT: each concrete model carries its own meta-object and signals,
// emitted from onLoaded() and onLoadFailed().
template <class T> class CredentialModel : public RecordTableModel<T>
{
public:
    using CreateDone = std::function<void(const DbResult<CreatedSecret> &)>;
    using RevokeDone = std::function<void(const DbResult<bool> &)>;

    // Re-reads the list; calls made while a read is in flight collapse into one more read.
    void reload()
    {
        if (m_loading) {
            m_stale = true;
            return;
        }
        m_loading = true;
        m_db.template read<QList<T>>(
            this,
            [list = m_kind.list, account = m_account](Store &s) { return (s.*list)(account); },
            [this](const DbResult<QList<T>> &r) {
                m_loading = false;
                if (r.ok()) {
                    this->mergeRows(r.value, m_kind.same);
                    m_loaded = true;
                    onLoaded();
                } else {
                    onLoadFailed(r.error);
                }
                if (m_stale) {
                    m_stale = false;
                    reload();
                }
            });
    }
    bool isLoaded() const { return m_loaded; }

    int columnCount(const QModelIndex &parent = QModelIndex()) const override
    {
        return parent.isValid() ? 0 : int(headers().size());
    }
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override
    {
        if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
            return QAbstractTableModel::headerData(section, orientation, role);
        const QStringList titles = headers();
        return section >= 0 && section < titles.size() ? QVariant(titles.at(section)) : QVariant();
    }

protected:
    virtual QStringList headers() const = 0; // the column titles, in column order
    // The cells of the kind's own columns (those not in Kind).
    virtual QVariant otherCell(const T &record, int column, int role) const = 0;
    virtual QString prefixHint() const = 0; // the prefix's tooltip

    QVariant cellData(const T &record, int column, int role) const final
    {
        const bool shown = role == Qt::DisplayRole;
        const bool sorted = role == RecordTableModel<T>::SortRole;
        if (column == m_kind.nameColumn)
            return shown || sorted ? QVariant(record.name) : QVariant();
        if (column == m_kind.prefixColumn && role == Qt::ToolTipRole)
            return prefixHint();
        if (column == m_kind.prefixColumn)
            return shown || sorted ? QVariant(record.prefix) : QVariant();
        if (column == m_kind.createdColumn)
            return timeCell(record.created, role, QString());
        if (column == m_kind.lastUsedColumn)
            return timeCell(record.lastUsed, role, QObject::tr("Never"));
        return otherCell(record, column, role);
    }

    // A time: local to the second (`missing` when there is none), its sort key in milliseconds
    // (-1 for none), and the exact UTC time as its tooltip.
    static QVariant timeCell(const QDateTime &t, int role, const QString &missing)
    {
        if (role == Qt::DisplayRole)
            return ModelFormat::time(t, missing);
        if (role == RecordTableModel<T>::SortRole)
            return sortTime(t);
        if (role == Qt::ToolTipRole)
            return t.toUTC().toString(Qt::ISODateWithMs);
        return {};
    }

    // What makes one kind of credential.
    struct Kind
    {
        QList<T> (Store::*list)(qint64 accountId);
        bool (*same)(const T &, const T &);  // whether a kept row's shown values are unchanged
        qint64 UsageRecord::*usedBy;         // the usage record's field naming the credential
        void (DatabaseService::*changed)();  // the announcement that makes it reload
        void (DatabaseService::*announce)(); // what its writes announce
        // The columns of the fields every kind has, which this class shows.
        int nameColumn;
        int prefixColumn;
        int createdColumn;
        int lastUsedColumn;
    };

    // Starts the first load.
    CredentialModel(DatabaseService &db, const Kind &kind, QObject *parent)
        : RecordTableModel<T>(RecordTableModel<T>::Order::Ascending, parent), m_db(db),
          m_account(db.defaultAccountId()), m_kind(kind)
    {
        QObject::connect(&db, kind.changed, this, [this] { reload(); });
        m_lastUsedRefresh.setSingleShot(true);
        m_lastUsedRefresh.setInterval(1000);
        QObject::connect(&m_lastUsedRefresh, &QTimer::timeout, this, [this] { reload(); });
        QObject::connect(&db, &DatabaseService::usageRecorded, this, [this](const UsageRecord &r) {
            const qint64 id = r.*m_kind.usedBy;
            if (id && this->rowOfId(id) >= 0 && !m_lastUsedRefresh.isActive())
                m_lastUsedRefresh.start();
        });
        reload();
    }

    // After a load merged the rows, and after one failed (on this model's thread).
    virtual void onLoaded() = 0;
    virtual void onLoadFailed(const QString &error) = 0;

    // fn(Store &, account) on the writer; the kind's change is announced when it succeeded.
    // done runs on this model's thread, unless a given context is gone.
    template <class R, class Fn>
    void write(Fn fn, QObject *context, std::function<void(const DbResult<R> &)> done)
    {
        m_db.template write<R>(
            this, [fn = std::move(fn), account = m_account](Store &s) { return fn(s, account); },
            [this, done = guarded(context, std::move(done))](const DbResult<R> &r) {
                // Announced even for a no-op (a revoke of a revoked credential), so that every
                // cache, the server's authenticator included, re-reads rather than trusts.
                if (r.ok())
                    (m_db.*m_kind.announce)();
                done(r);
            });
    }

    // done, to be called unless a given context is gone by then.
    template <class R>
    static std::function<void(const DbResult<R> &)>
    guarded(QObject *context, std::function<void(const DbResult<R> &)> done)
    {
        return [guard = QPointer<QObject>(context), hasContext = context != nullptr,
                done = std::move(done)](const DbResult<R> &r) {
            if (done && (guard || !hasContext))
                done(r);
        };
    }

    DatabaseService &database() const { return m_db; }
    qint64 account() const { return m_account; }

    // A time's sort key: milliseconds, -1 for none.
    static QVariant sortTime(const QDateTime &t)
    {
        return t.isValid() ? t.toMSecsSinceEpoch() : qint64(-1);
    }

private:
    DatabaseService &m_db;
    qint64 m_account;
    Kind m_kind;
    bool m_loaded = false;
    bool m_loading = false;
    bool m_stale = false;
    QTimer m_lastUsedRefresh;
};
