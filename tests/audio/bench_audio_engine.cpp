// Prints the audio engine's figures for server/audio/engine/README.md:
//   round-trip WER (flite -> 16 kHz -> pocketsphinx) over tests/audio/data/sentences.txt,
//   WER on the pocketsphinx-testdata recordings that come with transcriptions,
//   recognition speed (audio seconds per wall second, one thread),
//   TTS time to first chunk and chars/s for 200 and 4,000 characters.
// Usage: bench_audio_engine [--voices alloy,echo,fable] [--sentences FILE] [--limit N]
#include "AudioTestUtil.h"
#include "SpeechRecognizer.h"

#include <cstdio>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QRegularExpression>

using namespace AudioTest;

namespace {
struct Score
{
    int errors = 0;
    int words = 0;
    double audio = 0;
    double wall = 0;
    double wer() const { return words ? double(errors) / words : 0; }
};

Transcript recognize(SpeechRecognizer &r, const std::vector<int16_t> &audio, Score &score)
{
    QElapsedTimer timer;
    timer.start();
    r.begin();
    for (size_t at = 0; at < audio.size(); at += 4096)
        r.feed(audio.data() + at, std::min<qsizetype>(4096, qsizetype(audio.size() - at)));
    Transcript t = r.finish();
    score.wall += timer.nsecsElapsed() / 1e9;
    score.audio += t.duration;
    return t;
}

void add(Score &s, const QString &reference, const QString &heard)
{
    const QStringList ref = words(reference);
    s.errors += editDistance(ref, words(heard));
    s.words += int(ref.size());
}

std::vector<int16_t> padded(std::vector<int16_t> audio)
{
    // Half a second of silence each side, as a recording would have.
    audio.insert(audio.begin(), 8000, 0);
    audio.insert(audio.end(), 8000, 0);
    return audio;
}

// "<s> words </s> (id)" lines, the testdata's transcription format.
QMap<QString, QString> transcriptions(const QString &file)
{
    QMap<QString, QString> out;
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly))
        return out;
    static const QRegularExpression line(QStringLiteral("^(.*)\\(([^)]+)\\)\\s*$"));
    for (const QString &l : QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'))) {
        const auto m = line.match(l);
        if (!m.hasMatch())
            continue;
        QString text = m.captured(1);
        text.remove(QStringLiteral("<s>")).remove(QStringLiteral("</s>"));
        out.insert(m.captured(2).trimmed(), text.simplified());
    }
    return out;
}

void ttsFigures(const QString &voiceName, const QString &text)
{
    const auto voice = VoiceCatalog::builtin().find(voiceName);
    QElapsedTimer timer;
    timer.start();
    double first = -1;
    qint64 bytes = 0;
    SpeechSynthesizer::synthesize(*voice, text, {}, [&](const QByteArray &pcm) {
        if (first < 0)
            first = timer.nsecsElapsed() / 1e6;
        bytes += pcm.size();
        return true;
    });
    const double total = timer.nsecsElapsed() / 1e9;
    const double audio =
        double(bytes) / (SpeechSynthesizer::kRate * SpeechSynthesizer::kChannels * 2);
    std::printf("tts %-8s %5lld chars: first chunk %6.1f ms, total %6.2f s, %7.0f chars/s, "
                "%5.1f s audio (%.0fx real time)\n",
                qPrintable(voiceName), text.size(), first, total, text.size() / total, audio,
                audio / total);
}

QString textOf(const QStringList &sentences, qsizetype chars)
{
    QString text;
    for (qsizetype i = 0; text.size() < chars; ++i)
        text += sentences.at(i % sentences.size()) + QLatin1Char(' ');
    // Cut at the last sentence end at or before `chars` when there is one near.
    text.truncate(chars);
    return text;
}
} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QStringList voices = {"alloy", "echo", "fable"};
    QString sentencesFile = QStringLiteral(SENTENCES_FILE);
    int limit = 0;
    const QStringList args = app.arguments();
    for (qsizetype i = 1; i + 1 < args.size(); i += 2) {
        if (args[i] == "--voices")
            voices = args[i + 1].split(',');
        else if (args[i] == "--sentences")
            sentencesFile = args[i + 1];
        else if (args[i] == "--limit")
            limit = args[i + 1].toInt();
    }
    QFile f(sentencesFile);
    if (!f.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "cannot read %s\n", qPrintable(sentencesFile));
        return 1;
    }
    QStringList sentences = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    if (limit > 0)
        sentences = sentences.mid(0, limit);

    QString error;
    QElapsedTimer load;
    load.start();
    auto recognizer = SpeechRecognizer::create(QString(), &error);
    if (!recognizer) {
        std::fprintf(stderr, "%s\n", qPrintable(error));
        return 1;
    }
    std::printf("model load: %.2f s\n", load.elapsed() / 1000.0);

    Score all;
    for (const QString &voice : voices) {
        Score s;
        for (const QString &sentence : sentences) {
            const auto audio = padded(pcm48ToMono16k(synthesize(voice, sentence)));
            add(s, sentence, recognize(*recognizer, audio, s).text);
        }
        std::printf("round trip %-8s %3lld sentences, %4d words: WER %.3f; recognition %.1f s "
                    "audio in %.1f s = %.1f audio-s per wall-s\n",
                    qPrintable(voice), sentences.size(), s.words, s.wer(), s.audio, s.wall,
                    s.audio / s.wall);
        all.errors += s.errors;
        all.words += s.words;
        all.audio += s.audio;
        all.wall += s.wall;
    }
    std::printf("round trip all voices: WER %.3f over %d words; %.1f audio-s per wall-s\n",
                all.wer(), all.words, all.audio / all.wall);

    // Debian's pocketsphinx-testdata: recordings with their transcriptions.
    const QString data = QStringLiteral("/usr/share/pocketsphinx/test/data");
    if (QDir(data).exists()) {
        struct Set
        {
            const char *name, *folder, *transcription;
        };
        for (const Set &set : {Set{"librivox", "librivox", "librivox/transcription"},
                               Set{"cards", "cards", "cards/cards.transcription"}}) {
            Score s;
            const auto refs = transcriptions(data + '/' + set.transcription);
            for (auto it = refs.begin(); it != refs.end(); ++it) {
                QFile wav(data + '/' + set.folder + '/' + it.key() + ".wav");
                if (!wav.open(QIODevice::ReadOnly))
                    continue;
                add(s, it.value(), recognize(*recognizer, toMono(wav.readAll(), 16000), s).text);
            }
            std::printf("testdata %-8s %d recordings, %3d words: WER %.3f\n", set.name,
                        int(refs.size()), s.words, s.wer());
        }
        QFile raw(data + "/goforward.raw");
        if (raw.open(QIODevice::ReadOnly)) {
            const QByteArray b = raw.readAll();
            const auto *p = reinterpret_cast<const int16_t *>(b.constData());
            Score s;
            add(s, "go forward ten meters",
                recognize(*recognizer, std::vector<int16_t>(p, p + b.size() / 2), s).text);
            std::printf("testdata goforward 1 recording,    4 words: WER %.3f\n", s.wer());
        }
    } else {
        std::printf("testdata: %s missing (pocketsphinx-testdata)\n", qPrintable(data));
    }

    const QStringList spanish = {
        "Buenos días, hoy hace buen tiempo.", "Vamos a la playa por la tarde.",
        "El tren sale a las nueve de la mañana.", "Mi hermana vive cerca del mercado."};
    for (qsizetype chars : {200, 4000}) {
        ttsFigures("alloy", textOf(sentences, chars));
        ttsFigures("es-news", textOf(spanish, chars));
    }
    return 0;
}
