// JobQueue: jobs run off the queue's thread, continuations on it, none lost; a long job does
// not hold up the others; destruction runs what was queued and returns; request work is
// bounded by the capacity (slots), refused when full and admitted again once a slot is back.
#include "JobQueue.h"

#include <atomic>
#include <memory>
#include <QElapsedTimer>
#include <QSet>
#include <QTest>
#include <QThread>
#include <semaphore>
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

    // Workers that fell asleep are woken by every post that finds them so, from the queue's
    // thread and from others, with posts spaced on either side of the workers' spin; and
    // destroying the queue wakes them to end.
    void sleepingWorkersAreWoken()
    {
        auto queue = std::make_unique<JobQueue>(2, QStringLiteral("test"));
        int continued = 0;
        const auto job = [&continued]() -> JobQueue::Continuation {
            return [&continued] { ++continued; };
        };
        for (int round = 1; round <= 40; ++round) {
            queue->post(job); // both workers asleep: two posts wake both
            queue->post(job);
            QTRY_COMPARE_WITH_TIMEOUT(continued, 2 * round, 5'000);
            QThread::usleep(round % 2 ? 20 : 1'000); // within the spin, then well past it
        }
        std::atomic<int> ran{0};
        std::thread poster([&] {
            for (int i = 0; i < 400; ++i) {
                queue->post([&ran]() -> JobQueue::Continuation {
                    ++ran;
                    return {};
                });
                std::this_thread::sleep_for(std::chrono::microseconds(i % 7 * 60));
            }
        });
        poster.join();
        QTRY_COMPARE_WITH_TIMEOUT(ran.load(), 400, 5'000);
        QThread::msleep(5); // both asleep again
        QElapsedTimer ending;
        ending.start();
        queue.reset();
        QVERIFY(ending.elapsed() < 5'000);
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

    // Capacity 3 on one worker: a held job and two waiting fill it; the next is refused, with
    // nothing queued, and Retry-After grows with the queue; slots come back as jobs end.
    void requestWorkIsBounded()
    {
        JobQueue queue(1, QStringLiteral("test"), nullptr, 3);
        QCOMPARE(queue.capacity(), 3);
        QCOMPARE(queue.retryAfterSeconds(), 1);
        std::binary_semaphore release(0);
        std::atomic<int> ran{0};
        int continued = 0;
        const auto counted = [&]() -> JobQueue::Continuation {
            ++ran;
            return [&continued] { ++continued; };
        };
        QVERIFY(queue.tryPost([&]() -> JobQueue::Continuation {
            release.acquire();
            ++ran;
            return [&continued] { ++continued; };
        }));
        QVERIFY(queue.tryPost(counted));
        QVERIFY(queue.tryRun([&] { ++ran; }));
        QCOMPARE(queue.pending(), 3);
        QVERIFY(!queue.tryPost(counted));
        QVERIFY(!queue.tryRun([&] { ++ran; }));
        QVERIFY(!queue.acquire());
        QCOMPARE(queue.retryAfterSeconds(), 3); // two ahead of the one worker, plus one
        QCOMPARE(ran.load(), 0);
        release.release();
        QTRY_COMPARE_WITH_TIMEOUT(continued, 2, 10'000);
        QCOMPARE(ran.load(), 3); // the refused ones never ran
        QTRY_COMPARE(queue.pending(), 0);
        QVERIFY(queue.tryPost(counted));
        QTRY_COMPARE_WITH_TIMEOUT(continued, 3, 10'000);
    }

    // A slot is held across stages (with waits between them) and counts once; dropped, it gives
    // its place back, even after the queue has gone.
    void slotsSpanStagesAndMayOutliveTheQueue()
    {
        auto queue = std::make_unique<JobQueue>(2, QStringLiteral("test"), nullptr, 2);
        JobQueue::Slot a = queue->acquire();
        JobQueue::Slot b = queue->acquire();
        QVERIFY(a && b);
        QVERIFY(!queue->acquire());
        std::atomic<int> stages{0};
        for (int i = 0; i < 5; ++i)
            queue->run(a, [&stages] { ++stages; });
        QTRY_COMPARE_WITH_TIMEOUT(stages.load(), 5, 10'000);
        QCOMPARE(queue->pending(), 2); // the stages took no slot of their own
        a.reset();
        QCOMPARE(queue->pending(), 1);
        JobQueue::Slot c = queue->acquire();
        QVERIFY(c);
        c.reset();
        queue.reset();
        b.reset(); // after the queue: only its counter is touched
    }
};

QTEST_GUILESS_MAIN(TestJobQueue)
#include "tst_job_queue.moc"
