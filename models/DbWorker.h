#pragma once

#include "DatabaseConfig.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <QSqlQuery>
#include <QThread>
#include <unordered_map>

class Store;

// A thread that owns one database connection and runs jobs on it in order.
// A writer runs whatever has queued up as one transaction (group commit), each job inside its
// own savepoint so one failing job rolls back alone (on PostgreSQL a job posted with
// Commit::Alone commits by itself between the groups before and after it); completions run only
// after COMMIT, so nothing is reported written before it is durable. On PostgreSQL a batch
// with a failed job is followed by a probe, and so is a batch that comes after kIdleProbeMs
// without one: a connection the server dropped is closed, and the next batch (after an idle
// spell, this one) opens a new one (at once, then at most once a second while that fails; jobs
// fail with the reason meanwhile).
class DbWorker : public QThread
{
public:
    enum class Mode
    {
        Reader,
        Writer
    };
    using Job = std::function<void(Store &)>;
    // Called on the worker thread once the job's outcome is final; error is empty on success.
    using Completion = std::function<void(const QString &error)>;
    // How a writer's job commits. Grouped: inside the transaction of everything queued with it.
    // Alone: the job runs one statement, atomic by itself; on PostgreSQL it then commits on its
    // own, saving BEGIN, COMMIT and its savepoint's round trips (four of them for one
    // settlement batch), while on SQLite it joins the group, where a commit costs more than a
    // statement. Jobs still run in the order posted.
    enum class Commit
    {
        Grouped,
        Alone
    };

    DbWorker(DatabaseConfig config, Mode mode, QString name, int maxBatch = 1024);
    ~DbWorker() override;

    void post(Job job, Completion completion, Commit commit = Commit::Grouped);
    // Blocks until every job posted before the call has completed.
    void flush();
    // Finishes every job already posted, then ends the thread.
    void shutdown();

    static constexpr int kIdleProbeMs = 1'000;

    quint64 batches() const { return m_batches; }
    // SQLite writer: run a PASSIVE checkpoint after the current batch's answers went out (the
    // Checkpointer asks once it has copied nearly everything, so that the WAL can start over).
    void requestCheckpoint() { m_checkpointWanted = true; }
    quint64 checkpoints() const { return m_checkpoints; } // those requested and run
    // SQLite: at the end of each window of cacheWindowMs in which the connection ran at most
    // quietJobs jobs, it frees what it keeps for speed (Store::releaseMemory) if it ran
    // anything since it last did. Set before start().
    static constexpr int kCacheWindowMs = 10'000;
    static constexpr int kQuietJobs = 100;
    void setCacheWindow(int ms, int quietJobs)
    {
        m_cacheWindowMs = ms;
        m_quietJobs = quietJobs;
    }
    quint64 cacheReleases() const { return m_cacheReleases; } // the times it did

protected:
    void run() override;

private:
    struct Item
    {
        Job job;
        Completion completion;
        Commit commit;
    };
    // False when a job of it failed.
    bool runBatch(Store &store, std::deque<Item> &batch);
    // Runs batch[from, to) in one transaction, or, for a PostgreSQL job that commits alone
    // (to == from + 1), without one.
    void runTransaction(Store &store, std::deque<Item> &batch, size_t from, size_t to,
                        std::vector<QString> &errors);

    DatabaseConfig m_config;
    Mode m_mode;
    QString m_name;
    int m_maxBatch;
    int m_cacheWindowMs = kCacheWindowMs;
    int m_quietJobs = kQuietJobs;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<Item> m_queue;
    bool m_stopping = false;
    std::atomic<quint64> m_batches{0};
    std::atomic<bool> m_checkpointWanted{false};
    std::atomic<quint64> m_checkpoints{0};
    std::atomic<quint64> m_cacheReleases{0};
    // The writer's transaction statements, prepared once on SQLite (by their literal's address).
    std::unordered_map<const char *, QSqlQuery> m_statements;
};
