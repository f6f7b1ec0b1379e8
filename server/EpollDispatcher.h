#pragma once

#include <atomic>
#include <cstdint>
#include <QAbstractEventDispatcher>
#include <QHash>
#include <sys/epoll.h>
#include <vector>

class QSocketNotifier;

// The server thread's event loop on Linux's epoll. Qt's dispatchers (GLib's and its own UNIX
// one) hand poll() every enabled socket notifier on every iteration: with 55 connections and
// their upstream sockets, at 2,000 relayed completions a second, perf put a quarter of the server
// thread in poll's kernel side and GLib's source checks (sock_poll, fdget, tcp_poll,
// g_main_context_check). epoll is told once when a notifier is enabled or disabled, and each
// wait returns only the sockets that are ready.
//
// The contract is QAbstractEventDispatcher's, as Qt's UNIX dispatcher keeps it: posted events
// first, then a wait (none without WaitForMoreEvents) bounded by the nearest timer, then the
// ready notifiers (QEvent::SockAct; an error or hang-up activates every enabled notifier of the
// socket, as with poll()), then each expired timer once (QTimerEvent; the next expiry one
// interval after the last, or one interval from now when late; a zero interval fires on every
// pass; a timer whose handler is still running neither fires again nor bounds the wait from a
// nested loop). Timers never fire early, whatever their type. With ExcludeSocketNotifiers the
// wait ends only for a wake-up or a timer. Unlike poll(), epoll drops a descriptor closed while
// its notifiers are enabled without a word (Qt warns); the server disables them first.
// wakeUp() and interrupt() may be called from any thread; the rest only from the dispatcher's
// own. A wake-up from the dispatcher's own thread (an event posted to itself) writes nothing:
// that thread is not waiting, and the next wait does not block (perf counted about one such
// write, and the read that took it back, per relayed completion).
class EpollDispatcher : public QAbstractEventDispatcher
{
    Q_OBJECT
public:
    explicit EpollDispatcher(QObject *parent = nullptr);
    ~EpollDispatcher() override;

    bool processEvents(QEventLoop::ProcessEventsFlags flags) override;
    void registerSocketNotifier(QSocketNotifier *notifier) override;
    void unregisterSocketNotifier(QSocketNotifier *notifier) override;
    void registerTimer(int timerId, qint64 interval, Qt::TimerType timerType,
                       QObject *object) override;
    bool unregisterTimer(int timerId) override;
    bool unregisterTimers(QObject *object) override;
    QList<TimerInfo> registeredTimers(QObject *object) const override;
    int remainingTime(int timerId) override;
    void wakeUp() override;
    void interrupt() override;

private:
    struct Watch // the notifiers of one descriptor, by QSocketNotifier::Type
    {
        QSocketNotifier *read = nullptr;
        QSocketNotifier *write = nullptr;
        QSocketNotifier *exception = nullptr;
        uint32_t events() const;
    };
    struct Timer
    {
        int id;
        qint64 interval; // ms
        Qt::TimerType type;
        QObject *object;
        qint64 due;  // ms on the monotonic clock
        bool firing; // its QTimerEvent is being handled
    };
    void update(int fd, const Watch &watch, bool existed);
    int activateNotifiers(int ready);
    int activateTimers();
    int waitMs() const; // until the nearest timer: -1 none, 0 one due now
    void consumeWakeUp();

    int m_epoll = -1;
    int m_wake = -1; // eventfd: wakeUp() from any thread
    std::atomic<bool> m_wakePending{false};
    std::atomic<bool> m_interrupted{false};
    bool m_wokenHere = false; // wakeUp() from this thread since the posted events were sent
    QHash<int, Watch> m_watches;
    std::vector<QSocketNotifier *> m_pending; // ready ones not yet activated this pass
    std::vector<Timer> m_timers;
    std::vector<epoll_event> m_events;
};
