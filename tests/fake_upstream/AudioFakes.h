#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>

// What the fake's audio endpoints produce (README.md, "Audio"): deterministic speech-like PCM
// and the transcripts of OpenAI's five response formats. Pure functions.
namespace AudioFakes {

// OpenAI's speech is 24 kHz mono s16le; fish-speech's decoder runs at 44.1 kHz.
constexpr int kOpenAiRate = 24'000;
constexpr int kFishRate = 44'100;

// Mono s16le "speech" for text: voiced syllables (a gliding fundamental with harmonics under a
// syllable envelope) with short pauses at spaces; 0.3 s plus 60 ms per code point, divided by
// speed. Same text, rate and speed: same samples.
QByteArray speechPcm(const QString &text, int rate, double speed = 1.0);
qint64 speechFrames(const QString &text, int rate, double speed = 1.0);

// A RIFF/WAVE s16le file; `streamed` writes 0xFFFFFFFF as the RIFF and data sizes, as OpenAI's
// streamed WAV does.
QByteArray wav(int rate, int channels, const QByteArray &pcm, bool streamed);

// The transcript the fake "hears": what it was sent, so a test can see each field arrive.
struct Heard
{
    double seconds = 0;
    QString extension; // of the uploaded file name
    qint64 bytes = 0;
    QString language; // as sent (ISO 639-1), empty when not
    QString prompt;
    QString temperature; // as sent, empty when not
};
QString transcriptText(const Heard &heard);

// OpenAI's transcription answer in `format` (json, text, srt, verbose_json, vtt).
// *contentType: application/json or text/plain; charset=utf-8.
QByteArray transcription(const QString &format, const QString &text, double seconds,
                         const QString &language, bool words, bool segments,
                         QByteArray *contentType);

// OpenAI's language names in verbose_json ("en" -> "english").
QString languageName(const QString &code);

// The voices OpenAI's /audio/speech accepts.
const QStringList &openAiVoices();

} // namespace AudioFakes
