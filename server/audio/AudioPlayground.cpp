#include "AudioPlayground.h"

#include "AudioDecoder.h"
#include "AudioFamily.h"
#include "AudioRequests.h"
#include "AudioWorkers.h"
#include "Wav.h"

#include <algorithm>
#include <QRegularExpression>
#include <vector>

namespace AudioPlayground {

namespace {

// The route's bounds, so the playground refuses what the API would.
constexpr double kMinSeconds = 0.1;
// Decoded audio kept for segment playback: an hour of 16 kHz mono is 115 MB.
constexpr qint64 kMaxKeptFrames = qint64(3600) * SpeechRecognizer::kRate;

Transcription run(const AudioFamily &family, std::unique_ptr<AudioDecoder> decoder,
                  const std::atomic_bool *cancel)
{
    Transcription out;
    if (!decoder->open()) {
        out.error = decoder->message();
        return out;
    }
    QString error;
    auto recognizer = family.workers().recognizer(&error);
    if (!recognizer) {
        out.error = error;
        return out;
    }
    recognizer->begin(cancel);
    const qint64 frames = decoder->decode(
        SpeechRecognizer::kRate, 1,
        [&](const int16_t *samples, qsizetype n) {
            if (out.pcm.size() / 2 < kMaxKeptFrames)
                out.pcm.append(reinterpret_cast<const char *>(samples), n * 2);
            return recognizer->feed(samples, n);
        },
        cancel);
    if (frames < 0) {
        out.error = decoder->error() == AudioDecoder::Error::Cancelled ? QStringLiteral("cancelled")
                                                                       : decoder->message();
        return out;
    }
    out.frames = frames;
    if (frames < qint64(kMinSeconds * SpeechRecognizer::kRate)) {
        out.error = QStringLiteral("The audio is %1 s long; the minimum is 0.1 s.")
                        .arg(double(frames) / SpeechRecognizer::kRate, 0, 'f', 3);
        return out;
    }
    out.transcript = recognizer->finish();
    return out;
}

} // namespace

QString formatName(SpeechFormat format)
{
    return format == SpeechFormat::Wav ? QStringLiteral("wav") : QStringLiteral("pcm");
}

std::optional<SpeechFormat> parseFormat(const QString &name)
{
    if (name == u"wav")
        return SpeechFormat::Wav;
    if (name == u"pcm")
        return SpeechFormat::Pcm;
    return std::nullopt;
}

Speech synthesize(const AudioFamily &family, const QString &voice, const QString &text,
                  const SpeechParams &params, SpeechFormat format, const std::atomic_bool *cancel)
{
    Speech out;
    out.format = format;
    out.characters = text.toUcs4().size();
    const auto spec = family.voices().find(voice);
    if (!spec) {
        out.error = QStringLiteral("Unknown voice '%1'.").arg(voice);
        return out;
    }
    if (text.trimmed().isEmpty()) {
        out.error = QStringLiteral("There is no text to speak.");
        return out;
    }
    if (out.characters > AudioRequests::kMaxInputCharacters) {
        out.error = QStringLiteral("The text has %1 characters; the limit is %2.")
                        .arg(out.characters)
                        .arg(AudioRequests::kMaxInputCharacters);
        return out;
    }
    SpeechParams p = params;
    p.speed = std::clamp(p.speed, 0.25, 4.0);
    out.error = SpeechSynthesizer::synthesize(
        *spec, text, p,
        [&](const QByteArray &pcm) {
            out.pcm += pcm;
            return true;
        },
        cancel);
    if (!out.ok()) {
        out.pcm.clear();
        return out;
    }
    constexpr int frameBytes = SpeechSynthesizer::kChannels * 2;
    out.seconds = double(out.pcm.size() / frameBytes) / SpeechSynthesizer::kRate;
    out.file = format == SpeechFormat::Wav
                   ? Wav::file(SpeechSynthesizer::kRate, SpeechSynthesizer::kChannels, out.pcm)
                   : out.pcm;
    return out;
}

Transcription transcribe(const AudioFamily &family, const QByteArray &bytes,
                         const std::atomic_bool *cancel)
{
    return run(family, AudioDecoder::fromBytes(bytes), cancel);
}

Transcription transcribeFile(const AudioFamily &family, const QString &path,
                             const std::atomic_bool *cancel)
{
    return run(family, AudioDecoder::fromFile(path), cancel);
}

RoundTrip roundTrip(const AudioFamily &family, const QString &voice, const QString &text,
                    const SpeechParams &params, const std::atomic_bool *cancel)
{
    RoundTrip out;
    out.speech = synthesize(family, voice, text, params, SpeechFormat::Wav, cancel);
    if (!out.speech.ok()) {
        out.error = out.speech.error;
        return out;
    }
    out.transcription = transcribe(family, out.speech.file, cancel);
    if (!out.transcription.ok()) {
        out.error = out.transcription.error;
        return out;
    }
    out.wer = wordErrorRate(text, out.transcription.transcript.text);
    return out;
}

const AudioModel *speechModel(const AudioConfig &config)
{
    const AudioModel *m = config.model(config.defaultSpeech);
    return m && m->task == AudioTask::Speech ? m : nullptr;
}

qint64 speechCost(const AudioConfig &config, qint64 characters)
{
    const AudioModel *m = speechModel(config);
    return m ? AudioConfig::speechCost(characters, m->price) : 0;
}

bool runsLocally(const AudioConfig &config, const AudioModel &model)
{
    const AudioProvider *p = config.provider(model.provider);
    return model.task == AudioTask::Transcription && p && p->type == AudioProviderType::Local;
}

QList<const AudioModel *> transcriptionModels(const AudioConfig &config)
{
    QList<const AudioModel *> local, upstream;
    for (const AudioModel &m : config.models)
        if (m.task == AudioTask::Transcription)
            (runsLocally(config, m) ? local : upstream).append(&m);
    return local + upstream;
}

QStringList words(const QString &text)
{
    static const QRegularExpression notWord(QStringLiteral("[^\\p{L}\\p{N}']+"));
    QString t = text.toLower();
    t.replace(notWord, QStringLiteral(" "));
    t.remove(u'\'');
    return t.split(u' ', Qt::SkipEmptyParts);
}

double wordErrorRate(const QString &reference, const QString &hypothesis)
{
    const QStringList ref = words(reference);
    const QStringList hyp = words(hypothesis);
    if (ref.isEmpty())
        return double(hyp.size());
    // Levenshtein over words, one row at a time.
    std::vector<qsizetype> prev(size_t(hyp.size()) + 1), cur(prev.size());
    for (size_t j = 0; j < prev.size(); ++j)
        prev[j] = qsizetype(j);
    for (qsizetype i = 1; i <= ref.size(); ++i) {
        cur[0] = i;
        for (qsizetype j = 1; j <= hyp.size(); ++j) {
            const qsizetype sub = prev[size_t(j - 1)] + (ref[i - 1] == hyp[j - 1] ? 0 : 1);
            cur[size_t(j)] = std::min({sub, prev[size_t(j)] + 1, cur[size_t(j - 1)] + 1});
        }
        std::swap(prev, cur);
    }
    return double(prev[size_t(hyp.size())]) / double(ref.size());
}

QByteArray slice(const QByteArray &pcm, int rate, int channels, double start, double end)
{
    const qsizetype frameBytes = qsizetype(channels) * 2;
    const qsizetype frames = pcm.size() / frameBytes;
    const auto at = [&](double seconds) {
        return std::clamp(qsizetype(seconds * rate), qsizetype(0), frames);
    };
    const qsizetype from = at(start);
    const qsizetype to = std::max(from, at(end));
    return pcm.mid(from * frameBytes, (to - from) * frameBytes);
}

} // namespace AudioPlayground
