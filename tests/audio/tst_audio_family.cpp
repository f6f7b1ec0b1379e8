// The audio family's pure parts: configuration, prices, transcript formats, the request
// validation of both routes, and what a speech answer bills for the audio a client took.

#include "AudioConfig.h"
#include "AudioRequests.h"
#include "AudioUpstream.h"
#include "Money.h"
#include "SpeechMeter.h"
#include "TranscriptFormat.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

using Fields = QList<QPair<QByteArray, QByteArray>>;

namespace {

Transcript sample()
{
    Transcript t;
    t.duration = 5.0;
    RecognizedSegment a;
    a.start = 0.0;
    a.end = 1.2344;
    a.text = QStringLiteral("hello there");
    a.words = {{QStringLiteral("hello"), 0.0, 0.5, 0.9},
               {QStringLiteral("there"), 0.6, 1.2344, 0.8}};
    RecognizedSegment b;
    b.start = 3661.0005;
    b.end = 3662.5;
    b.text = QStringLiteral("a --> b & <c>");
    t.segments = {a, b};
    t.text = QStringLiteral("hello there a --> b & <c>");
    return t;
}

MultipartForm form(const QList<QPair<QByteArray, QByteArray>> &fields, bool withFile = true)
{
    MultipartForm f;
    for (const auto &[name, value] : fields) {
        MultipartPart p;
        p.name = name;
        p.data = value;
        f.parts.append(p);
    }
    if (withFile) {
        MultipartPart file;
        file.name = "file";
        file.filename = "a.wav";
        file.hasFilename = true;
        file.data = "RIFF";
        f.parts.append(file);
    }
    return f;
}

} // namespace

class TestAudioFamily : public QObject
{
    Q_OBJECT
private slots:
    void prices()
    {
        // 0.006 credits per minute: one minute at 16 kHz is 960,000 frames.
        QCOMPARE(AudioConfig::transcriptionCost(960000, 16000, 6000000), qint64(6000000));
        // One frame: 6e6 / 960000 = 6.25 units, rounded up once.
        QCOMPARE(AudioConfig::transcriptionCost(1, 16000, 6000000), qint64(7));
        QCOMPARE(AudioConfig::transcriptionCost(4, 16000, 6000000), qint64(25));
        QCOMPARE(AudioConfig::transcriptionCost(0, 16000, 6000000), qint64(0));
        // 0.005 credits per 1,000 characters: 5,000 units a character.
        QCOMPARE(AudioConfig::speechCost(1, 5000000), qint64(5000));
        QCOMPARE(AudioConfig::speechCost(4096, 5000000), qint64(20480000));
        QCOMPARE(AudioConfig::speechCost(1, 1), qint64(1)); // rounded up
        QCOMPARE(AudioConfig::speechCost(1000, 1), qint64(1));
        QCOMPARE(AudioConfig::speechCost(1001, 1), qint64(2));
    }

    void speechMeterCountsTakenAudio()
    {
        // A WAV header (not audio), then two audio chunks, framed as HTTP/1.1 chunks:
        // "2c\r\n" + 44 + "\r\n" = 50 bytes, "3e8\r\n" + 1000 + "\r\n" = 1007 each.
        SpeechMeter m;
        m.wrote(44, false);
        m.wrote(1000, true);
        m.wrote(0, true); // no chunk is written for no bytes
        m.wrote(1000, true);
        QCOMPARE(m.audioWritten(), qint64(2000));
        const qint64 all = 50 + 2 * 1007;
        // The answer's head is still unsent too: nothing was taken.
        m.observe(all + 100);
        QCOMPARE(m.audioTaken(), qint64(0));
        // The head was taken, and the WAV header: still no audio.
        m.observe(all);
        QCOMPARE(m.audioTaken(), qint64(0));
        m.observe(2 * 1007);
        QCOMPARE(m.audioTaken(), qint64(0));
        // Unsent: the second chunk, the first one's CRLF and its last byte.
        m.observe(1007 + 3);
        QCOMPARE(m.audioTaken(), qint64(999));
        // Only the CRLF: the first chunk's bytes were all taken.
        m.observe(1007 + 2);
        QCOMPARE(m.audioTaken(), qint64(1000));
        // Inside the second chunk: 500 unsent are its CRLF and 498 bytes.
        m.observe(500);
        QCOMPARE(m.audioTaken(), qint64(1502));
        // A later, larger figure cannot take back what was taken.
        m.observe(1007);
        QCOMPARE(m.audioTaken(), qint64(1502));
        m.observe(0);
        QCOMPARE(m.audioTaken(), qint64(2000));
        // A chunk of 16 bytes has a two-digit size line: "10\r\n" + 16 + "\r\n" = 22.
        m.wrote(16, true);
        m.observe(22);
        QCOMPARE(m.audioTaken(), qint64(2000));
        m.observe(3);
        QCOMPARE(m.audioTaken(), qint64(2015));
    }

    void speechMeterBillsSentences()
    {
        // Sentences of 10, 20 and 5 characters with 1000, 1000 and 500 bytes of audio.
        auto meter = [](qint64 unsent) {
            SpeechMeter m;
            m.sentence(0, 10);
            m.wrote(1000, true);
            m.sentence(1000, 20);
            m.sentence(2000, 5); // marked before its audio is written
            m.wrote(1000, true);
            m.wrote(500, true);
            m.observe(unsent);
            return m.billedCharacters(35);
        };
        // Wire sizes: 1007, 1007 and 507 ("1f4\r\n" + 500 + "\r\n").
        const qint64 all = 1007 + 1007 + 507;
        QCOMPARE(meter(all), qint64(0));      // nothing taken: nothing billed
        QCOMPARE(meter(all - 6), qint64(10)); // the first sentence's first byte
        // All of the first sentence, the second's size line but none of its bytes.
        QCOMPARE(meter(507 + 1007 - 5), qint64(10));
        QCOMPARE(meter(507 + 1007 - 6), qint64(30)); // the second sentence's first byte
        QCOMPARE(meter(507 + 2), qint64(30));
        QCOMPARE(meter(507 - 5), qint64(30));
        QCOMPARE(meter(507 - 6), qint64(35));
        QCOMPARE(meter(0), qint64(35));
    }

    void speechMeterBillsShareOfUpstreamAudio()
    {
        // 100 characters whose audio is expected to be 4,000 bytes: ceil(100 x taken / 4000).
        auto meter = [](qint64 written, qint64 unsent) {
            SpeechMeter m;
            m.expect(4000);
            m.wrote(44, false);
            m.wrote(written, true);
            m.observe(unsent);
            return m.billedCharacters(100);
        };
        // "fa0\r\n" + 4000 + "\r\n" = 4007 bytes on the wire.
        QCOMPARE(meter(4000, 4007), qint64(0));
        QCOMPARE(meter(4000, 4001), qint64(1)); // one byte: rounded up
        QCOMPARE(meter(4000, 3000 + 2), qint64(25));
        QCOMPARE(meter(4000, 2999 + 2), qint64(26));
        QCOMPARE(meter(4000, 0), qint64(100));
        // More audio than expected (the resampler's last frames): never more than every
        // character.
        QCOMPARE(meter(4100, 0), qint64(100));
    }

    void defaultsAndModels()
    {
        const AudioConfig c = AudioConfig::defaults();
        QCOMPARE(c.model("rapid")->provider, QStringLiteral("local"));
        QCOMPARE(c.model("vendorE-tts-nano")->provider, QStringLiteral("local"));
        QCOMPARE(c.model("vendorB-asr-1")->provider, QStringLiteral("openai"));
        QVERIFY(c.provider("local")->unusableReason().isEmpty());
        const QString why = c.provider("openai")->unusableReason();
        QVERIFY2(why.contains("audio.providers.openai.keys"), qPrintable(why));
        const QJsonArray models = c.modelsJson();
        QCOMPARE(models.size(), 3);
        QCOMPARE(models.at(0).toObject().value("pricing").toObject().value("per_minute").toString(),
                 QStringLiteral("0.006000000"));
        QCOMPARE(models.at(2).toObject().value("endpoints").toArray().at(0).toString(),
                 QStringLiteral("audio.speech"));
    }

    void configParsing()
    {
        const AudioConfig c = AudioConfig::fromJson(
            QJsonDocument::fromJson(
                "{"
                "\"providers\": {\"openai\": {\"keys\": [\"sk-up-1\"]},"
                "\"fish\": {\"type\": \"fish-speech\", \"base_url\": \"http://127.0.0.1:8080/\"}},"
                "\"models\": [{\"id\": \"rapid\", \"price_per_minute\": \"0.01\"},"
                "{\"id\": \"my-tts\", \"task\": \"speech\", \"provider\": \"fish\","
                "\"price_per_1k_chars\": \"0.02\"}],"
                "\"clone_provider\": \"fish\", \"workers\": 3, \"queue\": 5,"
                "\"file_uri\": {\"max_bytes\": 1000, \"timeout_ms\": 5000,"
                "\"fetch\": {\"allow_http\": true, \"allow_cidrs\": [\"127.0.0.0/8\"]}}"
                "}")
                .object());
        QVERIFY(c.provider("openai")->unusableReason().isEmpty());
        QCOMPARE(c.provider("fish")->baseUrl, QStringLiteral("http://127.0.0.1:8080"));
        QCOMPARE(c.model("rapid")->price, qint64(10000000));
        QCOMPARE(c.model("rapid")->task, AudioTask::Transcription);
        QCOMPARE(c.model("my-tts")->price, qint64(20000000));
        QCOMPARE(c.cloneProvider, QStringLiteral("fish"));
        QCOMPARE(c.workers, 3);
        QCOMPARE(c.fileUri.maxBytes, qint64(1000));
        QCOMPARE(c.fileUri.totalTimeoutMs, 5000);
        QVERIFY(c.fileUri.schemes.contains("http"));
        // Cloning is slow: a fish-speech provider waits 120 s unless told otherwise.
        QCOMPARE(c.provider("fish")->totalTimeoutMs, 120000);
        const AudioConfig t = AudioConfig::fromJson(
            QJsonDocument::fromJson("{\"providers\": {\"fish\": {\"type\": \"fish-speech\","
                                    "\"base_url\": \"http://h:1\","
                                    "\"timeouts\": {\"total_ms\": 5000}}}}")
                .object());
        QCOMPARE(t.provider("fish")->totalTimeoutMs, 5000);
    }

    void configErrors_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("field");
        QTest::newRow("type") << QByteArray("{\"providers\":{\"x\":{\"type\":\"grpc\"}}}")
                              << "providers.x.type";
        QTest::newRow("url") << QByteArray("{\"providers\":{\"x\":{\"base_url\":\"ftp://a\"}}}")
                             << "providers.x.base_url";
        QTest::newRow("model provider")
            << QByteArray("{\"models\":[{\"id\":\"m\",\"task\":\"speech\",\"provider\":\"nope\"}]}")
            << "nope";
        QTest::newRow("task") << QByteArray("{\"models\":[{\"id\":\"m\",\"task\":\"sing\"}]}")
                              << "models[0].task";
        QTest::newRow("price") << QByteArray(
                                      "{\"models\":[{\"id\":\"rapid\",\"price_per_minute\":1}]}")
                               << "models[0].price_per_minute";
        QTest::newRow("clone") << QByteArray("{\"clone_provider\":\"openai\"}") << "clone_provider";
        QTest::newRow("workers") << QByteArray("{\"workers\":-1}") << "workers";
        QTest::newRow("max_bytes")
            << QByteArray("{\"file_uri\":{\"max_bytes\":0}}") << "file_uri.max_bytes";
        QTest::newRow("fetch") << QByteArray("{\"file_uri\":{\"fetch\":{\"bogus\":1}}}")
                               << "file_uri.fetch";
    }
    void configErrors()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, field);
        try {
            AudioConfig::fromJson(QJsonDocument::fromJson(json).object());
            QFAIL("accepted");
        } catch (const std::exception &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(field), e.what());
        }
    }

    void timestamps()
    {
        QCOMPARE(TranscriptFormat::timestamp(0, u','), QStringLiteral("00:00:00,000"));
        QCOMPARE(TranscriptFormat::timestamp(1.2344, u','), QStringLiteral("00:00:01,234"));
        QCOMPARE(TranscriptFormat::timestamp(1.2346, u'.'), QStringLiteral("00:00:01.235"));
        QCOMPARE(TranscriptFormat::timestamp(59.9996, u'.'), QStringLiteral("00:01:00.000"));
        QCOMPARE(TranscriptFormat::timestamp(3661.0005, u','), QStringLiteral("01:01:01,001"));
        QCOMPARE(TranscriptFormat::timestamp(360000, u','), QStringLiteral("100:00:00,000"));
    }

    void formats()
    {
        const Transcript t = sample();
        QByteArray type;
        TranscriptFormat::Options o;
        QCOMPARE(TranscriptFormat::render(t, TranscriptFormat::Format::Json, o, &type),
                 QByteArray("{\"text\":\"hello there a --> b & <c>\"}"));
        QCOMPARE(type, QByteArray("application/json"));
        QCOMPARE(TranscriptFormat::render(t, TranscriptFormat::Format::Text, o, &type),
                 QByteArray("hello there a --> b & <c>\n"));
        QCOMPARE(type, QByteArray("text/plain; charset=utf-8"));
        QCOMPARE(TranscriptFormat::render(t, TranscriptFormat::Format::Srt, o, &type),
                 QByteArray("1\n00:00:00,000 --> 00:00:01,234\nhello there\n\n"
                            "2\n01:01:01,001 --> 01:01:02,500\na -> b & <c>\n\n"));
        QCOMPARE(TranscriptFormat::render(t, TranscriptFormat::Format::Vtt, o, &type),
                 QByteArray("WEBVTT\n\n00:00:00.000 --> 00:00:01.234\nhello there\n\n"
                            "01:01:01.001 --> 01:01:02.500\na --&gt; b &amp; &lt;c&gt;\n\n"));
        QCOMPARE(type, QByteArray("text/plain; charset=utf-8"));

        o.words = true;
        const QJsonObject v =
            QJsonDocument::fromJson(
                TranscriptFormat::render(t, TranscriptFormat::Format::VerboseJson, o, &type))
                .object();
        QCOMPARE(v.value("task").toString(), QStringLiteral("transcribe"));
        QCOMPARE(v.value("language").toString(), QStringLiteral("english"));
        QCOMPARE(v.value("duration").toDouble(), 5.0);
        const QJsonArray segments = v.value("segments").toArray();
        QCOMPARE(segments.size(), 2);
        const QJsonObject s0 = segments.at(0).toObject();
        for (const char *k : {"id", "seek", "start", "end", "text", "tokens", "temperature",
                              "avg_logprob", "compression_ratio", "no_speech_prob"})
            QVERIFY2(s0.contains(QLatin1String(k)), k);
        QCOMPARE(s0.value("end").toDouble(), 1.234);
        QCOMPARE(segments.at(1).toObject().value("seek").toInt(), 366100);
        const QJsonArray words = v.value("words").toArray();
        QCOMPARE(words.size(), 2);
        QCOMPARE(words.at(1).toObject().value("word").toString(), QStringLiteral("there"));

        o.segments = false;
        const QJsonObject w =
            QJsonDocument::fromJson(
                TranscriptFormat::render(t, TranscriptFormat::Format::VerboseJson, o, &type))
                .object();
        QVERIFY(!w.contains("segments"));
        QVERIFY(w.contains("words"));

        // An empty transcript is still a valid document of each format.
        QCOMPARE(TranscriptFormat::render(Transcript{}, TranscriptFormat::Format::Vtt, {}, &type),
                 QByteArray("WEBVTT\n\n"));
        QCOMPARE(TranscriptFormat::render(Transcript{}, TranscriptFormat::Format::Srt, {}, &type),
                 QByteArray());
    }

    void transcriptionRequest()
    {
        const AudioConfig c = AudioConfig::defaults();
        TranscriptionRequest r;
        QVERIFY(!AudioRequests::transcription(form({}), c, &r));
        QCOMPARE(r.model->id, QStringLiteral("rapid"));
        QCOMPARE(r.format, TranscriptFormat::Format::Json);
        QVERIFY(r.file);

        TranscriptionRequest v;
        QVERIFY(!AudioRequests::transcription(form({{"model", "vendorB-asr-1"},
                                                    {"response_format", "verbose_json"},
                                                    {"language", "fr"},
                                                    {"temperature", "0.3"},
                                                    {"timestamp_granularities[]", "word"},
                                                    {"timestamp_granularities[]", "segment"}}),
                                              c, &v));
        QCOMPARE(v.model->id, QStringLiteral("vendorB-asr-1"));
        QVERIFY(v.wordTimestamps && v.segmentTimestamps);
        QCOMPARE(*v.temperature, 0.3);
        QCOMPARE(v.language, QStringLiteral("fr"));

        TranscriptionRequest u;
        QVERIFY(!AudioRequests::transcription(
            form({{"file_uri", "https://example.com/a.mp3"}}, false), c, &u));
        QCOMPARE(u.fileUri, QStringLiteral("https://example.com/a.mp3"));
    }

    void transcriptionErrors_data()
    {
        QTest::addColumn<Fields>("fields");
        QTest::addColumn<bool>("withFile");
        QTest::addColumn<QString>("param");
        using F = Fields;
        QTest::newRow("no file") << F{} << false << "file";
        QTest::newRow("both") << F{{"file_uri", "https://x/a.wav"}} << true << "file";
        QTest::newRow("model") << F{{"model", "vendorE-tts-nano"}} << true << "model";
        QTest::newRow("format") << F{{"response_format", "xml"}} << true << "response_format";
        QTest::newRow("language") << F{{"language", "english"}} << true << "language";
        QTest::newRow("temperature") << F{{"temperature", "1.5"}} << true << "temperature";
        QTest::newRow("temperature text") << F{{"temperature", "warm"}} << true << "temperature";
        QTest::newRow("stream") << F{{"stream", "true"}} << true << "stream";
        QTest::newRow("repeated") << F{{"model", "rapid"}, {"model", "rapid"}} << true << "model";
        QTest::newRow("granularity")
            << F{{"response_format", "verbose_json"}, {"timestamp_granularities[]", "char"}} << true
            << "timestamp_granularities";
        QTest::newRow("granularity json")
            << F{{"timestamp_granularities[]", "word"}} << true << "timestamp_granularities";
    }
    void transcriptionErrors()
    {
        QFETCH(Fields, fields);
        QFETCH(bool, withFile);
        QFETCH(QString, param);
        TranscriptionRequest r;
        const auto e =
            AudioRequests::transcription(form(fields, withFile), AudioConfig::defaults(), &r);
        QVERIFY(e);
        QCOMPARE(e->status, 400);
        QCOMPARE(e->param, param);
        QVERIFY(!e->message.isEmpty());
    }

    void speechRequest()
    {
        const AudioConfig c = AudioConfig::defaults();
        const VoiceCatalog voices = VoiceCatalog::builtin();
        SpeechRequest r;
        QVERIFY(
            !AudioRequests::speechFromJson(QJsonObject{{"input", "héllo 你好 😀"}}, c, voices, &r));
        QCOMPARE(r.characters, qint64(10)); // code points, not UTF-16 units
        QCOMPARE(r.voice.name, QStringLiteral("nova"));
        QVERIFY(r.wav);
        QCOMPARE(r.model->id, QStringLiteral("vendorE-tts-nano"));

        const QString max = QString(4096, u'a');
        QVERIFY(!AudioRequests::speechFromJson(QJsonObject{{"input", max}}, c, voices, &r));
        QString emoji;
        for (int i = 0; i < 4096; ++i)
            emoji += QStringLiteral("😀");
        QVERIFY(!AudioRequests::speechFromJson(QJsonObject{{"input", emoji}}, c, voices, &r));
        QCOMPARE(r.characters, qint64(4096));

        auto error = [&](const QJsonObject &body) {
            SpeechRequest s;
            const auto e = AudioRequests::speechFromJson(body, c, voices, &s);
            return e ? e->param : QString();
        };
        QCOMPARE(error({}), QStringLiteral("input"));
        QCOMPARE(error({{"input", ""}}), QStringLiteral("input"));
        QCOMPARE(error({{"input", 5}}), QStringLiteral("input"));
        QCOMPARE(error({{"input", max + u'a'}}), QStringLiteral("input"));
        QCOMPARE(error({{"input", emoji + u'a'}}), QStringLiteral("input"));
        QCOMPARE(error({{"input", "hi"}, {"voice", "nobody"}}), QStringLiteral("voice"));
        QCOMPARE(error({{"input", "hi"}, {"response_format", "mp3"}}),
                 QStringLiteral("response_format"));
        QCOMPARE(error({{"input", "hi"}, {"speed", 4.5}}), QStringLiteral("speed"));
        QCOMPARE(error({{"input", "hi"}, {"speed", 0.2}}), QStringLiteral("speed"));
        QCOMPARE(error({{"input", "hi"}, {"speed", "fast"}}), QStringLiteral("speed"));
        QCOMPARE(error({{"input", "hi"}, {"model", "rapid"}}), QStringLiteral("model"));

        SpeechRequest s;
        const auto e = AudioRequests::speechFromJson(QJsonObject{{"input", "hi"}, {"voice", "x"}},
                                                     c, voices, &s);
        QVERIFY(e->message.contains("/v1/audio/voices"));
        const auto f = AudioRequests::speechFromJson(
            QJsonObject{{"input", "hi"}, {"response_format", "mp3"}}, c, voices, &s);
        QVERIFY(f->message.contains("wav") && f->message.contains("pcm"));
    }

    void speechForm()
    {
        const AudioConfig c = AudioConfig::defaults();
        const VoiceCatalog voices = VoiceCatalog::builtin();
        MultipartForm f = form({{"input", "hello"}, {"voice", "alloy"}, {"speed", "1.5"}}, false);
        MultipartPart ref;
        ref.name = "prompt_audio";
        ref.hasFilename = true;
        ref.data = "RIFF";
        f.parts.append(ref);
        SpeechRequest r;
        QVERIFY(!AudioRequests::speechFromForm(f, c, voices, &r));
        QCOMPARE(r.speed, 1.5);
        QVERIFY(r.promptAudio);
        f.parts.append(ref);
        const auto e = AudioRequests::speechFromForm(f, c, voices, &r);
        QVERIFY(e);
        QCOMPARE(e->param, QStringLiteral("prompt_audio"));
    }

    void upstreamBodies()
    {
        // The messages of OpenAI's, fish-speech's and FastAPI's error bodies, and of a page.
        QCOMPARE(AudioUpstream::errorMessage(
                     "{\"error\":{\"message\":\"Invalid file format.\",\"type\":\"x\"}}"),
                 QStringLiteral("Invalid file format."));
        QCOMPARE(AudioUpstream::errorMessage(
                     "{\"statusCode\":400,\"message\":\"Text is too long\",\"error\":\"Bad "
                     "Request\"}"),
                 QStringLiteral("Text is too long"));
        QCOMPARE(AudioUpstream::errorMessage("{\"detail\":\"Invalid token\"}"),
                 QStringLiteral("Invalid token"));
        QCOMPARE(AudioUpstream::errorMessage("<html><b>502</b> Bad Gateway</html>"),
                 QStringLiteral("502 Bad Gateway"));
        QCOMPARE(AudioUpstream::fileNameFor("mov,mp4,m4a,3gp,3g2,mj2"),
                 QStringLiteral("audio.m4a"));
        QCOMPARE(AudioUpstream::fileNameFor("matroska,webm"), QStringLiteral("audio.webm"));
        QCOMPARE(AudioUpstream::fileNameFor("mp3"), QStringLiteral("audio.mp3"));

        // The fish-speech request: base64 reference with an empty transcript, WAV, whole.
        const QByteArray ref(300, 'r');
        const QJsonObject tts =
            QJsonDocument::fromJson(AudioUpstream::fishSpeechJson("hello", &ref)).object();
        QCOMPARE(tts.value("text").toString(), QStringLiteral("hello"));
        QCOMPARE(tts.value("format").toString(), QStringLiteral("wav"));
        QCOMPARE(tts.value("streaming").toBool(true), false);
        const QJsonObject r = tts.value("references").toArray().at(0).toObject();
        QCOMPARE(QByteArray::fromBase64(r.value("audio").toString().toLatin1()), ref);
        QVERIFY(r.value("text").isString());
        QVERIFY(QJsonDocument::fromJson(AudioUpstream::fishSpeechJson("x", nullptr))
                    .object()
                    .value("references")
                    .toArray()
                    .isEmpty());

        // The transcription form: the granularities only when words were asked for.
        TranscriptionRequest req;
        req.format = TranscriptFormat::Format::VerboseJson;
        req.language = QStringLiteral("fr");
        req.temperature = 0.25;
        req.wordTimestamps = true;
        const QByteArray boundary = AudioUpstream::boundaryFor("audio");
        const QByteArray body =
            AudioUpstream::transcriptionForm(req, "whisper-1", "audio", "audio.wav", boundary);
        const MultipartForm parsed = parseMultipart(body, boundary, MultipartLimits{});
        QVERIFY(!parsed.error);
        QCOMPARE(parsed.part("file")->filename, QByteArray("audio.wav"));
        QCOMPARE(parsed.part("model")->data, QByteArray("whisper-1"));
        QCOMPARE(parsed.part("response_format")->data, QByteArray("verbose_json"));
        QCOMPARE(parsed.part("language")->data, QByteArray("fr"));
        QCOMPARE(parsed.part("temperature")->data, QByteArray("0.25"));
        QCOMPARE(parsed.count("timestamp_granularities[]"), 2);
        QVERIFY(!parsed.part("prompt"));
    }
};

QTEST_GUILESS_MAIN(TestAudioFamily)
#include "tst_audio_family.moc"
