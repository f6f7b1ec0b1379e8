#include "AudioRequests.h"

#include <cmath>

namespace AudioRequests {

namespace {

RequestError bad(const QString &message, const QString &param, const QString &code = {})
{
    return RequestError{400, message, param, code};
}

// One text field of a form: absent (nullopt), or its UTF-8 text. A repeated field or a file
// where text belongs is an error.
std::optional<QString> textField(const MultipartForm &form, const QByteArray &name,
                                 std::optional<RequestError> *error)
{
    const int n = form.count(name);
    if (n == 0)
        return std::nullopt;
    const QString field = QString::fromLatin1(name);
    if (n > 1) {
        *error =
            bad(QStringLiteral("The field '%1' was sent %2 times; send it once.").arg(field).arg(n),
                field);
        return std::nullopt;
    }
    const MultipartPart *p = form.part(name);
    if (p->hasFilename) {
        *error = bad(QStringLiteral("The field '%1' must be a text field, not a file.").arg(field),
                     field);
        return std::nullopt;
    }
    return QString::fromUtf8(p->data);
}

std::optional<double> number(const QString &text, bool *ok)
{
    const double v = text.trimmed().toDouble(ok);
    if (!*ok || !std::isfinite(v)) {
        *ok = false;
        return std::nullopt;
    }
    return v;
}

std::optional<RequestError> resolveModel(const AudioConfig &config, const QString &given,
                                         AudioTask task, const AudioModel **model,
                                         const AudioProvider **provider)
{
    const bool asr = task == AudioTask::Transcription;
    const QString id =
        given.isEmpty() ? (asr ? config.defaultTranscription : config.defaultSpeech) : given;
    const AudioModel *m = config.model(id);
    if (!m || m->task != task) {
        QStringList names;
        for (const AudioModel &c : config.models)
            if (c.task == task)
                names.append(c.id);
        return RequestError{
            400,
            QStringLiteral("The model '%1' is not a %2 model; use one of: %3 (GET /v1/models "
                           "lists every model).")
                .arg(id, asr ? QStringLiteral("transcription") : QStringLiteral("speech"),
                     names.join(QStringLiteral(", "))),
            QStringLiteral("model"), QStringLiteral("model_not_found")};
    }
    *model = m;
    *provider = config.provider(m->provider);
    return std::nullopt;
}

// The speech fields, whatever the body's form.
struct RawSpeech
{
    QString model;
    std::optional<QString> input;
    QString voice;
    QString format;
    std::optional<double> speed;
};

std::optional<RequestError> speech(const RawSpeech &raw, const AudioConfig &config,
                                   const VoiceCatalog &voices, SpeechRequest *out)
{
    if (auto e = resolveModel(config, raw.model, AudioTask::Speech, &out->model, &out->provider))
        return e;
    if (!raw.input || raw.input->isEmpty())
        return bad(QStringLiteral("'input' is required: the text to speak, 1 to %1 characters.")
                       .arg(kMaxInputCharacters),
                   QStringLiteral("input"));
    out->input = *raw.input;
    out->characters = out->input.toUcs4().size();
    if (out->characters > kMaxInputCharacters)
        return bad(QStringLiteral("'input' has %1 characters; the limit is %2.")
                       .arg(out->characters)
                       .arg(kMaxInputCharacters),
                   QStringLiteral("input"), QStringLiteral("string_above_max_length"));
    const QString voiceName = raw.voice.isEmpty() ? QStringLiteral("nova") : raw.voice;
    const auto voice = voices.find(voiceName);
    if (!voice)
        return bad(QStringLiteral("Unknown voice '%1'; GET /v1/audio/voices lists the voices "
                                  "(alloy, nova, en-news, ...).")
                       .arg(voiceName),
                   QStringLiteral("voice"));
    out->voice = *voice;
    const QString format = raw.format.isEmpty() ? QStringLiteral("wav") : raw.format;
    if (format != u"wav" && format != u"pcm")
        return bad(QStringLiteral("response_format '%1' is not supported; use wav (the "
                                  "default) or pcm.")
                       .arg(format),
                   QStringLiteral("response_format"));
    out->wav = format == u"wav";
    if (raw.speed) {
        if (*raw.speed < 0.25 || *raw.speed > 4.0)
            return bad(QStringLiteral("'speed' must be from 0.25 to 4.0."),
                       QStringLiteral("speed"));
        out->speed = *raw.speed;
    }
    return std::nullopt;
}

} // namespace

MultipartLimits transcriptionLimits()
{
    MultipartLimits l;
    l.maxFileBytes = kMaxFileBytes;
    l.fileLimits.insert("file", kMaxFileBytes);
    return l;
}

MultipartLimits speechLimits()
{
    MultipartLimits l;
    l.maxFileBytes = kMaxPromptAudioBytes;
    l.fileLimits.insert("prompt_audio", kMaxPromptAudioBytes);
    // The text to speak may come as a text field: 4,096 characters of up to 4 bytes each.
    l.maxFieldBytes = 4 * kMaxInputCharacters + 1024;
    return l;
}

std::optional<RequestError> transcription(const MultipartForm &form, const AudioConfig &config,
                                          TranscriptionRequest *out)
{
    std::optional<RequestError> error;
    auto field = [&](const char *name) { return textField(form, name, &error); };

    const auto model = field("model");
    if (error)
        return error;
    if (auto e = resolveModel(config, model.value_or(QString()), AudioTask::Transcription,
                              &out->model, &out->provider))
        return e;

    if (const auto stream = field("stream"); stream && stream->trimmed() != u"false")
        return bad(QStringLiteral("Streaming transcription is not supported; leave 'stream' "
                                  "unset or false."),
                   QStringLiteral("stream"), QStringLiteral("unsupported_value"));
    if (error)
        return error;

    if (const auto format = field("response_format"); format && !format->isEmpty()) {
        const auto f = TranscriptFormat::parse(*format);
        if (!f)
            return bad(QStringLiteral("response_format '%1' is not supported; use json (the "
                                      "default), text, verbose_json, srt or vtt.")
                           .arg(*format),
                       QStringLiteral("response_format"));
        out->format = *f;
    }
    if (error)
        return error;

    if (const auto language = field("language"); language && !language->isEmpty()) {
        if (!TranscriptFormat::isIso639_1(*language))
            return bad(QStringLiteral("language '%1' is not an ISO 639-1 code (two lower-case "
                                      "letters, such as en, zh or fr).")
                           .arg(*language),
                       QStringLiteral("language"));
        out->language = *language;
    }
    if (error)
        return error;

    out->prompt = field("prompt").value_or(QString());
    if (error)
        return error;

    if (const auto temperature = field("temperature"); temperature && !temperature->isEmpty()) {
        bool ok = false;
        const auto t = number(*temperature, &ok);
        if (!ok || *t < 0 || *t > 1)
            return bad(QStringLiteral("'temperature' must be a number from 0 to 1."),
                       QStringLiteral("temperature"));
        out->temperature = t;
    }
    if (error)
        return error;

    // timestamp_granularities[] repeats by design; the SDKs send it with brackets.
    QStringList granularities;
    for (const MultipartPart &p : form.parts)
        if (p.name == "timestamp_granularities[]" || p.name == "timestamp_granularities")
            granularities.append(QString::fromUtf8(p.data).trimmed());
    for (const QString &g : granularities)
        if (g != u"word" && g != u"segment")
            return bad(QStringLiteral("timestamp_granularities[] takes word and segment, not '%1'.")
                           .arg(g),
                       QStringLiteral("timestamp_granularities"));
    if (!granularities.isEmpty()) {
        if (out->format != TranscriptFormat::Format::VerboseJson)
            return bad(QStringLiteral("timestamp_granularities[] needs response_format "
                                      "verbose_json."),
                       QStringLiteral("timestamp_granularities"));
        out->wordTimestamps = granularities.contains(QStringLiteral("word"));
        out->segmentTimestamps = granularities.contains(QStringLiteral("segment"));
    }

    const int files = form.count("file");
    const auto uri = field("file_uri");
    if (error)
        return error;
    if (files > 1)
        return bad(QStringLiteral("The field 'file' was sent %1 times; send one file.").arg(files),
                   QStringLiteral("file"));
    const bool hasUri = uri && !uri->trimmed().isEmpty();
    if ((files == 1) == hasUri)
        return bad(files ? QStringLiteral("Send either 'file' or 'file_uri', not both.")
                         : QStringLiteral("Send the audio as 'file' (an upload) or 'file_uri' (a "
                                          "URL the server fetches)."),
                   QStringLiteral("file"));
    if (files == 1)
        out->file = form.part("file");
    else
        out->fileUri = uri->trimmed();
    return std::nullopt;
}

std::optional<RequestError> speechFromJson(const QJsonObject &body, const AudioConfig &config,
                                           const VoiceCatalog &voices, SpeechRequest *out)
{
    RawSpeech raw;
    for (const char *name : {"model", "input", "voice", "response_format"}) {
        const QJsonValue v = body.value(QLatin1String(name));
        if (!v.isUndefined() && !v.isNull() && !v.isString())
            return bad(QStringLiteral("'%1' must be a string.").arg(QLatin1String(name)),
                       QLatin1String(name));
    }
    raw.model = body.value("model").toString();
    if (body.value("input").isString())
        raw.input = body.value("input").toString();
    raw.voice = body.value("voice").toString();
    raw.format = body.value("response_format").toString();
    const QJsonValue speed = body.value("speed");
    if (!speed.isUndefined() && !speed.isNull()) {
        if (!speed.isDouble())
            return bad(QStringLiteral("'speed' must be a number from 0.25 to 4.0."),
                       QStringLiteral("speed"));
        raw.speed = speed.toDouble();
    }
    return speech(raw, config, voices, out);
}

std::optional<RequestError> speechFromForm(const MultipartForm &form, const AudioConfig &config,
                                           const VoiceCatalog &voices, SpeechRequest *out)
{
    std::optional<RequestError> error;
    RawSpeech raw;
    raw.model = textField(form, "model", &error).value_or(QString());
    raw.input = textField(form, "input", &error);
    raw.voice = textField(form, "voice", &error).value_or(QString());
    raw.format = textField(form, "response_format", &error).value_or(QString());
    const auto speed = textField(form, "speed", &error);
    if (error)
        return error;
    if (speed && !speed->isEmpty()) {
        bool ok = false;
        raw.speed = number(*speed, &ok);
        if (!ok)
            return bad(QStringLiteral("'speed' must be a number from 0.25 to 4.0."),
                       QStringLiteral("speed"));
    }
    if (auto e = speech(raw, config, voices, out))
        return e;
    const int n = form.count("prompt_audio");
    if (n > 1)
        return bad(
            QStringLiteral("The field 'prompt_audio' was sent %1 times; send one file.").arg(n),
            QStringLiteral("prompt_audio"));
    if (n == 1)
        out->promptAudio = form.part("prompt_audio");
    return std::nullopt;
}

} // namespace AudioRequests
