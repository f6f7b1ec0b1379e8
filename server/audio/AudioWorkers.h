#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <QString>
#include <QThreadPool>
#include <vector>

#include "SpeechRecognizer.h"

// The bounded pool the audio engines run on (decoding, recognition, synthesis): never an event
// loop. `threads` run at once and at most `queue` more wait; beyond that tryRun() refuses and
// the route answers 503 with Retry-After. Recognizers (each holds a loaded model, slow to make)
// are kept for reuse, at most one per thread. One per family; thread-safe.
class AudioWorkers
{
public:
    AudioWorkers(int threads, int queue, QString modelDir = {});
    ~AudioWorkers(); // waits for running jobs

    // Runs job on a worker, or returns false when every thread and queue slot is taken.
    bool tryRun(std::function<void()> job);
    // How long a refused client should wait, in seconds, for the Retry-After header.
    int retryAfterSeconds() const;
    int threads() const { return m_threads; }
    int pending() const { return m_pending.load(); }

    // A recognizer for one transcription, back in the pool when the last copy is dropped.
    // nullptr and *error set when the model cannot be loaded.
    std::shared_ptr<SpeechRecognizer> recognizer(QString *error);

private:
    struct Spare
    {
        std::mutex mutex;
        std::vector<std::unique_ptr<SpeechRecognizer>> recognizers;
    };
    const int m_threads;
    const int m_queue;
    const QString m_modelDir;
    std::atomic<int> m_pending{0};
    std::shared_ptr<Spare> m_spare = std::make_shared<Spare>();
    QThreadPool m_pool;
};
