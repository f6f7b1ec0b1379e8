#include "AudioUpstream.h"

#include "AudioRequests.h"
#include "upstream/KeyScrub.h"
#include "upstream/ProviderAuth.h"
#include "upstream/UpstreamProvider.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QRegularExpression>

namespace {

// 4,096 characters of speech at 44.1 kHz is about 30 MiB of WAV; anything far beyond is not
// an answer to this request.
constexpr qsizetype kMaxAnswerBytes = 64 * 1024 * 1024;
constexpr qsizetype kMaxErrorBytes = 64 * 1024;

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
    auto call = std::shared_ptr<Call>(new Call);
    call->m_client = m_client;
    call->m_keys = &m_keys;
    call->m_provider = provider;
    call->m_url = provider.baseUrl.toUtf8() + path;
    call->m_contentType = contentType;
    call->m_body = body;
    call->m_done = std::move(done);
    call->attempt(m_keys.pick(provider));
    return call;
}

void AudioUpstream::Call::abort()
{
    m_finished = true;
    m_done = nullptr; // drops what the callback holds (the request waiting for it)
    if (m_call) {
        m_call->abort();
        m_call.reset();
    }
}

void AudioUpstream::Call::attempt(const QString &key)
{
    m_key = key;
    if (!key.isEmpty())
        m_tried.insert(key);
    UpstreamRequest req;
    req.url = m_url;
    req.body = m_body;
    // "Expect:" off: curl would wait for a 100 Continue before a large upload, and some
    // servers never send one.
    req.headers = {"Content-Type: " + m_contentType, "Expect:"};
    if (const QByteArray auth = authHeader(ProviderAuth::Bearer, key); !auth.isEmpty())
        req.headers.append(auth);
    req.connectTimeoutMs = m_provider.connectTimeoutMs;
    req.firstByteTimeoutMs = m_provider.firstByteTimeoutMs;
    req.idleTimeoutMs = m_provider.idleTimeoutMs;
    req.totalTimeoutMs = m_provider.totalTimeoutMs;
    m_status = 0;
    m_headers.clear();
    m_answer.clear();
    m_tooLarge = false;

    m_call = m_client->start(req);
    std::weak_ptr<Call> weak = shared_from_this();
    m_call->onHead = [weak](int status, const HttpHeaders &headers) {
        if (auto self = weak.lock())
            self->onHead(status, headers);
    };
    m_call->onData = [weak](const QByteArray &data) {
        if (auto self = weak.lock())
            self->onData(data);
    };
    // The upstream call keeps this one alive until it ends.
    auto self = shared_from_this();
    m_call->onDone = [self](UpstreamError error, const QString &message) {
        self->onDone(error, message);
    };
}

void AudioUpstream::Call::onHead(int status, const HttpHeaders &headers)
{
    m_status = status;
    m_headers = headers;
    if (status != 429 && status < 500)
        return;
    // This key is rate limited or its upstream failed: it rests, and the next key (if the
    // provider has one) gets one more try.
    if (!m_key.isEmpty())
        m_keys->rest(m_provider, m_key);
    if (m_tried.size() >= 2 || m_key.isEmpty())
        return;
    const QString next = m_keys->pick(m_provider, m_tried);
    if (next.isEmpty())
        return;
    m_call->abort();
    m_call.reset();
    attempt(next);
}

void AudioUpstream::Call::onData(const QByteArray &data)
{
    if (m_finished || m_tooLarge)
        return;
    const bool success = m_status >= 200 && m_status < 300;
    const qsizetype limit = success ? kMaxAnswerBytes : kMaxErrorBytes;
    if (m_answer.size() + data.size() > limit) {
        if (success) {
            m_tooLarge = true;
            m_call->abort();
            m_call.reset();
            fail(502,
                 QStringLiteral("The upstream provider '%1' sent an answer over %2 MiB.")
                     .arg(m_provider.name)
                     .arg(kMaxAnswerBytes >> 20),
                 QStringLiteral("upstream_error"), QStringLiteral("upstream_too_large"));
            return;
        }
        m_answer.append(data.left(limit - m_answer.size()));
        return;
    }
    m_answer.append(data);
}

void AudioUpstream::Call::onDone(UpstreamError error, const QString &message)
{
    m_call.reset();
    if (m_finished)
        return;
    const QString name = m_provider.name;
    const QString upstreamError = QStringLiteral("upstream_error");
    switch (error) {
    case UpstreamError::None:
        break;
    case UpstreamError::ConnectFailed:
        return fail(502,
                    QStringLiteral("Could not reach the upstream provider '%1': %2.")
                        .arg(name, scrub(message)),
                    upstreamError, QStringLiteral("upstream_unreachable"));
    case UpstreamError::Timeout:
        return fail(504,
                    QStringLiteral("The upstream provider '%1' did not answer in time (%2).")
                        .arg(name, scrub(message)),
                    upstreamError, QStringLiteral("upstream_timeout"));
    case UpstreamError::Broken:
    case UpstreamError::Failed:
        return fail(
            502, QStringLiteral("The upstream provider '%1' failed: %2.").arg(name, scrub(message)),
            upstreamError, QStringLiteral("upstream_failed"));
    }
    if (m_status >= 200 && m_status < 300) {
        AudioUpstreamAnswer a;
        a.status = 200;
        a.contentType = headerValue(m_headers, "content-type");
        a.body = m_answer;
        return finish(a);
    }
    const QString detail = scrub(AudioUpstream::errorMessage(m_answer));
    const QString invalid = QStringLiteral("invalid_request_error");
    if (m_status == 429) {
        QByteArray retry = headerValue(m_headers, "retry-after").trimmed();
        bool ok = false;
        const int seconds = retry.toInt(&ok);
        fail(429,
             QStringLiteral("The upstream provider '%1' is rate limiting requests: %2")
                 .arg(name, detail),
             QStringLiteral("rate_limit_error"), QStringLiteral("upstream_rate_limited"),
             ok && seconds >= 0 ? QByteArray::number(seconds) : QByteArray("1"));
    } else if (m_status == 401 || m_status == 403) {
        // Not the client's fault: the operator's key was refused.
        fail(502,
             QStringLiteral("The upstream provider '%1' refused Switchyard's credentials (HTTP "
                            "%2); the operator should check audio.providers.%1.keys.")
                 .arg(name)
                 .arg(m_status),
             upstreamError, QStringLiteral("upstream_auth_failed"));
    } else if (m_status == 408 || m_status == 504) {
        fail(504,
             QStringLiteral("The upstream provider '%1' timed out (HTTP %2): %3")
                 .arg(name)
                 .arg(m_status)
                 .arg(detail),
             upstreamError, QStringLiteral("upstream_timeout"));
    } else if (m_status >= 500) {
        fail(502,
             QStringLiteral("The upstream provider '%1' failed (HTTP %2): %3")
                 .arg(name)
                 .arg(m_status)
                 .arg(detail),
             upstreamError, QStringLiteral("upstream_failed"));
    } else if (m_status >= 400) {
        fail(400,
             QStringLiteral("The upstream provider '%1' rejected the request (HTTP %2): %3")
                 .arg(name)
                 .arg(m_status)
                 .arg(detail),
             invalid, QStringLiteral("upstream_rejected"));
    } else {
        fail(502,
             QStringLiteral("The upstream provider '%1' answered HTTP %2.").arg(name).arg(m_status),
             upstreamError, QStringLiteral("upstream_failed"));
    }
}

void AudioUpstream::Call::fail(int status, const QString &message, const QString &type,
                               const QString &code, const QByteArray &retryAfter)
{
    AudioUpstreamAnswer a;
    a.status = status;
    a.message = message;
    a.type = type;
    a.code = code;
    a.retryAfter = retryAfter;
    finish(a);
}

void AudioUpstream::Call::finish(const AudioUpstreamAnswer &answer)
{
    if (m_finished)
        return;
    m_finished = true;
    Done done = std::move(m_done);
    m_done = nullptr;
    if (done)
        done(answer);
}

QString AudioUpstream::Call::scrub(const QString &text) const
{
    return KeyScrub::scrub(text, m_provider.allKeys());
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

QString AudioUpstream::errorMessage(const QByteArray &body)
{
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    const QJsonObject o = doc.object();
    QString message;
    const QJsonValue error = o.value("error");
    if (error.isObject())
        message = error.toObject().value("message").toString();
    // fish-speech: {"statusCode", "message", "error": "Bad Request"}; FastAPI-style: detail.
    if (message.isEmpty())
        message = o.value("message").toString();
    if (message.isEmpty() && o.value("detail").isString())
        message = o.value("detail").toString();
    if (message.isEmpty() && !o.value("detail").isUndefined())
        message = QString::fromUtf8(QJsonDocument(QJsonObject{{"detail", o.value("detail")}})
                                        .toJson(QJsonDocument::Compact));
    if (message.isEmpty())
        message = error.toString();
    if (message.isEmpty()) {
        message = QString::fromUtf8(body.left(300)).simplified();
        static const QRegularExpression markup(QStringLiteral("<[^>]*>"));
        message.remove(markup);
        message = message.simplified();
    }
    if (message.isEmpty())
        message = QStringLiteral("(no message)");
    return message.left(500);
}
