#pragma once

#include "AudioConfig.h"
#include "http/Multipart.h"
#include "RequestError.h"
#include "SpeechSynthesizer.h"
#include "TranscriptFormat.h"
#include "Voices.h"

#include <optional>
#include <QByteArray>
#include <QJsonObject>
#include <QString>

// The audio routes' request bodies, validated: each failure names the field (param) and says
// what is accepted. Pure functions of the body and the configuration, tested on their own.

struct TranscriptionRequest
{
    const AudioModel *model = nullptr;
    const AudioProvider *provider = nullptr;
    TranscriptFormat::Format format = TranscriptFormat::Format::Json;
    QString language; // ISO 639-1, empty when not given
    QString prompt;
    std::optional<double> temperature;
    bool wordTimestamps = false;
    bool segmentTimestamps = true;
    const MultipartPart *file = nullptr; // exactly one of file and fileUri
    QString fileUri;
};

struct SpeechRequest
{
    const AudioModel *model = nullptr;
    const AudioProvider *provider = nullptr;
    QString input;
    qint64 characters = 0; // Unicode code points of input
    VoiceSpec voice;
    bool wav = true; // false: pcm
    double speed = 1.0;
    const MultipartPart *promptAudio = nullptr; // multipart only
};

namespace AudioRequests {

constexpr qint64 kMaxFileBytes = 26'214'400;       // 25 MiB, as OpenAI enforces
constexpr qint64 kMaxPromptAudioBytes = 1'048'576; // 1 MiB
constexpr int kMaxInputCharacters = 4096;

// The multipart limits of each route (the file bound per field, text fields 64 KiB).
MultipartLimits transcriptionLimits();
MultipartLimits speechLimits();

// A parsed form (its parts are views into the request body, which must outlive the result).
std::optional<RequestError> transcription(const MultipartForm &form, const AudioConfig &config,
                                          TranscriptionRequest *out);

// The speech body as fields: from JSON (types checked) or from a multipart form (text fields
// and prompt_audio).
std::optional<RequestError> speechFromJson(const QJsonObject &body, const AudioConfig &config,
                                           const VoiceCatalog &voices, SpeechRequest *out);
std::optional<RequestError> speechFromForm(const MultipartForm &form, const AudioConfig &config,
                                           const VoiceCatalog &voices, SpeechRequest *out);

} // namespace AudioRequests
