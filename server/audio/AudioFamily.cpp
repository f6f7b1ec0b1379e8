#include "AudioFamily.h"

#include "AudioRoutes.h"
#include "AudioWorkers.h"

#include <QFile>
#include <stdexcept>

AudioFamily::AudioFamily()
    : m_config(AudioConfig::defaults()), m_voices(VoiceCatalog::builtin()),
      m_workers(std::make_shared<AudioWorkers>(m_config.workers, m_config.queue))
{
}

AudioFamily::~AudioFamily() = default;

void AudioFamily::configure(const QJsonObject &section, const ServerSettings &)
{
    m_config = AudioConfig::fromJson(section);
    if (!m_config.voicesFile.isEmpty()) {
        QFile f(m_config.voicesFile);
        const QString field = QStringLiteral("audio.voices_file");
        if (!f.open(QIODevice::ReadOnly))
            configFail(
                field,
                QStringLiteral("cannot be read: %1: %2").arg(m_config.voicesFile, f.errorString()));
        try {
            m_voices = VoiceCatalog::fromJson(f.readAll());
        } catch (const std::exception &e) {
            configFail(field, QStringLiteral("%1: %2").arg(m_config.voicesFile,
                                                           QString::fromUtf8(e.what())));
        }
    }
    m_workers = std::make_shared<AudioWorkers>(m_config.workers, m_config.queue);
}

QList<MeterSpec> AudioFamily::meters() const
{
    return {{kCharactersMeter, QStringLiteral("Characters")},
            {kAudioMeter, QStringLiteral("Audio (ms)"), QStringLiteral("audio_seconds"), 1000}};
}

QList<RouteSpec> AudioFamily::routes(const ServerScope &scope)
{
    return audioRoutes(*this, scope);
}

QJsonArray AudioFamily::models() const
{
    return m_config.modelsJson();
}

std::unique_ptr<ServiceFamily> makeFamily_audio()
{
    return std::make_unique<AudioFamily>();
}
