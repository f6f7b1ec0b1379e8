#include "DbWorker.h"

#include "Store.h"

#include <chrono>
#include <QSqlError>
#include <QSqlQuery>

DbWorker::DbWorker(DatabaseConfig config, Mode mode, QString name, int maxBatch)
    : m_config(std::move(config)), m_mode(mode), m_name(std::move(name)), m_maxBatch(maxBatch)
{
    setObjectName(m_name);
}

DbWorker::~DbWorker()
{
    shutdown();
}

void DbWorker::post(Job job, Completion completion, Commit commit)
{
    {
        std::unique_lock lock(m_mutex);
        if (m_stopping) {
            // Called without the lock: a completion may post again (DatabaseService's
            // settlements do), which would wait for this lock on this thread for good.
            lock.unlock();
            if (completion)
                completion(QStringLiteral("the database is shutting down"));
            return;
        }
        m_queue.push_back({std::move(job), std::move(completion), commit});
    }
    m_wake.notify_one();
}

void DbWorker::flush()
{
    if (!isRunning())
        return;
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    post([](Store &) {},
         [&](const QString &) {
             std::lock_guard lock(m);
             done = true;
             cv.notify_one();
         });
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return done; });
}

void DbWorker::shutdown()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    if (isRunning())
        wait();
}

void DbWorker::run()
{
    std::optional<Store> store;
    QString openError;
    QString connectionName;
    const auto open = [&] {
        try {
            QSqlDatabase db = m_config.open(m_name);
            connectionName = db.connectionName();
            if (m_mode == Mode::Writer && !m_config.isPostgres()) {
                // The Checkpointer copies the WAL into the database on its own thread and asks
                // for the writer's checkpoint when it is time (Checkpointer.h); automatic ones
                // remain as a safety net, every 65,536 pages instead of 1,000.
                QSqlQuery q(db);
                // Statement journals of multi-row inserts in memory, not in temporary files
                // made and deleted every batch.
                for (const char *pragma :
                     {"PRAGMA wal_autocheckpoint=65536", "PRAGMA journal_size_limit=67108864",
                      "PRAGMA temp_store=MEMORY"})
                    if (!q.exec(QString::fromLatin1(pragma)))
                        throw StoreError(q.lastError().text().toStdString());
            }

            if (m_mode == Mode::Writer && m_config.isPostgres()) {
                // The settlement statement's custom plans cost about as much to make as to
                // run, and PostgreSQL kept making them while the tables were small (the first
                // thousands of settlements of a new database). Generic plans only: 5,000 billed
                // requests at concurrency 1 on a new database, p50 1.37-1.43 -> 0.89-0.94 ms;
                // the next 5,000, p99 1.84-2.01 -> 1.33-1.47 ms (tests/bench/README.md, the
                // eighth round). The generic plan is made again as the rows settled double
                // (Store::settlePostgres).
                QSqlQuery q(db);
                if (!q.exec(QStringLiteral("SET plan_cache_mode = force_generic_plan")))
                    throw StoreError(q.lastError().text().toStdString());
            }
            store.emplace(db, m_config.kind());
            openError.clear();
        } catch (const StoreError &e) {
            openError = QString::fromUtf8(e.what());
        }
    };
    const auto close = [&] {
        m_statements.clear(); // before their connection closes
        store.reset();
        if (!connectionName.isEmpty())
            DatabaseConfig::close(connectionName);
        connectionName.clear();
    };
    open();
    // PostgreSQL: a connection the server dropped (a restart, a failover, an idle timeout of a
    // proxy) fails every job after it. A batch with a failure is followed by a probe; a dead
    // connection is closed, and the next batch opens a new one (at most one try a second while
    // the server cannot be reached: its jobs fail meanwhile, with the reason).
    // A connection that ran nothing for kIdleProbeMs is probed before its next batch too, so
    // that a drop while the server was quiet (an idle timeout, a restart at night) costs that
    // batch a round trip instead of its requests' answers.
    using Clock = std::chrono::steady_clock;
    auto lastOpen = Clock::now();
    auto lastUsed = lastOpen;
    QString lost; // why the probe failed
    const auto alive = [&] {
        QSqlQuery probe(store->database());
        if (probe.exec(QStringLiteral("SELECT 1")))
            return true;
        lost = probe.lastError().text();
        return false;
    };
    // SQLite: whether the connection ran anything since it last freed its caches, and the
    // jobs run in the current window (DbWorker.h, cacheReleases).
    const auto window = std::chrono::milliseconds(m_cacheWindowMs);
    bool cacheWarm = false;
    auto windowEnd = Clock::now() + window;
    qsizetype windowJobs = 0;
    for (;;) {
        std::deque<Item> batch;
        {
            std::unique_lock lock(m_mutex);
            const auto ready = [this] { return m_stopping || !m_queue.empty(); };
            if (cacheWarm)
                m_wake.wait_until(lock, windowEnd, ready);
            else
                m_wake.wait(lock, ready);
            if (m_stopping && m_queue.empty())
                break; // stopping and drained
            const int take = m_mode == Mode::Writer ? m_maxBatch : 1;
            while (!m_queue.empty() && int(batch.size()) < take) {
                batch.push_back(std::move(m_queue.front()));
                m_queue.pop_front();
            }
        }
        if (store && store->isPostgres() && !batch.empty() &&
            Clock::now() - lastUsed >= std::chrono::milliseconds(kIdleProbeMs) && !alive()) {
            qWarning("%s: the database connection was lost while idle: %s", qPrintable(m_name),
                     qPrintable(lost));
            close();
            lastOpen = {};
        }
        if (!store && m_config.isPostgres() && !batch.empty() &&
            Clock::now() - lastOpen >= std::chrono::seconds(1)) {
            lastOpen = Clock::now();
            close();
            open();
            if (store)
                qInfo("%s: connection to the database opened again", qPrintable(m_name));
        }
        if (!store) {
            for (Item &item : batch)
                if (item.completion)
                    item.completion(openError);
            continue;
        }
        auto now = Clock::now();
        if (!batch.empty()) {
            if (!cacheWarm && now >= windowEnd) { // the first batch after a cold spell
                windowEnd = now + window;
                windowJobs = 0;
            }
            windowJobs += qsizetype(batch.size());
            const bool ran = runBatch(*store, batch);
            lastUsed = Clock::now();
            if (!ran && store->isPostgres() && !alive()) {
                qWarning("%s: the database connection was lost: %s", qPrintable(m_name),
                         qPrintable(lost));
                close();
                lastOpen = {}; // the next batch opens a new one at once
                openError = QStringLiteral("the database connection was lost; it is opened "
                                           "again on the next request");
                cacheWarm = false;
                continue;
            }
            cacheWarm = !store->isPostgres();
            now = Clock::now();
        }
        if (now >= windowEnd) {
            // An overload fills the page cache (up to 2 MB a connection) and the writer's
            // statements of large batches, and a server that stays quiet after it would keep
            // them for good; a busy connection keeps them. Clean pages come back from the
            // OS's file cache.
            if (cacheWarm && windowJobs <= m_quietJobs) {
                try {
                    store->releaseMemory();
                    ++m_cacheReleases;
                } catch (const StoreError &e) {
                    qWarning("%s: %s", qPrintable(m_name), e.what());
                }
                cacheWarm = false;
            }
            windowEnd = now + window;
            windowJobs = 0;
        }
    }
    close();
}

bool DbWorker::runBatch(Store &store, std::deque<Item> &batch)
{
    ++m_batches;
    std::vector<QString> errors(batch.size());
    if (m_mode == Mode::Reader) {
        for (size_t i = 0; i < batch.size(); ++i) {
            try {
                batch[i].job(store);
            } catch (const std::exception &e) {
                errors[i] = QString::fromUtf8(e.what());
            }
        }
    } else {
        // On PostgreSQL a job that commits alone splits the batch: the grouped jobs before it
        // commit first, so that the order posted is the order written.
        const bool pg = store.isPostgres();
        const auto alone = [&](size_t i) { return pg && batch[i].commit == Commit::Alone; };
        for (size_t from = 0; from < batch.size();) {
            size_t to = from + 1;
            if (!alone(from))
                while (to < batch.size() && !alone(to))
                    ++to;
            runTransaction(store, batch, from, to, errors);
            from = to;
        }
    }
    bool ok = true;
    for (size_t i = 0; i < batch.size(); ++i) {
        ok = ok && errors[i].isEmpty();
        if (batch[i].completion)
            batch[i].completion(errors[i]);
    }
    if (m_checkpointWanted.exchange(false)) {
        QSqlQuery q(store.database());
        if (q.exec(QStringLiteral("PRAGMA wal_checkpoint(PASSIVE)")))
            ++m_checkpoints;
        else
            qWarning("writer checkpoint failed: %s", qPrintable(q.lastError().text()));
    }
    return ok;
}

void DbWorker::runTransaction(Store &store, std::deque<Item> &batch, size_t from, size_t to,
                              std::vector<QString> &errors)
{
    // SQLite prepares these once per connection; QPSQL cannot prepare transaction control,
    // so PostgreSQL runs them as text.
    const bool pg = store.isPostgres();
    QSqlQuery text(store.database());
    auto must = [&](const char *sql) {
        QSqlQuery &q = pg ? text : m_statements[sql];
        if (!pg && !q.isActive() && q.lastQuery().isEmpty()) {
            q = QSqlQuery(store.database());
            if (!q.prepare(QString::fromLatin1(sql)))
                throw StoreError(q.lastError().text().toStdString());
        }
        if (!(pg ? q.exec(QString::fromLatin1(sql)) : q.exec()))
            throw StoreError(q.lastError().text().toStdString());
        if (!pg)
            q.finish();
    };
    if (pg && batch[from].commit == Commit::Alone) { // its one statement commits itself
        try {
            batch[from].job(store);
        } catch (const std::exception &e) {
            errors[from] = QString::fromUtf8(e.what());
        }
        return;
    }
    // A lone job needs no savepoint: when it fails, the transaction is rolled back whole.
    const bool alone = to - from == 1;
    try {
        must(pg ? "BEGIN" : "BEGIN IMMEDIATE");
        for (size_t i = from; i < to; ++i) {
            if (!alone)
                must("SAVEPOINT job");
            try {
                batch[i].job(store);
                if (!alone)
                    must("RELEASE SAVEPOINT job");
            } catch (const std::exception &e) {
                errors[i] = QString::fromUtf8(e.what());
                if (alone)
                    throw;
                must("ROLLBACK TO SAVEPOINT job");
                must("RELEASE SAVEPOINT job");
            }
        }
        must("COMMIT");
    } catch (const std::exception &e) {
        text.exec(QStringLiteral("ROLLBACK"));
        const QString err = QString::fromUtf8(e.what());
        for (size_t i = from; i < to; ++i)
            if (errors[i].isEmpty())
                errors[i] = err;
    }
}
