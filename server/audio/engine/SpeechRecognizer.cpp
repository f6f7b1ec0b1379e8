#include "SpeechRecognizer.h"

#include <cmath>
#include <mutex>
#include <pocketsphinx.h>
#include <QDir>
#include <QFileInfo>
#include <sphinxbase/err.h>
#include <vector>

namespace {
constexpr int kFrame = SpeechRecognizer::kRate / 100; // 10 ms, pocketsphinx's frame rate
constexpr int kPrerollFrames = 25;    // speech onsets are quiet: keep 250 ms before the trigger
constexpr int kOnsetFrames = 3;       // 30 ms of energy starts an utterance (not a click)
constexpr int kEndSilenceFrames = 30; // a 300 ms pause ends it
constexpr int kLongFrames = 1200;     // after 12 s, a 100 ms pause is enough
constexpr int kShortPauseFrames = 10;
constexpr int kMaxFrames = 2000; // never more than 20 s: bounds pocketsphinx's utterance memory
constexpr double kSpeechOverNoiseDb = 12;
constexpr double kSpeechFloorDb = -55; // dBFS; quieter is never speech

QString defaultModelDir()
{
    return QStringLiteral("/usr/share/pocketsphinx/model/en-us");
}
} // namespace

struct SpeechRecognizer::Private
{
    ps_decoder_t *ps = nullptr;
    logmath_t *logmath = nullptr;
    // The utterance being collected (at most kMaxFrames): decoded whole at its end with the
    // cepstral mean of that utterance (-cmn batch). pocketsphinx's live mean would carry over
    // from whatever the recognizer heard before, so a file would transcribe differently
    // depending on the pooled recognizer's history, and a short clip on a fresh one poorly.
    std::vector<int16_t> utterance;

    const std::atomic_bool *cancel = nullptr;
    bool cancelled = false;
    Transcript transcript;
    qint64 fed = 0;               // samples fed since begin()
    std::vector<int16_t> partial; // a frame not yet complete
    std::vector<int16_t> preroll; // the frames before an utterance, at most kPrerollFrames
    double noiseDb = -60;
    bool inUtterance = false;
    qint64 utteranceStart = 0; // in samples
    int utteranceFrames = 0;
    int speechRun = 0;
    int silenceRun = 0;

    ~Private()
    {
        if (ps)
            ps_free(ps);
    }

    void reset()
    {
        inUtterance = false;
        utterance.clear();
        cancelled = false;
        transcript = Transcript{};
        fed = 0;
        partial.clear();
        preroll.clear();
        noiseDb = -60;
        utteranceFrames = speechRun = silenceRun = 0;
    }

    bool isSpeech(const int16_t *frame, int n)
    {
        double energy = 0;
        for (int i = 0; i < n; ++i)
            energy += double(frame[i]) * frame[i];
        const double db = 10 * std::log10(energy / n / (32768.0 * 32768.0) + 1e-12);
        const bool speech = db > std::max(noiseDb + kSpeechOverNoiseDb, kSpeechFloorDb);
        // The noise floor follows quiet frames down at once and creeps up slowly, so speech
        // never becomes the floor but a noisier room does, within seconds.
        if (db < noiseDb)
            noiseDb = db;
        else
            noiseDb += 0.002 * (db - noiseDb);
        noiseDb = std::clamp(noiseDb, -90.0, -30.0);
        return speech;
    }

    void frame(const int16_t *samples)
    {
        const bool speech = isSpeech(samples, kFrame);
        if (!inUtterance) {
            preroll.insert(preroll.end(), samples, samples + kFrame);
            if (preroll.size() > size_t(kPrerollFrames * kFrame))
                preroll.erase(preroll.begin(), preroll.begin() + kFrame);
            speechRun = speech ? speechRun + 1 : 0;
            if (speechRun >= kOnsetFrames) {
                inUtterance = true;
                utteranceStart = fed + kFrame - qint64(preroll.size());
                utteranceFrames = int(preroll.size()) / kFrame;
                silenceRun = 0;
                utterance.assign(preroll.begin(), preroll.end());
                preroll.clear();
            }
            return;
        }
        utterance.insert(utterance.end(), samples, samples + kFrame);
        ++utteranceFrames;
        silenceRun = speech ? 0 : silenceRun + 1;
        if (silenceRun >= kEndSilenceFrames ||
            (utteranceFrames >= kLongFrames && silenceRun >= kShortPauseFrames) ||
            utteranceFrames >= kMaxFrames)
            endUtterance();
    }

    static QString cleanWord(const char *raw)
    {
        QString w = QString::fromUtf8(raw);
        // Alternate pronunciations come back as "word(2)".
        const qsizetype paren = w.indexOf(QLatin1Char('('));
        if (paren > 0 && w.endsWith(QLatin1Char(')')))
            w.truncate(paren);
        return w;
    }

    void endUtterance()
    {
        inUtterance = false;
        speechRun = 0;
        // Frame numbers count from the start of the stream: one stream per utterance makes
        // them relative to utteranceStart.
        ps_start_stream(ps);
        ps_start_utt(ps);
        ps_process_raw(ps, utterance.data(), utterance.size(), FALSE, TRUE);
        ps_end_utt(ps);
        utterance.clear();
        RecognizedSegment segment;
        double logSum = 0;
        const double offset = double(utteranceStart) / kRate;
        for (ps_seg_t *seg = ps_seg_iter(ps); seg; seg = ps_seg_next(seg)) {
            const char *raw = ps_seg_word(seg);
            // Silence, sentence marks and fillers such as [NOISE] or ++BREATH++ are no words.
            if (!raw || raw[0] == '<' || raw[0] == '[' || raw[0] == '+')
                continue;
            int sf = 0, ef = 0;
            ps_seg_frames(seg, &sf, &ef);
            int32 ascr = 0, lscr = 0, lback = 0;
            const int32 posterior = ps_seg_prob(seg, &ascr, &lscr, &lback);
            RecognizedWord word;
            word.word = cleanWord(raw);
            word.start = offset + sf / 100.0;
            word.end = offset + (ef + 1) / 100.0;
            word.probability = std::clamp(logmath_exp(logmath, posterior), 0.0, 1.0);
            logSum += logmath_log_to_ln(logmath, posterior);
            segment.words.append(word);
        }
        if (segment.words.isEmpty())
            return;
        QStringList texts;
        for (const RecognizedWord &w : segment.words)
            texts.append(w.word);
        segment.text = texts.join(QLatin1Char(' '));
        segment.start = segment.words.first().start;
        segment.end = segment.words.last().end;
        segment.avgLogprob = logSum / segment.words.size();
        transcript.segments.append(segment);
    }
};

SpeechRecognizer::SpeechRecognizer() : d(std::make_unique<Private>()) {}

SpeechRecognizer::~SpeechRecognizer() = default;

std::unique_ptr<SpeechRecognizer> SpeechRecognizer::create(const QString &modelDir, QString *error)
{
    // sphinxbase logs through one process-wide FILE*; "-logfn" would reopen it on every
    // ps_init and close the one another thread may be writing to, so it is switched off once.
    static std::once_flag quiet;
    std::call_once(quiet, [] { err_set_logfp(nullptr); });

    const QDir dir(modelDir.isEmpty() ? defaultModelDir() : modelDir);
    const QByteArray hmm = dir.filePath(QStringLiteral("en-us")).toLocal8Bit();
    const QByteArray lm = dir.filePath(QStringLiteral("en-us.lm.bin")).toLocal8Bit();
    const QByteArray dict = dir.filePath(QStringLiteral("cmudict-en-us.dict")).toLocal8Bit();
    for (const QByteArray &path : {hmm, lm, dict}) {
        if (!QFileInfo::exists(QString::fromLocal8Bit(path))) {
            if (error)
                *error = QStringLiteral("pocketsphinx model file missing: %1 (install "
                                        "pocketsphinx-en-us)")
                             .arg(QString::fromLocal8Bit(path));
            return nullptr;
        }
    }
    cmd_ln_t *config = cmd_ln_init(nullptr, ps_args(), TRUE, "-hmm", hmm.constData(), "-lm",
                                   lm.constData(), "-dict", dict.constData(),
                                   // The VAD above already cut the stream; pocketsphinx's own
                                   // silence removal would shift the word times.
                                   "-remove_silence", "no", "-cmn", "batch",
                                   // The flat-lexicon second pass doubled the time for no
                                   // gain (bench_audio_engine, 60 sentences and Debian's
                                   // recordings: WER 0.091 -> 0.092, 4.9 -> 10.5 audio-s/s).
                                   "-fwdflat", "no", nullptr);
    if (!config) {
        if (error)
            *error = QStringLiteral("pocketsphinx rejected its configuration");
        return nullptr;
    }
    std::unique_ptr<SpeechRecognizer> r(new SpeechRecognizer);
    r->d->ps = ps_init(config);
    cmd_ln_free_r(config); // ps_init keeps its own reference
    if (!r->d->ps) {
        if (error)
            *error = QStringLiteral("pocketsphinx could not load the model in %1").arg(dir.path());
        return nullptr;
    }
    r->d->logmath = ps_get_logmath(r->d->ps);
    return r;
}

void SpeechRecognizer::begin(const std::atomic_bool *cancel)
{
    d->reset();
    d->cancel = cancel;
}

bool SpeechRecognizer::feed(const int16_t *samples, qsizetype count)
{
    if (d->cancelled || (d->cancel && d->cancel->load())) {
        d->cancelled = true;
        return false;
    }
    qsizetype at = 0;
    if (!d->partial.empty()) {
        const qsizetype take = std::min<qsizetype>(count, kFrame - qsizetype(d->partial.size()));
        d->partial.insert(d->partial.end(), samples, samples + take);
        at = take;
        if (d->partial.size() == size_t(kFrame)) {
            d->frame(d->partial.data());
            d->fed += kFrame;
            d->partial.clear();
        }
    }
    for (int n = 0; at + kFrame <= count; at += kFrame, ++n) {
        // A long chunk is decoded here, so look at the flag now and then, not only per call.
        if (n % 100 == 99 && d->cancel && d->cancel->load()) {
            d->cancelled = true;
            return false;
        }
        d->frame(samples + at);
        d->fed += kFrame;
    }
    d->partial.insert(d->partial.end(), samples + at, samples + count);
    return true;
}

Transcript SpeechRecognizer::finish()
{
    if (d->inUtterance) {
        if (d->cancelled) {
            d->inUtterance = false;
            d->utterance.clear();
        } else {
            d->utterance.insert(d->utterance.end(), d->partial.begin(), d->partial.end());
            d->endUtterance();
        }
    }
    d->fed += qint64(d->partial.size());
    d->partial.clear();
    Transcript t = std::move(d->transcript);
    t.duration = double(d->fed) / kRate;
    QStringList texts;
    for (const RecognizedSegment &s : t.segments)
        texts.append(s.text);
    t.text = texts.join(QLatin1Char(' '));
    d->reset();
    return t;
}
