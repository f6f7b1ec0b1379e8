#include "SpeechSynthesizer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <vector>

extern "C" {
#include <espeak-ng/speak_lib.h>
#include <flite.h>
#include <libavutil/channel_layout.h>
#include <libswresample/swresample.h>

cst_voice *register_cmu_us_slt(const char *voxdir);
cst_voice *register_cmu_us_rms(const char *voxdir);
cst_voice *register_cmu_us_awb(const char *voxdir);
cst_voice *register_cmu_us_kal16(const char *voxdir);
}

namespace {
// A sentence longer than this is cut at a comma or a space, so no chunk waits on a long text.
constexpr qsizetype kMaxChunkChars = 160;

// ---------------------------------------------------------------- text

bool isTerminal(QChar c)
{
    switch (c.unicode()) {
    case '.':
    case '!':
    case '?':
    case ';':
    case 0x2026: // …
    case 0x3002:
    case 0xFF01:
    case 0xFF1F:
    case 0xFF1B: // 。！？；
        return true;
    default:
        return false;
    }
}

bool isWide(QChar c)
{
    return c.unicode() >= 0x2E80; // CJK punctuation needs no space after it to end a sentence
}

bool hasWords(const QString &s)
{
    return std::any_of(s.begin(), s.end(), [](QChar c) { return c.isLetterOrNumber(); });
}

// One piece of the text to synthesize: its words, and where its share of the text ends (an
// index into the text: the piece accounts for everything after the previous piece's end).
struct Piece
{
    QString text;
    qsizetype end = 0;
};

// Appends text[from, to), trimmed, cut into pieces of at most kMaxChunkChars.
void appendCut(QList<Piece> &out, const QString &text, qsizetype from, qsizetype to)
{
    auto skipSpaces = [&] {
        while (from < to && text.at(from).isSpace())
            ++from;
    };
    skipSpaces();
    while (to > from && text.at(to - 1).isSpace())
        --to;
    while (to - from > kMaxChunkChars) {
        // The last pause (comma, CJK comma, colon) before the limit, else the last space.
        qsizetype cut = -1;
        for (qsizetype i = kMaxChunkChars - 1; i > kMaxChunkChars / 3 && cut < 0; --i) {
            const char16_t u = text.at(from + i).unicode();
            if (u == ',' || u == ':' || u == 0xFF0C || u == 0x3001 || u == 0xFF1A)
                cut = i + 1;
        }
        for (qsizetype i = kMaxChunkChars - 1; i > kMaxChunkChars / 3 && cut < 0; --i) {
            if (text.at(from + i).isSpace())
                cut = i + 1;
        }
        if (cut < 0)
            cut = kMaxChunkChars;
        const QString head = text.mid(from, cut).trimmed();
        if (hasWords(head))
            out.append({head, from + cut});
        from += cut;
        skipSpaces();
    }
    const QString rest = text.mid(from, to - from);
    if (hasWords(rest))
        out.append({rest, to});
}

QList<Piece> splitSentences(const QString &text)
{
    QList<Piece> out;
    qsizetype start = 0; // of the current sentence
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text.at(i);
        if (c == QLatin1Char('\n') || c == QLatin1Char('\r')) {
            appendCut(out, text, start, i);
            start = i + 1;
            continue;
        }
        if (!isTerminal(c))
            continue;
        const bool atEnd = i + 1 >= text.size();
        if (atEnd || isWide(c) || text.at(i + 1).isSpace()) {
            // Keep runs like "?!" or "..." with their sentence.
            while (i + 1 < text.size() && isTerminal(text.at(i + 1)))
                ++i;
            appendCut(out, text, start, i + 1);
            start = i + 1;
        }
    }
    appendCut(out, text, start, text.size());
    return out;
}

// Unicode code points in text[from, to), as QString::toUcs4() counts them: a surrogate pair is
// one, counted where its first half is (a piece cut between the halves cannot count it twice).
qint64 codePoints(const QString &text, qsizetype from, qsizetype to)
{
    qint64 n = 0;
    for (qsizetype i = from; i < to; ++i)
        if (!(text.at(i).isLowSurrogate() && i > 0 && text.at(i - 1).isHighSurrogate()))
            ++n;
    return n;
}

// The characters each piece accounts for: from the previous piece's end to its own, the last
// one to the end of the text.
QList<qint64> pieceCharacters(const QString &text, const QList<Piece> &pieces)
{
    QList<qint64> out;
    qsizetype from = 0;
    for (qsizetype i = 0; i < pieces.size(); ++i) {
        const qsizetype to = i + 1 == pieces.size() ? text.size() : pieces.at(i).end;
        out.append(codePoints(text, from, to));
        from = to;
    }
    return out;
}

// flite reads ASCII; typographic quotes and dashes would be dropped or spelled.
QByteArray fliteText(const QString &sentence)
{
    QString s = sentence;
    s.replace(QChar(0x2019), QLatin1Char('\'')).replace(QChar(0x2018), QLatin1Char('\''));
    s.replace(QChar(0x201C), QLatin1Char('"')).replace(QChar(0x201D), QLatin1Char('"'));
    s.replace(QChar(0x2014), QLatin1String(", ")).replace(QChar(0x2013), QLatin1String(", "));
    s.replace(QChar(0x2026), QLatin1String("..."));
    return s.toUtf8();
}

// ---------------------------------------------------------------- output format

// Mono s16 at the engine's rate to the service's 48 kHz stereo s16. One per synthesize()
// call, so the resampler's filter state runs across sentence boundaries.
class Converter
{
public:
    ~Converter() { swr_free(&m_swr); }

    bool convert(int rate, const int16_t *samples, int count, QByteArray *out)
    {
        if (!m_swr || rate != m_rate) {
            swr_free(&m_swr);
            AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
            AVChannelLayout stereo = AV_CHANNEL_LAYOUT_STEREO;
            if (swr_alloc_set_opts2(&m_swr, &stereo, AV_SAMPLE_FMT_S16, SpeechSynthesizer::kRate,
                                    &mono, AV_SAMPLE_FMT_S16, rate, 0, nullptr) < 0 ||
                swr_init(m_swr) < 0)
                return false;
            m_rate = rate;
        }
        const int capacity = swr_get_out_samples(m_swr, count);
        const qsizetype before = out->size();
        out->resize(before + qsizetype(capacity) * SpeechSynthesizer::kChannels * 2);
        auto *dst = reinterpret_cast<uint8_t *>(out->data() + before);
        const auto *src = reinterpret_cast<const uint8_t *>(samples);
        const int n = swr_convert(m_swr, &dst, capacity, count ? &src : nullptr, count);
        if (n < 0)
            return false;
        out->resize(before + qsizetype(n) * SpeechSynthesizer::kChannels * 2);
        return true;
    }
    bool flush(QByteArray *out) { return !m_swr || convert(m_rate, nullptr, 0, out); }

private:
    SwrContext *m_swr = nullptr;
    int m_rate = 0;
};

// What one sentence is synthesized with, engine-neutral.
struct Settings
{
    double rateFactor = 1.0;  // > 1 speaks faster
    double pitchFactor = 1.0; // used when pitchHz is 0
    double pitchHz = 0;       // an absolute target mean F0
};

struct Pcm
{
    int rate = 0;
    std::vector<int16_t> samples;
};

// Audio as an engine produces it, before the sentence is done: (rate, samples, count); false
// stops the engine.
using Stream = std::function<bool(int rate, const int16_t *samples, int count)>;

// flite's streaming callback: hands each piece of the waveform on while the rest of the
// sentence is still being made, so the first audio leaves after tens of milliseconds.
int fliteStream(const cst_wave *w, int start, int size, int, cst_audio_streaming_info *asi)
{
    const auto *stream = static_cast<const Stream *>(asi->userdata);
    return (*stream)(w->sample_rate, w->samples + start, size) ? CST_AUDIO_STREAM_CONT
                                                               : CST_AUDIO_STREAM_STOP;
}

// ---------------------------------------------------------------- flite

struct FliteVoice
{
    cst_voice *voice = nullptr;
    // Diphone voices (kal16) carry their own int_f0_target_mean; clustergen voices take their
    // mean from the voice data and honour f0_shift.
    bool hasMean = false;
    float defaultMean = 0;
};

std::mutex fliteMutex;

FliteVoice *fliteVoice(const QString &name) // fliteMutex held
{
    static bool initialised = false;
    static std::map<QString, FliteVoice> voices;
    if (!initialised) {
        flite_init();
        initialised = true;
    }
    auto it = voices.find(name);
    if (it != voices.end())
        return it->second.voice ? &it->second : nullptr;
    cst_voice *(*reg)(const char *) = nullptr;
    if (name == QLatin1String("cmu_us_slt"))
        reg = register_cmu_us_slt;
    else if (name == QLatin1String("cmu_us_rms"))
        reg = register_cmu_us_rms;
    else if (name == QLatin1String("cmu_us_awb"))
        reg = register_cmu_us_awb;
    else if (name == QLatin1String("cmu_us_kal16"))
        reg = register_cmu_us_kal16;
    FliteVoice v;
    if (reg)
        v.voice = reg(nullptr);
    if (v.voice) {
        v.hasMean = feat_present(v.voice->features, "int_f0_target_mean");
        if (v.hasMean)
            v.defaultMean = feat_float(v.voice->features, "int_f0_target_mean");
    }
    voices[name] = v;
    return v.voice ? &voices[name] : nullptr;
}

// With `stream`, the audio goes there as it is made and pcm stays empty.
QString fliteSynth(const QString &voiceName, const QString &sentence, const Settings &s, Pcm *pcm,
                   const Stream *stream = nullptr)
{
    std::lock_guard lock(fliteMutex);
    FliteVoice *v = fliteVoice(voiceName);
    if (!v)
        return QStringLiteral("flite has no voice %1").arg(voiceName);
    cst_features *f = v->voice->features;
    // Every call sets all of its features: the voice object is shared by all requests.
    feat_set_float(f, "duration_stretch", float(1.0 / s.rateFactor));
    if (v->hasMean) {
        feat_set_float(f, "int_f0_target_mean",
                       float(s.pitchHz > 0 ? s.pitchHz : v->defaultMean * s.pitchFactor));
    } else if (s.pitchHz > 0) {
        feat_set_float(f, "int_f0_target_mean", float(s.pitchHz));
        feat_set_float(f, "f0_shift", 1.0f);
    } else {
        feat_remove(f, "int_f0_target_mean");
        feat_set_float(f, "f0_shift", float(s.pitchFactor));
    }
    if (stream) {
        cst_audio_streaming_info *asi = new_audio_streaming_info();
        asi->asc = fliteStream;
        asi->min_buffsize = 1600; // 100 ms at flite's 16 kHz: few, not tiny, pieces
        asi->userdata = const_cast<Stream *>(stream);
        feat_set(f, "streaming_info", audio_streaming_info_val(asi)); // the feature owns asi
    } else {
        feat_remove(f, "streaming_info");
    }
    const QByteArray text = fliteText(sentence);
    cst_wave *w = flite_text_to_wave(text.constData(), v->voice);
    feat_remove(f, "streaming_info");
    if (!w)
        return QStringLiteral("flite failed on a sentence");
    pcm->rate = w->sample_rate;
    pcm->samples.clear();
    if (!stream)
        pcm->samples.assign(w->samples, w->samples + w->num_samples);
    delete_wave(w);
    return {};
}

// ---------------------------------------------------------------- espeak-ng

// espeak-ng's whole API is process-wide (one voice, one parameter set, one callback).
std::mutex espeakMutex;
int espeakSampleRate = 0; // 0: not initialised; < 0: failed
std::vector<int16_t> *espeakTarget = nullptr;
const std::atomic_bool *espeakCancel = nullptr;

int espeakCallback(short *wav, int count, espeak_EVENT *)
{
    if (wav && count > 0 && espeakTarget)
        espeakTarget->insert(espeakTarget->end(), wav, wav + count);
    return espeakCancel && espeakCancel->load() ? 1 : 0;
}

bool espeakReady() // espeakMutex held
{
    if (espeakSampleRate == 0) {
        const int rate =
            espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nullptr, espeakINITIALIZE_DONT_EXIT);
        espeakSampleRate = rate > 0 ? rate : -1;
        if (rate > 0)
            espeak_SetSynthCallback(espeakCallback);
    }
    return espeakSampleRate > 0;
}

QByteArray espeakName(const VoiceSpec &voice)
{
    QString name = voice.engineVoice;
    if (!voice.variant.isEmpty())
        name += QLatin1Char('+') + voice.variant;
    return name.toUtf8();
}

QString espeakSynth(const VoiceSpec &voice, const QString &sentence, const Settings &s,
                    const std::atomic_bool *cancel, Pcm *pcm)
{
    std::lock_guard lock(espeakMutex);
    if (!espeakReady())
        return QStringLiteral("espeak-ng could not load its data");
    if (espeak_SetVoiceByName(espeakName(voice).constData()) != EE_OK)
        return QStringLiteral("espeak-ng has no voice %1")
            .arg(QString::fromUtf8(espeakName(voice)));
    // 175 words per minute is espeak-ng's default; it accepts 80 to 450.
    const int wpm = std::clamp(int(std::lround(175 * s.rateFactor)), 80, 450);
    // espeakPITCH 50 is the voice's own base. Measured on es+f2, cmn, cmn+f2, ru+f4: 0 gives
    // about 0.68 times the base F0, 100 about 1.65 times, geometric in between; factors
    // outside that range are clamped to it.
    const double lnFactor = std::log(s.pitchFactor);
    const double steps = lnFactor / (lnFactor < 0 ? std::log(1 / 0.68) : std::log(1.65));
    const int pitch = std::clamp(int(std::lround(50 + 50 * steps)), 0, 100);
    espeak_SetParameter(espeakRATE, wpm, 0);
    espeak_SetParameter(espeakPITCH, pitch, 0);
    const QByteArray text = sentence.toUtf8();
    pcm->rate = espeakSampleRate;
    pcm->samples.clear();
    espeakTarget = &pcm->samples;
    espeakCancel = cancel;
    const espeak_ERROR e = espeak_Synth(text.constData(), size_t(text.size()) + 1, 0, POS_CHARACTER,
                                        0, espeakCHARS_UTF8, nullptr, nullptr);
    espeakTarget = nullptr;
    espeakCancel = nullptr;
    if (e != EE_OK)
        return QStringLiteral("espeak-ng failed on a sentence");
    return {};
}

QString synthOne(const VoiceSpec &voice, const QString &sentence, const Settings &s,
                 const Stream *stream, const std::atomic_bool *cancel, Pcm *pcm)
{
    if (voice.engine == QLatin1String("flite"))
        return fliteSynth(voice.engineVoice, sentence, s, pcm, stream);
    if (voice.engine == QLatin1String("espeak-ng"))
        return espeakSynth(voice, sentence, s, cancel, pcm);
    return QStringLiteral("unknown engine %1").arg(voice.engine);
}

// ---------------------------------------------------------------- cloning calibration

// The engine voice's own mean pitch and syllable rate at neutral settings, measured once per
// engine voice with analyzeReference, so a clone's target can be turned into factors.
struct Calibration
{
    double pitchHz = 0;
    double syllablesPerSecond = 0;
};

Calibration calibrate(const VoiceSpec &voice)
{
    static std::mutex mutex;
    static std::map<QString, Calibration> cache;
    const QString key =
        voice.engine + QLatin1Char('/') + voice.engineVoice + QLatin1Char('+') + voice.variant;
    {
        std::lock_guard lock(mutex);
        auto it = cache.find(key);
        if (it != cache.end())
            return it->second;
    }
    // Digits are spoken by every espeak-ng language; flite gets an English sentence.
    const QString text = voice.engine == QLatin1String("flite")
                             ? QStringLiteral("The morning train was late again, so we walked "
                                              "along the river to the old market square.")
                             : QStringLiteral("12 34 56 78 90 21 43 65 87 9");
    Pcm pcm;
    Calibration c;
    VoiceSpec neutral = voice;
    if (synthOne(neutral, text, Settings{}, nullptr, nullptr, &pcm).isEmpty() &&
        !pcm.samples.empty()) {
        const ReferenceVoice r =
            analyzeReference(pcm.samples.data(), qsizetype(pcm.samples.size()), pcm.rate);
        c.pitchHz = r.meanPitchHz;
        c.syllablesPerSecond = r.syllablesPerSecond;
    }
    std::lock_guard lock(mutex);
    cache[key] = c;
    return c;
}
} // namespace

namespace SpeechSynthesizer {
QList<qint64> sentenceCharacters(const QString &text)
{
    return pieceCharacters(text, splitSentences(text));
}

QString synthesize(const VoiceSpec &voice, const QString &text, const SpeechParams &params,
                   const std::function<bool(const QByteArray &pcm)> &sink,
                   const std::atomic_bool *cancel,
                   const std::function<void(qint64 characters)> &sentence)
{
    Settings s;
    s.rateFactor = params.speed * voice.rate;
    s.pitchFactor = voice.pitch;
    if (params.pitchHz || params.syllablesPerSecond) {
        const Calibration c = calibrate(voice);
        if (params.pitchHz && *params.pitchHz > 0 && c.pitchHz > 0) {
            // flite takes Hz; espeak-ng takes a factor on its own base.
            if (voice.engine == QLatin1String("flite"))
                s.pitchHz = *params.pitchHz;
            else
                s.pitchFactor = *params.pitchHz / c.pitchHz;
        }
        if (params.syllablesPerSecond && *params.syllablesPerSecond > 0 && c.syllablesPerSecond > 0)
            s.rateFactor = params.speed *
                           std::clamp(*params.syllablesPerSecond / c.syllablesPerSecond, 0.5, 2.0);
    }
    s.rateFactor = std::clamp(s.rateFactor, 0.2, 5.0);

    const QList<Piece> sentences = splitSentences(text);
    const QList<qint64> characters = sentence ? pieceCharacters(text, sentences) : QList<qint64>();
    Converter converter;
    Pcm pcm;
    const QString cancelled = QStringLiteral("cancelled");
    // flite hands on its audio while a sentence is being made; the sink is called under the
    // engine's lock then, which a sink that only queues the bytes (the routes') makes cheap.
    bool stopped = false;
    bool convertFailed = false;
    const Stream stream = [&](int rate, const int16_t *samples, int count) {
        if (cancel && cancel->load()) {
            stopped = true;
            return false;
        }
        QByteArray out;
        if (!converter.convert(rate, samples, count, &out)) {
            convertFailed = true;
            return false;
        }
        if (!out.isEmpty() && !sink(out)) {
            stopped = true;
            return false;
        }
        return true;
    };
    for (qsizetype i = 0; i < sentences.size(); ++i) {
        if (cancel && cancel->load())
            return cancelled;
        if (sentence)
            sentence(characters.at(i));
        const QString error = synthOne(voice, sentences.at(i).text, s, &stream, cancel, &pcm);
        if (convertFailed)
            return QStringLiteral("resampling failed");
        if (stopped || (cancel && cancel->load()))
            return cancelled;
        if (!error.isEmpty())
            return error;
        QByteArray out;
        if (!converter.convert(pcm.rate, pcm.samples.data(), int(pcm.samples.size()), &out))
            return QStringLiteral("resampling failed");
        if (i + 1 == sentences.size() && !converter.flush(&out))
            return QStringLiteral("resampling failed");
        if (!out.isEmpty() && !sink(out))
            return cancelled;
    }
    return {};
}

bool available(const VoiceSpec &voice)
{
    if (voice.engine == QLatin1String("flite")) {
        std::lock_guard lock(fliteMutex);
        return fliteVoice(voice.engineVoice) != nullptr;
    }
    if (voice.engine == QLatin1String("espeak-ng")) {
        std::lock_guard lock(espeakMutex);
        return espeakReady() && espeak_SetVoiceByName(espeakName(voice).constData()) == EE_OK;
    }
    return false;
}
} // namespace SpeechSynthesizer
