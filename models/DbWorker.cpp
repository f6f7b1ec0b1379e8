#include "DbWorker.h"

#include "Store.h"

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

void DbWorker::post(Job job, Completion completion)
{
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping) {
            if (completion)
                completion(QStringLiteral("the database is shutting down"));
            return;
        }
        m_queue.push_back({std::move(job), std::move(completion)});
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
    try {
        QSqlDatabase db = m_config.open(m_name);
        connectionName = db.connectionName();
        store.emplace(db, m_config.kind());
    } catch (const StoreError &e) {
        openError = QString::fromUtf8(e.what());
    }
    for (;;) {
        std::deque<Item> batch;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
            if (m_queue.empty())
                break; // stopping and drained
            const int take = m_mode == Mode::Writer ? m_maxBatch : 1;
            while (!m_queue.empty() && int(batch.size()) < take) {
                batch.push_back(std::move(m_queue.front()));
                m_queue.pop_front();
            }
        }
        if (!store) {
            for (Item &item : batch)
                if (item.completion)
                    item.completion(openError);
            continue;
        }
        runBatch(*store, batch);
    }
    store.reset();
    if (!connectionName.isEmpty())
        DatabaseConfig::close(connectionName);
}

void DbWorker::runBatch(Store &store, std::deque<Item> &batch)
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
        QSqlQuery q(store.database());
        auto must = [&q](const QString &sql) {
            if (!q.exec(sql))
                throw StoreError(q.lastError().text().toStdString());
        };
        try {
            must(store.isPostgres() ? QStringLiteral("BEGIN") : QStringLiteral("BEGIN IMMEDIATE"));
            for (size_t i = 0; i < batch.size(); ++i) {
                must(QStringLiteral("SAVEPOINT job"));
                try {
                    batch[i].job(store);
                    must(QStringLiteral("RELEASE SAVEPOINT job"));
                } catch (const std::exception &e) {
                    errors[i] = QString::fromUtf8(e.what());
                    must(QStringLiteral("ROLLBACK TO SAVEPOINT job"));
                    must(QStringLiteral("RELEASE SAVEPOINT job"));
                }
            }
            must(QStringLiteral("COMMIT"));
        } catch (const std::exception &e) {
            q.exec(QStringLiteral("ROLLBACK"));
            const QString err = QString::fromUtf8(e.what());
            for (QString &slot : errors)
                if (slot.isEmpty())
                    slot = err;
        }
    }
    for (size_t i = 0; i < batch.size(); ++i)
        if (batch[i].completion)
            batch[i].completion(errors[i]);
}
