#pragma once

#include "DatabaseConfig.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <QThread>

// Keeps SQLite's WAL checkpoints off the billed path. Measured: at concurrency 1 a billed
// request's p99 was 1.6 ms with SQLite's default checkpoints (the writer copying up to 1,000
// pages into the database after a commit, every ~125 requests), 0.48 ms with none at all.
// This thread does the copying: once the WAL file has reached kWalBytes it runs a PASSIVE
// checkpoint on its own connection every kPollMs (never blocking the writer or the readers; a
// pass with nothing to copy costs no disk flush). But only a checkpoint taken while no frame is
// being added can finish, and only a finished one lets the next write start the WAL over (without,
// it grew by 100 MB a second under full load): so once the WAL holds more than kRestartBytes of
// frames, after a pass this thread asks the writer (restartWanted) to checkpoint between two
// batches, when only the frames of the last moments are left to copy. That costs the writer three
// fdatasync calls (the WAL's and the database's in the checkpoint, and the new WAL header's), so it
// is judged by the frames the pass reports: the WAL file keeps its size when the WAL starts over.
// The writer's own automatic checkpoints stay as a safety net, every 65,536 pages (DbWorker).
// SQLite only.
class Checkpointer : public QThread
{
public:
    static constexpr qint64 kWalBytes = 4 << 20;
    static constexpr int kPollMs = 100;
    static constexpr qint64 kRestartBytes = 16 << 20;
    static constexpr qint64 kFrameHeader = 24; // bytes before each page in the WAL

    // restartWanted runs on this thread.
    Checkpointer(DatabaseConfig config, std::function<void()> restartWanted);
    ~Checkpointer() override;

    // Ends the thread after one last checkpoint.
    void shutdown();
    quint64 checkpoints() const { return m_checkpoints; }

protected:
    void run() override;

private:
    DatabaseConfig m_config;
    std::function<void()> m_restartWanted;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stopping = false;
    std::atomic<quint64> m_checkpoints{0};
};
