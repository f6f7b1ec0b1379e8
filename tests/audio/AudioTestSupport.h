#pragma once

#include "SpeechRecognizer.h"
#include "SpeechSynthesizer.h"
#include "Voices.h"
#include "Wav.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <vector>

// Test audio made with the project's own engines: speech from a catalog voice, as 48 kHz
// stereo or resampled to 16 kHz mono, and a multipart/form-data body builder.
namespace AudioTest {

// 48 kHz stereo s16le speech of `text` in `voice` (fails the test process on an engine error).
inline QByteArray speak(const QString &text, const QString &voice = QStringLiteral("alloy"))
{
    const auto v = VoiceCatalog::builtin().find(voice);
    if (!v)
        qFatal("no voice %s", qPrintable(voice));
    QByteArray pcm;
    const QString error =
        SpeechSynthesizer::synthesize(*v, text, SpeechParams{}, [&](const QByteArray &chunk) {
            pcm += chunk;
            return true;
        });
    if (!error.isEmpty())
        qFatal("synthesis failed: %s", qPrintable(error));
    return pcm;
}

// 48 kHz stereo s16 to 16 kHz mono by averaging (speech-band content, enough for tests).
inline QByteArray toMono16k(const QByteArray &stereo48k)
{
    const auto *s = reinterpret_cast<const int16_t *>(stereo48k.constData());
    const qsizetype frames = stereo48k.size() / 4;
    QByteArray out;
    out.resize((frames / 3) * 2);
    auto *d = reinterpret_cast<int16_t *>(out.data());
    for (qsizetype i = 0; i + 2 < frames; i += 3) {
        int sum = 0;
        for (int k = 0; k < 3; ++k)
            sum += s[2 * (i + k)] + s[2 * (i + k) + 1];
        d[i / 3] = int16_t(sum / 6);
    }
    return out;
}

// The largest absolute sample of s16le audio.
inline int peak(const QByteArray &pcm)
{
    const auto *s = reinterpret_cast<const int16_t *>(pcm.constData());
    int m = 0;
    for (qsizetype i = 0; i < pcm.size() / 2; ++i)
        m = std::max(m, std::abs(int(s[i])));
    return m;
}

struct Part
{
    Part(QByteArray n, QByteArray v, QByteArray file = {},
         QByteArray t = "application/octet-stream")
        : name(std::move(n)), value(std::move(v)), filename(std::move(file)), type(std::move(t))
    {
    }
    QByteArray name;
    QByteArray value;
    QByteArray filename; // non-empty: a file part
    QByteArray type;
};

inline QByteArray multipart(const QList<Part> &parts, const QByteArray &boundary)
{
    QByteArray body;
    for (const Part &p : parts) {
        body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + p.name + "\"";
        if (!p.filename.isEmpty())
            body += "; filename=\"" + p.filename + "\"\r\nContent-Type: " + p.type;
        body += "\r\n\r\n" + p.value + "\r\n";
    }
    body += "--" + boundary + "--\r\n";
    return body;
}

// Word error rate of `hyp` against `ref` (lower-cased, punctuation dropped).
inline double wordErrorRate(const QString &ref, const QString &hyp)
{
    auto words = [](QString t) {
        t = t.toLower();
        for (QChar &c : t)
            if (!c.isLetterOrNumber() && c != u'\'')
                c = u' ';
        return t.split(u' ', Qt::SkipEmptyParts);
    };
    const QStringList r = words(ref), h = words(hyp);
    std::vector<int> prev(h.size() + 1), cur(h.size() + 1);
    for (int j = 0; j <= h.size(); ++j)
        prev[j] = j;
    for (int i = 1; i <= r.size(); ++i) {
        cur[0] = i;
        for (int j = 1; j <= h.size(); ++j)
            cur[j] = std::min(
                {prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r[i - 1] == h[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return r.isEmpty() ? (h.isEmpty() ? 0.0 : 1.0) : double(prev[h.size()]) / r.size();
}

} // namespace AudioTest
