#pragma once

#include "DatabaseService.h"
#include "RecordTableModel.h"

#include <functional>
#include <QTimer>

// What the ledger and usage models share: records newest first, the first page read on the
// database's reader thread (reload), older pages through fetchMore, and records committed in
// this process (the concrete model hands DatabaseService's announcements to queueLive)
// gathered into one insertion per short interval, so that a busy server costs the GUI one row
// insertion per flush, not per record. Only the newest maxRows rows are kept; older ones can be
// fetched again. A reload makes the answers to earlier reads stale.
// A template without Q_OBJECT: the concrete model emits its own signals from the hooks.
template <class T> class PagedRecordModel : public RecordTableModel<T>
{
public:
    bool canFetchMore(const QModelIndex &parent) const override
    {
        return !parent.isValid() && m_loaded && m_hasMore && !m_fetching && !m_loading;
    }

    void fetchMore(const QModelIndex &parent) override
    {
        if (!canFetchMore(parent) || this->m_rows.isEmpty())
            return;
        m_fetching = true;
        const quint64 generation = m_generation;
        m_db.template read<Page>(this, pageRead(this->m_rows.last().id, m_pageSize),
                                 [this, generation](const DbResult<Page> &r) {
                                     if (generation != m_generation)
                                         return;
                                     m_fetching = false;
                                     if (!r.ok())
                                         return announceFailed(r.error);
                                     m_hasMore = r.value.hasMore;
                                     showRecords(r.value.records);
                                     this->insertRecords(r.value.records);
                                 });
    }

    // Replaces the rows with the newest page.
    void reload()
    {
        const quint64 generation = ++m_generation;
        m_loading = true;
        m_fetching = false;
        m_db.template read<Page>(this, pageRead(0, m_pageSize),
                                 [this, generation](const DbResult<Page> &r) {
                                     if (generation != m_generation)
                                         return;
                                     m_loading = false;
                                     if (!r.ok())
                                         return announceFailed(r.error);
                                     showRecords(r.value.records);
                                     this->resetRows(r.value.records);
                                     m_hasMore = r.value.hasMore;
                                     const bool first = !m_loaded;
                                     m_loaded = true;
                                     reloaded(r.value, first);
                                     flushPending();
                                     announceLoaded();
                                 });
    }

    bool isLoaded() const { return m_loaded; }

protected:
    bool isReloading() const { return m_loading; }

    // A page as the reader thread reads it; `balance` for a model that reads one with it.
    struct Page
    {
        QList<T> records;
        bool hasMore = false;
        qint64 balance = 0;
    };

    PagedRecordModel(DatabaseService &db, QObject *parent, int pageSize, int maxRows)
        : RecordTableModel<T>(RecordTableModel<T>::Order::NewestFirst, parent), m_db(db),
          m_account(db.defaultAccountId()), m_pageSize(qMax(1, pageSize)),
          m_maxRows(qMax(m_pageSize, maxRows))
    {
        m_flush.setSingleShot(true);
        m_flush.setInterval(50);
        QObject::connect(&m_flush, &QTimer::timeout, this, [this] { flushPending(); });
    }

    // The read of a page on the reader thread: up to `limit` records older than beforeId (0:
    // the newest), hasMore when older ones remain.
    virtual std::function<Page(Store &)> pageRead(qint64 beforeId, int limit) const = 0;
    // Emit the concrete model's signals: a reload's rows are in; a read failed.
    virtual void announceLoaded() = 0;
    virtual void announceFailed(const QString &error) = 0;
    // After a reload's rows are in, before the live records held meanwhile are; `first`: the
    // model's first load.
    virtual void reloaded(const Page &, bool /*first*/) {}
    // Records about to be shown, before their rows are inserted.
    virtual void showRecords(const QList<T> &) {}
    // A live record as it is flushed, whether or not it gets a row.
    virtual void noteLive(const T &) {}

    // A record committed in this process, for the next flush; another account's is ignored.
    void queueLive(const T &record)
    {
        if (record.accountId != m_account)
            return;
        m_pending.append(record);
        if (!m_flush.isActive())
            m_flush.start();
    }

    // Drops the live records held for the next flush (they may not match a new query).
    void dropPending() { m_pending.clear(); }

    DatabaseService &m_db;

public:
    // The database and account the rows come from (for an export of all of them).
    DatabaseService &database() const { return m_db; }
    qint64 account() const { return m_account; }

protected:
    const qint64 m_account;

private:
    void flushPending()
    {
        // While a reload is in flight its answer decides the rows; keep the burst until then.
        if (!m_loaded || m_loading || m_pending.isEmpty())
            return;
        QList<T> fresh;
        fresh.reserve(m_pending.size());
        const qint64 oldestShown = this->m_rows.isEmpty() ? 0 : this->m_rows.last().id;
        for (const T &record : std::as_const(m_pending)) {
            noteLive(record);
            // Below the oldest loaded row with more pages to come: fetchMore() will bring it in
            // its place; inserting it now would make the paging cursor skip records.
            if (!(m_hasMore && record.id < oldestShown))
                fresh.append(record);
        }
        m_pending.clear();
        showRecords(fresh);
        this->insertRecords(fresh);
        if (this->trimTo(m_maxRows))
            m_hasMore = true;
    }

    const int m_pageSize;
    const int m_maxRows;
    quint64 m_generation = 0;
    bool m_loaded = false;
    bool m_loading = false;
    bool m_fetching = false;
    bool m_hasMore = false;
    QList<T> m_pending;
    QTimer m_flush;
};
