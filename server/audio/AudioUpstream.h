#pragma once

#include "AudioConfig.h"
#include "http/HttpHeaders.h"
#include "TranscriptFormat.h"
#include "upstream/UpstreamClient.h"

#include <functional>
#include <memory>
#include <optional>
#include <QByteArray>
#include <QObject>
#include <QSet>
#include <QString>

class KeyRotation;
struct SpeechRequest;
struct TranscriptionRequest;

// What an upstream audio call came to, already mapped the way the text gateway maps its
// upstreams (server/llm/GatewayCall.cpp): the status and message a client gets.
struct AudioUpstreamAnswer
{
    int status = 0;         // 200: `body` is the answer; else the status to answer with
    QByteArray contentType; // success: the upstream's Content-Type
    QByteArray body;        // success: the whole answer
    QString message;        // failure: for the client, upstream keys scrubbed
    QString type;           // failure: the envelope's type (upstream_error, ...)
    QString code;           // failure: the envelope's code
    QByteArray retryAfter;  // 429: seconds, for the Retry-After header
    bool ok() const { return status == 200; }
};

// The upstream audio providers of one server (server/audio/README.md, "Upstream providers"):
// OpenAI-compatible transcription and speech, and fish-speech's /v1/tts. One per server,
// parented to ServerScope::parent, on the server thread, with its own UpstreamClient; the key
// rotation is the family's, shared by its servers.
// A QObject only to be owned by the server's scope (no signals, so no Q_OBJECT).
class AudioUpstream : public QObject
{
public:
    AudioUpstream(KeyRotation &keys, QObject *parent);
    ~AudioUpstream() override;

    class Call;
    using CallPtr = std::shared_ptr<Call>;
    using Done = std::function<void(const AudioUpstreamAnswer &)>;

    // POST {provider.baseUrl}{path} with `body`. The key comes from the rotation
    // (Authorization: Bearer; none when the provider has no key); a 429 or 5xx rests that key
    // and, when the provider has another, the call is made once more with it. `done` runs once
    // on this thread, never after Call::abort().
    CallPtr post(const AudioProvider &provider, const QByteArray &path,
                 const QByteArray &contentType, const QByteArray &body, Done done);

    // ---- request bodies (pure) ----
    // OpenAI's multipart/form-data for POST /audio/transcriptions: file (the audio as
    // `fileName`), model, response_format, and language, prompt, temperature and
    // timestamp_granularities[] as the request gave them.
    static QByteArray transcriptionForm(const TranscriptionRequest &req,
                                        const QString &upstreamModel, const QByteArray &audio,
                                        const QString &fileName, const QByteArray &boundary);
    // A boundary that does not occur in `data`.
    static QByteArray boundaryFor(const QByteArray &data);
    // "audio.<ext>" for an FFmpeg container name: OpenAI reads the format from the extension.
    static QString fileNameFor(const QString &container);
    // The Content-Type of a transcript the upstream gave in `format`.
    static QByteArray transcriptContentType(TranscriptFormat::Format format);
    // Whether an upstream transcript in `format` is well-formed (JSON formats: an object).
    static bool transcriptLooksValid(TranscriptFormat::Format format, const QByteArray &body);
    // OpenAI's POST /audio/speech JSON, asking for WAV (24 kHz mono s16le from OpenAI).
    static QByteArray speechJson(const SpeechRequest &req, const QString &upstreamModel);
    // fish-speech's ServeTTSRequest as JSON: text, the reference (base64, with an empty
    // transcript) when there is one, format wav, not streamed.
    static QByteArray fishSpeechJson(const QString &text, const QByteArray *referenceAudio);
    // The message of an upstream error body: OpenAI's error.message, fish-speech's message or
    // detail, else a short excerpt without markup.
    static QString errorMessage(const QByteArray &body);

private:
    KeyRotation &m_keys;
    UpstreamClient *m_client;
};

// One upstream call in flight (with its one possible retry on another key).
class AudioUpstream::Call : public std::enable_shared_from_this<AudioUpstream::Call>
{
public:
    // Stops the call; `done` does not run.
    void abort();

private:
    friend class AudioUpstream;
    void attempt(const QString &key);
    void onHead(int status, const HttpHeaders &headers);
    void onData(const QByteArray &data);
    void onDone(UpstreamError error, const QString &message);
    void fail(int status, const QString &message, const QString &type, const QString &code,
              const QByteArray &retryAfter = {});
    void finish(const AudioUpstreamAnswer &answer);
    QString scrub(const QString &text) const;

    UpstreamClient *m_client = nullptr;
    KeyRotation *m_keys = nullptr;
    AudioProvider m_provider;
    QByteArray m_url;
    QByteArray m_contentType;
    QByteArray m_body;
    Done m_done;
    QSet<QString> m_tried;
    QString m_key;
    UpstreamCallPtr m_call;
    int m_status = 0;
    HttpHeaders m_headers;
    QByteArray m_answer;
    bool m_tooLarge = false;
    bool m_finished = false;
};
