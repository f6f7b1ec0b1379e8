#pragma once

// Shared by the audio engine suites and the benchmark: synthesized speech as 16 kHz mono, the
// form the recognizer and analyzeReference take, and word error rate.

#include "AudioDecoder.h"
#include "SpeechSynthesizer.h"
#include "Wav.h"

#include <algorithm>
#include <cmath>
#include <QRegularExpression>
#include <QStringList>
#include <vector>

namespace AudioTest {

// 48 kHz stereo s16 bytes, the synthesizer's output, for the whole text.
inline QByteArray synthesize(const QString &voiceName, const QString &text, double speed = 1.0,
                             QString *error = nullptr)
{
    const auto voice = VoiceCatalog::builtin().find(voiceName);
    QByteArray pcm;
    if (!voice)
        return pcm;
    SpeechParams params;
    params.speed = speed;
    const QString e = SpeechSynthesizer::synthesize(*voice, text, params, [&](const QByteArray &b) {
        pcm += b;
        return true;
    });
    if (error)
        *error = e;
    return pcm;
}

// Any decodable bytes to `rate` Hz mono through AudioDecoder.
inline std::vector<int16_t> toMono(const QByteArray &encoded, int rate)
{
    std::vector<int16_t> out;
    auto decoder = AudioDecoder::fromBytes(encoded);
    if (!decoder->open())
        return out;
    decoder->decode(rate, 1, [&](const int16_t *s, qsizetype n) {
        out.insert(out.end(), s, s + n);
        return true;
    });
    return out;
}

inline std::vector<int16_t> pcm48ToMono16k(const QByteArray &pcm48stereo)
{
    return toMono(Wav::file(SpeechSynthesizer::kRate, SpeechSynthesizer::kChannels, pcm48stereo),
                  16000);
}

inline double seconds48(const QByteArray &pcm)
{
    return double(pcm.size()) / (SpeechSynthesizer::kRate * SpeechSynthesizer::kChannels * 2);
}

inline double rms(const int16_t *s, qsizetype n)
{
    double e = 0;
    for (qsizetype i = 0; i < n; ++i)
        e += double(s[i]) * s[i];
    return n ? std::sqrt(e / n) : 0;
}

// Lower case words, punctuation dropped, digits kept.
inline QStringList words(const QString &text)
{
    QString t = text.toLower();
    t.replace(QRegularExpression(QStringLiteral("[^a-z0-9' ]")), QStringLiteral(" "));
    t.remove(QLatin1Char('\''));
    return t.split(QLatin1Char(' '), Qt::SkipEmptyParts);
}

// Word-level edit distance: substitutions, insertions, deletions.
inline int editDistance(const QStringList &ref, const QStringList &hyp)
{
    std::vector<int> prev(size_t(hyp.size()) + 1), cur(prev.size());
    for (size_t j = 0; j < prev.size(); ++j)
        prev[j] = int(j);
    for (qsizetype i = 1; i <= ref.size(); ++i) {
        cur[0] = int(i);
        for (qsizetype j = 1; j <= hyp.size(); ++j) {
            const int sub = prev[size_t(j - 1)] + (ref[i - 1] == hyp[j - 1] ? 0 : 1);
            cur[size_t(j)] = std::min({sub, prev[size_t(j)] + 1, cur[size_t(j - 1)] + 1});
        }
        std::swap(prev, cur);
    }
    return prev[size_t(hyp.size())];
}

} // namespace AudioTest
