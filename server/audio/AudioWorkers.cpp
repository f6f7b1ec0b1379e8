#include "AudioWorkers.h"

#include "SpeechRecognizer.h"

#include <algorithm>
#include <QThread>

namespace {

int threadsFor(int threads)
{
    return threads > 0 ? threads : std::max(1, QThread::idealThreadCount());
}

} // namespace

AudioWorkers::AudioWorkers(int threads, int queue, QString modelDir)
    : JobQueue(threadsFor(threads), QStringLiteral("audio"), nullptr,
               threadsFor(threads) + std::max(0, queue)),
      m_modelDir(std::move(modelDir))
{
}

AudioWorkers::~AudioWorkers() = default;

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
    const int keep = workers();
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
