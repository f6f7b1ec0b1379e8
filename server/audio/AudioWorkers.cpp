#include "AudioWorkers.h"

#include "SpeechRecognizer.h"

#include <QThread>

AudioWorkers::AudioWorkers(int threads, int queue, QString modelDir)
    : m_threads(threads > 0 ? threads : std::max(1, QThread::idealThreadCount())),
      m_queue(std::max(0, queue)), m_modelDir(std::move(modelDir))
{
    m_pool.setMaxThreadCount(m_threads);
    // Recognizers hold their thread-local state per job, so idle threads can go.
    m_pool.setExpiryTimeout(60'000);
}

AudioWorkers::~AudioWorkers()
{
    m_pool.waitForDone();
}

AudioWorkers::Slot AudioWorkers::acquire()
{
    int now = m_pending.load();
    do {
        if (now >= m_threads + m_queue)
            return nullptr;
    } while (!m_pending.compare_exchange_weak(now, now + 1));
    // The pool outlives every slot (the family waits for its pool before it goes), so the
    // counter can be reached from the deleter.
    return Slot(this, [](void *p) { static_cast<AudioWorkers *>(p)->m_pending.fetch_sub(1); });
}

void AudioWorkers::run(const Slot &slot, std::function<void()> job)
{
    m_pool.start([slot, job = std::move(job)] { job(); });
}

bool AudioWorkers::tryRun(std::function<void()> job)
{
    Slot slot = acquire();
    if (!slot)
        return false;
    run(slot, std::move(job));
    return true;
}

int AudioWorkers::retryAfterSeconds() const
{
    // A queued job is a few seconds of work at most for the usual request; one second per
    // job ahead of a thread, at least 1.
    return std::max(1, (m_pending.load() - m_threads) / m_threads + 1);
}

std::shared_ptr<SpeechRecognizer> AudioWorkers::recognizer(QString *error)
{
    std::unique_ptr<SpeechRecognizer> r;
    {
        std::lock_guard lock(m_spare->mutex);
        if (!m_spare->recognizers.empty()) {
            r = std::move(m_spare->recognizers.back());
            m_spare->recognizers.pop_back();
        }
    }
    if (!r)
        r = SpeechRecognizer::create(m_modelDir, error);
    if (!r)
        return nullptr;
    std::weak_ptr<Spare> spare = m_spare;
    const int keep = m_threads;
    return std::shared_ptr<SpeechRecognizer>(r.release(), [spare, keep](SpeechRecognizer *p) {
        if (auto s = spare.lock()) {
            std::lock_guard lock(s->mutex);
            if (int(s->recognizers.size()) < keep) {
                s->recognizers.emplace_back(p);
                return;
            }
        }
        delete p;
    });
}
