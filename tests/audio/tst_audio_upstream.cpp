// The audio routes on upstream providers, with the fake upstream (tests/fake_upstream) as
// OpenAI and as fish-speech: transcription in every format passed through, the request's
// fields forwarded, speech converted to 48 kHz stereo, voice cloning upstream and locally, the
// upstream failures mapped (and never charged), key rotation, keys never shown, exact billing:
// every hold taken before the upstream is called, transcription billed on the audio decoded
// (not on what its container claims), speech left half-read billed for the share taken.

#include "AudioConfig.h"
#include "AudioHttpSupport.h"
#include "FakeUpstreamProcess.h"
#include "Money.h"
#include "Pipeline.h"
#include "RequestContext.h"
#include "ServerFixture.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtEndian>
#include <QTest>

using AudioTest::balance;
using AudioTest::kBoundary;
using AudioTest::postForm;
using AudioTest::rawPost;
using AudioTest::sqliteRow;
using AudioTest::usageRows;

namespace {

const QString kSentence = QStringLiteral("The quick brown fox jumps over the lazy dog.");
// Shaped like a real key, so the scrubber's pattern would also catch it.
const QString kKey = QStringLiteral("sk-audio-upstream-SECRET-0123456789abcdef");
const QString kKey2 = QStringLiteral("sk-audio-upstream-SECOND-fedcba9876543210");
const qint64 kAsrPrice = 6000000; // credit units per minute
const qint64 kTtsPrice = 5000000; // per 1,000 characters

HttpReply postJson(ServerFixture &f, const QJsonObject &body, const QByteArray &key)
{
    return f.client().postJson("/v1/audio/speech",
                               QJsonDocument(body).toJson(QJsonDocument::Compact), key);
}

// 16 kHz mono WAV of the sentence, and its frames.
QByteArray sentenceWav(qint64 *frames = nullptr)
{
    static const QByteArray mono = AudioTest::toMono16k(AudioTest::speak(kSentence));
    if (frames)
        *frames = mono.size() / 2;
    return Wav::file(16000, 1, mono);
}

// The audio section: the fake as the built-in `openai` provider and as a fish-speech provider
// used for cloning, a speech model on each, and providers without a key.
QJsonObject audioSection(const FakeUpstreamProcess &fake, const QJsonArray &keys = {kKey},
                         int totalMs = 20000, const QString &cloneProvider = "fish")
{
    const QJsonObject timeouts{{"total_ms", totalMs}};
    QJsonObject providers{
        {"openai", QJsonObject{{"type", "openai"},
                               {"base_url", fake.base("/v1")},
                               {"keys", keys},
                               {"key_rest_ms", 60000},
                               {"timeouts", timeouts}}},
        {"fish",
         QJsonObject{{"type", "fish-speech"}, {"base_url", fake.url()}, {"timeouts", timeouts}}},
        {"nokey", QJsonObject{{"type", "openai"}, {"base_url", fake.base("/v1")}}},
    };
    QJsonArray models{
        QJsonObject{{"id", "vendorB-tts-1"},
                    {"task", "speech"},
                    {"provider", "openai"},
                    {"upstream_model", "tts-1"}},
        QJsonObject{{"id", "fish-tts"}, {"task", "speech"}, {"provider", "fish"}},
        QJsonObject{{"id", "nokey-asr"}, {"task", "transcription"}, {"provider", "nokey"}},
        QJsonObject{{"id", "nokey-tts"}, {"task", "speech"}, {"provider", "nokey"}},
    };
    return QJsonObject{
        {"providers", providers},
        {"models", models},
        {"clone_provider", cloneProvider},
        {"file_uri",
         QJsonObject{{"fetch", QJsonObject{{"allow_http", true},
                                           {"allow_cidrs", QJsonArray{"127.0.0.0/8"}}}}}}};
}

ServerSettings settingsWith(const QJsonObject &audio)
{
    ServerSettings s = ServerSettings::defaults();
    s.familySections.insert("audio", audio);
    return s;
}

struct WavInfo
{
    int channels = 0;
    int rate = 0;
    int bits = 0;
};

WavInfo wavInfo(const QByteArray &wav)
{
    WavInfo w;
    if (wav.size() < 44 || !wav.startsWith("RIFF"))
        return w;
    const auto *h = reinterpret_cast<const uchar *>(wav.constData());
    w.channels = qFromLittleEndian<quint16>(h + 22);
    w.rate = int(qFromLittleEndian<quint32>(h + 24));
    w.bits = qFromLittleEndian<quint16>(h + 34);
    return w;
}

// The fake's own answer to a direct request (what Switchyard received from it).
HttpReply direct(const FakeUpstreamProcess &fake, const QByteArray &path,
                 const QByteArray &contentType, const QByteArray &body)
{
    HttpClient c(fake.port());
    return c.request("POST", path,
                     {{"Authorization", "Bearer " + kKey.toUtf8()}, {"Content-Type", contentType}},
                     body);
}

// The fake's own speech for `input`, as Switchyard asks it of OpenAI: 24 kHz mono PCM.
HttpReply upstreamSpeech(const FakeUpstreamProcess &fake, const QString &input)
{
    return direct(fake, "/v1/audio/speech", "application/json",
                  QJsonDocument(QJsonObject{{"model", "tts-1"},
                                            {"input", input},
                                            {"voice", "alloy"},
                                            {"response_format", "pcm"}})
                      .toJson(QJsonDocument::Compact));
}

// Speech in the voice of `prompt` (a WAV reference), the form's `first` parts before the rest.
HttpReply cloneSpeech(ServerFixture &f, const QByteArray &input, const QByteArray &prompt,
                      const QByteArray &key, QList<AudioTest::Part> first = {})
{
    first += {{"input", input}, {"prompt_audio", prompt, "me.wav", "audio/wav"}};
    return postForm(f, "/v1/audio/speech", first, key);
}

// Every line of the fake's request log, parsed.
QList<QJsonObject> readLog(const QString &path)
{
    QList<QJsonObject> lines;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return lines;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (!line.trimmed().isEmpty())
            lines.append(QJsonDocument::fromJson(line).object());
    return lines;
}

qint64 upstreamRequests(const FakeUpstreamProcess &fake)
{
    HttpClient c(fake.port());
    return c.get("/fake/stats").json().value("requests").toInteger();
}

// `wav` as FLAC (the ffmpeg program), its STREAMINFO then claiming `claimSeconds` of audio at
// `rate`: a container whose header lies about its length. Empty without ffmpeg.
QByteArray lyingFlac(const QByteArray &wav, int rate, qint64 claimSeconds)
{
    const QString ffmpeg = QStandardPaths::findExecutable(QStringLiteral("ffmpeg"));
    QTemporaryDir dir;
    QFile in(dir.filePath(QStringLiteral("in.wav")));
    if (ffmpeg.isEmpty() || !in.open(QIODevice::WriteOnly) || in.write(wav) != wav.size())
        return {};
    in.close();
    QProcess p;
    p.start(ffmpeg, {"-hide_banner", "-loglevel", "error", "-y", "-i", in.fileName(), "-c:a",
                     "flac", dir.filePath(QStringLiteral("out.flac"))});
    QFile out(dir.filePath(QStringLiteral("out.flac")));
    if (!p.waitForFinished(60000) || p.exitCode() != 0 || !out.open(QIODevice::ReadOnly))
        return {};
    QByteArray flac = out.readAll();
    // "fLaC", a metadata block header, then STREAMINFO: 10 bytes, then 64 bits holding the
    // rate (20), channels - 1 (3), bits - 1 (5) and the total samples (36).
    if (!flac.startsWith("fLaC") || flac.size() < 26)
        return {};
    auto *p64 = reinterpret_cast<uchar *>(flac.data() + 18);
    quint64 v = qFromBigEndian<quint64>(p64);
    v = (v & ~((quint64(1) << 36) - 1)) | quint64(claimSeconds * rate);
    qToBigEndian<quint64>(v, p64);
    return flac;
}

bool mentionsKey(const HttpReply &r)
{
    for (const QString &k : {kKey, kKey2}) {
        if (r.body.contains(k.toUtf8()))
            return true;
        for (const auto &h : r.headers)
            if (h.second.contains(k.toUtf8()))
                return true;
    }
    return false;
}

} // namespace

class TestAudioUpstream : public QObject
{
    Q_OBJECT
private slots:
    void transcriptionFormats_data() { sqliteRow(); }
    void transcriptionFormats()
    {
        SY_START_ON_FAKE(fake, f, settingsWith(audioSection(fake)));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        qint64 frames = 0;
        const QByteArray wav = sentenceWav(&frames);
        const qint64 cost = AudioConfig::transcriptionCost(frames, 16000, kAsrPrice);
        QVERIFY(cost > 0);
        auto transcribe = [&](const QList<AudioTest::Part> &extra) {
            QList<AudioTest::Part> parts = extra;
            parts.append(AudioTest::Part("model", "vendorB-asr-1"));
            parts.append(AudioTest::Part("file", wav, "speech.mp3", "audio/mpeg")); // a lie
            return postForm(f, "/v1/audio/transcriptions", parts, key);
        };

        const HttpReply json = transcribe({});
        QCOMPARE(json.status, 200);
        QCOMPARE(json.header("content-type"), QByteArray("application/json"));
        // Passed through as the upstream gave it: the same bytes the fake answers directly
        // for the same audio, sent under the name of its real container.
        const QByteArray form = AudioTest::multipart(
            {{"file", wav, "audio.wav"}, {"model", "whisper-1"}, {"response_format", "json"}},
            kBoundary);
        const HttpReply same = direct(fake, "/v1/audio/transcriptions",
                                      "multipart/form-data; boundary=" + kBoundary, form);
        QCOMPARE(same.status, 200);
        QCOMPARE(json.body, same.body);
        const QString seconds = QString::number(frames / 16000.0, 'f', 2);
        QCOMPARE(json.json().value("text").toString(),
                 QStringLiteral("Fake transcript of %1 seconds of wav audio in %2 bytes.")
                     .arg(seconds)
                     .arg(wav.size()));
        QCOMPARE(balance(f), Money::kUnitsPerCredit - cost);

        const HttpReply text = transcribe({{"response_format", "text"}});
        QCOMPARE(text.status, 200);
        QCOMPARE(text.header("content-type"), QByteArray("text/plain; charset=utf-8"));
        QCOMPARE(QString::fromUtf8(text.body).trimmed(), json.json().value("text").toString());

        const HttpReply verbose = transcribe({{"response_format", "verbose_json"},
                                              {"timestamp_granularities[]", "word"},
                                              {"timestamp_granularities[]", "segment"}});
        QCOMPARE(verbose.status, 200);
        QCOMPARE(verbose.header("content-type"), QByteArray("application/json"));
        const QJsonObject v = verbose.json();
        QCOMPARE(v.value("task").toString(), QStringLiteral("transcribe"));
        QCOMPARE(v.value("language").toString(), QStringLiteral("english"));
        QVERIFY(qAbs(v.value("duration").toDouble() - frames / 16000.0) < 0.01);
        QVERIFY(!v.value("segments").toArray().isEmpty());
        QVERIFY(v.value("segments").toArray().at(0).toObject().contains("avg_logprob"));
        QVERIFY(v.value("words").toArray().size() >= 5);
        // Segment timestamps alone (OpenAI's default) bring no words.
        const HttpReply segments = transcribe({{"response_format", "verbose_json"}});
        QCOMPARE(segments.status, 200);
        QVERIFY(!segments.json().contains("words"));

        const HttpReply srt = transcribe({{"response_format", "srt"}});
        QCOMPARE(srt.status, 200);
        QCOMPARE(srt.header("content-type"), QByteArray("text/plain; charset=utf-8"));
        QVERIFY2(QRegularExpression(QStringLiteral("^1\\n00:00:00,000 --> \\d\\d:\\d\\d:\\d\\d,"
                                                   "\\d{3}\\n.+\\n\\n"))
                     .match(QString::fromUtf8(srt.body))
                     .hasMatch(),
                 srt.body.constData());
        const HttpReply vtt = transcribe({{"response_format", "vtt"}});
        QCOMPARE(vtt.status, 200);
        QVERIFY(vtt.body.startsWith("WEBVTT\n\n00:00:00.000 --> "));
        // Six answers, each billed the probed duration, exactly.
        QCOMPARE(balance(f), Money::kUnitsPerCredit - 6 * cost);
    }

    void transcriptionForwarding_data() { sqliteRow(); }
    void transcriptionForwarding()
    {
        const QByteArray wav = sentenceWav();
        const auto serve = AudioTest::serveFile(wav);
        FakeUpstreamProcess fake;
        QVERIFY(fake.start());
        QFETCH(QString, backend);
        ServerFixture f(backend, settingsWith(audioSection(fake)), serve);
        QVERIFY(f.ready());
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        // French (the local engine takes English only), a prompt and a temperature arrive.
        const HttpReply r = postForm(f, "/v1/audio/transcriptions",
                                     {{"model", "vendorB-asr-1"},
                                      {"language", "fr"},
                                      {"prompt", QStringLiteral("Noms : Zoë, Switchyard").toUtf8()},
                                      {"temperature", "0.3"},
                                      {"response_format", "verbose_json"},
                                      {"file", wav, "speech.wav"}},
                                     key);
        QCOMPARE(r.status, 200);
        const QString text = r.json().value("text").toString();
        QVERIFY2(text.contains(QStringLiteral("Language: fr.")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Prompt: Noms : Zoë, Switchyard.")),
                 qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Temperature: 0.3.")), qPrintable(text));
        QCOMPARE(r.json().value("language").toString(), QStringLiteral("french"));

        // file_uri: downloaded through the guard, then sent upstream.
        const QByteArray url =
            "http://127.0.0.1:" + QByteArray::number(f.port()) + "/test/speech.bin";
        const HttpReply viaUri = postForm(f, "/v1/audio/transcriptions",
                                          {{"model", "vendorB-asr-1"}, {"file_uri", url}}, key);
        QCOMPARE(viaUri.status, 200);
        QVERIFY2(viaUri.json().value("text").toString().contains(
                     QStringLiteral("wav audio in %1 bytes").arg(wav.size())),
                 viaUri.body.constData());
    }

    void speechConverted_data() { sqliteRow(); }
    void speechConverted()
    {
        SY_START_ON_FAKE(fake, f, settingsWith(audioSection(fake)));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QString input = QStringLiteral("Hello from the upstream. This is a test of speech.");
        // What the fake says for this input: 24 kHz mono.
        const HttpReply raw = upstreamSpeech(fake, input);
        QCOMPARE(raw.status, 200);
        const qint64 upstreamFrames = raw.body.size() / 2;
        QVERIFY(upstreamFrames > 24000);

        const HttpReply r =
            postJson(f, {{"model", "vendorB-tts-1"}, {"input", input}, {"voice", "alloy"}}, key);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("content-type"), QByteArray("audio/wav"));
        QCOMPARE(r.header("x-audio-format"), QByteArray("s16le; rate=48000; channels=2"));
        QVERIFY(r.header("x-voice-clone").isEmpty());
        const WavInfo w = wavInfo(r.body);
        QCOMPARE(w.channels, 2);
        QCOMPARE(w.rate, 48000);
        QCOMPARE(w.bits, 16);
        // Twice the frames (24 -> 48 kHz), four bytes each.
        QCOMPARE((r.body.size() - 44) / 4, 2 * upstreamFrames);
        QVERIFY(AudioTest::peak(r.body.mid(44)) > 3000);
        QCOMPARE(balance(f),
                 Money::kUnitsPerCredit - AudioConfig::speechCost(input.size(), kTtsPrice));

        const HttpReply pcm = postJson(f,
                                       {{"model", "vendorB-tts-1"},
                                        {"input", input},
                                        {"voice", "nova"},
                                        {"response_format", "pcm"}},
                                       key);
        QCOMPARE(pcm.status, 200);
        QCOMPARE(pcm.header("content-type"), QByteArray("application/octet-stream"));
        QVERIFY(!pcm.body.startsWith("RIFF"));
        QCOMPARE(pcm.body.size() / 4, 2 * upstreamFrames);
        // Both stereo channels carry the mono signal.
        const auto *s = reinterpret_cast<const qint16 *>(pcm.body.constData());
        for (qsizetype i = 0; i < pcm.body.size() / 4; i += 997)
            QCOMPARE(s[2 * i], s[2 * i + 1]);
        QCOMPARE(balance(f),
                 Money::kUnitsPerCredit - 2 * AudioConfig::speechCost(input.size(), kTtsPrice));

        // A voice the upstream does not know: its 400, passed on, nothing charged.
        const qint64 before = balance(f);
        const HttpReply unknown = postJson(
            f, {{"model", "vendorB-tts-1"}, {"input", input}, {"voice", "zh-welcome"}}, key);
        QCOMPARE(unknown.status, 400);
        QVERIFY2(unknown.errorMessage().contains("zh-welcome"), unknown.body.constData());
        QCOMPARE(balance(f), before);
    }

    void cloning_data() { sqliteRow(); }
    void cloning()
    {
        QTemporaryDir dir;
        const QString log = dir.filePath("fake.log");
        FakeUpstreamProcess fake;
        QVERIFY(fake.start({"--log", log}));
        const QByteArray prompt = sentenceWav(); // the voice to clone
        const QString input = QStringLiteral("Cloned speech, please.");
        const qint64 cost = AudioConfig::speechCost(input.size(), kTtsPrice);
        {
            SY_START_SERVER(f, settingsWith(audioSection(fake)));
            const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
            const HttpReply r = cloneSpeech(f, input.toUtf8(), prompt, key);
            QCOMPARE(r.status, 200);
            QCOMPARE(r.header("x-voice-clone"), QByteArray("upstream"));
            const WavInfo w = wavInfo(r.body);
            QCOMPARE(w.channels, 2);
            QCOMPARE(w.rate, 48000);
            // The fake's 44.1 kHz answer, resampled to 48 kHz.
            const qint64 fishFrames = qint64(std::llround((0.3 + 0.06 * input.size()) * 44100));
            const qint64 expected = fishFrames * 48000 / 44100;
            QCOMPARE((r.body.size() - 44) / 4, expected);
            QCOMPARE(balance(f), Money::kUnitsPerCredit - cost);
            // The reference reached fish-speech whole, as base64 in ServeTTSRequest's JSON.
            QJsonObject tts;
            for (const QJsonObject &line : readLog(log))
                if (line.value("path").toString() == u"/v1/tts")
                    tts = QJsonDocument::fromJson(line.value("body").toString().toUtf8()).object();
            QCOMPARE(tts.value("text").toString(), input);
            QCOMPARE(tts.value("format").toString(), QStringLiteral("wav"));
            const QJsonArray refs = tts.value("references").toArray();
            QCOMPARE(refs.size(), 1);
            QCOMPARE(
                QByteArray::fromBase64(refs.at(0).toObject().value("audio").toString().toLatin1()),
                prompt);

            // A model on the fish-speech provider without a reference: plain speech.
            const HttpReply plain = postJson(f, {{"model", "fish-tts"}, {"input", input}}, key);
            QCOMPARE(plain.status, 200);
            QVERIFY(plain.header("x-voice-clone").isEmpty());
            QCOMPARE(wavInfo(plain.body).rate, 48000);
            QCOMPARE(balance(f), Money::kUnitsPerCredit - 2 * cost);

            // A bad reference is refused before any upstream call.
            const HttpReply bad =
                postForm(f, "/v1/audio/speech",
                         {{"input", "hi"}, {"prompt_audio", QByteArray(4000, 'x'), "me.wav"}}, key);
            QCOMPARE(bad.status, 400);
            QCOMPARE(bad.json().value("error").toObject().value("param").toString(),
                     QStringLiteral("prompt_audio"));
        }
        {
            SY_START_SERVER(f, settingsWith(audioSection(fake, {kKey}, 20000, QString())));
            const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
            const HttpReply r = cloneSpeech(f, input.toUtf8(), prompt, key);
            QCOMPARE(r.status, 200);
            QCOMPARE(r.header("x-voice-clone"), QByteArray("approximate"));
            QCOMPARE(balance(f), Money::kUnitsPerCredit - cost);
            // An OpenAI-compatible model cannot clone without a clone provider: a 400 naming
            // the field, not a silent plain voice.
            const HttpReply openai =
                cloneSpeech(f, input.toUtf8(), prompt, key, {{"model", "vendorB-tts-1"}});
            QCOMPARE(openai.status, 400);
            QCOMPARE(openai.json().value("error").toObject().value("param").toString(),
                     QStringLiteral("prompt_audio"));
            QCOMPARE(balance(f), Money::kUnitsPerCredit - cost);
        }
    }

    void faults_data() { sqliteRow(); }
    void faults()
    {
        SY_START_ON_FAKE(fake, f, settingsWith(audioSection(fake, {kKey}, 1500)));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QByteArray wav = sentenceWav();
        const QByteArray prompt = sentenceWav(); // the voice to clone
        struct Case
        {
            QString fault;
            int status;
            QString says; // in the message
        };
        const QList<Case> cases = {
            {"429:7", 429, "rate limiting"},
            {"500", 502, "HTTP 500"},
            {"503", 502, "HTTP 503"},
            {"slow-first-byte:5000", 504, "did not answer in time"},
            {"reset-mid-stream", 502, "failed"},
            {"reset", 502, "failed"},
        };
        QList<HttpReply> replies;
        for (const Case &c : cases) {
            const QByteArray directive = "[fake fault=" + c.fault.toUtf8() + "]";
            const HttpReply asr = postForm(f, "/v1/audio/transcriptions",
                                           {{"model", "vendorB-asr-1"},
                                            {"prompt", "Hello " + directive},
                                            {"file", wav, "speech.wav"}},
                                           key);
            const HttpReply tts = postJson(f,
                                           {{"model", "vendorB-tts-1"},
                                            {"input", "Hello " + QString::fromUtf8(directive)},
                                            {"voice", "alloy"}},
                                           key);
            const HttpReply clone = cloneSpeech(f, "Hello " + directive, prompt, key);
            for (const HttpReply &r : {asr, tts, clone}) {
                QVERIFY2(r.status == c.status,
                         qPrintable(c.fault + QStringLiteral(": ") + QString::number(r.status) +
                                    QStringLiteral(" ") + QString::fromUtf8(r.body)));
                const QJsonObject e = r.json().value("error").toObject();
                QVERIFY2(e.value("message").toString().contains(c.says), r.body.constData());
                if (c.status == 429)
                    QCOMPARE(r.header("retry-after"), QByteArray("7"));
                if (c.status >= 500)
                    QCOMPARE(e.value("type").toString(), QStringLiteral("upstream_error"));
                replies.append(r);
            }
        }
        // Not one of them was charged.
        QCOMPARE(balance(f), Money::kUnitsPerCredit);
        for (const HttpReply &r : replies)
            QVERIFY(!mentionsKey(r));
    }

    void clientLeaves_data() { sqliteRow(); }
    void clientLeaves()
    {
        SY_START_ON_FAKE(fake, f, settingsWith(audioSection(fake)));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        // The client gives up while the upstream is still working: the upstream call is
        // dropped (the fake sees its client leave) and nothing is charged.
        HttpClient c = f.client();
        QVERIFY(c.connectIfNeeded());
        const QByteArray body =
            QJsonDocument(QJsonObject{{"model", "vendorB-tts-1"},
                                      {"input", "Slow [fake fault=slow-first-byte:4000]"},
                                      {"voice", "alloy"}})
                .toJson(QJsonDocument::Compact);
        c.sendRaw(rawPost("/v1/audio/speech", key, body));
        QTest::qWait(500);
        c.socket().abort();
        HttpClient stats(fake.port());
        QTRY_COMPARE_WITH_TIMEOUT(stats.get("/fake/stats").json().value("cancelled").toInt(), 1,
                                  3000);
        QCOMPARE(balance(f), Money::kUnitsPerCredit);
    }

    void keys_data() { sqliteRow(); }
    void keys()
    {
        QTemporaryDir dir;
        const QString log = dir.filePath("fake.log");
        FakeUpstreamProcess fake;
        // The first key is rate limited at the upstream.
        QVERIFY(fake.start({"--log", log, "--key-fault", kKey + "=429"}));
        SY_START_SERVER(f, settingsWith(audioSection(fake, {kKey, kKey2})));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QByteArray wav = sentenceWav();
        QList<HttpReply> replies;
        auto transcribe = [&](const QByteArray &prompt) {
            const HttpReply r = postForm(
                f, "/v1/audio/transcriptions",
                {{"model", "vendorB-asr-1"}, {"prompt", prompt}, {"file", wav, "speech.wav"}}, key);
            replies.append(r);
            return r;
        };
        // 429 on the first key: it rests, and the second answers.
        QCOMPARE(transcribe("first").status, 200);
        QCOMPARE(transcribe("second").status, 200);
        QStringList used;
        for (const QJsonObject &line : readLog(log))
            used.append(line.value("headers").toObject().value("authorization").toString());
        const QString one = QStringLiteral("Bearer ***") + kKey.right(4);
        const QString two = QStringLiteral("Bearer ***") + kKey2.right(4);
        QCOMPARE(used, (QStringList{one, two, two})); // the rested key is not tried again

        // An upstream error quoting the key: scrubbed before it reaches the client.
        const HttpReply echoed = transcribe("[fake fault=400 echo-key=1]");
        QCOMPARE(echoed.status, 400);
        QVERIFY2(echoed.errorMessage().contains("[redacted]"), echoed.body.constData());
        QCOMPARE(echoed.json().value("error").toObject().value("type").toString(),
                 QStringLiteral("invalid_request_error"));
        const HttpReply speech = postJson(f,
                                          {{"model", "vendorB-tts-1"},
                                           {"input", "Hi [fake fault=404 echo-key=1]"},
                                           {"voice", "alloy"}},
                                          key);
        QCOMPARE(speech.status, 400);
        replies.append(speech);
        for (const HttpReply &r : replies)
            QVERIFY2(!mentionsKey(r), r.body.constData());

        // Both keys failing: the client gets the 429 and its Retry-After.
        FakeUpstreamProcess limited;
        QVERIFY(limited.start({"--fault", "429:3"}));
        ServerFixture g(backend, settingsWith(audioSection(limited, {kKey, kKey2})));
        QVERIFY(g.ready());
        const QByteArray gkey = g.fundedKey(Money::kUnitsPerCredit);
        const HttpReply r =
            postForm(g, "/v1/audio/transcriptions",
                     {{"model", "vendorB-asr-1"}, {"file", wav, "speech.wav"}}, gkey);
        QCOMPARE(r.status, 429);
        QCOMPARE(r.header("retry-after"), QByteArray("3"));
        QVERIFY(!mentionsKey(r));
        QCOMPARE(balance(g), Money::kUnitsPerCredit);

        // A key the upstream refuses is the operator's problem: 502, the key not shown.
        FakeUpstreamProcess strict;
        QVERIFY(strict.start({"--require-key", "sk-some-other-key-000000"}));
        ServerFixture h(backend, settingsWith(audioSection(strict)));
        QVERIFY(h.ready());
        const QByteArray hkey = h.fundedKey(Money::kUnitsPerCredit);
        const HttpReply refused =
            postForm(h, "/v1/audio/transcriptions",
                     {{"model", "vendorB-asr-1"}, {"file", wav, "speech.wav"}}, hkey);
        QCOMPARE(refused.status, 502);
        QVERIFY(refused.errorMessage().contains("audio.providers.openai.keys"));
        QVERIFY(!mentionsKey(refused));
        QCOMPARE(balance(h), Money::kUnitsPerCredit);
    }

    void speechHoldsBeforeUpstream_data() { addBackendRows(); }
    void speechHoldsBeforeUpstream()
    {
        // Every upstream path holds the characters' price before the call: OpenAI's speech,
        // fish-speech's, and cloning on fish-speech. One unit short: 402, the upstream never
        // asked, nothing charged. Exactly the price: served, and the balance is then zero.
        SY_START_ON_FAKE(fake, f, settingsWith(audioSection(fake)));
        const QByteArray key = f.createKey();
        const QString input = QStringLiteral("Held before the upstream call.");
        const qint64 cost = AudioConfig::speechCost(input.size(), kTtsPrice);
        const QByteArray prompt = sentenceWav(); // the voice to clone
        auto openai = [&] {
            return postJson(f, {{"model", "vendorB-tts-1"}, {"input", input}, {"voice", "alloy"}},
                            key);
        };
        auto fish = [&] { return postJson(f, {{"model", "fish-tts"}, {"input", input}}, key); };
        auto clone = [&] { return cloneSpeech(f, input.toUtf8(), prompt, key); };
        f.grant(cost - 1);
        const qint64 asked = upstreamRequests(fake);
        for (const HttpReply &r : {openai(), fish(), clone()})
            QVERIFY2(r.status == 402, r.body.constData());
        QCOMPARE(upstreamRequests(fake), asked);
        QCOMPARE(balance(f), cost - 1);
        f.grant(1);
        for (const auto &call :
             {std::function<HttpReply()>(openai), std::function<HttpReply()>(fish),
              std::function<HttpReply()>(clone)}) {
            const HttpReply r = call();
            QVERIFY2(r.status == 200, r.body.constData());
            QCOMPARE(balance(f), qint64(0));
            f.grant(cost);
        }
        QCOMPARE(upstreamRequests(fake), asked + 3);
    }

    void transcriptionHoldsBeforeUpstream_data() { addBackendRows(); }
    void transcriptionHoldsBeforeUpstream()
    {
        // The decoded duration's price is held before the upstream is called, for an upload
        // and for a file_uri download alike.
        qint64 frames = 0;
        const QByteArray wav = sentenceWav(&frames);
        SY_START_ON_FAKE(fake, f, settingsWith(audioSection(fake)), AudioTest::serveFile(wav));
        const QByteArray key = f.createKey();
        const qint64 cost = AudioConfig::transcriptionCost(frames, 16000, kAsrPrice);
        const QByteArray url =
            "http://127.0.0.1:" + QByteArray::number(f.port()) + "/test/speech.bin";
        auto upload = [&] {
            return postForm(f, "/v1/audio/transcriptions",
                            {{"model", "vendorB-asr-1"}, {"file", wav, "speech.wav"}}, key);
        };
        auto fetched = [&] {
            return postForm(f, "/v1/audio/transcriptions",
                            {{"model", "vendorB-asr-1"}, {"file_uri", url}}, key);
        };
        f.grant(cost - 1);
        const qint64 asked = upstreamRequests(fake);
        QCOMPARE(upload().status, 402);
        QCOMPARE(fetched().status, 402);
        QCOMPARE(upstreamRequests(fake), asked);
        QCOMPARE(balance(f), cost - 1);
        f.grant(1);
        QCOMPARE(upload().status, 200);
        QCOMPARE(balance(f), qint64(0));
        f.grant(cost);
        QCOMPARE(fetched().status, 200);
        QCOMPARE(balance(f), qint64(0));
        QCOMPARE(upstreamRequests(fake), asked + 2);
    }

    void lyingHeaderBilledOnDecodedAudio_data() { addBackendRows(); }
    void lyingHeaderBilledOnDecodedAudio()
    {
        // A FLAC file whose header claims ten minutes and holds three seconds: held and billed
        // for the three seconds it decodes to, upstream and on the local engine. The header's
        // claim reaches the upstream (the fake reports the duration its container states), and
        // ten minutes' price (0.06 credits) is far more than the balance.
        qint64 frames = 0;
        const QByteArray flac = lyingFlac(sentenceWav(&frames), 16000, 600);
        if (flac.isEmpty())
            QSKIP("the ffmpeg program is needed for the fixture (installer/build-deps.sh --tests)");
        SY_START_ON_FAKE(fake, f, settingsWith(audioSection(fake)));
        const QByteArray key = f.createKey();
        const qint64 cost = AudioConfig::transcriptionCost(frames, 16000, kAsrPrice);
        QCOMPARE(AudioConfig::transcriptionCost(600 * 16000, 16000, kAsrPrice), qint64(60'000'000));
        f.grant(3 * cost);
        const HttpReply up =
            postForm(f, "/v1/audio/transcriptions",
                     {{"model", "vendorB-asr-1"}, {"file", flac, "speech.flac"}}, key);
        QVERIFY2(up.status == 200, up.body.constData());
        QVERIFY2(up.json().value("text").toString().startsWith(
                     QStringLiteral("Fake transcript of 600.00 seconds of flac audio")),
                 up.body.constData());
        QCOMPARE(balance(f), 2 * cost);
        const HttpReply local = postForm(f, "/v1/audio/transcriptions",
                                         {{"model", "rapid"}, {"file", flac, "speech.flac"}}, key);
        QVERIFY2(local.status == 200, local.body.constData());
        QVERIFY2(AudioTest::wordErrorRate(kSentence, local.json().value("text").toString()) < 0.5,
                 local.body.constData());
        QCOMPARE(balance(f), cost);
        const auto rows = usageRows(f, QStringLiteral("/v1/audio/transcriptions"));
        QCOMPARE(rows.size(), 2);
        for (const auto &row : rows) {
            QCOMPARE(row.cost, cost);
            QCOMPARE(row.audioMs, frames * 1000 / 16000);
        }
    }

    void speechPartlyTakenBilledByShare_data() { addBackendRows(); }
    void speechPartlyTakenBilledByShare()
    {
        // OpenAI's answer for 4,000 characters is four minutes of audio (46 MB once converted
        // to 48 kHz stereo). A client that reads 4 MB and closes is billed ceil(characters x
        // audio taken / audio of the whole answer): at least its 4 MB's share, not all of it.
        SY_START_ON_FAKE(fake, f, settingsWith(audioSection(fake)));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const QString input = QString(QStringLiteral("Speak. ")).repeated(572).left(4000);
        const HttpReply raw = upstreamSpeech(fake, input);
        QCOMPARE(raw.status, 200);
        const qint64 whole = 2 * (raw.body.size() / 2) * 4; // 24 kHz mono to 48 kHz stereo
        RawClient c(f.port(), AudioTest::kSmallReceiveBuffer);
        QVERIFY(c.sendAll(rawPost(
            "/v1/audio/speech", key,
            QJsonDocument(
                QJsonObject{{"model", "vendorB-tts-1"}, {"input", input}, {"voice", "alloy"}})
                .toJson(QJsonDocument::Compact))));
        const QByteArray body = c.readBody(4 << 20);
        QCOMPARE(c.status(), 200);
        QVERIFY(body.size() >= 4 << 20);
        c.close();
        QList<AudioTest::UsageRow> rows;
        QTRY_VERIFY_WITH_TIMEOUT(
            (rows = usageRows(f, QStringLiteral("/v1/audio/speech"))).size() == 1, 30000);
        const auto row = rows.first();
        QCOMPARE(row.status, 499);
        // The client read `heard` bytes of audio; the count may lag by kTakenSlack.
        const qint64 heard = body.size() - 44;
        const qint64 atLeast = (4000 * (heard - AudioTest::kTakenSlack) + whole - 1) / whole;
        qInfo("billed %lld of 4000 characters; the client read %lld of %lld bytes of audio, so "
              "at least %lld are due",
              row.characters, heard, whole, atLeast);
        QVERIFY(row.characters >= atLeast);
        QVERIFY(row.characters < 4000);
        QCOMPARE(row.cost, AudioConfig::speechCost(row.characters, kTtsPrice));
        QCOMPARE(balance(f), Money::kUnitsPerCredit - row.cost);
    }

    void noKey_data() { sqliteRow(); }
    void noKey()
    {
        SY_START_ON_FAKE(fake, f, settingsWith(audioSection(fake)));
        const QByteArray key = f.fundedKey(Money::kUnitsPerCredit);
        const HttpReply asr =
            postForm(f, "/v1/audio/transcriptions",
                     {{"model", "nokey-asr"}, {"file", sentenceWav(), "speech.wav"}}, key);
        QCOMPARE(asr.status, 503);
        QVERIFY2(asr.errorMessage().contains("audio.providers.nokey.keys"),
                 qPrintable(asr.errorMessage()));
        const HttpReply tts = postJson(f, {{"model", "nokey-tts"}, {"input", "hello"}}, key);
        QCOMPARE(tts.status, 503);
        QVERIFY(tts.errorMessage().contains("audio.providers.nokey.keys"));
        QCOMPARE(balance(f), Money::kUnitsPerCredit);
    }
};

QTEST_GUILESS_MAIN(TestAudioUpstream)
#include "tst_audio_upstream.moc"
