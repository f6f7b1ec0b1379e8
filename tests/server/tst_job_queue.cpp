// JobQueue: jobs run off the queue's thread, continuations on it, none lost; a long job does
// not hold up the others; destruction runs what was queued and returns.
#include "JobQueue.h"

#include <atomic>
#include <QElapsedTimer>
#include <QSet>
#include <QTest>
#include <QThread>
#include <thread>

class TestJobQueue : public QObject
{
    Q_OBJECT

private slots:
    void everyContinuationOnTheQueueThread()
    {
        JobQueue queue(2, QStringLiteral("test"));
        const QThread *home = QThread::currentThread();
        std::atomic<int> offHome{0};
        int continued = 0, onHome = 0;
        QSet<int> seen;
        constexpr int kJobs = 20'000;
        for (int i = 0; i < kJobs; ++i)
            queue.post([&, i]() -> JobQueue::Continuation {
                if (QThread::currentThread() != home)
                    ++offHome;
                return [&, i] {
                    ++continued;
                    onHome += QThread::currentThread() == home;
                    seen.insert(i);
                };
            });
        QTRY_COMPARE_WITH_TIMEOUT(continued, kJobs, 20'000);
        QCOMPARE(offHome.load(), kJobs);
        QCOMPARE(onHome, kJobs);
        QCOMPARE(seen.size(), kJobs); // each once
    }

    void postedFromOtherThreads()
    {
        JobQueue queue(2, QStringLiteral("test"));
        int continued = 0;
        std::vector<std::thread> posters;
        for (int t = 0; t < 4; ++t)
            posters.emplace_back([&queue, &continued] {
                for (int i = 0; i < 2'500; ++i)
                    queue.post([&continued]() -> JobQueue::Continuation {
                        return [&continued] { ++continued; };
                    });
            });
        for (std::thread &t : posters)
            t.join();
        QTRY_COMPARE_WITH_TIMEOUT(continued, 10'000, 20'000);
    }

    void longJobDoesNotHoldUpShortOnes()
    {
        JobQueue queue(2, QStringLiteral("test"));
        std::atomic<bool> release{false};
        bool longDone = false;
        int shortDone = 0;
        queue.post([&]() -> JobQueue::Continuation {
            while (!release.load())
                QThread::msleep(1);
            return [&] { longDone = true; };
        });
        for (int i = 0; i < 100; ++i)
            queue.post([&]() -> JobQueue::Continuation { return [&] { ++shortDone; }; });
        // The other worker answers every short job while the first is held.
        QTRY_COMPARE_WITH_TIMEOUT(shortDone, 100, 10'000);
        QVERIFY(!longDone);
        release = true;
        QTRY_VERIFY_WITH_TIMEOUT(longDone, 10'000);
    }

    void noContinuationIsFine()
    {
        JobQueue queue(1, QStringLiteral("test"));
        std::atomic<int> ran{0};
        for (int i = 0; i < 100; ++i)
            queue.post([&ran]() -> JobQueue::Continuation {
                ++ran;
                return {};
            });
        QTRY_COMPARE_WITH_TIMEOUT(ran.load(), 100, 10'000);
    }

    void destructionRunsQueuedJobs()
    {
        std::atomic<int> ran{0};
        int continued = 0;
        {
            JobQueue queue(1, QStringLiteral("test"));
            for (int i = 0; i < 1'000; ++i)
                queue.post([&]() -> JobQueue::Continuation {
                    ++ran;
                    return [&continued] { ++continued; };
                });
        } // no event loop ran: the continuations are dropped with the queue
        QCOMPARE(ran.load(), 1'000);
        QCoreApplication::processEvents();
        QCOMPARE(continued, 0);
    }
};

QTEST_GUILESS_MAIN(TestJobQueue)
#include "tst_job_queue.moc"
