#pragma once

#include "AudioConfig.h"
#include "ServiceFamily.h"
#include "upstream/UpstreamProvider.h"
#include "Voices.h"

#include <memory>

class AudioWorkers;

// Audio (transcription and speech) as a service family; server/audio/README.md has every shape, the
// configuration, the billing rules and the engines.
//   config   the "audio" section (AudioConfig.h): providers, models, voices file, workers;
//   routes   POST /v1/audio/transcriptions (multipart), POST /v1/audio/speech (JSON, or
//            multipart with prompt_audio for voice cloning), GET /v1/audio/voices;
//   models   rapid, vendorB-asr-1 and vendorE-tts-nano (and the config's) in GET /v1/models.
// Models on an openai or fish-speech provider go upstream (AudioUpstream), their audio answers
// converted to Switchyard's format on the same pool.
// The engines (server/audio/engine) run on the family's bounded pool (AudioWorkers), shared by
// its servers and by the window's playground, which calls them through this object too.
class AudioFamily : public ServiceFamily
{
public:
    AudioFamily();
    ~AudioFamily() override;

    // What the routes bill by: speech its characters (Unicode code points), transcription the
    // milliseconds of audio decoded (shown by the usage API in seconds).
    static inline const QString kCharactersMeter = QStringLiteral("characters");
    static inline const QString kAudioMeter = QStringLiteral("audio_ms");

    QString name() const override { return QStringLiteral("audio"); }
    void configure(const QJsonObject &section, const ServerSettings &server) override;
    QList<MeterSpec> meters() const override;
    QList<RouteSpec> routes(const ServerScope &scope) override;
    QJsonArray models() const override;

    const AudioConfig &config() const { return m_config; }
    const VoiceCatalog &voices() const { return m_voices; }
    AudioWorkers &workers() const { return *m_workers; }
    // The upstream providers' keys in rotation, shared by every server of the family so a key
    // that answered 429 rests for all of them.
    KeyRotation &keys() { return m_keys; }

private:
    AudioConfig m_config;
    VoiceCatalog m_voices;
    std::shared_ptr<AudioWorkers> m_workers;
    KeyRotation m_keys;
};
