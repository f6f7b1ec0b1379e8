#include "AudioConfig.h"

#include "Money.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace {

[[noreturn]] void fail(const QString &message)
{
    throw std::runtime_error(("config: audio." + message).toStdString());
}

qint64 divideUp(__int128 numerator, __int128 denominator)
{
    if (numerator <= 0 || denominator <= 0)
        return 0;
    const __int128 q = (numerator + denominator - 1) / denominator;
    return q > std::numeric_limits<qint64>::max() ? std::numeric_limits<qint64>::max()
                                                  : static_cast<qint64>(q);
}

AudioProviderType parseType(const QString &name, const QString &where)
{
    if (name == u"local")
        return AudioProviderType::Local;
    if (name == u"openai")
        return AudioProviderType::OpenAI;
    if (name == u"fish-speech")
        return AudioProviderType::FishSpeech;
    fail(QStringLiteral("%1.type must be local, openai or fish-speech, not '%2'").arg(where, name));
}

qint64 parsePrice(const QJsonValue &v, const QString &where)
{
    const auto units = Money::parseCredits(v.toString());
    if (!v.isString() || !units || *units < 0)
        fail(QStringLiteral("%1 must be a decimal string of credits, e.g. \"0.006\"").arg(where));
    return *units;
}

int boundedInt(const QJsonObject &o, const char *field, int fallback, int lo, int hi,
               const QString &where)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (v.isUndefined())
        return fallback;
    const double d = v.toDouble(-1);
    if (!v.isDouble() || d != std::floor(d) || d < lo || d > hi)
        fail(QStringLiteral("%1%2 must be a whole number from %3 to %4")
                 .arg(where, QLatin1String(field))
                 .arg(lo)
                 .arg(hi));
    return int(d);
}

} // namespace

QString audioProviderTypeName(AudioProviderType type)
{
    switch (type) {
    case AudioProviderType::Local:
        return QStringLiteral("local");
    case AudioProviderType::OpenAI:
        return QStringLiteral("openai");
    case AudioProviderType::FishSpeech:
        return QStringLiteral("fish-speech");
    }
    return {};
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

AudioConfig AudioConfig::fromJson(const QJsonObject &audio)
{
    AudioConfig c = defaults();
    applyProviderSection(
        c.providers, audio, QStringLiteral("audio"), [] { return AudioProvider(); },
        [](AudioProvider &p, const QJsonObject &o, const QString &where) {
            if (!o.contains("type"))
                return;
            const AudioProviderType before = p.type;
            p.type = parseType(o.value("type").toString(), where.mid(6));
            // Cloning takes 20 to 60 s; ten minutes (the shared default) would
            // hold a client far past any useful answer. timeouts.total_ms still
            // overrides it.
            if (p.type == AudioProviderType::FishSpeech && before != p.type)
                p.totalTimeoutMs = kFishSpeechTotalTimeoutMs;
        });

    const QJsonValue models = audio.value("models");
    if (!models.isUndefined() && !models.isArray())
        fail(QStringLiteral("models must be an array of model entries"));
    const QJsonArray ma = models.toArray();
    for (qsizetype i = 0; i < ma.size(); ++i) {
        const QString where = QStringLiteral("models[%1]").arg(i);
        const QJsonObject o = ma.at(i).toObject();
        AudioModel m;
        m.id = o.value("id").toString();
        if (m.id.isEmpty())
            fail(where + QStringLiteral(".id is required"));
        if (const AudioModel *existing = c.model(m.id))
            m = *existing;
        if (o.contains("task")) {
            const QString task = o.value("task").toString();
            if (task == u"transcription")
                m.task = AudioTask::Transcription;
            else if (task == u"speech")
                m.task = AudioTask::Speech;
            else
                fail(where + QStringLiteral(".task must be transcription or speech"));
        } else if (!c.model(m.id)) {
            fail(where + QStringLiteral(".task is required (transcription or speech)"));
        }
        m.provider = o.value("provider").toString(m.provider);
        m.upstreamModel =
            o.value("upstream_model").toString(m.upstreamModel.isEmpty() ? m.id : m.upstreamModel);
        m.ownedBy = o.value("owned_by").toString(m.ownedBy.isEmpty() ? m.provider : m.ownedBy);
        const char *priceField =
            m.task == AudioTask::Transcription ? "price_per_minute" : "price_per_1k_chars";
        if (o.contains(QLatin1String(priceField)))
            m.price = parsePrice(o.value(QLatin1String(priceField)),
                                 where + QLatin1Char('.') + QLatin1String(priceField));
        else if (!c.model(m.id))
            m.price = m.task == AudioTask::Transcription ? kTranscriptionPricePerMinute
                                                         : kSpeechPricePer1kChars;
        bool replaced = false;
        for (AudioModel &e : c.models)
            if (e.id == m.id) {
                e = m;
                replaced = true;
            }
        if (!replaced)
            c.models.append(m);
    }
    for (const AudioModel &m : c.models)
        if (!c.provider(m.provider))
            fail(QStringLiteral("models: '%1' names the provider '%2', which is not in "
                                "audio.providers")
                     .arg(m.id, m.provider));

    auto modelOf = [&](const char *field, AudioTask task, QString *target) {
        if (!audio.contains(QLatin1String(field)))
            return;
        const QString id = audio.value(QLatin1String(field)).toString();
        const AudioModel *m = c.model(id);
        if (!m || m->task != task)
            fail(QStringLiteral("%1 must name a %2 model of audio.models")
                     .arg(QLatin1String(field), task == AudioTask::Transcription
                                                    ? QStringLiteral("transcription")
                                                    : QStringLiteral("speech")));
        *target = id;
    };
    modelOf("default_transcription_model", AudioTask::Transcription, &c.defaultTranscription);
    modelOf("default_speech_model", AudioTask::Speech, &c.defaultSpeech);

    if (audio.contains("clone_provider")) {
        c.cloneProvider = audio.value("clone_provider").toString();
        const AudioProvider *p = c.provider(c.cloneProvider);
        if (!c.cloneProvider.isEmpty() && (!p || p->type != AudioProviderType::FishSpeech))
            fail(QStringLiteral("clone_provider must name a fish-speech provider of "
                                "audio.providers (or be empty for the local approximation)"));
    }
    c.voicesFile = audio.value("voices_file").toString();
    c.workers = boundedInt(audio, "workers", c.workers, 0, 64, QString());
    c.queue = boundedInt(audio, "queue", c.queue, 0, 10'000, QString());

    if (audio.contains("file_uri")) {
        if (!audio.value("file_uri").isObject())
            fail(QStringLiteral("file_uri must be an object"));
        const QJsonObject f = audio.value("file_uri").toObject();
        const QJsonValue maxBytes = f.value("max_bytes");
        if (!maxBytes.isUndefined()) {
            const double d = maxBytes.toDouble(-1);
            if (!maxBytes.isDouble() || d < 1 || d != std::floor(d) || d > 1e12)
                fail(QStringLiteral("file_uri.max_bytes must be a whole number of bytes"));
            c.fileUri.maxBytes = qint64(d);
        }
        c.fileUri.totalTimeoutMs = UpstreamProvider::parseMs(
            f, "timeout_ms", c.fileUri.totalTimeoutMs, QStringLiteral("audio.file_uri"));
        if (f.contains("fetch")) {
            try {
                c.fileUri.applySettings(f.value("fetch").toObject(), true);
            } catch (const std::exception &e) {
                fail(QStringLiteral("file_uri.fetch.%1").arg(QString::fromUtf8(e.what())));
            }
        }
    }
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
