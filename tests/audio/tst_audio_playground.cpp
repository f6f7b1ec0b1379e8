// AudioPlayground (server/audio): the window's playground API on the family's engines, without
// widgets. The functions block, so the tests call them directly (as a worker would).

#include "AudioFamily.h"
#include "AudioPlayground.h"
#include "AudioWorkers.h"
#include "Money.h"
#include "ServerSettings.h"
#include "Wav.h"

#include <QJsonObject>
#include <QScopeGuard>
#include <QSemaphore>
#include <QTemporaryDir>
#include <QtEndian>
#include <QTest>

namespace {

const QString kSentence = QStringLiteral("The quick brown fox jumps over the lazy dog.");

} // namespace

class TestAudioPlayground : public QObject
{
    Q_OBJECT

private slots:
    void wordErrorRate()
    {
        using AudioPlayground::wordErrorRate;
        QCOMPARE(AudioPlayground::words(QStringLiteral("It's a Dog, isn't it?")),
                 (QStringList{"its", "a", "dog", "isnt", "it"}));
        QCOMPARE(wordErrorRate(kSentence, kSentence.toUpper()), 0.0);
        QCOMPARE(wordErrorRate(QStringLiteral("a b c d"), QStringLiteral("a x c")), 0.5);
        QCOMPARE(wordErrorRate(QStringLiteral("a b"), QStringLiteral("a b c d")), 1.0);
        QCOMPARE(wordErrorRate(QString(), QString()), 0.0);
        QCOMPARE(wordErrorRate(QString(), QStringLiteral("x y")), 2.0);
    }

    void sliceClampsToFrames()
    {
        QByteArray pcm;
        for (int i = 0; i < 100; ++i) // 100 stereo frames at 10 Hz: 10 s
            pcm += QByteArray(4, char(i));
        const QByteArray part = AudioPlayground::slice(pcm, 10, 2, 1.0, 2.5);
        QCOMPARE(part.size(), 15 * 4);
        QCOMPARE(part.at(0), char(10));
        QCOMPARE(AudioPlayground::slice(pcm, 10, 2, 9.5, 20).size(), 5 * 4);
        QVERIFY(AudioPlayground::slice(pcm, 10, 2, 3, 2).isEmpty());
        QVERIFY(AudioPlayground::slice(pcm, 10, 2, -5, 0).isEmpty());
    }

    void pricesAndModels()
    {
        const AudioConfig config = AudioConfig::defaults();
        QCOMPARE(AudioPlayground::speechModel(config)->id, QStringLiteral("vendorE-tts-nano"));
        // 0.005 credits per 1,000 characters, rounded up once.
        QCOMPARE(AudioPlayground::speechCost(config, 1000), Money::kUnitsPerCredit / 200);
        QCOMPARE(AudioPlayground::speechCost(config, 1), qint64(5000));
        QCOMPARE(AudioPlayground::speechCost(config, 0), qint64(0));
        const auto models = AudioPlayground::transcriptionModels(config);
        QVERIFY(models.size() >= 2);
        QCOMPARE(models.first()->id, QStringLiteral("rapid")); // local first
        QVERIFY(AudioPlayground::runsLocally(config, *models.first()));
        QVERIFY(!AudioPlayground::runsLocally(config, *config.model("vendorB-asr-1")));
        QVERIFY(!AudioPlayground::runsLocally(config, *config.model("vendorE-tts-nano")));
    }

    void synthesizeWavAndPcm()
    {
        AudioFamily family;
        const auto wav =
            AudioPlayground::synthesize(family, QStringLiteral("alloy"), kSentence, SpeechParams{},
                                        AudioPlayground::SpeechFormat::Wav);
        QVERIFY2(wav.ok(), qPrintable(wav.error));
        QCOMPARE(wav.characters, kSentence.size());
        QVERIFY2(wav.seconds > 1.0 && wav.seconds < 6.0, qPrintable(QString::number(wav.seconds)));
        // A whole file: the real sizes, not the streaming marker.
        QCOMPARE(wav.file.size(), wav.pcm.size() + 44);
        QCOMPARE(wav.file.left(4), QByteArray("RIFF"));
        QCOMPARE(qFromLittleEndian<quint32>(wav.file.constData() + 4),
                 quint32(wav.file.size() - 8));
        QCOMPARE(qFromLittleEndian<quint32>(wav.file.constData() + 40), quint32(wav.pcm.size()));
        QCOMPARE(qFromLittleEndian<quint32>(wav.file.constData() + 24), quint32(48000));

        SpeechParams fast;
        fast.speed = 2.0;
        const auto pcm = AudioPlayground::synthesize(family, QStringLiteral("alloy"), kSentence,
                                                     fast, AudioPlayground::SpeechFormat::Pcm);
        QVERIFY2(pcm.ok(), qPrintable(pcm.error));
        QCOMPARE(pcm.file, pcm.pcm);
        QVERIFY2(pcm.seconds < wav.seconds * 0.75,
                 qPrintable(QStringLiteral("%1 vs %2").arg(pcm.seconds).arg(wav.seconds)));
    }

    void synthesizeRefusesWhatTheRouteRefuses()
    {
        AudioFamily family;
        const auto fmt = AudioPlayground::SpeechFormat::Wav;
        QVERIFY(AudioPlayground::synthesize(family, QStringLiteral("nobody"), kSentence, {}, fmt)
                    .error.contains(QStringLiteral("nobody")));
        QVERIFY(!AudioPlayground::synthesize(family, QStringLiteral("alloy"), QStringLiteral("  "),
                                             {}, fmt)
                     .ok());
        const auto tooLong = AudioPlayground::synthesize(family, QStringLiteral("alloy"),
                                                         QString(4097, u'a'), {}, fmt);
        QVERIFY(tooLong.error.contains(QStringLiteral("4096")));
        std::atomic_bool cancel{true};
        const auto cancelled = AudioPlayground::synthesize(family, QStringLiteral("alloy"),
                                                           kSentence, {}, fmt, &cancel);
        QVERIFY(!cancelled.ok());
        QVERIFY(cancelled.pcm.isEmpty());
    }

    void transcribeBytesAndFile()
    {
        AudioFamily family;
        const auto speech = AudioPlayground::synthesize(family, QStringLiteral("alloy"), kSentence,
                                                        {}, AudioPlayground::SpeechFormat::Wav);
        QVERIFY(speech.ok());
        const auto t = AudioPlayground::transcribe(family, speech.file);
        QVERIFY2(t.ok(), qPrintable(t.error));
        QVERIFY(!t.transcript.segments.isEmpty());
        QVERIFY2(AudioPlayground::wordErrorRate(kSentence, t.transcript.text) < 0.5,
                 qPrintable(t.transcript.text));
        // Frames at 16 kHz, and the decoded audio kept for segment playback.
        QVERIFY(qAbs(double(t.frames) / 16000 - speech.seconds) < 0.05);
        QCOMPARE(t.pcm.size(), t.frames * 2);

        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("speech.wav"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(speech.file);
        f.close();
        const auto fromFile = AudioPlayground::transcribeFile(family, path);
        QVERIFY2(fromFile.ok(), qPrintable(fromFile.error));
        // Not compared word for word: a reused recognizer (pocketsphinx's live cepstral mean
        // carries over between runs, it seems) heard "jumps" once and "jumped" the next time.
        QVERIFY2(AudioPlayground::wordErrorRate(kSentence, fromFile.transcript.text) < 0.5,
                 qPrintable(fromFile.transcript.text));
        QCOMPARE(fromFile.frames, t.frames);
    }

    // Segment times are within the audio, also for a recognizer the pool hands out again.
    void segmentTimesOnAReusedRecognizer()
    {
        AudioFamily family;
        const auto speech = AudioPlayground::synthesize(family, QStringLiteral("alloy"), kSentence,
                                                        {}, AudioPlayground::SpeechFormat::Wav);
        QVERIFY(speech.ok());
        for (int pass = 0; pass < 3; ++pass) {
            const auto t = AudioPlayground::transcribe(family, speech.file);
            QVERIFY2(t.ok(), qPrintable(t.error));
            QVERIFY(!t.transcript.segments.isEmpty());
            for (const RecognizedSegment &s : t.transcript.segments)
                QVERIFY2(s.start >= 0 && s.end > s.start && s.end <= speech.seconds + 0.05,
                         qPrintable(QStringLiteral("pass %1: %2 to %3 s of %4 s")
                                        .arg(pass)
                                        .arg(s.start)
                                        .arg(s.end)
                                        .arg(speech.seconds)));
        }
    }

    void transcribeErrors()
    {
        AudioFamily family;
        QVERIFY(!AudioPlayground::transcribe(family, QByteArray("not audio at all")).ok());
        QVERIFY(!AudioPlayground::transcribe(family, QByteArray()).ok());
        QVERIFY(!AudioPlayground::transcribeFile(family, QStringLiteral("/nonexistent.wav")).ok());
        // 50 ms: below the route's 0.1 s minimum.
        const QByteArray blip = Wav::file(16000, 1, QByteArray(1600, '\0'));
        QVERIFY(AudioPlayground::transcribe(family, blip).error.contains(QStringLiteral("0.1 s")));
    }

    void roundTrip()
    {
        AudioFamily family;
        const auto r =
            AudioPlayground::roundTrip(family, QStringLiteral("alloy"), kSentence, SpeechParams{});
        QVERIFY2(r.ok(), qPrintable(r.error));
        QVERIFY2(r.wer < 0.5, qPrintable(r.transcription.transcript.text));
        QCOMPARE(r.wer, AudioPlayground::wordErrorRate(kSentence, r.transcription.transcript.text));
    }

    // The playground shares the family's bounded pool: a full pool refuses.
    void sharesTheFamilyPool()
    {
        QSemaphore release; // outlives the family, whose pool waits for the blocked job
        AudioFamily family;
        family.configure(QJsonObject{{"workers", 1}, {"queue", 0}}, ServerSettings{});
        const auto unblock = qScopeGuard([&] { release.release(); });
        QVERIFY(family.workers().tryRun([&] { release.acquire(); }));
        QVERIFY(!family.workers().tryRun([] {}));
    }
};

QTEST_GUILESS_MAIN(TestAudioPlayground)
#include "tst_audio_playground.moc"
