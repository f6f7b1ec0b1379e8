#include "Checkpointer.h"

#include <QFileInfo>
#include <QSqlError>
#include <QSqlQuery>

Checkpointer::Checkpointer(DatabaseConfig config, std::function<void()> restartWanted)
    : m_config(std::move(config)), m_restartWanted(std::move(restartWanted))
{
    setObjectName(QStringLiteral("checkpointer"));
}

Checkpointer::~Checkpointer()
{
    shutdown();
}

void Checkpointer::shutdown()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    if (isRunning())
        wait();
}

void Checkpointer::run()
{
    QString name;
    try {
        QSqlDatabase db = m_config.open(QStringLiteral("checkpointer"));
        name = db.connectionName();
        const QString wal = m_config.sqlitePath() + QStringLiteral("-wal");
        QSqlQuery q(db);
        qint64 pageSize = 4096;
        if (q.exec(QStringLiteral("PRAGMA page_size")) && q.next())
            pageSize = q.value(0).toLongLong();
        q.finish();
        bool last = false;
        while (!last) {
            {
                std::unique_lock lock(m_mutex);
                m_wake.wait_for(lock, std::chrono::milliseconds(kPollMs),
                                [this] { return m_stopping; });
                last = m_stopping;
            }
            if (!last && QFileInfo(wal).size() < kWalBytes)
                continue;
            // The file keeps its size when the WAL starts over, so what the WAL holds is the
            // checkpoint's answer: busy, frames in the WAL, frames copied. Judged by the file,
            // every pass past kRestartBytes asked the writer for its checkpoint and the three
            // fdatasync calls around it, at any load, long after the WAL had started over.
            qint64 frames = 0;
            if (q.exec(QStringLiteral("PRAGMA wal_checkpoint(PASSIVE)")) && q.next()) {
                ++m_checkpoints;
                frames = q.value(1).toLongLong();
            } else {
                qWarning("checkpoint failed: %s", qPrintable(q.lastError().text()));
            }
            q.finish();
            if (!last && m_restartWanted && frames * (pageSize + kFrameHeader) >= kRestartBytes)
                m_restartWanted();
        }
    } catch (const StoreError &e) {
        qWarning("checkpointer: %s", e.what());
    }
    if (!name.isEmpty())
        DatabaseConfig::close(name);
}
