#pragma once

#include "ChangeFeed.h"
#include "Checkpointer.h"
#include "DatabaseConfig.h"
#include "DbWorker.h"
#include "Migrations.h"
#include "Records.h"
#include "SettlementTicket.h"
#include "Store.h"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <QObject>
#include <QPointer>
#include <vector>

template <class R> struct DbResult
{
    R value{};
    QString error; // empty on success
    bool ok() const { return error.isEmpty(); }
};

// The money a DatabaseService::writeMoney job makes: its ledger entries and usage records,
// written with Store's methods and remembered, so that they are announced once the job's
// transaction has committed (and forgotten if it rolls back). Outside writeMoney (the command
// line, tests) it is Store's methods with nothing announced.
class MoneyJournal
{
public:
    explicit MoneyJournal(Store &store) : m_store(store) {}
    // The connection, for the family's own rows in the same transaction.
    Store &store() { return m_store; }
    // Store::applyLedger; a Committed entry is remembered.
    ChargeResult applyLedger(qint64 accountId, const QString &kind, qint64 amount,
                             const QString &reason, const QString &requestId, qint64 floor);
    // Store::insertUsage, with the current time when the record has none; the record is
    // remembered with its id.
    qint64 insertUsage(UsageRecord record);

    // What it wrote, in order.
    const QList<LedgerEntry> &entries() const { return m_entries; }
    const QList<UsageRecord> &records() const { return m_records; }

private:
    Store &m_store;
    QList<LedgerEntry> m_entries;
    QList<UsageRecord> m_records;
};

// Ledger entries and usage records this DatabaseService announced since it was made: every
// one committed through it (settlements, grants, writeMoney), by kind, for /metrics.
struct MoneyCounters
{
    enum Kind
    {
        Charge,
        Refund,
        Grant,
        KindCount
    };
    static const char *kindName(int kind);
    std::array<quint64, KindCount> entries{};
    std::array<quint64, KindCount> units{}; // credit units moved, without sign
    quint64 usageRecords = 0;
    // Prometheus text: switchyard_ledger_entries_total{kind}, switchyard_credits_units_total{kind}
    // and switchyard_usage_records_total, counters with exact integers.
    QByteArray render() const;
};

// The server's and the window's door to the database: reads run on a small pool of reader
// threads, every write on the single writer (group commit). Results come back on the thread of
// the context object; a context destroyed meanwhile simply gets nothing.
// Signals announce committed changes so that item models and caches update live; they are
// emitted from the writer thread (connect with the default, queued, connection). The server
// and the window write every ledger entry and usage record through settle, applyLedger or
// writeMoney, which announce it (ledgerAppended, usageRecorded) and count it (moneyCounters)
// in one place; what another process writes (the command line) is seen on reading.
class DatabaseService : public QObject
{
    Q_OBJECT
public:
    explicit DatabaseService(DatabaseConfig config, int readers = 2, QObject *parent = nullptr);
    ~DatabaseService() override;

    // Migrates the schema (the core's tables and the families') and starts the threads. Throws
    // StoreError.
    void start(const QList<Migrations::Component> &families = {});
    // Drains the writer: every write posted before this returns is committed or failed.
    void stop();
    // Blocks until everything posted so far has completed (its completion has run).
    void flush();

    const DatabaseConfig &config() const { return m_config; }
    qint64 defaultAccountId() const { return m_defaultAccount; }
    quint64 writerBatches() const { return m_writer ? m_writer->batches() : 0; }
    // PASSIVE checkpoints the Checkpointer ran (SQLite; 0 on PostgreSQL).
    quint64 checkpoints() const { return m_checkpointer ? m_checkpointer->checkpoints() : 0; }
    // Those the writer ran when the Checkpointer asked, so that the WAL could start over.
    quint64 writerCheckpoints() const { return m_writer ? m_writer->checkpoints() : 0; }

    template <class R, class Fn, class Done> void read(QObject *context, Fn fn, Done done)
    {
        auto &worker = *m_readers[m_nextReader++ % m_readers.size()];
        dispatch<R>(worker, context, std::move(fn), std::move(done));
    }

    // PostgreSQL: a job on the connection kept for the state instances share (server/
    // SharedState.h), beside the readers and the writer so that it never waits behind their
    // work; each statement commits alone. Not on SQLite (shared() is false there).
    bool hasShared() const { return m_shared != nullptr; }
    template <class R, class Fn, class Done> void shared(QObject *context, Fn fn, Done done)
    {
        dispatch<R>(*m_shared, context, std::move(fn), std::move(done));
    }

    // A write on the writer: fn(Store &) runs in the group's transaction (its own savepoint).
    // Money is not written here but through settle, applyLedger or writeMoney, which announce
    // it.
    template <class R, class Fn, class Done> void write(QObject *context, Fn fn, Done done)
    {
        dispatch<R>(*m_writer, context, std::move(fn), std::move(done));
    }

    // Money that is not a request's settlement (a family's holds, releases and charges, next to
    // its own rows): fn(MoneyJournal &) runs on the writer like write()'s, all of it in one
    // transaction, and makes its ledger entries and usage records through the journal. Once
    // that transaction has committed, each of them is announced (ledgerAppended,
    // usageRecorded) and counted (moneyCounters), before done is called; when it rolls back
    // (fn threw, or the commit failed), none is. done gets fn's result.
    template <class R, class Fn, class Done> void writeMoney(QObject *context, Fn fn, Done done)
    {
        auto made = std::make_shared<std::optional<MoneyJournal>>();
        dispatch<R>(
            *m_writer, context,
            [fn = std::move(fn), made](Store &store) mutable {
                made->emplace(store);
                return fn(**made);
            },
            std::move(done),
            [this, made] {
                if (*made)
                    announce(**made);
                made->reset(); // its Store is the writer's
            });
    }

    // Ledger movement with its announcement (through writeMoney). floor: lowest balance a
    // charge may leave.
    void applyLedger(QObject *context, qint64 accountId, const QString &kind, qint64 amount,
                     const QString &reason, const QString &requestId, qint64 floor,
                     std::function<void(DbResult<ChargeResult>)> done);
    // While tickets are out, a batch of fewer than kGatherBelow settlements waits up to the
    // gather time for more before it commits, and stops waiting when the last one comes: at
    // moderate rates most commits held one settlement, and the writer's commit costs about the
    // same for one as for twenty (8 pages of WAL, 30 KB, and two wake-ups: 97 us of the writer
    // per billed request at 5,000 req/s against 6 under wrk; tests/bench/README.md, the
    // fifteenth round). A lone request (concurrency 1) holds the only ticket, so it never waits.
    SettlementTicket expectSettlement(); // SettlementTicket.h
    int expectedSettlements() const { return m_expected->load(std::memory_order_relaxed); }
    static constexpr size_t kGatherBelow = 8;
    static constexpr std::chrono::microseconds kGatherTime{150};
    // 0 turns the waiting off. Before start().
    void setGatherTime(std::chrono::microseconds t) { m_gatherTime = t; }

    // Usage record and, when cost > 0, its charge, in one transaction. The charge may take the
    // balance below zero (the work was already delivered); see README, "Credits". Settlements
    // queue for the writer, which stores all those waiting in one batch (Store::settleBatch);
    // a batch that fails (a batch of one too: PostgreSQL may have dropped the connection under
    // it, and the writer opens a new one) is retried one settlement at a time, so only a
    // failing one fails; what the failed batch committed after all is found by the record's
    // request id (which every settlement of the server's has), not stored twice.
    // done runs on context's thread (every done of one batch in one event, in order). ticket:
    // the one taken for this settlement, if any.
    void settle(QObject *context, UsageRecord record,
                std::function<void(DbResult<ChargeResult>)> done, SettlementTicket ticket = {});
    void recordUsage(UsageRecord record, SettlementTicket ticket = {});
    void touchApiKey(qint64 id);
    void touchControlToken(qint64 id);

    // What was announced so far; read from any thread (relaxed: each number is exact, the set
    // of them a moment's).
    MoneyCounters moneyCounters() const;

    // Announces key or token changes made outside the writer (e.g. by the CLI in this process).
    void announceApiKeysChanged() { emit apiKeysChanged(); }
    void announceControlTokensChanged() { emit controlTokensChanged(); }

signals:
    // Also when another process changed them (ChangeFeed).
    void apiKeysChanged();
    void controlTokensChanged();
    // Credits granted by another process (ChangeFeed); this one's are ledgerAppended.
    void creditsChanged();
    // Every topic of the change feed that moved, those above included (a family's own, such
    // as the gateway's "catalogs", come only here).
    void changed(const QStringList &topics);
    void ledgerAppended(const LedgerEntry &entry);
    void usageRecorded(const UsageRecord &record);

private:
    // committed: on the worker, after the job's transaction committed, before done is handed on.
    template <class R, class Fn, class Done>
    void dispatch(DbWorker &worker, QObject *context, Fn fn, Done done,
                  std::function<void()> committed = {})
    {
        auto result = std::make_shared<DbResult<R>>();
        QPointer<QObject> guard(context);
        const bool hasContext = context != nullptr;
        worker.post(
            [fn = std::move(fn), result](Store &store) mutable { result->value = fn(store); },
            [result, guard, hasContext, done = std::move(done),
             committed = std::move(committed)](const QString &error) {
                result->error = error;
                if (committed && error.isEmpty())
                    committed();
                if (!hasContext) {
                    done(*result);
                    return;
                }
                if (!guard)
                    return;
                QMetaObject::invokeMethod(
                    guard.data(), [result, done]() { done(*result); }, Qt::QueuedConnection);
            });
    }

    // On the writer thread, after COMMIT: counts and emits what was committed.
    void announce(const MoneyJournal &journal);
    void announceEntry(const LedgerEntry &entry);
    void announceUsage(const UsageRecord &record);

    // Settlements wait here for the writer, which takes them in batches (Store::settleBatch).
    struct PendingSettlement
    {
        UsageRecord record;
        QPointer<QObject> context;
        bool hasContext = false;
        std::function<void(DbResult<ChargeResult>)> done;
    };
    static constexpr size_t kMaxSettleBatch = 4096;
    void postSettlements();
    void gather(std::unique_lock<std::mutex> &lock);
    // Moves up to a batch of the queued settlements into `taken`; true when some are left, for
    // which the caller posts another job.
    bool takeSettlements(std::vector<PendingSettlement> &taken);
    void settleOne(PendingSettlement pending);
    void finishSettlements(std::vector<PendingSettlement> &taken,
                           const QList<Store::Settlement> &results, const QString &error);

    std::mutex m_settleMutex;
    std::vector<PendingSettlement> m_settlements;
    bool m_settleQueued = false;
    // Tickets out (expectSettlement); shared with them, which may outlive this object.
    std::shared_ptr<std::atomic<int>> m_expected = std::make_shared<std::atomic<int>>(0);
    std::chrono::microseconds m_gatherTime = kGatherTime;
    std::condition_variable m_gathered; // a settlement came while the writer gathers
    bool m_gathering = false;           // under m_settleMutex

    DatabaseConfig m_config;
    int m_readerCount;
    std::vector<std::unique_ptr<DbWorker>> m_readers;
    std::unique_ptr<DbWorker> m_writer;
    std::unique_ptr<Checkpointer> m_checkpointer; // SQLite only
    std::unique_ptr<DbWorker> m_shared;           // PostgreSQL only
    std::unique_ptr<ChangeFeed> m_feed;
    std::atomic<quint64> m_nextReader{0};
    // MoneyCounters, written on the writer thread only.
    std::array<std::atomic<quint64>, MoneyCounters::KindCount> m_entryCounts{};
    std::array<std::atomic<quint64>, MoneyCounters::KindCount> m_unitCounts{};
    std::atomic<quint64> m_usageCount{0};
    qint64 m_defaultAccount = 0;
};
