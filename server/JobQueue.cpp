#include "JobQueue.h"

#include <QMetaObject>
#include <thread>

JobQueue::JobQueue(int workers, const QString &name, QObject *parent, int capacity)
    : QObject(parent), m_capacity(capacity > 0 ? capacity : std::max(1, workers))
{
    for (int i = 0; i < std::max(1, workers); ++i) {
        m_wakes.push_back(std::make_unique<std::binary_semaphore>(0));
        std::unique_ptr<QThread> t(QThread::create([this, w = m_wakes.back().get()] { work(*w); }));
        t->setObjectName(name + QString::number(i));
        t->start();
        m_threads.push_back(std::move(t));
    }
}

JobQueue::~JobQueue()
{
    std::vector<std::binary_semaphore *> sleepers;
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
        sleepers.swap(m_sleepers);
    }
    for (std::binary_semaphore *s : sleepers)
        s->release();
    for (const auto &t : m_threads)
        t->wait();
}

void JobQueue::post(Job job)
{
    enqueue(std::move(job), false);
}

void JobQueue::enqueue(Job job, bool counted)
{
    std::binary_semaphore *wake = nullptr;
    {
        std::lock_guard lock(m_mutex);
        m_pending.push_back({std::move(job), counted});
        m_queued.fetch_add(1, std::memory_order_relaxed);
        if (!m_sleepers.empty()) {
            wake = m_sleepers.back(); // the last to fall asleep
            m_sleepers.pop_back();
        }
    }
    if (wake)
        wake->release();
}

bool JobQueue::take()
{
    int now = m_held->load();
    do {
        if (now >= m_capacity)
            return false;
    } while (!m_held->compare_exchange_weak(now, now + 1));
    return true;
}

JobQueue::Slot JobQueue::acquire()
{
    if (!take())
        return nullptr;
    // The counter, not the queue: a request may drop its slot after the server has gone.
    std::atomic<int> *counter = m_held.get();
    return Slot(counter, [held = m_held](void *) { held->fetch_sub(1); });
}

void JobQueue::run(const Slot &slot, std::function<void()> job)
{
    post([slot, job = std::move(job)]() -> Continuation {
        job();
        return nullptr;
    });
}

bool JobQueue::tryPost(Job job)
{
    if (!take())
        return false;
    // Given back when the job ends (queued jobs run even when the queue goes): no Slot and no
    // wrapping function to allocate on the billed path.
    enqueue(std::move(job), true);
    return true;
}

bool JobQueue::tryRun(std::function<void()> job)
{
    Slot slot = acquire();
    if (!slot)
        return false;
    run(slot, std::move(job));
    return true;
}

int JobQueue::retryAfterSeconds() const
{
    const int threads = workers();
    return std::max(1, (m_held->load() - threads) / threads + 1);
}

void JobQueue::work(std::binary_semaphore &wake)
{
    using Clock = std::chrono::steady_clock;
    bool spin = false; // jobs have been coming close together
    std::unique_lock lock(m_mutex);
    for (;;) {
        if (spin && m_pending.empty() && !m_stopping) {
            lock.unlock();
            const auto until = Clock::now() + kSpin;
            while (m_queued.load(std::memory_order_relaxed) == 0 && Clock::now() < until)
                std::this_thread::yield();
            lock.lock();
            spin = !m_pending.empty();
        }
        while (m_pending.empty() && !m_stopping) {
            m_sleepers.push_back(&wake);
            const auto slept = Clock::now();
            lock.unlock();
            wake.acquire(); // released by whoever took us off m_sleepers: a post, or ~JobQueue
            lock.lock();
            spin = Clock::now() - slept < kSpin;
        }
        if (m_pending.empty())
            return; // stopping, and nothing left to run
        Job job = std::move(m_pending.front().job);
        const bool counted = m_pending.front().counted;
        m_pending.pop_front();
        m_queued.fetch_sub(1, std::memory_order_relaxed);
        lock.unlock();
        Continuation next = job();
        job = nullptr; // what it captured is released here, not under the lock
        if (counted)
            m_held->fetch_sub(1);
        if (next) {
            bool post = false;
            {
                std::lock_guard out(m_outMutex);
                post = m_outbox.empty();
                m_outbox.push_back(std::move(next));
            }
            if (post)
                QMetaObject::invokeMethod(this, &JobQueue::deliver, Qt::QueuedConnection);
        }
        lock.lock();
    }
}

void JobQueue::deliver()
{
    std::vector<Continuation> ready;
    {
        std::lock_guard out(m_outMutex);
        ready.swap(m_outbox);
    }
    for (Continuation &c : ready)
        c();
}
