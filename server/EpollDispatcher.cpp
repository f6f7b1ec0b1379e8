#include "EpollDispatcher.h"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <limits>
#include <poll.h>
#include <QCoreApplication>
#include <QSocketNotifier>
#include <sys/eventfd.h>
#include <unistd.h>

namespace {

constexpr qint64 kNsPerMs = 1'000'000;

// The dispatcher whose processEvents() this thread runs (the latest one; none before).
thread_local const EpollDispatcher *t_running = nullptr;

qint64 nowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return qint64(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

} // namespace

EpollDispatcher::EpollDispatcher(QObject *parent) : QAbstractEventDispatcher(parent)
{
    m_epoll = epoll_create1(EPOLL_CLOEXEC);
    m_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m_epoll < 0 || m_wake < 0)
        qFatal("EpollDispatcher: epoll_create1 or eventfd failed: %s", strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = m_wake;
    if (epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_wake, &ev) != 0)
        qFatal("EpollDispatcher: epoll_ctl failed: %s", strerror(errno));
    m_events.resize(256);
}

EpollDispatcher::~EpollDispatcher()
{
    if (t_running == this)
        t_running = nullptr;
    ::close(m_wake);
    ::close(m_epoll);
}

uint32_t EpollDispatcher::Watch::events() const
{
    return (read ? uint32_t(EPOLLIN) : 0u) | (write ? uint32_t(EPOLLOUT) : 0u) |
           (exception ? uint32_t(EPOLLPRI) : 0u);
}

void EpollDispatcher::update(int fd, const Watch &watch, bool existed)
{
    epoll_event ev{};
    ev.events = watch.events();
    ev.data.fd = fd;
    if (!ev.events) {
        // A descriptor closed before its notifier went has left the set already (EBADF or
        // ENOENT): nothing to do.
        epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, &ev);
        return;
    }
    if (epoll_ctl(m_epoll, existed ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) == 0)
        return;
    // The descriptor was closed and its number reused without its notifiers being disabled
    // first (MOD: ENOENT), or added behind our back (ADD: EEXIST): take the other way.
    if (epoll_ctl(m_epoll, existed ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) != 0)
        qWarning("EpollDispatcher: cannot watch socket %d: %s", fd, strerror(errno));
}

void EpollDispatcher::registerSocketNotifier(QSocketNotifier *notifier)
{
    const int fd = int(notifier->socket());
    const auto it = m_watches.find(fd);
    const bool existed = it != m_watches.end();
    Watch &w = existed ? *it : *m_watches.insert(fd, Watch{});
    switch (notifier->type()) {
    case QSocketNotifier::Read:
        w.read = notifier;
        break;
    case QSocketNotifier::Write:
        w.write = notifier;
        break;
    case QSocketNotifier::Exception:
        w.exception = notifier;
        break;
    }
    update(fd, w, existed);
}

void EpollDispatcher::unregisterSocketNotifier(QSocketNotifier *notifier)
{
    std::replace(m_pending.begin(), m_pending.end(), notifier,
                 static_cast<QSocketNotifier *>(nullptr));
    const int fd = int(notifier->socket());
    const auto it = m_watches.find(fd);
    if (it == m_watches.end())
        return;
    Watch &w = *it;
    for (QSocketNotifier **slot : {&w.read, &w.write, &w.exception})
        if (*slot == notifier)
            *slot = nullptr;
    update(fd, w, true);
    if (!w.events())
        m_watches.erase(it);
}

void EpollDispatcher::registerTimer(int timerId, qint64 interval, Qt::TimerType timerType,
                                    QObject *object)
{
    interval = std::max<qint64>(interval, 0);
    m_timers.push_back(
        Timer{timerId, interval, timerType, object, nowNs() + interval * kNsPerMs, false});
}

bool EpollDispatcher::unregisterTimer(int timerId)
{
    const auto it = std::find_if(m_timers.begin(), m_timers.end(),
                                 [timerId](const Timer &t) { return t.id == timerId; });
    if (it == m_timers.end())
        return false;
    m_timers.erase(it);
    return true;
}

bool EpollDispatcher::unregisterTimers(QObject *object)
{
    const auto n = std::erase_if(m_timers, [object](const Timer &t) { return t.object == object; });
    return n > 0;
}

QList<QAbstractEventDispatcher::TimerInfo> EpollDispatcher::registeredTimers(QObject *object) const
{
    QList<TimerInfo> out;
    for (const Timer &t : m_timers)
        if (t.object == object)
            out.append(TimerInfo(t.id, int(t.interval), t.type));
    return out;
}

int EpollDispatcher::remainingTime(int timerId)
{
    for (const Timer &t : m_timers)
        if (t.id == timerId)
            return int(std::max<qint64>(t.due - nowNs(), 0) / kNsPerMs);
    return -1;
}

void EpollDispatcher::wakeUp()
{
    if (t_running == this) { // not waiting now: processEvents() sees the flag before it waits
        m_wokenHere = true;
        return;
    }
    if (m_wakePending.exchange(true))
        return; // a wake-up is on its way already
    const uint64_t one = 1;
    while (::write(m_wake, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

void EpollDispatcher::interrupt()
{
    m_interrupted = true;
    wakeUp();
}

int EpollDispatcher::waitMs() const
{
    qint64 due = std::numeric_limits<qint64>::max();
    for (const Timer &t : m_timers)
        if (!t.firing) // a handler running a nested loop: not due again until it returns
            due = std::min(due, t.due);
    if (due == std::numeric_limits<qint64>::max())
        return -1;
    const qint64 wait = due - nowNs();
    // Rounded up: a timer never fires early.
    return wait <= 0 ? 0
                     : int(std::min<qint64>((wait + kNsPerMs - 1) / kNsPerMs, 24 * 3600 * 1000));
}

void EpollDispatcher::consumeWakeUp()
{
    // Read, then clear: cleared first, a wakeUp() in between would set the flag and write, the
    // read would take its write, and with the flag left set no later wakeUp() would write.
    uint64_t n;
    while (::read(m_wake, &n, sizeof n) < 0 && errno == EINTR) {
    }
    m_wakePending = false;
}

bool EpollDispatcher::processEvents(QEventLoop::ProcessEventsFlags flags)
{
    t_running = this;
    m_interrupted = false;
    emit awake();
    m_wokenHere = false;
    QCoreApplication::sendPostedEvents();
    if (m_interrupted)
        return false;
    const bool timers = !(flags & QEventLoop::X11ExcludeTimers);
    const bool wait = flags & QEventLoop::WaitForMoreEvents;
    int timeout = 0;
    if (wait) {
        // Events posted meanwhile have written the eventfd, so the wait ends at once.
        emit aboutToBlock();
        if (m_interrupted)
            return false;
        // Posted from this thread (by a posted event's handler, or before this pass): no wait.
        timeout = m_wokenHere ? 0 : timers ? waitMs() : -1;
    }
    int handled = 0;
    if (flags & QEventLoop::ExcludeSocketNotifiers) {
        // Ready sockets would end every wait at once: wait for a wake-up or a timer only.
        pollfd wake{m_wake, POLLIN, 0};
        int woken;
        do
            woken = ::poll(&wake, 1, timeout);
        while (woken < 0 && errno == EINTR);
        if (woken > 0)
            consumeWakeUp();
        if (timers)
            handled += activateTimers();
        return handled > 0;
    }
    int ready;
    do
        ready = epoll_wait(m_epoll, m_events.data(), int(m_events.size()), timeout);
    while (ready < 0 && errno == EINTR);
    if (ready < 0) {
        qWarning("EpollDispatcher: epoll_wait failed: %s", strerror(errno));
        ready = 0;
    }
    handled += activateNotifiers(ready);
    if (ready == int(m_events.size()))
        m_events.resize(m_events.size() * 2); // more ready than room: room for next time
    if (timers)
        handled += activateTimers();
    return handled > 0;
}

int EpollDispatcher::activateNotifiers(int ready)
{
    // Collected first: a notifier's handler may disable or delete others (they are then
    // dropped from m_pending) or register new ones (they wait for the next pass).
    m_pending.clear();
    for (int i = 0; i < ready; ++i) {
        const epoll_event &ev = m_events[size_t(i)];
        if (ev.data.fd == m_wake) {
            consumeWakeUp();
            continue;
        }
        const auto it = m_watches.constFind(ev.data.fd);
        if (it == m_watches.cend())
            continue;
        // As Qt's poll() dispatcher: an error or hang-up activates every enabled notifier.
        const bool broken = ev.events & (EPOLLERR | EPOLLHUP);
        if (it->read && (ev.events & EPOLLIN || broken))
            m_pending.push_back(it->read);
        if (it->write && (ev.events & EPOLLOUT || broken))
            m_pending.push_back(it->write);
        if (it->exception && (ev.events & EPOLLPRI || broken))
            m_pending.push_back(it->exception);
    }
    int activated = 0;
    for (size_t i = 0; i < m_pending.size(); ++i) {
        QSocketNotifier *n = m_pending[i];
        if (!n)
            continue;
        m_pending[i] = nullptr;
        QEvent event(QEvent::SockAct);
        QCoreApplication::sendEvent(n, &event);
        ++activated;
    }
    m_pending.clear();
    return activated;
}

int EpollDispatcher::activateTimers()
{
    if (m_timers.empty())
        return 0;
    const qint64 now = nowNs();
    std::vector<std::pair<qint64, int>> due; // (due, id), earliest first
    for (const Timer &t : m_timers)
        if (t.due <= now && !t.firing)
            due.emplace_back(t.due, t.id);
    std::sort(due.begin(), due.end());
    int fired = 0;
    for (const auto &[when, id] : due) {
        // Looked up again each time: an earlier handler may have stopped or restarted it.
        auto find = [this, id = id]() {
            return std::find_if(m_timers.begin(), m_timers.end(),
                                [id](const Timer &t) { return t.id == id; });
        };
        auto it = find();
        if (it == m_timers.end() || it->due > now || it->firing)
            continue;
        it->due += it->interval * kNsPerMs;
        if (it->due < now)
            it->due = now + it->interval * kNsPerMs;
        it->firing = true;
        QObject *object = it->object;
        QTimerEvent event(id);
        QCoreApplication::sendEvent(object, &event);
        ++fired;
        it = find();
        if (it != m_timers.end())
            it->firing = false;
    }
    return fired;
}
