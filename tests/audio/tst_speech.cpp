// The voice table, synthesis on flite and espeak-ng, and the reference analysis.
#include "AudioTestUtil.h"
#include "SpeechSynthesizer.h"
#include "Voices.h"

#include <numeric>
#include <QElapsedTimer>
#include <QJsonObject>
#include <QtTest>

using namespace AudioTest;

namespace {
// A short text in each language the table uses (by the part before '-').
QString sampleText(const QString &language)
{
    static const QHash<QString, QString> texts = {
        {QStringLiteral("en"), QStringLiteral("Good morning. The weather is fine today.")},
        {QStringLiteral("cmn"), QStringLiteral("你好，今天天气很好。")},
        {QStringLiteral("yue"), QStringLiteral("你好，今日天氣好好。")},
        {QStringLiteral("ja"), QStringLiteral("こんにちは。きょうは いい てんき です。")},
        {QStringLiteral("ko"), QStringLiteral("안녕하세요. 오늘 날씨가 좋습니다.")},
        {QStringLiteral("es"), QStringLiteral("Buenos días. Hoy hace buen tiempo.")},
        {QStringLiteral("fr"), QStringLiteral("Bonjour. Il fait beau aujourd'hui.")},
        {QStringLiteral("de"), QStringLiteral("Guten Morgen. Heute ist schönes Wetter.")},
        {QStringLiteral("it"), QStringLiteral("Buongiorno. Oggi fa bel tempo.")},
        {QStringLiteral("ru"), QStringLiteral("Доброе утро. Сегодня хорошая погода.")},
        {QStringLiteral("pt"), QStringLiteral("Bom dia. O tempo está bom hoje.")},
        {QStringLiteral("nl"), QStringLiteral("Goedemorgen. Het is mooi weer vandaag.")},
        {QStringLiteral("sv"), QStringLiteral("God morgon. Det är fint väder idag.")},
        {QStringLiteral("pl"), QStringLiteral("Dzień dobry. Dzisiaj jest ładna pogoda.")},
        {QStringLiteral("tr"), QStringLiteral("Günaydın. Bugün hava çok güzel.")},
        {QStringLiteral("vi"), QStringLiteral("Chào buổi sáng. Hôm nay trời đẹp.")},
        {QStringLiteral("hi"), QStringLiteral("सुप्रभात। आज मौसम अच्छा है।")},
        {QStringLiteral("id"), QStringLiteral("Selamat pagi. Hari ini cuacanya cerah.")},
    };
    return texts.value(language.section(QLatin1Char('-'), 0, 0));
}

const QString kLongText = QStringLiteral(
    "The library opens at nine in the morning. Children come in with their parents after "
    "breakfast. The reading room is quiet until noon. In the afternoon students arrive with "
    "heavy bags. Some of them stay until the doors close. The librarian knows most of them by "
    "name. She keeps a list of new books on the front desk. Every week the list grows a little "
    "longer. On Fridays there is a story hour for the youngest readers. Then the whole building "
    "smells of coffee and old paper.");
} // namespace

class TestSpeech : public QObject
{
    Q_OBJECT

private slots:
    void catalogHasEveryContractVoice()
    {
        const VoiceCatalog catalog = VoiceCatalog::builtin();
        QStringList expected = {"alloy",      "echo",       "fable",      "onyx",      "nova",
                                "shimmer",    "zh-welcome", "zh-gentle",  "zh-taiwan", "zh-beijing",
                                "zh-culture", "zh-celeb",   "en-welcome", "en-lesson", "en-news",
                                "en-gentle",  "en-celeb",   "en-quiet",   "ja-news",   "ko-news",
                                "es-news",    "fr-news",    "de-news",    "it-news",   "ru-news"};
        for (int i = 1; i <= 29; ++i)
            expected.append(QStringLiteral("demo-%1").arg(i));
        QCOMPARE(catalog.voices().size(), expected.size());
        for (const QString &name : expected) {
            const auto v = catalog.find(name);
            QVERIFY2(v, qPrintable(name));
            const bool english = v->language.startsWith(QLatin1String("en"));
            // English on flite, every other language on espeak-ng.
            QCOMPARE(v->engine, english ? QStringLiteral("flite") : QStringLiteral("espeak-ng"));
        }
        for (const char *name : {"nova", "shimmer", "zh-welcome", "zh-celeb"})
            QCOMPARE(catalog.find(QString::fromLatin1(name))->engineVoice, QStringLiteral("cmn"));
        QVERIFY(!catalog.find(QStringLiteral("nobody")));

        const QJsonArray json = catalog.toJson();
        QCOMPARE(json.size(), expected.size());
        const QJsonObject first = json.first().toObject();
        QCOMPARE(first.keys(),
                 (QStringList{"description", "engine", "engine_voice", "id", "language"}));
        QCOMPARE(first.value("id").toString(), QStringLiteral("alloy"));
    }

    void catalogErrorsNameEntryAndField_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("not json") << QByteArray("[{") << "not JSON";
        QTest::newRow("no name") << QByteArray(R"([{"language":"en"}])") << "entry 0: \"name\"";
        QTest::newRow("engine")
            << QByteArray(R"([{"name":"a","language":"en","engine":"x","engine_voice":"v"}])")
            << "entry 0 (a): \"engine\"";
        QTest::newRow("rate")
            << QByteArray(
                   R"({"voices":[{"name":"a","language":"en","engine":"flite","engine_voice":"v"},
                {"name":"b","language":"en","engine":"flite","engine_voice":"v","rate":12}]})")
            << "entry 1 (b): \"rate\"";
        QTest::newRow("twice")
            << QByteArray(
                   R"([{"name":"a","language":"en","engine":"flite","engine_voice":"v"},
                {"name":"a","language":"en","engine":"flite","engine_voice":"v"}])")
            << "entry 1 (a): \"name\" is used twice";
    }
    void catalogErrorsNameEntryAndField()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, mentions);
        try {
            VoiceCatalog::fromJson(json);
            QFAIL("no exception");
        } catch (const std::runtime_error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(mentions), e.what());
        }
    }

    void everyVoiceSpeaks()
    {
        QStringList skipped;
        const VoiceCatalog catalog = VoiceCatalog::builtin();
        for (const VoiceSpec &voice : catalog.voices()) {
            if (!SpeechSynthesizer::available(voice)) {
                skipped.append(voice.name + QLatin1Char('/') + voice.engineVoice);
                continue;
            }
            const QString text = sampleText(voice.language);
            QVERIFY2(!text.isEmpty(), qPrintable(voice.language));
            QByteArray pcm;
            const QString error = SpeechSynthesizer::synthesize(voice, text, SpeechParams{},
                                                                [&](const QByteArray &b) {
                                                                    pcm += b;
                                                                    return true;
                                                                });
            QVERIFY2(error.isEmpty(), qPrintable(voice.name + ": " + error));
            QCOMPARE(pcm.size() % 4, 0); // whole stereo s16 frames
            const double seconds = seconds48(pcm);
            const double level =
                rms(reinterpret_cast<const int16_t *>(pcm.constData()), pcm.size() / 2);
            QVERIFY2(seconds > 0.8 && seconds < 15,
                     qPrintable(QStringLiteral("%1: %2 s").arg(voice.name).arg(seconds)));
            QVERIFY2(level > 300,
                     qPrintable(QStringLiteral("%1: rms %2").arg(voice.name).arg(level)));
            // Both channels carry the same (mono) speech.
            const auto *s = reinterpret_cast<const int16_t *>(pcm.constData());
            for (qsizetype i = 0; i < pcm.size() / 2; i += 2)
                QCOMPARE(s[i], s[i + 1]);
        }
        if (!skipped.isEmpty())
            qWarning("engine data missing, not tested: %s", qPrintable(skipped.join(", ")));
    }

    void unknownEngineVoiceFails()
    {
        VoiceSpec v;
        v.name = "x";
        v.engine = "flite";
        v.engineVoice = "cmu_us_nobody";
        QVERIFY(!SpeechSynthesizer::available(v));
        QVERIFY(!SpeechSynthesizer::synthesize(v, "Hello.", {}, [](const QByteArray &) {
                     return true;
                 }).isEmpty());
        v.engine = "espeak-ng";
        v.engineVoice = "no-such-language";
        QVERIFY(!SpeechSynthesizer::available(v));
    }

    void speedTwoHalvesDuration_data()
    {
        QTest::addColumn<QString>("voice");
        QTest::addColumn<QString>("text");
        QTest::newRow("flite") << "alloy" << kLongText.left(200);
        QTest::newRow("espeak-ng") << "es-news" << sampleText("es") + " " + sampleText("es");
    }
    void speedTwoHalvesDuration()
    {
        QFETCH(QString, voice);
        QFETCH(QString, text);
        const double normal = seconds48(synthesize(voice, text, 1.0));
        const double fast = seconds48(synthesize(voice, text, 2.0));
        qInfo("%s: %.2f s at speed 1, %.2f s at speed 2 (ratio %.2f)", qPrintable(voice), normal,
              fast, fast / normal);
        QVERIFY(normal > 1);
        QVERIFY2(fast / normal > 0.4 && fast / normal < 0.65,
                 qPrintable(QString::number(fast / normal)));
    }

    void firstChunkLeavesEarly()
    {
        const auto voice = VoiceCatalog::builtin().find("alloy");
        QElapsedTimer timer;
        timer.start();
        qint64 first = -1;
        int chunks = 0;
        const QString error =
            SpeechSynthesizer::synthesize(*voice, kLongText, {}, [&](const QByteArray &) {
                if (first < 0)
                    first = timer.nsecsElapsed();
                ++chunks;
                return true;
            });
        const qint64 total = timer.nsecsElapsed();
        QVERIFY(error.isEmpty());
        qInfo("first chunk after %.0f ms of %.0f ms, %d chunks", first / 1e6, total / 1e6, chunks);
        QVERIFY(chunks >= 10); // one per sentence
        QVERIFY(first < total / 4);
    }

    void sentencesAccountForEveryCharacter()
    {
        using SpeechSynthesizer::sentenceCharacters;
        // Each sentence carries the spaces before it; the last one what follows it.
        QCOMPARE(sentenceCharacters(QStringLiteral("Hello there. How are you?")),
                 (QList<qint64>{12, 13}));
        QCOMPARE(sentenceCharacters(QStringLiteral("  One.\n\nTwo!?  ... ")),
                 (QList<qint64>{6, 13}));
        // Code points, not UTF-16 units: the emoji is one character.
        const QString emoji = QStringLiteral("Smile \U0001F600. Again.");
        QCOMPARE(sentenceCharacters(emoji), (QList<qint64>{8, 7}));
        // A text without words has no sentences (and no audio).
        QVERIFY(sentenceCharacters(QStringLiteral(" ... !")).isEmpty());
        // Long sentences are cut; the pieces still add up to the text, however it is cut (a
        // pair of surrogates on a cut included).
        for (const QString &text :
             {kLongText, QString(kLongText).remove(QLatin1Char('.')),
              QString(400, QChar(u'x')) + QStringLiteral(" word"),
              QString(159, QChar(u'a')) + QStringLiteral("\U0001F600\U0001F600 tail")}) {
            const QList<qint64> parts = sentenceCharacters(text);
            QVERIFY(parts.size() > 1);
            QCOMPARE(std::accumulate(parts.begin(), parts.end(), qint64(0)),
                     qint64(text.toUcs4().size()));
        }
    }

    void sentenceCallbackComesBeforeItsAudio()
    {
        // The callback marks where each sentence's audio starts: once per sentence, in order,
        // with the counts sentenceCharacters gives, each followed by audio.
        for (const char *name : {"alloy", "es-news"}) {
            QList<qint64> seen;
            QList<qint64> audioAfter; // bytes of audio after each mark
            QByteArray all;
            const QString error = SpeechSynthesizer::synthesize(
                *VoiceCatalog::builtin().find(name), kLongText, {},
                [&](const QByteArray &pcm) {
                    if (audioAfter.isEmpty())
                        return false; // audio before the first mark
                    audioAfter.last() += pcm.size();
                    all += pcm;
                    return true;
                },
                nullptr,
                [&](qint64 characters) {
                    seen.append(characters);
                    audioAfter.append(0);
                });
            QVERIFY2(error.isEmpty(), qPrintable(error));
            QCOMPARE(seen, SpeechSynthesizer::sentenceCharacters(kLongText));
            for (qint64 bytes : audioAfter)
                QVERIFY(bytes > 0);
            // The marks change nothing in the audio (its length, on flite: espeak-ng's varies
            // by tens of milliseconds from call to call once other voices have been used).
            if (QByteArray(name) == "alloy")
                QCOMPARE(all.size(), synthesize(name, kLongText).size());
        }
    }

    void cancelStops()
    {
        const auto voice = VoiceCatalog::builtin().find("alloy");
        // The sink says stop.
        int chunks = 0;
        QString error = SpeechSynthesizer::synthesize(
            *voice, kLongText, {}, [&](const QByteArray &) { return ++chunks < 2; });
        QCOMPARE(error, QStringLiteral("cancelled"));
        QCOMPARE(chunks, 2);
        // The flag, set from the sink as another thread would.
        for (const char *name : {"alloy", "es-news"}) {
            std::atomic_bool cancel = false;
            chunks = 0;
            error = SpeechSynthesizer::synthesize(
                *VoiceCatalog::builtin().find(name), kLongText, {},
                [&](const QByteArray &) {
                    ++chunks;
                    cancel = true;
                    return true;
                },
                &cancel);
            QCOMPARE(error, QStringLiteral("cancelled"));
            QCOMPARE(chunks, 1);
        }
        // Already cancelled: nothing at all.
        std::atomic_bool cancel = true;
        chunks = 0;
        error = SpeechSynthesizer::synthesize(
            *voice, kLongText, {},
            [&](const QByteArray &) {
                ++chunks;
                return true;
            },
            &cancel);
        QCOMPARE(error, QStringLiteral("cancelled"));
        QCOMPARE(chunks, 0);
    }

    void referencePitchSeparatesVoices()
    {
        const QString text = kLongText.left(240);
        const auto slt = pcm48ToMono16k(synthesize("alloy", text));
        const auto rms = pcm48ToMono16k(synthesize("echo", text));
        const ReferenceVoice female = analyzeReference(slt.data(), qsizetype(slt.size()), 16000);
        const ReferenceVoice male = analyzeReference(rms.data(), qsizetype(rms.size()), 16000);
        qInfo("slt: %.1f Hz, %.2f syl/s, %.2f s; rms: %.1f Hz, %.2f syl/s, %.2f s",
              female.meanPitchHz, female.syllablesPerSecond, female.seconds, male.meanPitchHz,
              male.syllablesPerSecond, male.seconds);
        QVERIFY(female.meanPitchHz > 150 && female.meanPitchHz < 250);
        QVERIFY(male.meanPitchHz > 80 && male.meanPitchHz < 150);
        QVERIFY(female.syllablesPerSecond > 2 && female.syllablesPerSecond < 8);
        QVERIFY(male.syllablesPerSecond > 2 && male.syllablesPerSecond < 8);
        QCOMPARE(female.seconds, slt.size() / 16000.0);

        // The same analysis at 48 kHz agrees with the 16 kHz one.
        const auto slt48 = toMono(Wav::file(48000, 2, synthesize("alloy", text)), 48000);
        const ReferenceVoice at48 = analyzeReference(slt48.data(), qsizetype(slt48.size()), 48000);
        QVERIFY(std::abs(at48.meanPitchHz - female.meanPitchHz) < 15);

        // Silence: nothing voiced.
        const std::vector<int16_t> silence(16000, 0);
        const ReferenceVoice none = analyzeReference(silence.data(), 16000, 16000);
        QCOMPARE(none.meanPitchHz, 0.0);
        QCOMPARE(none.seconds, 1.0);
    }

    void cloningMovesPitchAndRate_data()
    {
        QTest::addColumn<QString>("voice");
        QTest::newRow("flite") << "alloy";
        QTest::newRow("flite diphone") << "en-quiet";
        QTest::newRow("espeak-ng") << "es-news";
    }
    void cloningMovesPitchAndRate()
    {
        QFETCH(QString, voice);
        const auto spec = VoiceCatalog::builtin().find(voice);
        const QString text = spec->engine == "flite" ? kLongText.left(200)
                                                     : sampleText("es") + " " + sampleText("es");
        auto measure = [&](std::optional<double> hz, std::optional<double> sps) {
            SpeechParams p;
            p.pitchHz = hz;
            p.syllablesPerSecond = sps;
            QByteArray pcm;
            SpeechSynthesizer::synthesize(*spec, text, p, [&](const QByteArray &b) {
                pcm += b;
                return true;
            });
            const auto mono = pcm48ToMono16k(pcm);
            return analyzeReference(mono.data(), qsizetype(mono.size()), 16000);
        };
        const ReferenceVoice own = measure({}, {});
        const ReferenceVoice low = measure(100.0, {});
        const ReferenceVoice high = measure(220.0, {});
        const ReferenceVoice fast = measure({}, own.syllablesPerSecond * 1.4);
        qInfo("%s: own %.0f Hz %.2f s; target 100 Hz -> %.0f; 220 Hz -> %.0f; 1.4x rate -> %.2f s",
              qPrintable(voice), own.meanPitchHz, own.seconds, low.meanPitchHz, high.meanPitchHz,
              fast.seconds);
        QVERIFY(low.meanPitchHz < high.meanPitchHz - 40);
        if (spec->engine == "flite") {
            // flite takes the target in Hz.
            QVERIFY(std::abs(low.meanPitchHz - 100) < 25);
            QVERIFY(std::abs(high.meanPitchHz - 220) < 40);
        } else {
            // espeak-ng reaches 0.68 to 1.65 times its voice's own pitch: towards the target.
            QVERIFY(low.meanPitchHz < own.meanPitchHz * 0.8);
            QVERIFY(high.meanPitchHz > own.meanPitchHz * 1.03);
        }
        QVERIFY(fast.seconds < own.seconds * 0.85);
    }
};

QTEST_GUILESS_MAIN(TestSpeech)
#include "tst_speech.moc"
