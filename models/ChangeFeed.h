#pragma once

#include "DatabaseConfig.h"

#include <QHash>
#include <QObject>
#include <QStringList>
#include <QThread>

// Changes to credentials and credits made by any process on the database (another instance, the
// command line, the window), seen by this one at once instead of when a cache expires. Triggers
// bump a counter per topic in the same transaction as the change (Migrations.cpp, core step 6:
// "keys", "tokens", "credits"; a family may add its own, as the gateway's "catalogs"); the feed
// compares the counters with those it saw last and announces the topics that moved.
//
// On its own thread with its own connection, so that nothing on the server's or the writer's
// path waits for it, every pollMs (50):
//   PostgreSQL  the counters are read (one small statement; the triggers also NOTIFY
//               switchyard_changes for other listeners, but Qt's PostgreSQL driver keeps what it
//               makes for a subscription after the connection is gone, which LeakSanitizer
//               reported, so the feed reads instead of listening);
//   SQLite      PRAGMA data_version (it moves when another connection committed; reading it
//               costs no I/O), then the counters when it moved.
// When the connection fails, it is opened again at the next poll, and every topic is
// announced once it is back (what changed meanwhile is unknown).
class ChangeFeed : public QObject
{
    Q_OBJECT
public:
    static constexpr int kPollMs = 50;

    explicit ChangeFeed(DatabaseConfig config, int pollMs = kPollMs, QObject *parent = nullptr);
    ~ChangeFeed() override;

    // Opens the connection and reads the counters once before returning: a change committed
    // after start() is announced.
    void start();
    void stop();

signals:
    // From the feed's thread: connect with a queued connection.
    void changed(const QStringList &topics);

private:
    class Worker;
    const DatabaseConfig m_config;
    const int m_pollMs;
    QThread m_thread;
    Worker *m_worker = nullptr;
};
