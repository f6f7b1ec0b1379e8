#include "ChangeFeed.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QTimer>

class ChangeFeed::Worker : public QObject
{
public:
    Worker(ChangeFeed &feed, const DatabaseConfig &config, int pollMs)
        : m_feed(feed), m_config(config), m_pollMs(pollMs)
    {
    }

    // On the feed's thread. A connection that cannot be opened is tried again at each poll.
    void begin()
    {
        m_timer = new QTimer(this);
        m_timer->setInterval(m_pollMs);
        connect(m_timer, &QTimer::timeout, this, &Worker::poll);
        m_timer->start();
        if (open())
            read(false);
    }

    void end()
    {
        delete m_timer;
        m_timer = nullptr;
        close();
    }

private:
    bool open()
    {
        try {
            m_db = m_config.open(QStringLiteral("changes"));
        } catch (const StoreError &e) {
            failed(QString::fromUtf8(e.what()));
            return false;
        }
        return true;
    }

    void close()
    {
        if (!m_db.isValid())
            return;
        const QString name = m_db.connectionName();
        m_db = QSqlDatabase();
        DatabaseConfig::close(name);
    }

    void failed(const QString &why)
    {
        if (!m_down)
            qWarning("change feed: the database cannot be read (%s); changes made by other "
                     "processes are seen once it can",
                     qPrintable(why));
        m_down = true;
        close();
    }

    void poll()
    {
        if (!m_db.isValid() || !m_db.isOpen()) {
            if (!open())
                return;
        }
        if (!m_config.isPostgres()) {
            QSqlQuery q(m_db);
            if (!q.exec(QStringLiteral("PRAGMA data_version")) || !q.next())
                return failed(q.lastError().text());
            const qint64 version = q.value(0).toLongLong();
            q.finish(); // a statement left open would keep its snapshot, and see no change
            if (version == m_dataVersion && !m_down)
                return;
            m_dataVersion = version;
        }
        read(true);
    }

    bool read(bool announce)
    {
        QSqlQuery q(m_db);
        if (!q.exec(QStringLiteral("SELECT topic, n FROM change_counters"))) {
            failed(q.lastError().text());
            return false;
        }
        QHash<QString, qint64> now;
        while (q.next())
            now.insert(q.value(0).toString(), q.value(1).toLongLong());
        q.finish();
        QStringList moved;
        if (m_down) {
            qInfo("change feed: the database can be read again");
            moved = now.keys(); // what changed meanwhile is unknown
        } else {
            for (auto it = now.cbegin(); it != now.cend(); ++it)
                if (m_counters.value(it.key(), -1) != it.value())
                    moved.append(it.key());
        }
        m_down = false;
        m_counters = now;
        if (announce && !moved.isEmpty())
            emit m_feed.changed(moved);
        return true;
    }

    ChangeFeed &m_feed;
    const DatabaseConfig m_config;
    const int m_pollMs;
    QSqlDatabase m_db;
    QTimer *m_timer = nullptr;
    QHash<QString, qint64> m_counters;
    qint64 m_dataVersion = -1;
    bool m_down = false;
};

ChangeFeed::ChangeFeed(DatabaseConfig config, int pollMs, QObject *parent)
    : QObject(parent), m_config(std::move(config)), m_pollMs(pollMs)
{
    m_thread.setObjectName(QStringLiteral("changes"));
}

ChangeFeed::~ChangeFeed()
{
    stop();
}

void ChangeFeed::start()
{
    if (m_worker)
        return;
    m_worker = new Worker(*this, m_config, m_pollMs);
    m_worker->moveToThread(&m_thread);
    m_thread.start();
    QMetaObject::invokeMethod(m_worker, &Worker::begin, Qt::BlockingQueuedConnection);
}

void ChangeFeed::stop()
{
    if (!m_worker)
        return;
    QMetaObject::invokeMethod(m_worker, &Worker::end, Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
    delete m_worker; // its thread has ended: nothing of it runs any more
    m_worker = nullptr;
}
