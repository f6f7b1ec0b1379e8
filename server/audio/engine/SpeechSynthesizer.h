#pragma once

#include "Voices.h"

#include <atomic>
#include <functional>
#include <optional>
#include <QByteArray>
#include <QList>
#include <QString>

// How one request wants the voice changed.
struct SpeechParams
{
    double speed = 1.0;            // OpenAI's speed, 0.25 to 4.0 (validated by the caller)
    std::optional<double> pitchHz; // voice cloning (approximate): target mean F0
    std::optional<double> syllablesPerSecond; // voice cloning (approximate): target rate
};

// Text to speech on the local engines: flite for the English voices, espeak-ng for the rest.
// Output is always 48,000 Hz, 16-bit, 2 channels, interleaved s16le (the service's format),
// delivered sentence by sentence as it is synthesized so the first audio leaves early.
//
// Both engines are C libraries with process-wide state (espeak-ng's whole API; flite's voice
// registrations), so calls into each engine are serialised inside; callers may call from any
// number of threads.
namespace SpeechSynthesizer {
constexpr int kRate = 48'000;
constexpr int kChannels = 2;

// sink gets chunks of 48 kHz stereo s16le bytes; returning false stops synthesis. Returns an
// empty string on success, else a message (unknown engine voice, engine failure; "cancelled"
// when the sink or `cancel` stopped it).
// The text is spoken sentence by sentence (a sentence longer than 160 characters is cut at a
// pause); `sentence`, when given, is called before each sentence's first audio reaches the
// sink, with the characters it accounts for (sentenceCharacters), so a caller can tell which
// sentence each byte of audio belongs to: the audio from one call to the next.
QString synthesize(const VoiceSpec &voice, const QString &text, const SpeechParams &params,
                   const std::function<bool(const QByteArray &pcm)> &sink,
                   const std::atomic_bool *cancel = nullptr,
                   const std::function<void(qint64 characters)> &sentence = {});

// The sentences synthesize() speaks, as the characters (Unicode code points, as
// QString::toUcs4() counts them) each accounts for: its own, the spaces and wordless text
// before it, and for the last one everything after it. They add up to the text's length;
// a text without words has none.
QList<qint64> sentenceCharacters(const QString &text);

// Whether the engine voice exists in this installation (flite voice linked in, espeak-ng voice
// data present).
bool available(const VoiceSpec &voice);
} // namespace SpeechSynthesizer

// What the approximate voice cloning measures of a reference recording (16 kHz mono s16).
struct ReferenceVoice
{
    double seconds = 0;            // voiced and unvoiced, the whole reference
    double meanPitchHz = 0;        // mean F0 over voiced frames (0: no voiced frames)
    double syllablesPerSecond = 0; // speaking rate from energy peaks over speech time
};
ReferenceVoice analyzeReference(const int16_t *samples, qsizetype count, int rate);
