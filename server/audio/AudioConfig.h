#pragma once

#include "upstream/UpstreamProvider.h"
#include "upstream/UrlGuard.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>

// What serves an audio model.
//   local       the built-in engines (server/audio/engine): pocketsphinx, flite, espeak-ng;
//   openai      any OpenAI-compatible audio API (the real one, speaches, LocalAI, whisper.cpp's
//               server, Kokoro-FastAPI): POST {base}/audio/transcriptions and /audio/speech;
//   fish-speech a fish-speech server (POST {base}/v1/tts with inline `references`), used for
//               voice cloning (multipart speech with prompt_audio) and for plain speech.
enum class AudioProviderType
{
    Local,
    OpenAI,
    FishSpeech
};

QString audioProviderTypeName(AudioProviderType type);

struct AudioProvider : UpstreamProvider
{
    AudioProviderType type = AudioProviderType::Local;
    // Empty when the provider can serve; else what is missing, naming the config to set
    // ("the provider 'openai' has no key: set audio.providers.openai.keys or keys_env").
    QString unusableReason() const;
};

enum class AudioTask
{
    Transcription,
    Speech
};

struct AudioModel
{
    QString id;
    AudioTask task = AudioTask::Transcription;
    QString provider;
    QString upstreamModel; // the model name sent upstream (local: informative)
    QString ownedBy;
    qint64 price = 0; // credit units: per minute of audio (transcription), per 1,000 characters
                      // of input (speech)
};

// The "audio" section of the config file. Every field is optional:
//   providers          {name: {type, base_url, keys, keys_env, timeouts, key_rest_ms}}; the
//                      built-in `local` and `openai` (https://api.openai.com/v1, no key) exist
//                      unless replaced; a fish-speech provider needs base_url (its total
//                      timeout defaults to 120 s);
//   models             [{id, task: transcription|speech, provider, upstream_model, owned_by,
//                      price_per_minute | price_per_1k_chars (decimal credits)}], added to or
//                      replacing the defaults (rapid, vendorB-asr-1, vendorE-tts-nano) by id;
//   clone_provider     a fish-speech provider for voice cloning (empty: the local approximation);
//   voices_file        a voices file replacing the built-in one (resources/audio/voices.json);
//   workers, queue     engine threads (default: the core count) and requests waiting for one
//                      (default 16; beyond it, 503 with Retry-After);
//   file_uri           {max_bytes (default 100 MiB), timeout_ms (default 120000), fetch: the URL
//                      guard's settings (UrlPolicy::applySettings)}.
struct AudioConfig
{
    QList<AudioProvider> providers;
    QList<AudioModel> models;
    QString defaultTranscription = QStringLiteral("rapid");
    QString defaultSpeech = QStringLiteral("vendorE-tts-nano");
    QString cloneProvider;
    QString voicesFile;
    int workers = 0; // 0: QThread::idealThreadCount()
    int queue = 16;
    UrlPolicy fileUri = defaultFileUriPolicy();

    static UrlPolicy defaultFileUriPolicy();
    static AudioConfig defaults();
    // Parses the section on top of defaults(); throws std::runtime_error naming the field.
    static AudioConfig fromJson(const QJsonObject &audio);

    const AudioProvider *provider(const QString &name) const;
    const AudioModel *model(const QString &id) const;
    // The GET /v1/models items: {id, object, owned_by, endpoints, pricing}.
    QJsonArray modelsJson() const;

    // Prices of the contract, in credit units: 0.006 credits per minute, 0.005 per 1,000
    // characters.
    static constexpr qint64 kTranscriptionPricePerMinute = 6'000'000;
    static constexpr qint64 kSpeechPricePer1kChars = 5'000'000;
    // A fish-speech provider's total timeout unless its timeouts.total_ms says otherwise.
    static constexpr int kFishSpeechTotalTimeoutMs = 120'000;
    // ceil(frames / rate / 60 * pricePerMinute): exact, rounded up once.
    static qint64 transcriptionCost(qint64 frames, int rate, qint64 pricePerMinute);
    // ceil(characters / 1000 * pricePer1k).
    static qint64 speechCost(qint64 characters, qint64 pricePer1k);
};
