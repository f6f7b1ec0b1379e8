#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <QList>
#include <QString>

struct RecognizedWord
{
    QString word;
    double start = 0; // seconds from the start of the audio
    double end = 0;
    double probability = 0; // 0..1, from the decoder's posterior
};

struct RecognizedSegment
{
    double start = 0;
    double end = 0;
    QString text;
    QList<RecognizedWord> words;
    double avgLogprob = 0; // natural-log average per word (0 when the engine gives none)
    double noSpeechProb = 0;
};

struct Transcript
{
    QString text; // the segments' texts joined by spaces
    QList<RecognizedSegment> segments;
    double duration = 0; // seconds of audio fed
};

// English speech recognition with pocketsphinx and its en-us model from Debian
// (pocketsphinx-en-us). Audio is fed as 16 kHz mono s16 in chunks of any size; it is cut into
// utterances on silences (and at a maximum length when nobody pauses), each decoded on its own,
// so memory stays bounded by one utterance whatever the length and the segments are natural.
// One recognizer per thread at a time; loading the model takes a while, so callers keep a pool.
class SpeechRecognizer
{
public:
    static constexpr int kRate = 16'000;

    // modelDir empty: Debian's /usr/share/pocketsphinx/model/en-us. nullptr and *error set when
    // the model cannot be loaded.
    static std::unique_ptr<SpeechRecognizer> create(const QString &modelDir, QString *error);
    ~SpeechRecognizer();

    // One transcription: begin(), feed() as often as needed, finish(). begin() resets.
    void begin(const std::atomic_bool *cancel = nullptr);
    // false when cancelled.
    bool feed(const int16_t *samples, qsizetype count);
    Transcript finish();

private:
    SpeechRecognizer();
    struct Private;
    std::unique_ptr<Private> d;
};
