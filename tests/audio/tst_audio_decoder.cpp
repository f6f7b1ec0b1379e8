// AudioDecoder on every accepted container, made at test time with the ffmpeg program from
// speech synthesized by SpeechSynthesizer, and on what is not audio.
#include "AudioDecoder.h"
#include "AudioTestUtil.h"
#include "Wav.h"

#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace AudioTest;

namespace {
struct Decoded
{
    qint64 frames = -1;
    qsizetype largestChunk = 0;
    std::vector<int16_t> samples;
};

Decoded decodeAll(AudioDecoder &decoder, int rate, int channels)
{
    Decoded out;
    out.frames = decoder.decode(rate, channels, [&](const int16_t *s, qsizetype frames) {
        out.largestChunk = std::max(out.largestChunk, frames);
        out.samples.insert(out.samples.end(), s, s + frames * channels);
        return true;
    });
    return out;
}
} // namespace

class TestAudioDecoder : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_ffmpeg;
    double m_seconds = 0; // the source's exact duration
    QByteArray m_sourceWav;

    QString path(const QString &name) const { return m_dir.filePath(name); }

    bool encode(const QString &out, const QStringList &args)
    {
        QProcess p;
        p.start(m_ffmpeg,
                QStringList{"-hide_banner", "-loglevel", "error", "-y", "-i", path("source.wav")} +
                    args + QStringList{path(out)});
        if (!p.waitForFinished(60000) || p.exitCode() != 0) {
            qWarning("ffmpeg %s: %s", qPrintable(out), p.readAllStandardError().constData());
            return false;
        }
        return true;
    }

    static QByteArray read(const QString &file)
    {
        QFile f(file);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }

private slots:
    void initTestCase()
    {
        m_ffmpeg = QStandardPaths::findExecutable("ffmpeg");
        if (m_ffmpeg.isEmpty())
            QSKIP(
                "the ffmpeg program is needed for the fixtures (installer/build-deps.sh --tests)");
        QVERIFY(m_dir.isValid());
        const QByteArray pcm =
            synthesize("alloy", "The quick brown fox jumps over the lazy dog. Then it runs away.");
        QVERIFY(pcm.size() > 48000 * 4);
        m_seconds = seconds48(pcm);
        m_sourceWav = Wav::file(48000, 2, pcm);
        QFile f(path("source.wav"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(m_sourceWav);
        f.close();
        // The contract's containers, with the codecs clients send in them.
        QVERIFY(encode("a.mp3", {"-c:a", "libmp3lame", "-b:a", "64k"}));
        QVERIFY(encode("a.m4a", {"-c:a", "aac", "-b:a", "64k"}));
        QVERIFY(encode("a.mp4", {"-c:a", "aac", "-ar", "44100", "-ac", "1"}));
        QVERIFY(encode("a.webm", {"-c:a", "libopus", "-b:a", "32k"}));
        QVERIFY(encode("vorbis.webm", {"-c:a", "libvorbis"}));
        QVERIFY(encode("a.ogg", {"-c:a", "libvorbis"}));
        QVERIFY(encode("a.opus", {"-c:a", "libopus"}));
        QVERIFY(encode("a.flac", {"-c:a", "flac"}));
        QVERIFY(encode("a.mpeg", {"-c:a", "libmp3lame", "-f", "mpeg"}));
        QVERIFY(encode("mp2.mpeg", {"-c:a", "mp2", "-f", "mpeg"}));
        QVERIFY(encode("a.mpga", {"-c:a", "libmp3lame", "-f", "mp3"}));
        QVERIFY(encode("a.wav", {"-ar", "16000", "-ac", "1"}));
        qInfo("source: %.3f s of speech", m_seconds);
    }

    void containers_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("container");
        QTest::addColumn<QString>("codec");
        QTest::newRow("mp3") << "a.mp3"
                             << "mp3"
                             << "mp3";
        QTest::newRow("m4a aac") << "a.m4a"
                                 << "mov,mp4,m4a,3gp,3g2,mj2"
                                 << "aac";
        QTest::newRow("mp4 aac 44.1k mono") << "a.mp4"
                                            << "mov,mp4,m4a,3gp,3g2,mj2"
                                            << "aac";
        QTest::newRow("webm opus") << "a.webm"
                                   << "matroska,webm"
                                   << "opus";
        QTest::newRow("webm vorbis") << "vorbis.webm"
                                     << "matroska,webm"
                                     << "vorbis";
        QTest::newRow("ogg vorbis") << "a.ogg"
                                    << "ogg"
                                    << "vorbis";
        QTest::newRow("ogg opus") << "a.opus"
                                  << "ogg"
                                  << "opus";
        QTest::newRow("flac") << "a.flac"
                              << "flac"
                              << "flac";
        QTest::newRow("mpeg mp3") << "a.mpeg"
                                  << "mpeg"
                                  << "mp3";
        QTest::newRow("mpeg mp2") << "mp2.mpeg"
                                  << "mpeg"
                                  << "mp2";
        QTest::newRow("mpga") << "a.mpga"
                              << "mp3"
                              << "mp3";
        QTest::newRow("wav 16k mono") << "a.wav"
                                      << "wav"
                                      << "pcm_s16le";
    }
    void containers()
    {
        QFETCH(QString, file);
        QFETCH(QString, container);
        QFETCH(QString, codec);
        const QByteArray bytes = read(path(file));
        QVERIFY(!bytes.isEmpty());
        for (bool fromFile : {false, true}) {
            auto decoder =
                fromFile ? AudioDecoder::fromFile(path(file)) : AudioDecoder::fromBytes(bytes);
            QVERIFY2(decoder->open(), qPrintable(decoder->message()));
            QCOMPARE(decoder->container(), container);
            QCOMPARE(decoder->codec(), codec);
            QVERIFY(decoder->sourceRate() > 0);
            QVERIFY(decoder->sourceChannels() >= 1);
            const Decoded d = decodeAll(*decoder, 48000, 2);
            QVERIFY2(d.frames > 0, qPrintable(decoder->message()));
            QCOMPARE(qsizetype(d.samples.size()), qsizetype(d.frames) * 2);
            QVERIFY(d.largestChunk <= 4800); // 100 ms
            const double seconds = d.frames / 48000.0;
            const double measured = decoder->measureDuration();
            if (!fromFile)
                qInfo("%s: decoded %.3f s, measured %.3f s, stated %.3f s (source %.3f s)",
                      qPrintable(file), seconds, measured, decoder->statedDuration(), m_seconds);
            QVERIFY2(std::abs(seconds - m_seconds) < 0.05, qPrintable(QString::number(seconds)));
            QVERIFY(std::abs(measured - m_seconds) < 0.05);
            if (decoder->statedDuration() >= 0)
                QVERIFY(std::abs(decoder->statedDuration() - m_seconds) < 0.05);
            QVERIFY(!decoder->truncated());
            QVERIFY(rms(d.samples.data(), qsizetype(d.samples.size())) > 300);
            // Decoding again starts from the beginning.
            QVERIFY(std::abs(decodeAll(*decoder, 16000, 1).frames - d.frames / 3) <= 2);
        }
    }

    void resamplingGivesExactFrameCounts()
    {
        // 2.000 s at 16 kHz mono, as Wav::file writes it.
        std::vector<int16_t> tone(32000);
        for (size_t i = 0; i < tone.size(); ++i)
            tone[i] = int16_t(8000 * std::sin(2 * M_PI * 220 * double(i) / 16000));
        const QByteArray wav = Wav::file(
            16000, 1,
            QByteArray(reinterpret_cast<const char *>(tone.data()), qsizetype(tone.size() * 2)));
        auto decoder = AudioDecoder::fromBytes(wav);
        QVERIFY(decoder->open());
        QCOMPARE(decoder->statedDuration(), 2.0);
        QCOMPARE(decodeAll(*decoder, 48000, 2).frames, 96000);
        QCOMPARE(decodeAll(*decoder, 22050, 1).frames, 44100);
        QCOMPARE(decodeAll(*decoder, 16000, 1).samples, tone);

        // A streamed header (unknown sizes) reads to the end of the bytes.
        const QByteArray streamed = Wav::header(16000, 1) + wav.mid(44);
        auto s = AudioDecoder::fromBytes(streamed);
        QVERIFY2(s->open(), qPrintable(s->message()));
        QCOMPARE(decodeAll(*s, 16000, 1).samples, tone);
    }

    void wavHeaderFields()
    {
        const QByteArray h = Wav::header(48000, 2, 1000);
        QCOMPARE(h.size(), 44);
        QCOMPARE(h.left(4), QByteArray("RIFF"));
        QCOMPARE(qFromLittleEndian<quint32>(h.constData() + 4), 1036u);
        QCOMPARE(qFromLittleEndian<quint32>(h.constData() + 24), 48000u);
        QCOMPARE(qFromLittleEndian<quint32>(h.constData() + 28), 192000u);
        QCOMPARE(qFromLittleEndian<quint16>(h.constData() + 32), quint16(4));
        QCOMPARE(qFromLittleEndian<quint32>(h.constData() + 40), 1000u);
        const QByteArray streamed = Wav::header(48000, 2);
        QCOMPARE(qFromLittleEndian<quint32>(streamed.constData() + 4), Wav::kUnknownSize);
        QCOMPARE(qFromLittleEndian<quint32>(streamed.constData() + 40), Wav::kUnknownSize);
    }

    void emptyIsEmpty()
    {
        auto d = AudioDecoder::fromBytes(QByteArray());
        QVERIFY(!d->open());
        QCOMPARE(d->error(), AudioDecoder::Error::Empty);
        QFile(path("empty.mp3")).open(QIODevice::WriteOnly);
        auto f = AudioDecoder::fromFile(path("empty.mp3"));
        QVERIFY(!f->open());
        QCOMPARE(f->error(), AudioDecoder::Error::Empty);
        QCOMPARE(decodeAll(*f, 16000, 1).frames, -1);
    }

    void randomBytesAreNotAudio()
    {
        QRandomGenerator rng(20240611);
        for (int size : {1, 10, 100, 1000, 10000, 100000, 1000000}) {
            for (int round = 0; round < 5; ++round) {
                QByteArray bytes(size, Qt::Uninitialized);
                for (char &c : bytes)
                    c = char(rng.generate() & 0xFF);
                auto d = AudioDecoder::fromBytes(bytes);
                QVERIFY2(!d->open(), qPrintable(QStringLiteral("%1 bytes: %2 %3")
                                                    .arg(size)
                                                    .arg(d->container(), d->codec())));
                QCOMPARE(d->error(), AudioDecoder::Error::NotAudio);
                QVERIFY(d->message().contains("mp3"));
            }
        }
        for (const QByteArray &text :
             {QByteArray("hello world"), QByteArray("{\"json\": true}"), QByteArray(5000, 'a'),
              QByteArray("#EXTM3U\nhttp://x/a.mp3\n")}) {
            auto d = AudioDecoder::fromBytes(text);
            QVERIFY(!d->open());
            QCOMPARE(d->error(), AudioDecoder::Error::NotAudio);
        }
        // A PNG is a container FFmpeg knows, but not an accepted audio one.
        QByteArray png = QByteArray::fromHex("89504e470d0a1a0a0000000d49484452000000010000000108"
                                             "0600000001f15c4890000000d4944415478da63f8ffff3f0005"
                                             "fe02fea7d6a8c50000000049454e44ae426082");
        auto p = AudioDecoder::fromBytes(png);
        QVERIFY(!p->open());
        QCOMPARE(p->error(), AudioDecoder::Error::NotAudio);
    }

    void corruptStreamIsUndecodable()
    {
        // A valid FLAC header (the metadata blocks) followed by noise instead of frames.
        QByteArray flac = read(path("a.flac"));
        qsizetype at = 4;
        for (bool last = false; !last;) {
            last = uchar(flac.at(at)) & 0x80;
            const int length = (uchar(flac.at(at + 1)) << 16) | (uchar(flac.at(at + 2)) << 8) |
                               uchar(flac.at(at + 3));
            at += 4 + length;
        }
        QRandomGenerator rng(7);
        for (qsizetype i = at; i < flac.size(); ++i)
            flac[i] = char(rng.generate() & 0xFF);
        auto d = AudioDecoder::fromBytes(flac);
        QVERIFY(!d->open());
        QCOMPARE(d->error(), AudioDecoder::Error::Undecodable);
        qInfo("%s", qPrintable(d->message()));
    }

    void truncatedDecodesWhatThereIs_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<double>("keep");
        QTest::newRow("mp3 half") << "a.mp3" << 0.5;
        QTest::newRow("wav 60%") << "a.wav" << 0.6;
        QTest::newRow("wav odd byte") << "a.wav" << 0.7001;
        QTest::newRow("flac half") << "a.flac" << 0.5;
    }
    void truncatedDecodesWhatThereIs()
    {
        QFETCH(QString, file);
        QFETCH(double, keep);
        const QByteArray whole = read(path(file));
        const QByteArray cut = whole.left(qsizetype(whole.size() * keep));
        auto d = AudioDecoder::fromBytes(cut);
        QVERIFY2(d->open(), qPrintable(d->message()));
        const Decoded out = decodeAll(*d, 16000, 1);
        const double seconds = out.frames / 16000.0;
        qInfo("%s cut to %.0f%%: %.2f s of %.2f s, truncated=%d", qPrintable(file), keep * 100,
              seconds, m_seconds, d->truncated());
        QVERIFY(seconds > m_seconds * keep * 0.7 && seconds < m_seconds * keep * 1.2);
        QVERIFY(d->truncated());
    }

    void contentNotName()
    {
        // WAV bytes in a file called .mp3, and mp3 bytes called .wav.
        QFile::copy(path("a.wav"), path("wav-inside.mp3"));
        QFile::copy(path("a.mp3"), path("mp3-inside.wav"));
        auto w = AudioDecoder::fromFile(path("wav-inside.mp3"));
        QVERIFY(w->open());
        QCOMPARE(w->container(), QStringLiteral("wav"));
        QVERIFY(std::abs(decodeAll(*w, 16000, 1).frames / 16000.0 - m_seconds) < 0.05);
        auto m = AudioDecoder::fromFile(path("mp3-inside.wav"));
        QVERIFY(m->open());
        QCOMPARE(m->container(), QStringLiteral("mp3"));
    }

    void cancelStops()
    {
        const QByteArray bytes = read(path("a.mp3"));
        // The sink says stop.
        auto d = AudioDecoder::fromBytes(bytes);
        QVERIFY(d->open());
        int calls = 0;
        QCOMPARE(d->decode(48000, 2, [&](const int16_t *, qsizetype) { return ++calls < 3; }), -1);
        QCOMPARE(d->error(), AudioDecoder::Error::Cancelled);
        QCOMPARE(calls, 3);
        // The flag, raised mid-stream.
        std::atomic_bool cancel = false;
        calls = 0;
        QCOMPARE(d->decode(
                     48000, 2,
                     [&](const int16_t *, qsizetype) {
                         if (++calls == 5)
                             cancel = true;
                         return true;
                     },
                     &cancel),
                 -1);
        QCOMPARE(d->error(), AudioDecoder::Error::Cancelled);
        QVERIFY(calls < 10);
        QCOMPARE(d->measureDuration(&cancel), -1.0);
        // Usable again afterwards.
        QVERIFY(d->decode(16000, 1, [](const int16_t *, qsizetype) { return true; }) > 0);
        QCOMPARE(d->error(), AudioDecoder::Error::None);
    }

    void supportedFormatsList()
    {
        QCOMPARE(AudioDecoder::supportedFormats(),
                 (QStringList{"mp3", "mp4", "mpeg", "mpga", "m4a", "wav", "webm", "opus", "flac",
                              "ogg"}));
    }
};

QTEST_GUILESS_MAIN(TestAudioDecoder)
#include "tst_audio_decoder.moc"
