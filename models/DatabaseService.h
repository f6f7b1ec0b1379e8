#pragma once

#include "Checkpointer.h"
#include "DatabaseConfig.h"
#include "DbWorker.h"
#include "Migrations.h"
#include "Records.h"
#include "SettlementTicket.h"
#include "Store.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <QObject>
#include <QPointer>
#include <vector>

template <class R> struct DbResult
{
    R value{};
    QString error; // empty on success
    bool ok() const { return error.isEmpty(); }
};

// The server's and the window's door to the database: reads run on a small pool of reader
// threads, every write on the single writer (group commit). Results come back on the thread of
// the context object; a context destroyed meanwhile simply gets nothing.
// Signals announce committed changes so that item models and caches update live; they are
// emitted from the writer thread (connect with the default, queued, connection).
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

    template <class R, class Fn, class Done> void write(QObject *context, Fn fn, Done done)
    {
        dispatch<R>(*m_writer, context, std::move(fn), std::move(done));
    }

    // Ledger movement with its announcement. floor: lowest balance a charge may leave.
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

    // Announces key or token changes made outside the writer (e.g. by the CLI in this process).
    void announceApiKeysChanged() { emit apiKeysChanged(); }
    void announceControlTokensChanged() { emit controlTokensChanged(); }

signals:
    void apiKeysChanged();
    void controlTokensChanged();
    void ledgerAppended(const LedgerEntry &entry);
    void usageRecorded(const UsageRecord &record);

private:
    template <class R, class Fn, class Done>
    void dispatch(DbWorker &worker, QObject *context, Fn fn, Done done)
    {
        auto result = std::make_shared<DbResult<R>>();
        QPointer<QObject> guard(context);
        const bool hasContext = context != nullptr;
        worker.post(
            [fn = std::move(fn), result](Store &store) mutable { result->value = fn(store); },
            [result, guard, hasContext, done = std::move(done)](const QString &error) {
                result->error = error;
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
    std::atomic<quint64> m_nextReader{0};
    qint64 m_defaultAccount = 0;
};
