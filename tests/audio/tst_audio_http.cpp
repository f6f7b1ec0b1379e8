// The audio routes over HTTP on the local engines: speech streamed as WAV or PCM, transcription
// in every format, file_uri through the outbound URL guard, the errors in the envelope, the
// busy pool's 503, billing exact to the unit with nothing charged on failure, the holds taken
// before any work, and a speech answer that a client leaves billed for the sentences it took.

#include "AudioConfig.h"
#include "AudioFamily.h"
#include "AudioHttpSupport.h"
#include "Money.h"
#include "Pipeline.h"
#include "RequestContext.h"
#include "ServerFixture.h"

#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QtEndian>
#include <QTest>
#include <QThread>

using AudioTest::balance;
using AudioTest::kBoundary;
using AudioTest::postForm;
using AudioTest::rawPost;
using AudioTest::sqliteRow;
using AudioTest::usageRows;

namespace {

const QString kSentence = QStringLiteral("The quick brown fox jumps over the lazy dog.");

// A WAV file at 16 kHz mono of the sentence, and its frame count.
QByteArray sentenceWav(qint64 *frames = nullptr)
{
    static const QByteArray mono = AudioTest::toMono16k(AudioTest::speak(kSentence));
    if (frames)
        *frames = mono.size() / 2;
    return Wav::file(16000, 1, mono);
}

ServerSettings settingsWith(const QJsonObject &audio)
{
    ServerSettings s = ServerSettings::defaults();
    s.familySections.insert("audio", audio);
    return s;
}

QByteArray speechJson(const QString &input, const QString &voice = QStringLiteral("alloy"))
{
    return QJsonDocument(QJsonObject{{"input", input}, {"voice", voice}})
        .toJson(QJsonDocument::Compact);
}

// Where each sentence's audio starts in what the engine makes of `text` (the audio's length
// is the same on every run), and the characters it accounts for.
struct SentenceAudio
{
    qint64 start = 0;
    qint64 characters = 0;
};
QList<SentenceAudio> sentenceAudio(const QString &text)
{
    QList<SentenceAudio> out;
    qint64 bytes = 0;
    SpeechSynthesizer::synthesize(
        *VoiceCatalog::builtin().find(QStringLiteral("alloy")), text, {},
        [&](const QByteArray &pcm) {
            bytes += pcm.size();
            return true;
        },
        nullptr,
        [&](qint64 characters) {
            out.append({bytes, characters});
        });
    return out;
}

// The characters billed when the first `taken` bytes of audio were taken: every sentence
// whose audio had begun.
qint64 charactersFor(const QList<SentenceAudio> &sentences, qint64 taken)
{
    qint64 n = 0;
    for (const SentenceAudio &s : sentences)
        if (s.start < taken)
            n += s.characters;
    return n;
}

// The usage rows of POST /v1/audio/speech once there are `count`.
QList<AudioTest::UsageRow> speechRows(ServerFixture &f, int count)
{
    QList<AudioTest::UsageRow> rows;
    QDeadlineTimer deadline(30'000);
    while ((rows = usageRows(f, QStringLiteral("/v1/audio/speech"))).size() < count &&
           !deadline.hasExpired())
        QTest::qWait(20);
    return rows;
}

} // namespace

class TestAudioHttp : public QObject
{
    Q_OBJECT
private slots:
    void speechWav_data() { addBackendRows(); }
    void speechWav()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QString input = QStringLiteral("Hello from Switchyard. This is a test of speech.");
        const HttpReply r =
            f.client().postJson("/v1/audio/speech",
                                QJsonDocument(QJsonObject{{"input", input}, {"voice", "alloy"}})
                                    .toJson(QJsonDocument::Compact),
                                key);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("content-type"), QByteArray("audio/wav"));
        QCOMPARE(r.header("transfer-encoding"), QByteArray("chunked"));
        QCOMPARE(r.header("x-audio-format"), QByteArray("s16le; rate=48000; channels=2"));
        QVERIFY(r.body.startsWith("RIFF"));
        QCOMPARE(r.body.mid(8, 8), QByteArray("WAVEfmt "));
        const auto *h = reinterpret_cast<const uchar *>(r.body.constData());
        QCOMPARE(qFromLittleEndian<quint16>(h + 22), quint16(2));     // channels
        QCOMPARE(qFromLittleEndian<quint32>(h + 24), quint32(48000)); // rate
        QCOMPARE(qFromLittleEndian<quint16>(h + 34), quint16(16));    // bits
        // Every sentence streamed: as long as the engine's own audio for the text (flite's
        // excitation is noisy, so the samples differ from run to run, not the length).
        QCOMPARE(r.body.size() - 44, AudioTest::speak(input, QStringLiteral("alloy")).size());
        QVERIFY(AudioTest::peak(r.body.mid(44)) > 3000);
        QCOMPARE(balance(f), Money::kUnitsPerCredit - input.size() * 5000);
    }

    void speechPcmSpeedAndVoices_data() { sqliteRow(); }
    void speechPcmSpeedAndVoices()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        auto speak = [&](const QJsonObject &body) {
            return f.client().postJson("/v1/audio/speech",
                                       QJsonDocument(body).toJson(QJsonDocument::Compact), key);
        };
        const HttpReply normal = speak({{"input", kSentence}, {"response_format", "pcm"}});
        QCOMPARE(normal.status, 200);
        QCOMPARE(normal.header("content-type"), QByteArray("application/octet-stream"));
        QVERIFY(!normal.body.startsWith("RIFF"));
        QCOMPARE(normal.body.size(), AudioTest::speak(kSentence, QStringLiteral("nova")).size());
        QVERIFY(AudioTest::peak(normal.body) > 3000);
        const HttpReply fast =
            speak({{"input", kSentence}, {"response_format", "pcm"}, {"speed", 2.0}});
        QCOMPARE(fast.status, 200);
        const double ratio = double(fast.body.size()) / normal.body.size();
        QVERIFY2(ratio > 0.35 && ratio < 0.7, qPrintable(QString::number(ratio)));
        // A Chinese voice on espeak-ng and the default voice (nova).
        QCOMPARE(speak({{"input", QStringLiteral("你好，世界")}, {"voice", "zh-welcome"}}).status,
                 200);
        QCOMPARE(speak({{"input", QStringLiteral("你好")}}).status, 200);
    }

    void speechErrors_data() { addBackendRows(); }
    void speechErrors()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        auto speak = [&](const QByteArray &body) {
            return f.client().postJson("/v1/audio/speech", body, key);
        };
        struct Case
        {
            QByteArray body;
            QString param;
        };
        const QList<Case> cases = {
            {"{}", "input"},
            {"{\"input\":\"\"}", "input"},
            {"{\"input\":42}", "input"},
            {"{\"input\":\"hi\",\"voice\":\"nobody\"}", "voice"},
            {"{\"input\":\"hi\",\"response_format\":\"mp3\"}", "response_format"},
            {"{\"input\":\"hi\",\"speed\":9}", "speed"},
            {"{\"input\":\"hi\",\"model\":\"rapid\"}", "model"},
            {"{\"input\":\"" + QByteArray(4097, 'a') + "\"}", "input"},
        };
        for (const Case &c : cases) {
            const HttpReply r = speak(c.body);
            QCOMPARE(r.status, 400);
            const QJsonObject e = r.json().value("error").toObject();
            QCOMPARE(e.value("param").toString(), c.param);
            QCOMPARE(e.value("type").toString(), QStringLiteral("invalid_request_error"));
        }
        QCOMPARE(speak("not json").status, 400);
        // Nothing was charged for any of them.
        QCOMPARE(balance(f), Money::kUnitsPerCredit);
        // Without credits: 402 before any synthesis.
        const QByteArray poor = f.createKey(QStringLiteral("poor"));
        Q_UNUSED(poor);
    }

    void speechNoCredits_data() { sqliteRow(); }
    void speechNoCredits()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.createKey();
        f.grant(1000); // less than one character's price
        const HttpReply r = f.client().postJson("/v1/audio/speech", "{\"input\":\"hello\"}", key);
        QCOMPARE(r.status, 402);
        QCOMPARE(balance(f), qint64(1000));
    }

    void speechPartlyTakenBilledBySentence_data() { addBackendRows(); }
    void speechPartlyTakenBilledBySentence()
    {
        // A client reads 4 MB of a long answer (about 150 s of speech, 29 MB), then closes:
        // it is billed for every sentence whose audio the connection took, no more (the
        // kernel holds a few MB for it, far from the whole), recorded as 499, and the balance
        // moves by exactly that. Once while the engine is still speaking, once after it has
        // finished and the answer waits for the client.
        SY_START_SERVER(f);
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QString input = QString(kSentence + u' ').repeated(60).trimmed();
        const QList<SentenceAudio> sentences = sentenceAudio(input);
        QCOMPARE(sentences.size(), 60);
        const qint64 total = input.size();
        QSet<qint64> allowed; // what the rule can give: the characters up to a sentence
        for (const SentenceAudio &s : sentences)
            allowed.insert(charactersFor(sentences, s.start + 1));
        int rows = 0;
        for (const bool engineDone : {false, true}) {
            const qint64 before = balance(f);
            RawClient c(f.port(), AudioTest::kSmallReceiveBuffer);
            QVERIFY(c.sendAll(rawPost("/v1/audio/speech", key, speechJson(input))));
            const QByteArray body = c.readBody(4 << 20);
            QCOMPARE(c.status(), 200);
            QVERIFY(body.size() >= 4 << 20);
            QVERIFY(body.startsWith("RIFF"));
            if (engineDone)
                QTest::qWait(4000); // the engine makes the rest meanwhile (a second or two)
            c.close();
            ++rows;
            const auto row = speechRows(f, rows).value(rows - 1);
            QCOMPARE(row.status, 499);
            // The client read `heard` bytes of audio; the count may lag by kTakenSlack.
            const qint64 heard = body.size() - 44;
            const qint64 atLeast = charactersFor(sentences, heard - AudioTest::kTakenSlack);
            qInfo("billed %lld of %lld characters; the client read %lld bytes of audio (%lld "
                  "characters' worth)",
                  row.characters, total, heard, charactersFor(sentences, heard));
            QVERIFY2(allowed.contains(row.characters), qPrintable(QString::number(row.characters)));
            QVERIFY2(
                row.characters >= atLeast,
                qPrintable(
                    QStringLiteral("%1 billed, at least %2").arg(row.characters).arg(atLeast)));
            QVERIFY(row.characters < total);
            QCOMPARE(row.cost, AudioConfig::speechCost(row.characters, 5'000'000));
            QCOMPARE(before - balance(f), row.cost);
        }
    }

    void speechTakenWholeBilledWhole_data() { addBackendRows(); }
    void speechTakenWholeBilledWhole()
    {
        // A slow reader takes the whole answer: the charge waits for it, then bills every
        // character once, and the answer ends cleanly.
        SY_START_SERVER(f);
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QString input = QString(kSentence + u' ').repeated(14).trimmed(); // about 7 MB
        RawClient c(f.port(), AudioTest::kSmallReceiveBuffer);
        QVERIFY(c.sendAll(rawPost("/v1/audio/speech", key, speechJson(input))));
        QByteArray body;
        while (!c.ended() && body.size() < (64 << 20)) {
            const qsizetype had = body.size();
            body = c.readBody(had + (128 << 10));
            if (body.size() == had && !c.ended())
                break; // the connection ended without the last chunk
            QThread::msleep(20);
        }
        QVERIFY(c.ended());
        QCOMPARE(body.size() - 44, AudioTest::speak(input).size());
        const auto row = speechRows(f, 1).value(0);
        QCOMPARE(row.status, 200);
        QCOMPARE(row.characters, qint64(input.size()));
        QCOMPARE(row.cost, input.size() * 5000);
        QCOMPARE(balance(f), Money::kUnitsPerCredit - row.cost);
    }

    void speechNothingTakenNotBilled_data() { addBackendRows(); }
    void speechNothingTakenNotBilled()
    {
        // One engine thread: a second request waits for it, and its client leaves before any
        // of its audio exists. It is recorded (499) and not billed; the first is billed whole.
        SY_START_SERVER(f, settingsWith(QJsonObject{{"workers", 1}, {"queue", 1}}));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QString first = QString(kSentence + u' ').repeated(30).trimmed(); // a second or more
        RawClient a(f.port(), AudioTest::kSmallReceiveBuffer);
        QVERIFY(a.sendAll(rawPost("/v1/audio/speech", key, speechJson(first))));
        QVERIFY(!a.readBody(1).isEmpty()); // speaking: the engine thread is taken
        {
            RawClient b(f.port(), AudioTest::kSmallReceiveBuffer);
            QVERIFY(b.sendAll(rawPost("/v1/audio/speech", key, speechJson(kSentence))));
            QTest::qWait(100); // admitted and waiting for the engine
        }
        a.readBody(qint64(1) << 40);
        QVERIFY(a.ended());
        const auto rows = speechRows(f, 2);
        QCOMPARE(rows.size(), 2);
        for (const auto &row : rows) {
            if (row.status == 200) {
                QCOMPARE(row.cost, first.size() * 5000);
            } else {
                QCOMPARE(row.status, 499);
                QCOMPARE(row.cost, qint64(0));
                QCOMPARE(row.characters, qint64(0));
            }
        }
        QCOMPARE(balance(f), Money::kUnitsPerCredit - first.size() * 5000);
    }

    void voicesAndModels_data() { sqliteRow(); }
    void voicesAndModels()
    {
        SY_START_SERVER(f);
        const HttpReply v = f.client().get("/v1/audio/voices");
        QCOMPARE(v.status, 200);
        QStringList ids;
        for (const QJsonValue &x : v.json().value("data").toArray()) {
            const QJsonObject o = x.toObject();
            ids.append(o.value("id").toString());
            QVERIFY(!o.value("language").toString().isEmpty());
            QVERIFY(!o.value("engine").toString().isEmpty());
        }
        QStringList expected = {"alloy",      "echo",       "fable",      "onyx",      "nova",
                                "shimmer",    "zh-welcome", "zh-gentle",  "zh-taiwan", "zh-beijing",
                                "zh-culture", "zh-celeb",   "en-welcome", "en-lesson", "en-news",
                                "en-gentle",  "en-celeb",   "en-quiet",   "ja-news",   "ko-news",
                                "es-news",    "fr-news",    "de-news",    "it-news",   "ru-news"};
        for (int i = 1; i <= 29; ++i)
            expected.append(QStringLiteral("demo-%1").arg(i));
        for (const QString &id : expected)
            QVERIFY2(ids.contains(id), qPrintable(id));

        const HttpReply m = f.client().get("/v1/models");
        QCOMPARE(m.status, 200);
        QStringList models;
        for (const QJsonValue &x : m.json().value("data").toArray())
            models.append(x.toObject().value("id").toString());
        for (const char *id : {"rapid", "vendorB-asr-1", "vendorE-tts-nano"})
            QVERIFY2(models.contains(QLatin1String(id)), id);
        QVERIFY(models.size() > 3); // the text models are still there
    }

    void transcriptionFormats_data() { addBackendRows(); }
    void transcriptionFormats()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        qint64 frames = 0;
        const QByteArray wav = sentenceWav(&frames);
        const qint64 cost = AudioConfig::transcriptionCost(frames, 16000, 6000000);
        auto transcribe = [&](const QList<AudioTest::Part> &extra) {
            QList<AudioTest::Part> parts = extra;
            parts.append({"file", wav, "speech.wav", "audio/wav"});
            return postForm(f, "/v1/audio/transcriptions", parts, key);
        };

        const HttpReply json = transcribe({});
        QCOMPARE(json.status, 200);
        QCOMPARE(json.header("content-type"), QByteArray("application/json"));
        const QString text = json.json().value("text").toString();
        QVERIFY2(AudioTest::wordErrorRate(kSentence, text) < 0.5, qPrintable(text));
        QCOMPARE(balance(f), Money::kUnitsPerCredit - cost);

        const HttpReply plain = transcribe({{"response_format", "text"}});
        QCOMPARE(plain.status, 200);
        QCOMPARE(plain.header("content-type"), QByteArray("text/plain; charset=utf-8"));
        QCOMPARE(QString::fromUtf8(plain.body).trimmed(), text);

        const HttpReply verbose = transcribe({{"response_format", "verbose_json"},
                                              {"timestamp_granularities[]", "word"},
                                              {"timestamp_granularities[]", "segment"}});
        QCOMPARE(verbose.status, 200);
        const QJsonObject v = verbose.json();
        QCOMPARE(v.value("task").toString(), QStringLiteral("transcribe"));
        QCOMPARE(v.value("language").toString(), QStringLiteral("english"));
        QVERIFY(qAbs(v.value("duration").toDouble() - frames / 16000.0) < 0.01);
        const QJsonArray segments = v.value("segments").toArray();
        QVERIFY(!segments.isEmpty());
        double last = 0;
        for (const QJsonValue &s : segments) {
            const QJsonObject o = s.toObject();
            QVERIFY(o.value("start").toDouble() >= last - 1e-9);
            QVERIFY(o.value("end").toDouble() > o.value("start").toDouble());
            last = o.value("end").toDouble();
        }
        QVERIFY(last <= v.value("duration").toDouble() + 0.01);
        const QJsonArray words = v.value("words").toArray();
        QVERIFY(words.size() >= 5);
        QVERIFY(words.at(0).toObject().contains("start"));

        const HttpReply srt = transcribe({{"response_format", "srt"}});
        QCOMPARE(srt.status, 200);
        QVERIFY2(QRegularExpression(QStringLiteral("^1\\n\\d\\d:\\d\\d:\\d\\d,\\d{3} --> "
                                                   "\\d\\d:\\d\\d:\\d\\d,\\d{3}\\n.+\\n\\n"))
                     .match(QString::fromUtf8(srt.body))
                     .hasMatch(),
                 srt.body.constData());
        const HttpReply vtt = transcribe({{"response_format", "vtt"}});
        QCOMPARE(vtt.status, 200);
        QVERIFY(vtt.body.startsWith("WEBVTT\n\n00:"));
        QVERIFY(QRegularExpression(QStringLiteral("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} --> "))
                    .match(QString::fromUtf8(vtt.body))
                    .hasMatch());
        // Five answers, each billed the same exact amount.
        QCOMPARE(balance(f), Money::kUnitsPerCredit - 5 * cost);
    }

    void transcriptionErrors_data() { addBackendRows(); }
    void transcriptionErrors()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QByteArray wav = sentenceWav();
        auto expect = [&](const HttpReply &r, int status, const QString &param,
                          const QString &code = {}) {
            if (r.status != status)
                qWarning("%s", r.body.constData());
            QCOMPARE(r.status, status);
            const QJsonObject e = r.json().value("error").toObject();
            QCOMPARE(e.value("param").toString(), param);
            if (!code.isEmpty())
                QCOMPARE(e.value("code").toString(), code);
        };
        // Not multipart.
        const HttpReply json = f.client().postJson("/v1/audio/transcriptions", "{}", key);
        QCOMPARE(json.status, 400);
        QVERIFY(json.errorMessage().contains("multipart/form-data"));
        // Not audio, empty, too short, a name that lies, truncated.
        expect(postForm(f, "/v1/audio/transcriptions",
                        {{"file", QByteArray(5000, 'x'), "a.mp3", "audio/mpeg"}}, key),
               400, "file", "invalid_file_format");
        const HttpReply garbage = postForm(f, "/v1/audio/transcriptions",
                                           {{"file", QByteArray(5000, 'x'), "a.mp3"}}, key);
        QVERIFY(garbage.errorMessage().contains("mp3") && garbage.errorMessage().contains("webm"));
        expect(postForm(f, "/v1/audio/transcriptions", {{"file", "", "a.wav"}}, key), 400, "file");
        expect(postForm(f, "/v1/audio/transcriptions",
                        {{"file", Wav::file(16000, 1, QByteArray(800 * 2, '\0')), "a.wav"}}, key),
               400, "file", "audio_too_short");
        const HttpReply lying = postForm(f, "/v1/audio/transcriptions",
                                         {{"file", wav, "speech.mp3", "audio/mpeg"}}, key);
        QCOMPARE(lying.status, 200); // detected from the content
        const qint64 afterLying = balance(f);
        const HttpReply truncated = postForm(f, "/v1/audio/transcriptions",
                                             {{"file", wav.left(wav.size() / 2), "half.wav"}}, key);
        QCOMPARE(truncated.status, 200); // what was there is transcribed, and billed as such
        QVERIFY(balance(f) < afterLying);
        const qint64 before = balance(f);
        // Parameters.
        expect(postForm(f, "/v1/audio/transcriptions", {{"model", "rapid"}}, key), 400, "file");
        expect(postForm(f, "/v1/audio/transcriptions", {{"language", "fr"}, {"file", wav, "a.wav"}},
                        key),
               400, "language", "unsupported_language");
        expect(postForm(f, "/v1/audio/transcriptions", {{"stream", "true"}, {"file", wav, "a.wav"}},
                        key),
               400, "stream");
        expect(postForm(f, "/v1/audio/transcriptions",
                        {{"file_uri", "https://example.com/a.wav"}, {"file", wav, "a.wav"}}, key),
               400, "file");
        // An upstream model whose provider has no key: 503 naming what to set.
        const HttpReply upstream =
            postForm(f, "/v1/audio/transcriptions",
                     {{"model", "vendorB-asr-1"}, {"file", wav, "a.wav"}}, key);
        QCOMPARE(upstream.status, 503);
        QVERIFY2(upstream.errorMessage().contains("audio.providers.openai.keys"),
                 qPrintable(upstream.errorMessage()));
        // Over 25 MiB: 413 naming the field and the limit.
        const HttpReply big = postForm(f, "/v1/audio/transcriptions",
                                       {{"file", QByteArray(26214401, '\0'), "big.wav"}}, key);
        QCOMPARE(big.status, 413);
        QVERIFY2(big.errorMessage().contains("file") && big.errorMessage().contains("26214400"),
                 qPrintable(big.errorMessage()));
        QCOMPARE(balance(f), before);
    }

    void transcriptionHolds_data() { addBackendRows(); }
    void transcriptionHolds()
    {
        // Held before any work: the price of the shortest audio (0.1 s) before the upload is
        // decoded or the file_uri fetched, then the decoded duration's price before the
        // recognizer runs. A balance short of either is a 402 with nothing charged; a balance
        // of exactly the duration's price is enough.
        auto hits = std::make_shared<std::atomic_int>(0);
        qint64 frames = 0;
        const QByteArray wav = sentenceWav(&frames);
        SY_START_SERVER(
            f,
            settingsWith(QJsonObject{
                {"file_uri",
                 QJsonObject{{"fetch", QJsonObject{{"allow_http", true},
                                                   {"allow_cidrs", QJsonArray{"127.0.0.0/8"}}}}}}}),
            AudioTest::serveFile(wav, hits));
        const QByteArray key = f.createKey();
        const qint64 floor = AudioConfig::transcriptionCost(1600, 16000, 6'000'000);
        const qint64 cost = AudioConfig::transcriptionCost(frames, 16000, 6'000'000);
        QCOMPARE(floor, qint64(10'000));
        QVERIFY(cost > 10 * floor);
        const QByteArray url =
            "http://127.0.0.1:" + QByteArray::number(f.port()) + "/test/speech.bin";
        auto upload = [&] {
            return postForm(f, "/v1/audio/transcriptions", {{"file", wav, "a.wav"}}, key);
        };
        auto fetched = [&] {
            return postForm(f, "/v1/audio/transcriptions", {{"file_uri", url}}, key);
        };
        auto needs = [](const HttpReply &r, qint64 units) {
            return r.status == 402 &&
                   r.errorMessage().contains(
                       QStringLiteral("needs at least %1").arg(Money::formatCredits(units)));
        };

        f.grant(floor - 1);
        HttpReply r = upload();
        QVERIFY2(needs(r, floor), r.body.constData());
        r = fetched();
        QVERIFY2(needs(r, floor), r.body.constData());
        QCOMPARE(hits->load(), 0); // refused before the download

        f.grant(1); // the floor, not the audio's price
        r = upload();
        QVERIFY2(needs(r, cost), r.body.constData());
        r = fetched();
        QVERIFY2(needs(r, cost), r.body.constData());
        QCOMPARE(hits->load(), 1); // downloaded and measured, then refused
        QCOMPARE(balance(f), floor);

        f.grant(cost - floor); // exactly the price: served, and the balance is then zero
        r = fetched();
        QCOMPARE(r.status, 200);
        QCOMPARE(balance(f), qint64(0));
        const auto rows = usageRows(f, QStringLiteral("/v1/audio/transcriptions"));
        QCOMPARE(rows.size(), 5);
        QCOMPARE(rows.last().cost, cost);
        QCOMPARE(rows.last().audioMs, frames * 1000 / 16000);
        for (int i = 0; i < 4; ++i)
            QCOMPARE(rows.at(i).cost, qint64(0));
    }

    // A key's budget takes both holds like the balance: one that covers the shortest audio
    // but not the decoded duration's price is a 402 key_budget_exceeded before the recognizer
    // runs, nothing charged; exactly the price is served and counts as spent.
    void transcriptionBudget_data() { addBackendRows(); }
    void transcriptionBudget()
    {
        qint64 frames = 0;
        const QByteArray wav = sentenceWav(&frames);
        SY_START_SERVER(f, settingsWith({}));
        f.grant(Money::kUnitsPerCredit);
        const qint64 cost = AudioConfig::transcriptionCost(frames, 16000, 6'000'000);
        Store &store = f.store();
        const qint64 account = store.defaultAccountId();
        const auto keyWithBudget = [&](qint64 units) {
            KeyRules rules;
            rules.budget = KeyRules::Budget{units, KeyRules::Period::Day};
            return store.createApiKey(account, QStringLiteral("budgeted"),
                                      QStringLiteral("default"), rules);
        };
        const CreatedSecret short_ = keyWithBudget(cost - 1);
        HttpReply r = postForm(f, "/v1/audio/transcriptions", {{"file", wav, "a.wav"}},
                               short_.secret.toLatin1());
        QVERIFY2(r.status == 402, r.body.constData());
        QCOMPARE(r.json().value("error").toObject().value("code").toString(),
                 QStringLiteral("key_budget_exceeded"));
        QCOMPARE(balance(f), Money::kUnitsPerCredit);
        const CreatedSecret exact = keyWithBudget(cost);
        r = postForm(f, "/v1/audio/transcriptions", {{"file", wav, "a.wav"}},
                     exact.secret.toLatin1());
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(balance(f), Money::kUnitsPerCredit - cost);
        QTRY_COMPARE(store.keySpent(exact.id, 0, 0), cost);
        QCOMPARE(store.keySpent(short_.id, 0, 0), qint64(0));
    }

    void fileUri_data() { sqliteRow(); }
    void fileUri()
    {
        const QByteArray wav = sentenceWav();
        const auto serve = AudioTest::serveFile(wav);
        {
            // Loopback is refused by default: the guard names the reason.
            QFETCH(QString, backend);
            ServerFixture f(backend, ServerSettings::defaults(), serve);
            QVERIFY(f.ready());
            const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
            const QByteArray url =
                "http://127.0.0.1:" + QByteArray::number(f.port()) + "/test/speech.bin";
            const HttpReply r = postForm(f, "/v1/audio/transcriptions", {{"file_uri", url}}, key);
            QCOMPARE(r.status, 400);
            QCOMPARE(r.json().value("error").toObject().value("param").toString(),
                     QStringLiteral("file_uri"));
            QCOMPARE(balance(f), Money::kUnitsPerCredit);
        }
        QFETCH(QString, backend);
        ServerFixture f(
            backend,
            settingsWith(QJsonObject{
                {"file_uri",
                 QJsonObject{{"max_bytes", 10000000},
                             {"fetch", QJsonObject{{"allow_http", true},
                                                   {"allow_cidrs", QJsonArray{"127.0.0.0/8"}}}}}}}),
            serve);
        QVERIFY(f.ready());
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QByteArray url =
            "http://127.0.0.1:" + QByteArray::number(f.port()) + "/test/speech.bin";
        const HttpReply r = postForm(f, "/v1/audio/transcriptions", {{"file_uri", url}}, key);
        QCOMPARE(r.status, 200);
        QVERIFY2(AudioTest::wordErrorRate(kSentence, r.json().value("text").toString()) < 0.5,
                 r.body.constData());
        const HttpReply missing = postForm(
            f, "/v1/audio/transcriptions",
            {{"file_uri", "http://127.0.0.1:" + QByteArray::number(f.port()) + "/test/none"}}, key);
        QCOMPARE(missing.status, 400);
    }

    void fileUriTooLarge_data() { sqliteRow(); }
    void fileUriTooLarge()
    {
        // A download over audio.file_uri.max_bytes: 413 naming file_uri and the bound, unbilled.
        SY_START_SERVER(
            f,
            settingsWith(QJsonObject{
                {"file_uri",
                 QJsonObject{{"max_bytes", 1000},
                             {"fetch", QJsonObject{{"allow_http", true},
                                                   {"allow_cidrs", QJsonArray{"127.0.0.0/8"}}}}}}}),
            AudioTest::serveFile(sentenceWav()));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QByteArray url =
            "http://127.0.0.1:" + QByteArray::number(f.port()) + "/test/speech.bin";
        const HttpReply r = postForm(f, "/v1/audio/transcriptions", {{"file_uri", url}}, key);
        QCOMPARE(r.status, 413);
        const QJsonObject e = r.json().value("error").toObject();
        QCOMPARE(e.value("param").toString(), QStringLiteral("file_uri"));
        QCOMPARE(e.value("code").toString(), QStringLiteral("file_too_large"));
        QVERIFY2(e.value("message").toString().contains("1000"), r.body.constData());
        QCOMPARE(balance(f), Money::kUnitsPerCredit);
    }

    void busyPool_data() { sqliteRow(); }
    void busyPool()
    {
        SY_START_SERVER(f, settingsWith(QJsonObject{{"workers", 1}, {"queue", 0}}));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        // A long synthesis on flite (seconds; espeak-ng would be done in a blink) holds the
        // only worker...
        HttpClient slow = f.client();
        QVERIFY(slow.connectIfNeeded());
        const QByteArray body =
            QJsonDocument(
                QJsonObject{{"input", QString(kSentence + u' ').repeated(85)}, {"voice", "alloy"}})
                .toJson(QJsonDocument::Compact);
        slow.sendRaw("POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key +
                     "\r\nContent-Type: application/json\r\nContent-Length: " +
                     QByteArray::number(body.size()) + "\r\n\r\n" + body);
        QTest::qWait(300);
        // ...so the next request is refused with Retry-After, and not charged.
        const qint64 before = balance(f);
        const HttpReply r = f.client().postJson("/v1/audio/speech", "{\"input\":\"hi\"}", key);
        QCOMPARE(r.status, 503);
        QVERIFY(r.header("retry-after").toInt() >= 1);
        QCOMPARE(r.json().value("error").toObject().value("code").toString(),
                 QStringLiteral("engine_busy"));
        const HttpReply done = slow.readReply(120000);
        QCOMPARE(done.status, 200);
        QVERIFY(balance(f) < before);
    }

    void hostileMultipart_data() { sqliteRow(); }
    void hostileMultipart()
    {
        SY_START_SERVER(f);
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        auto post = [&](const QByteArray &type, const QByteArray &body) {
            return f.client().request("POST", "/v1/audio/transcriptions",
                                      {{"Authorization", "Bearer " + key}, {"Content-Type", type}},
                                      body);
        };
        const QByteArray type = "multipart/form-data; boundary=" + kBoundary;
        const QByteArray wav = sentenceWav();
        // No boundary parameter, or not multipart at all.
        HttpReply r =
            post("multipart/form-data", AudioTest::multipart({{"file", wav, "a.wav"}}, kBoundary));
        QCOMPARE(r.status, 400);
        QVERIFY2(r.errorMessage().contains("boundary"), qPrintable(r.errorMessage()));
        QCOMPARE(post("text/plain", "hello").status, 400);
        // The boundary string inside the file's data (not at a line start) stays data.
        QByteArray tricky = wav;
        tricky.append("--" + kBoundary + "tail");
        r = post(type, AudioTest::multipart({{"file", tricky, "a.wav"}}, kBoundary));
        QCOMPARE(r.status, 200);
        // Truncated bodies: cut inside the file, inside a header, before the closing boundary.
        const QByteArray whole =
            AudioTest::multipart({{"model", "rapid"}, {"file", wav, "a.wav"}}, kBoundary);
        for (const qsizetype cut : {qsizetype(60), whole.size() / 2, whole.size() - 8}) {
            r = post(type, whole.left(cut));
            QCOMPARE(r.status, 400);
        }
        // A huge part header.
        QByteArray huge = "--" + kBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; " +
                          "filename=\"" + QByteArray(20000, 'x') + "\"\r\n\r\nabc\r\n--" +
                          kBoundary + "--\r\n";
        r = post(type, huge);
        QCOMPARE(r.status, 413);
        // 10,000 tiny parts.
        QList<AudioTest::Part> many;
        for (int i = 0; i < 10000; ++i)
            many.append(AudioTest::Part("x", "1"));
        r = post(type, AudioTest::multipart(many, kBoundary));
        QCOMPARE(r.status, 413);
        // A filename with path separators is only a name: the upload works, nothing is written.
        for (const QByteArray &name : {QByteArray("../../etc/passwd"), QByteArray("C:\\x\\y.wav"),
                                       QByteArray("/tmp/evil.wav")}) {
            r = post(type, AudioTest::multipart({{"file", wav, name}}, kBoundary));
            QCOMPARE(r.status, 200);
        }
        // A field repeated.
        r = post(type, AudioTest::multipart({{"response_format", "json"},
                                             {"response_format", "text"},
                                             {"file", wav, "a.wav"}},
                                            kBoundary));
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value("error").toObject().value("param").toString(),
                 QStringLiteral("response_format"));
    }

    void clientLeavesCancels_data() { sqliteRow(); }
    void clientLeavesCancels()
    {
        SY_START_SERVER(f, settingsWith(QJsonObject{{"workers", 1}, {"queue", 0}}));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        // Three minutes of speech: several seconds of recognition on one worker.
        QByteArray mono = AudioTest::toMono16k(AudioTest::speak(kSentence));
        const QByteArray silence(16000, '\0'); // half a second
        QByteArray longAudio;
        while (longAudio.size() < 180 * 32000)
            longAudio += mono + silence;
        const QByteArray body =
            AudioTest::multipart({{"file", Wav::file(16000, 1, longAudio), "long.wav"}}, kBoundary);
        {
            HttpClient leaving = f.client();
            QVERIFY(leaving.connectIfNeeded());
            leaving.sendRaw("POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\n"
                            "Authorization: Bearer " +
                            key + "\r\nContent-Type: multipart/form-data; boundary=" + kBoundary +
                            "\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n\r\n" +
                            body);
            QTest::qWait(1500); // probed, reserved, recognizing
            const HttpReply busy =
                f.client().postJson("/v1/audio/speech", "{\"input\":\"hi\"}", key);
            QCOMPARE(busy.status, 503);
            leaving.socket().abort();
        }
        // The worker is released soon after the client left, long before three minutes of
        // audio could have been recognized; nothing was charged.
        QElapsedTimer t;
        t.start();
        int status = 0;
        while (t.elapsed() < 5000) {
            status = f.client().postJson("/v1/audio/speech", "{\"input\":\"hi\"}", key).status;
            if (status == 200)
                break;
            QTest::qWait(100);
        }
        QCOMPARE(status, 200);
        QCOMPARE(balance(f), Money::kUnitsPerCredit - 2 * 5000);
    }

    void operatorVoicesFile_data() { sqliteRow(); }
    void operatorVoicesFile()
    {
        // An operator's voices file replaces the built-in list.
        QTemporaryDir dir;
        const QString path = dir.filePath("voices.json");
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("{\"voices\": [{\"name\": \"house\", \"language\": \"en-US\", \"engine\": "
                   "\"flite\", \"engine_voice\": \"cmu_us_rms\", \"description\": \"ours\"}]}");
        file.close();
        SY_START_SERVER(f, settingsWith(QJsonObject{{"voices_file", path}}));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QJsonArray voices = f.client().get("/v1/audio/voices").json().value("data").toArray();
        QCOMPARE(voices.size(), 1);
        QCOMPARE(voices.at(0).toObject().value("id").toString(), QStringLiteral("house"));
        QCOMPARE(f.client()
                     .postJson("/v1/audio/speech", "{\"input\":\"hi\",\"voice\":\"house\"}", key)
                     .status,
                 200);
        QCOMPARE(f.client()
                     .postJson("/v1/audio/speech", "{\"input\":\"hi\",\"voice\":\"alloy\"}", key)
                     .status,
                 400);
    }
};

QTEST_GUILESS_MAIN(TestAudioHttp)
#include "tst_audio_http.moc"
