#pragma once

#include "AudioConfig.h"
#include "http/HttpHeaders.h"
#include "TranscriptFormat.h"
#include "upstream/ProviderCall.h"
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

// What an upstream audio call came to (server/upstream/ProviderCall.h).
using AudioUpstreamAnswer = UpstreamAnswer;

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

    using CallPtr = ProviderCallPtr;
    using Done = ProviderCall::Done;

    // POST {provider.baseUrl}{path} with `body` (ProviderCall: keys in rotation, one retry on
    // another key, errors mapped). `done` runs once on this thread, never after abort().
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
    // The message of an upstream error body (fish-speech's message and detail included).
    static QString errorMessage(const QByteArray &body) { return ProviderCall::errorMessage(body); }

private:
    KeyRotation &m_keys;
    UpstreamClient *m_client;
};
