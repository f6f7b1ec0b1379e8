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
// loop. A request takes a slot for its whole life (its stages run in it one after another,
// with waits on the server thread between them), so a request admitted is never refused
// half-way; at most `threads` slots run at once and `threads + queue` exist. When none is
// free, acquire() fails and the route answers 503 with Retry-After. Recognizers (each holds a
// loaded model, slow to make) are kept for reuse, at most one per thread. One per family;
// thread-safe.
class AudioWorkers
{
public:
    AudioWorkers(int threads, int queue, QString modelDir = {});
    ~AudioWorkers(); // waits for running jobs

    // A slot, released when the last copy is dropped; nullptr when every slot is taken.
    using Slot = std::shared_ptr<void>;
    Slot acquire();
    // Runs a stage of the slot's request on a pool thread (it may wait for a thread; slots
    // bound how many wait).
    void run(const Slot &slot, std::function<void()> job);
    // acquire() and run() for a request of one stage; false when no slot is free.
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
