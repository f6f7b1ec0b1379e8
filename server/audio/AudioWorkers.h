#pragma once

#include <memory>
#include <mutex>
#include <QString>
#include <vector>

#include "JobQueue.h"
#include "SpeechRecognizer.h"

// The audio engines' executor (decoding, recognition, synthesis): a JobQueue of `threads`
// workers (0: one per core) that `threads + queue` requests may hold at once, each for its
// whole life (its stages run in its slot one after another, with waits on the server thread
// between them), so a request admitted is never refused half-way. When none is free the route
// answers busy (RequestContext::respondBusy). One per family, made with it, so that the
// window's playground uses the same engines and bounds without a server; thread-safe.
//
// It also keeps recognizers (each holds a loaded model, slow to make) for reuse, at most one
// per worker.
class AudioWorkers : public JobQueue
{
public:
    AudioWorkers(int threads, int queue, QString modelDir = {});
    ~AudioWorkers() override; // runs what was queued, then joins

    int threads() const { return workers(); }

    // A recognizer for one transcription, back in the pool when the last copy is dropped.
    // nullptr and *error set when the model cannot be loaded.
    std::shared_ptr<SpeechRecognizer> recognizer(QString *error);

private:
    struct Spare
    {
        std::mutex mutex;
        std::vector<std::unique_ptr<SpeechRecognizer>> recognizers;
    };
    const QString m_modelDir;
    std::shared_ptr<Spare> m_spare = std::make_shared<Spare>();
};
