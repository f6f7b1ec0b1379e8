#pragma once

#include "AudioConfig.h"
#include "SpeechRecognizer.h"
#include "SpeechSynthesizer.h"

#include <atomic>
#include <optional>
#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

class AudioFamily;

// The window's TTS and transcription playground, without widgets: the same engines, voices and
// recognizer pool as the routes, through the AudioFamily. Nothing here is metered or billed.
//
// synthesize(), transcribe() and roundTrip() block: call them on the family's pool
// (family.workers().tryRun(...)), never on an event loop's thread. The rest are pure.
namespace AudioPlayground {

enum class SpeechFormat
{
    Wav, // RIFF/WAVE with the real sizes in its header (the whole file is known)
    Pcm  // raw s16le, 48 kHz, 2 channels
};
QString formatName(SpeechFormat format); // "wav", "pcm"
std::optional<SpeechFormat> parseFormat(const QString &name);

struct Speech
{
    QByteArray pcm;  // 48 kHz stereo s16le, as synthesized
    QByteArray file; // what Save writes: a WAV file or the raw pcm, per format
    SpeechFormat format = SpeechFormat::Wav;
    double seconds = 0;
    qint64 characters = 0; // Unicode code points, as the route counts them
    QString error;         // empty on success; "cancelled" when the flag stopped it
    bool ok() const { return error.isEmpty(); }
};

// voice is a name of family.voices() ("alloy"); params.speed is clamped to 0.25 to 4.0.
Speech synthesize(const AudioFamily &family, const QString &voice, const QString &text,
                  const SpeechParams &params, SpeechFormat format,
                  const std::atomic_bool *cancel = nullptr);

struct Transcription
{
    Transcript transcript;
    qint64 frames = 0; // 16 kHz mono frames decoded (what the route would bill)
    QByteArray pcm;    // those frames as s16le (the first hour), to play a segment from
    QString error;     // empty on success
    bool ok() const { return error.isEmpty(); }
};

// Any container the decoder reads, in memory or in a file; English (pocketsphinx) only.
Transcription transcribe(const AudioFamily &family, const QByteArray &bytes,
                         const std::atomic_bool *cancel = nullptr);
Transcription transcribeFile(const AudioFamily &family, const QString &path,
                             const std::atomic_bool *cancel = nullptr);

struct RoundTrip
{
    Speech speech;
    Transcription transcription;
    double wer = 0; // wordErrorRate(text, transcript)
    QString error;
    bool ok() const { return error.isEmpty(); }
};

// Speaks text, transcribes the result (as a WAV, through the decoder like an upload), scores it.
RoundTrip roundTrip(const AudioFamily &family, const QString &voice, const QString &text,
                    const SpeechParams &params, const std::atomic_bool *cancel = nullptr);

// The model the speech price comes from (config.defaultSpeech), or null.
const AudioModel *speechModel(const AudioConfig &config);
// What speaking `characters` would cost with that model, in credit units (0 without one).
qint64 speechCost(const AudioConfig &config, qint64 characters);
// Whether the playground can run the model: a transcription model on a local provider.
bool runsLocally(const AudioConfig &config, const AudioModel &model);
QList<const AudioModel *> transcriptionModels(const AudioConfig &config);

// Lower-case words with punctuation dropped (apostrophes removed inside words).
QStringList words(const QString &text);
// Word-level edit distance over the reference's word count (0 for two empty texts; the
// hypothesis's length for an empty reference).
double wordErrorRate(const QString &reference, const QString &hypothesis);

// The frames of interleaved s16le pcm from start to end seconds, clamped to the audio.
QByteArray slice(const QByteArray &pcm, int rate, int channels, double start, double end);

} // namespace AudioPlayground
