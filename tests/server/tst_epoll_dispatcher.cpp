// EpollDispatcher as the main thread's dispatcher (set before the application exists, so that
// QTest's waits run on it): socket notifiers, timers, posted events from other threads, a
// thread's quit, and QTcpServer/QTcpSocket doing real exchanges over it.
#include "EpollDispatcher.h"

#include <atomic>
#include <ctime>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QPointer>
#include <QSignalSpy>
#include <QSocketNotifier>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace {

struct SocketPair
{
    int fd[2] = {-1, -1};
    SocketPair() { QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd) == 0); }
    ~SocketPair()
    {
        for (int f : fd)
            if (f >= 0)
                ::close(f);
    }
    void send(const char *bytes) { QVERIFY(::write(fd[1], bytes, strlen(bytes)) > 0); }
    void drain()
    {
        char buf[256];
        while (::read(fd[0], buf, sizeof buf) > 0) {
        }
    }
    // Each activation of the read notifier counts and empties the socket.
    void countReads(QSocketNotifier &read, int &reads)
    {
        QObject::connect(&read, &QSocketNotifier::activated, &read, [this, &reads] {
            ++reads;
            drain();
        });
    }
};

class TimerCounter : public QObject
{
public:
    int fired = 0;
    std::function<void(int)> onFire;

protected:
    void timerEvent(QTimerEvent *e) override
    {
        ++fired;
        if (onFire)
            onFire(e->timerId());
    }
};

} // namespace

class TestEpollDispatcher : public QObject
{
    Q_OBJECT

private slots:
    void isTheMainThreadsDispatcher()
    {
        QVERIFY(qobject_cast<EpollDispatcher *>(QAbstractEventDispatcher::instance()));
    }

    // A read notifier fires while data waits and stops when disabled; a write notifier fires
    // on a writable socket; a closed peer counts as readable.
    void socketNotifiers()
    {
        SocketPair p;
        QSocketNotifier read(p.fd[0], QSocketNotifier::Read);
        int reads = 0;
        p.countReads(read, reads);
        QTest::qWait(20);
        QCOMPARE(reads, 0);
        p.send("x");
        QTRY_COMPARE(reads, 1);
        read.setEnabled(false);
        p.send("y");
        QTest::qWait(20);
        QCOMPARE(reads, 1);
        read.setEnabled(true);
        QTRY_COMPARE(reads, 2);

        QSocketNotifier write(p.fd[0], QSocketNotifier::Write);
        int writes = 0;
        connect(&write, &QSocketNotifier::activated, this, [&] {
            ++writes;
            write.setEnabled(false);
        });
        QTRY_COMPARE(writes, 1);
        QCOMPARE(reads, 2); // the same descriptor, watched for both

        ::close(p.fd[1]);
        p.fd[1] = -1;
        QTRY_VERIFY(reads >= 3); // hang-up: readable, read() returns 0
    }

    // A notifier disabled by another's handler in the same pass is not activated.
    void notifierDisabledByAnotherIsNotActivated()
    {
        SocketPair a, b;
        QSocketNotifier na(a.fd[0], QSocketNotifier::Read);
        QSocketNotifier nb(b.fd[0], QSocketNotifier::Read);
        int fa = 0, fb = 0;
        connect(&na, &QSocketNotifier::activated, this, [&] {
            ++fa;
            a.drain();
            nb.setEnabled(false);
        });
        connect(&nb, &QSocketNotifier::activated, this, [&] {
            ++fb;
            b.drain();
            na.setEnabled(false);
        });
        a.send("1");
        b.send("1");
        QTRY_VERIFY(fa + fb >= 1);
        QTest::qWait(20);
        QCOMPARE(fa + fb, 1); // whichever ran first disabled the other
    }

    void timersFireOnTimeAndRepeat()
    {
        QElapsedTimer clock;
        clock.start();
        qint64 at = -1;
        QTimer::singleShot(50, Qt::PreciseTimer, this, [&] { at = clock.elapsed(); });
        QTRY_VERIFY(at >= 0);
        QVERIFY2(at >= 50, qPrintable(QString::number(at)));

        TimerCounter c;
        const int id = c.startTimer(10);
        QTRY_VERIFY(c.fired >= 5);
        const auto infos = QAbstractEventDispatcher::instance()->registeredTimers(&c);
        QCOMPARE(infos.size(), 1);
        QCOMPARE(infos.first().timerId, id);
        QCOMPARE(infos.first().interval, 10);
        c.killTimer(id);
        const int fired = c.fired;
        QTest::qWait(40);
        QCOMPARE(c.fired, fired);
    }

    void zeroTimerFiresEveryPassWithoutBlocking()
    {
        TimerCounter c;
        c.startTimer(0);
        QTest::qWait(30);
        QVERIFY2(c.fired > 10, qPrintable(QString::number(c.fired)));
    }

    void remainingTimeAndStops()
    {
        QTimer t;
        t.setSingleShot(true);
        t.start(1000);
        const int left = t.remainingTime();
        QVERIFY2(left > 900 && left <= 1000, qPrintable(QString::number(left)));
        t.stop();
        QCOMPARE(t.remainingTime(), -1);
        QCOMPARE(QAbstractEventDispatcher::instance()->remainingTime(123456), -1);
    }

    // A handler that stops its own timer and another due in the same pass: neither fires again.
    void timerHandlersStopTimers()
    {
        TimerCounter c;
        int first = -1, second = -1;
        c.onFire = [&](int id) {
            c.killTimer(first);
            c.killTimer(second);
            Q_UNUSED(id);
        };
        first = c.startTimer(5);
        second = c.startTimer(5);
        QTRY_VERIFY(c.fired >= 1);
        QTest::qWait(30);
        QCOMPARE(c.fired, 1);
    }

    void deletedObjectsTimersGo()
    {
        auto *c = new TimerCounter;
        const int first = c->startTimer(5);
        const int second = c->startTimer(7);
        QCOMPARE(QAbstractEventDispatcher::instance()->registeredTimers(c).size(), 2);
        delete c;
        QCOMPARE(QAbstractEventDispatcher::instance()->remainingTime(first), -1);
        QCOMPARE(QAbstractEventDispatcher::instance()->remainingTime(second), -1);
        QTest::qWait(30); // a timer of a deleted object would crash here
    }

    // Events posted from other threads wake a waiting loop at once.
    void postedEventsFromOtherThreadsWakeTheLoop()
    {
        constexpr int kPosts = 2000;
        std::atomic<int> posted{0};
        int received = 0;
        std::unique_ptr<QThread> poster(QThread::create([&] {
            for (int i = 0; i < kPosts; ++i) {
                QMetaObject::invokeMethod(
                    this, [&] { ++received; }, Qt::QueuedConnection);
                ++posted;
                if (i % 100 == 0)
                    QThread::usleep(500);
            }
        }));
        QElapsedTimer clock;
        clock.start();
        poster->start();
        QTRY_COMPARE_WITH_TIMEOUT(received, kPosts, 10'000);
        poster->wait();
        QVERIFY(clock.elapsed() < 5'000);
    }

    // The same with the loop blocked in its wait (QEventLoop::exec; QTest's waits never block):
    // every post wakes it, however the posts and the loop's passes interleave. A lost wake-up
    // leaves the loop asleep until the watchdog.
    void blockedLoopWakesForEveryPost()
    {
        constexpr int kPosts = 5000;
        int received = 0;
        QEventLoop loop;
        std::unique_ptr<QThread> poster(QThread::create([&] {
            for (int i = 0; i < kPosts; ++i) {
                QMetaObject::invokeMethod(
                    &loop,
                    [&] {
                        if (++received == kPosts)
                            loop.exit(0);
                    },
                    Qt::QueuedConnection);
                if (i % 7 == 0)
                    QThread::usleep(30);
            }
        }));
        QTimer::singleShot(20'000, &loop, [&] { loop.exit(1); }); // the watchdog
        poster->start();
        QCOMPARE(loop.exec(), 0);
        poster->wait();
        QCOMPARE(received, kPosts);
    }

    // Events the loop's own thread posts write no eventfd: each must still be delivered without
    // the loop blocking first, whether posted from a posted event's handler, a notifier's or a
    // timer's. The watchdog is the only timer; a wait that blocked would end only there.
    void ownThreadPostsNeverWait()
    {
        constexpr int kChain = 2000;
        int steps = 0;
        QEventLoop loop;
        std::function<void()> step = [&] {
            if (++steps == kChain) {
                loop.exit(0);
                return;
            }
            QMetaObject::invokeMethod(&loop, step, Qt::QueuedConnection);
        };
        QElapsedTimer clock;
        clock.start();
        QMetaObject::invokeMethod(&loop, step, Qt::QueuedConnection);
        QTimer::singleShot(20'000, &loop, [&] { loop.exit(1); });
        QCOMPARE(loop.exec(), 0);
        QCOMPARE(steps, kChain);
        QVERIFY2(clock.elapsed() < 10'000, qPrintable(QString::number(clock.elapsed())));

        // From a notifier's handler: the post lands after the wait of that pass.
        SocketPair pipe;
        QSocketNotifier read(pipe.fd[0], QSocketNotifier::Read);
        bool delivered = false;
        QObject::connect(&read, &QSocketNotifier::activated, &loop, [&] {
            pipe.drain();
            QMetaObject::invokeMethod(
                &loop,
                [&] {
                    delivered = true;
                    loop.exit(0);
                },
                Qt::QueuedConnection);
        });
        pipe.send("x");
        QTimer::singleShot(20'000, &loop, [&] { loop.exit(1); });
        clock.restart();
        QCOMPARE(loop.exec(), 0);
        QVERIFY(delivered);
        QVERIFY2(clock.elapsed() < 10'000, qPrintable(QString::number(clock.elapsed())));
    }

    // Timers never fire early, even by a fraction of a millisecond.
    void timersNeverFireEarly()
    {
        for (int i = 0; i < 30; ++i) {
            QElapsedTimer clock;
            clock.start();
            qint64 ns = -1;
            QTimer::singleShot(3, Qt::PreciseTimer, this, [&] { ns = clock.nsecsElapsed(); });
            QTRY_VERIFY(ns >= 0);
            QVERIFY2(ns >= 3'000'000, qPrintable(QString::number(ns)));
        }
    }

    // A timer handler running a nested loop: the loop waits instead of spinning on the timer
    // whose handler is still running.
    void nestedLoopInTimerHandlerWaits()
    {
        TimerCounter c;
        qint64 cpuNs = -1;
        const int id = c.startTimer(1);
        bool nestedRan = false;
        c.onFire = [&](int) {
            if (std::exchange(nestedRan, true))
                return;
            timespec a, b;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
            QEventLoop nested;
            QTimer::singleShot(60, &nested, &QEventLoop::quit);
            nested.exec();
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
            cpuNs = (b.tv_sec - a.tv_sec) * 1'000'000'000LL + (b.tv_nsec - a.tv_nsec);
        };
        QTRY_VERIFY(cpuNs >= 0);
        c.killTimer(id);
        QVERIFY2(cpuNs < 30'000'000, qPrintable(QString::number(cpuNs))); // of 60 ms
    }

    // ExcludeSocketNotifiers: a ready socket neither is activated nor ends the wait.
    void excludedNotifiersNeitherFireNorSpin()
    {
        SocketPair p;
        QSocketNotifier read(p.fd[0], QSocketNotifier::Read);
        int reads = 0;
        p.countReads(read, reads);
        p.send("x");
        bool fired = false;
        QTimer::singleShot(40, this, [&] { fired = true; });
        int passes = 0;
        while (!fired && passes < 1000) {
            QAbstractEventDispatcher::instance()->processEvents(QEventLoop::ExcludeSocketNotifiers |
                                                                QEventLoop::WaitForMoreEvents);
            ++passes;
        }
        QVERIFY(fired);
        QVERIFY2(passes < 10, qPrintable(QString::number(passes)));
        QCOMPARE(reads, 0);
        QTRY_COMPARE(reads, 1); // and activated once notifiers are included again
    }

    // A thread running an EpollDispatcher quits when asked from another (interrupt()).
    void threadQuitsWhenAsked()
    {
        QThread t;
        t.setEventDispatcher(new EpollDispatcher);
        t.start();
        auto *anchor = new QObject;
        anchor->moveToThread(&t);
        std::atomic<bool> ran{false};
        QMetaObject::invokeMethod(
            anchor,
            [&] {
                ran = QThread::currentThread() == &t &&
                      qobject_cast<EpollDispatcher *>(QAbstractEventDispatcher::instance());
                anchor->deleteLater();
            },
            Qt::BlockingQueuedConnection);
        QVERIFY(ran);
        QElapsedTimer clock;
        clock.start();
        t.quit();
        QVERIFY(t.wait(5'000));
        QVERIFY(clock.elapsed() < 1'000);
    }

    // QTcpServer and QTcpSocket over the dispatcher: many connections, each several requests
    // and answers, some larger than a socket buffer.
    void tcpExchanges()
    {
        QTcpServer server;
        QVERIFY(server.listen(QHostAddress::LocalHost, 0));
        connect(&server, &QTcpServer::newConnection, this, [&] {
            while (QTcpSocket *s = server.nextPendingConnection()) {
                connect(s, &QTcpSocket::readyRead, s, [s] {
                    while (s->canReadLine()) {
                        const QByteArray line = s->readLine().trimmed();
                        s->write(QByteArray(line.toInt(), 'z') + '\n');
                    }
                });
                connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
        constexpr int kClients = 40;
        const QList<int> sizes{1, 100, 300'000, 5};
        int done = 0;
        std::vector<std::unique_ptr<QTcpSocket>> clients;
        for (int i = 0; i < kClients; ++i) {
            auto c = std::make_unique<QTcpSocket>();
            QTcpSocket *raw = c.get();
            auto next = std::make_shared<int>(0);
            auto buffer = std::make_shared<QByteArray>();
            connect(raw, &QTcpSocket::connected, raw,
                    [raw, &sizes] { raw->write(QByteArray::number(sizes.first()) + '\n'); });
            connect(raw, &QTcpSocket::readyRead, raw, [raw, next, buffer, &sizes, &done] {
                *buffer += raw->readAll();
                while (buffer->contains('\n')) {
                    const qsizetype end = buffer->indexOf('\n');
                    QCOMPARE(end, qsizetype(sizes[*next]));
                    buffer->remove(0, end + 1);
                    if (++*next == sizes.size()) {
                        ++done;
                        raw->disconnectFromHost();
                        return;
                    }
                    raw->write(QByteArray::number(sizes[*next]) + '\n');
                }
            });
            raw->connectToHost(QHostAddress::LocalHost, server.serverPort());
            clients.push_back(std::move(c));
        }
        QTRY_COMPARE_WITH_TIMEOUT(done, kClients, 20'000);
    }
};

int main(int argc, char **argv)
{
    QCoreApplication::setEventDispatcher(new EpollDispatcher);
    QCoreApplication app(argc, argv);
    TestEpollDispatcher t;
    return QTest::qExec(&t, argc, argv);
}

#include "tst_epoll_dispatcher.moc"
