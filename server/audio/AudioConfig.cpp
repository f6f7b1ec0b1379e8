#include "AudioConfig.h"

#include "Money.h"

#include <limits>

namespace {

const ConfigOptions<AudioProviderType> kProviderTypes = {
    {"local", AudioProviderType::Local},
    {"openai", AudioProviderType::OpenAI},
    {"fish-speech", AudioProviderType::FishSpeech}};

qint64 divideUp(__int128 numerator, __int128 denominator)
{
    if (numerator <= 0 || denominator <= 0)
        return 0;
    const __int128 q = (numerator + denominator - 1) / denominator;
    return q > std::numeric_limits<qint64>::max() ? std::numeric_limits<qint64>::max()
                                                  : static_cast<qint64>(q);
}

} // namespace

QString audioProviderTypeName(AudioProviderType type)
{
    return optionName(kProviderTypes, type);
}

QString AudioProvider::unusableReason() const
{
    if (type == AudioProviderType::Local)
        return {};
    // fish-speech servers usually run without a key; OpenAI-compatible ones need one.
    return missingSetting(QStringLiteral("audio"), QStringLiteral("audio"),
                          type == AudioProviderType::OpenAI);
}

UrlPolicy AudioConfig::defaultFileUriPolicy()
{
    UrlPolicy p = UrlPolicy::download();
    p.maxBytes = 100LL * 1024 * 1024;
    p.totalTimeoutMs = 120'000;
    return p;
}

AudioConfig AudioConfig::defaults()
{
    AudioConfig c;
    AudioProvider local;
    local.name = QStringLiteral("local");
    local.type = AudioProviderType::Local;
    AudioProvider openai;
    openai.name = QStringLiteral("openai");
    openai.type = AudioProviderType::OpenAI;
    openai.baseUrl = QStringLiteral("https://api.openai.com/v1");
    openai.totalTimeoutMs = 300'000;
    c.providers = {local, openai};
    c.models = {
        {QStringLiteral("rapid"), AudioTask::Transcription, QStringLiteral("local"),
         QStringLiteral("pocketsphinx-en-us"), QStringLiteral("switchyard"),
         kTranscriptionPricePerMinute},
        {QStringLiteral("vendorB-asr-1"), AudioTask::Transcription, QStringLiteral("openai"),
         QStringLiteral("whisper-1"), QStringLiteral("vendorB"), kTranscriptionPricePerMinute},
        {QStringLiteral("vendorE-tts-nano"), AudioTask::Speech, QStringLiteral("local"),
         QStringLiteral("flite+espeak-ng"), QStringLiteral("vendorE"), kSpeechPricePer1kChars},
    };
    return c;
}

AudioConfig AudioConfig::fromJson(const QJsonObject &json)
{
    const ConfigFields audio(json, QStringLiteral("audio"));
    AudioConfig c = defaults();
    applyProviderSection(
        c.providers, audio, [] { return AudioProvider(); },
        [](AudioProvider &p, const ConfigFields &o) {
            const AudioProviderType before = p.type;
            p.type = o.choice(QStringLiteral("type"), p.type, kProviderTypes);
            // Cloning takes 20 to 60 s; ten minutes (the shared default) would hold a client far
            // past any useful answer. timeouts.total_ms still overrides it.
            if (p.type == AudioProviderType::FishSpeech && before != p.type &&
                !o.section(QStringLiteral("timeouts")).has(QStringLiteral("total_ms")))
                p.totalTimeoutMs = kFishSpeechTotalTimeoutMs;
        });
    applyModelSection(
        c.models, c.providers, audio, [] { return AudioModel(); },
        [](AudioModel &m, const ConfigFields &o, bool isNew) {
            if (isNew && !o.has(QStringLiteral("task")))
                o.fail(QStringLiteral("task"),
                       QStringLiteral("is required (transcription or speech)"));
            m.task = o.choice(
                QStringLiteral("task"), m.task,
                {{"transcription", AudioTask::Transcription}, {"speech", AudioTask::Speech}});
            const bool asr = m.task == AudioTask::Transcription;
            if (isNew)
                m.price = asr ? kTranscriptionPricePerMinute : kSpeechPricePer1kChars;
            m.price = o.credits(asr ? QStringLiteral("price_per_minute")
                                    : QStringLiteral("price_per_1k_chars"),
                                m.price, asr ? QStringLiteral("0.006") : QStringLiteral("0.005"));
        });

    const auto modelOf = [&](const QString &field, AudioTask task, const QString &fallback) {
        if (!audio.has(field))
            return fallback;
        const QString id = audio.string(field, {});
        const AudioModel *m = c.model(id);
        if (!m || m->task != task)
            audio.fail(field,
                       QStringLiteral("must name a %1 model of audio.models")
                           .arg(task == AudioTask::Transcription ? QStringLiteral("transcription")
                                                                 : QStringLiteral("speech")));
        return id;
    };
    c.defaultTranscription = modelOf(QStringLiteral("default_transcription_model"),
                                     AudioTask::Transcription, c.defaultTranscription);
    c.defaultSpeech =
        modelOf(QStringLiteral("default_speech_model"), AudioTask::Speech, c.defaultSpeech);

    c.cloneProvider = audio.string(QStringLiteral("clone_provider"), c.cloneProvider);
    const AudioProvider *clone = c.provider(c.cloneProvider);
    if (!c.cloneProvider.isEmpty() && (!clone || clone->type != AudioProviderType::FishSpeech))
        audio.fail(QStringLiteral("clone_provider"),
                   QStringLiteral("must name a fish-speech provider of audio.providers (or be "
                                  "empty for the local approximation)"));
    c.voicesFile =
        audio.string(QStringLiteral("voices_file"), c.voicesFile, QStringLiteral("a path"));
    c.workers = audio.whole(QStringLiteral("workers"), c.workers, {0, 64});
    c.queue = audio.whole(QStringLiteral("queue"), c.queue, {0, 10'000});

    const ConfigFields fileUri = audio.section(QStringLiteral("file_uri"));
    c.fileUri.maxBytes = fileUri.whole(QStringLiteral("max_bytes"), c.fileUri.maxBytes,
                                       {1, 1'000'000'000'000, QStringLiteral("bytes")});
    c.fileUri.totalTimeoutMs = fileUri.ms(QStringLiteral("timeout_ms"), c.fileUri.totalTimeoutMs);
    c.fileUri = urlPolicyField(fileUri, QStringLiteral("fetch"), c.fileUri, true);
    return c;
}

const AudioProvider *AudioConfig::provider(const QString &name) const
{
    return findProvider(providers, name);
}

const AudioModel *AudioConfig::model(const QString &id) const
{
    for (const AudioModel &m : models)
        if (m.id == id)
            return &m;
    return nullptr;
}

QJsonArray AudioConfig::modelsJson() const
{
    QJsonArray out;
    for (const AudioModel &m : models) {
        const bool asr = m.task == AudioTask::Transcription;
        QJsonObject pricing;
        pricing.insert(asr ? "per_minute" : "per_1k_chars", Money::formatCredits(m.price));
        out.append(
            QJsonObject{{"id", m.id},
                        {"object", "model"},
                        {"created", 0},
                        {"owned_by", m.ownedBy},
                        {"endpoints", QJsonArray{asr ? "audio.transcriptions" : "audio.speech"}},
                        {"pricing", pricing}});
    }
    return out;
}

qint64 AudioConfig::transcriptionCost(qint64 frames, int rate, qint64 pricePerMinute)
{
    return divideUp(__int128(frames) * pricePerMinute, __int128(rate) * 60);
}

qint64 AudioConfig::speechCost(qint64 characters, qint64 pricePer1k)
{
    return divideUp(__int128(characters) * pricePer1k, 1000);
}
