#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <QObject>
#include <QThread>
#include <semaphore>
#include <vector>

// Work off the server thread, handed over in batches. A job runs on one of a fixed set of
// worker threads and returns a continuation, which runs on the thread of the queue's own
// (QObject) thread: the server thread for the families that use it.
//
// QThreadPool::start plus a queued call back cost two wake-ups per job: the pool's condition
// variable and the server loop's eventfd (perf counted about three futex calls per billed
// engine request on each side). Here a post wakes a worker only when one is idle, a worker
// takes the next job without sleeping while any is queued, and continuations wait in an outbox
// that the queue's thread empties in one event, posted only when the outbox was empty. Nothing
// waits for a batch to fill: each continuation is handed over as soon as its job ends. While
// jobs come close together (the last one within kSpin of the worker going idle), an idle
// worker yields for up to kSpin before it sleeps, so under load a post rarely has a sleeper to
// wake: billed transfer-coord under wrk went from about 20,000 to 26,000 req/s with it, while
// at low rates the worker sleeps at once (tests/bench/README.md, "The charge path").
//
// A sleeping worker waits on a semaphore of its own, and the post that wakes it takes it off
// the list of sleepers: each sleeper is woken once, and a post never waits. With one condition
// variable for all of them, glibc's signal could block the poster (the server thread) until a
// worker signalled before had run, and the woken worker then waited for the lock the poster
// held: perf put 8% of the server thread in pthread_cond_signal under billed extract-phone.
// Semaphores: 1.144 times the billed requests a second (paired-builds.sh, 16 rounds), CPU per
// request 52.8 -> 46.9 us.
//
// The one way a family runs work off the server thread (ServerScope::executor). Two kinds of
// post:
// - post(job): unbounded, for work the server itself starts (loads, rebuilds);
// - request work, bounded by `capacity`: a request takes a slot (acquire(), or tryPost() for
//   one stage) and keeps it until its last stage ends, so that a request admitted is never
//   refused half-way; at most `capacity` requests hold slots at once, and when none is free
//   the request is answered busy (RequestContext::offload: 503 with Retry-After from
//   retryAfterSeconds()). Cancellation is the job's own: offload() skips a job whose client
//   left while it waited, and multi-stage work checks a flag its client's leaving sets.
//
// Jobs run in any order across workers. Destroying the queue runs the jobs still queued and
// joins the workers; their continuations are then dropped, as queued events are for a deleted
// object. Slots may outlive the queue (they only count).
class JobQueue : public QObject
{
public:
    using Continuation = std::function<void()>;
    using Job = std::function<Continuation()>;
    // A request's hold on the queue, released when the last copy is dropped.
    using Slot = std::shared_ptr<void>;

    // name: the worker threads' name (shown by top and perf), numbered. capacity: how many
    // slots may be held at once; 0 for as many as there are workers.
    JobQueue(int workers, const QString &name, QObject *parent = nullptr, int capacity = 0);
    ~JobQueue() override;

    void post(Job job); // from the queue's thread or any other

    // A slot, or nullptr when every one is taken.
    Slot acquire();
    // A stage of the slot's request (never refused: the slot was); no continuation.
    void run(const Slot &slot, std::function<void()> job);
    // acquire() and a job with its continuation; false, and nothing queued, when full.
    bool tryPost(Job job);
    // acquire() and run(); false when full.
    bool tryRun(std::function<void()> job);

    // How long a refused client should wait, in seconds: about one per job ahead of each
    // worker (a queued job is seconds of work at most for the usual request), at least 1.
    int retryAfterSeconds() const;
    int workers() const { return int(m_threads.size()); }
    int capacity() const { return m_capacity; }
    int pending() const { return m_held->load(); } // slots held

private:
    static constexpr std::chrono::microseconds kSpin{50};

    bool take(); // a slot's count, if one is free
    void enqueue(Job job, bool counted);
    void work(std::binary_semaphore &wake);
    void deliver();

    const int m_capacity;
    std::shared_ptr<std::atomic<int>> m_held = std::make_shared<std::atomic<int>>(0);

    std::mutex m_mutex;
    struct Pending
    {
        Job job;
        bool counted; // holds a slot (tryPost), given back when the job ends
    };
    std::deque<Pending> m_pending;
    // Workers asleep, each on its semaphore in m_wakes; the post that wakes one takes it off.
    std::vector<std::binary_semaphore *> m_sleepers;
    std::atomic<int> m_queued{0}; // m_pending's size, read without the lock
    bool m_stopping = false;

    std::mutex m_outMutex;
    std::vector<Continuation> m_outbox;

    // Owned here rather than by each worker, so that a release still returning on the poster's
    // thread never touches a semaphore whose worker has already ended.
    std::vector<std::unique_ptr<std::binary_semaphore>> m_wakes;
    std::vector<std::unique_ptr<QThread>> m_threads;
};
