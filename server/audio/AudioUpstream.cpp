#include "AudioUpstream.h"

#include "AudioRequests.h"
#include "upstream/UpstreamProvider.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>

namespace {

// 4,096 characters of speech at 44.1 kHz is about 30 MiB of WAV; anything far beyond is not
// an answer to this request.
constexpr qsizetype kMaxAnswerBytes = 64 * 1024 * 1024;

void addField(QByteArray &body, const QByteArray &boundary, const QByteArray &name,
              const QByteArray &value)
{
    body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" +
            value + "\r\n";
}

} // namespace

AudioUpstream::AudioUpstream(KeyRotation &keys, QObject *parent)
    : QObject(parent), m_keys(keys), m_client(new UpstreamClient(this))
{
}

AudioUpstream::~AudioUpstream() = default;

AudioUpstream::CallPtr AudioUpstream::post(const AudioProvider &provider, const QByteArray &path,
                                           const QByteArray &contentType, const QByteArray &body,
                                           Done done)
{
    ProviderCall::Request request;
    request.url = provider.baseUrl.toUtf8() + path;
    request.headers = {"Content-Type: " + contentType};
    request.body = body;
    request.configPath = QStringLiteral("audio.providers");
    request.maxAnswerBytes = kMaxAnswerBytes;
    request.maxKeys = 2;
    return ProviderCall::start(*m_client, m_keys, provider, std::move(request), std::move(done));
}

// ---- bodies ----------------------------------------------------------------------------------

QByteArray AudioUpstream::boundaryFor(const QByteArray &data)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (;;) {
        QByteArray b = "----switchyard-";
        for (int i = 0; i < 24; ++i)
            b += alphabet[QRandomGenerator::global()->bounded(62)];
        if (!data.contains(b))
            return b;
    }
}

QString AudioUpstream::fileNameFor(const QString &container)
{
    // FFmpeg's demuxer names: "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "wav", "mp3", ...
    QString ext = QStringLiteral("wav");
    if (container.contains(u"mp4") || container.contains(u"m4a"))
        ext = QStringLiteral("m4a");
    else if (container.contains(u"webm") || container.contains(u"matroska"))
        ext = QStringLiteral("webm");
    else if (container == u"mp3")
        ext = QStringLiteral("mp3");
    else if (container == u"ogg")
        ext = QStringLiteral("ogg");
    else if (container == u"flac")
        ext = QStringLiteral("flac");
    else if (container == u"mpeg")
        ext = QStringLiteral("mpeg");
    return QStringLiteral("audio.") + ext;
}

QByteArray AudioUpstream::transcriptionForm(const TranscriptionRequest &req,
                                            const QString &upstreamModel, const QByteArray &audio,
                                            const QString &fileName, const QByteArray &boundary)
{
    QByteArray body;
    body.reserve(audio.size() + 2048);
    body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
            fileName.toUtf8() + "\"\r\nContent-Type: application/octet-stream\r\n\r\n";
    body += audio;
    body += "\r\n";
    addField(body, boundary, "model", upstreamModel.toUtf8());
    addField(body, boundary, "response_format", TranscriptFormat::name(req.format).toUtf8());
    if (!req.language.isEmpty())
        addField(body, boundary, "language", req.language.toUtf8());
    if (!req.prompt.isEmpty())
        addField(body, boundary, "prompt", req.prompt.toUtf8());
    if (req.temperature)
        addField(body, boundary, "temperature", QByteArray::number(*req.temperature, 'g', 6));
    // Only what the client asked for: segment alone is OpenAI's default.
    if (req.format == TranscriptFormat::Format::VerboseJson && req.wordTimestamps) {
        addField(body, boundary, "timestamp_granularities[]", "word");
        if (req.segmentTimestamps)
            addField(body, boundary, "timestamp_granularities[]", "segment");
    }
    body += "--" + boundary + "--\r\n";
    return body;
}

QByteArray AudioUpstream::transcriptContentType(TranscriptFormat::Format format)
{
    return format == TranscriptFormat::Format::Json ||
                   format == TranscriptFormat::Format::VerboseJson
               ? QByteArray("application/json")
               : QByteArray("text/plain; charset=utf-8");
}

bool AudioUpstream::transcriptLooksValid(TranscriptFormat::Format format, const QByteArray &body)
{
    if (format == TranscriptFormat::Format::Json ||
        format == TranscriptFormat::Format::VerboseJson) {
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(body, &error);
        return error.error == QJsonParseError::NoError && doc.isObject() &&
               doc.object().value("text").isString();
    }
    // Text, SRT and VTT: UTF-8 text.
    return QString::fromUtf8(body).toUtf8() == body;
}

QByteArray AudioUpstream::speechJson(const SpeechRequest &req, const QString &upstreamModel)
{
    return QJsonDocument(QJsonObject{{"model", upstreamModel},
                                     {"input", req.input},
                                     {"voice", req.voice.name},
                                     {"response_format", "wav"},
                                     {"speed", req.speed}})
        .toJson(QJsonDocument::Compact);
}

QByteArray AudioUpstream::fishSpeechJson(const QString &text, const QByteArray *referenceAudio)
{
    QJsonArray references;
    // fish-speech decodes a reference's audio from base64 when it is a string (ServeReference-
    // Audio's validator); its transcript is optional context for the model, and unknown here.
    if (referenceAudio)
        references.append(QJsonObject{{"audio", QString::fromLatin1(referenceAudio->toBase64())},
                                      {"text", QString()}});
    return QJsonDocument(QJsonObject{{"text", text},
                                     {"references", references},
                                     {"format", "wav"},
                                     {"streaming", false},
                                     {"normalize", true},
                                     {"use_memory_cache", "off"}})
        .toJson(QJsonDocument::Compact);
}
