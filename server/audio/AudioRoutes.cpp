#include "AudioRoutes.h"

#include "AudioDecoder.h"
#include "AudioFamily.h"
#include "AudioRequests.h"
#include "AudioUpstream.h"
#include "AudioWorkers.h"
#include "ErrorEnvelope.h"
#include "RequestContext.h"
#include "ServiceFamily.h"
#include "SpeechMeter.h"
#include "SpeechRecognizer.h"
#include "SpeechSynthesizer.h"
#include "upstream/GuardedFetch.h"
#include "UpstreamReply.h"
#include "Wav.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <QFile>
#include <QMetaObject>
#include <QPointer>
#include <QTemporaryFile>
#include <QTimer>

namespace {

constexpr double kMinSeconds = 0.1;
constexpr double kMinReferenceSeconds = 1.0;
constexpr double kMaxReferenceSeconds = 30.0;
// A speech answer gives the connection more audio only while less than kUnsentWindow waits
// unsent in the server's buffer, and looks at what the client's TCP has acknowledged at every
// write and every kTakenPollMs while anything waits: what a client is billed for when it
// leaves is then what had reached it at the last look, never more.
constexpr qint64 kUnsentWindow = 64 * 1024;
constexpr qsizetype kMaxPiece = 16 * 1024; // a sentence from espeak-ng comes as one chunk
constexpr int kTakenPollMs = 5;
// The kernel's queue for a speech answer: the lag of the count of audio taken behind what the
// client took is at most what waits in the server (kUnsentWindow and a piece) plus this queue
// (Linux reserves twice the figure, and may pass it by one segment, 64 KiB on loopback): about
// 208 KiB, a second of 48 kHz stereo. Left to the kernel's tuning the queue grew to megabytes
// on loopback, and a client taking 4 MB was billed for 3.5. The queue refills at every write
// and poll, so the cap never holds an answer below many times its audio's rate.
constexpr int kSendQueue = 32 * 1024;
// Audio the engine may make ahead of what the connection was given: past it the engine's
// worker waits, so a slow reader slows the engine down instead of making the server hold its
// whole answer (minutes of 48 kHz stereo are tens of megabytes, outside the HTTP edge's
// buffer cap until written).
constexpr qint64 kMaxAhead = 1024 * 1024;

using Cancel = std::shared_ptr<std::atomic_bool>;

// Runs f on the server thread (home lives there); dropped when the server is gone.
template <typename F> void onServer(const QPointer<QObject> &home, F f)
{
    if (home)
        QMetaObject::invokeMethod(home.data(), std::move(f), Qt::QueuedConnection);
}

// The client left: answered for the record (nothing reaches it), so the usage row is written
// and the reservation released.
void gone(const ContextPtr &ctx)
{
    ctx->respondClientLeft();
}

// `also` runs on the server thread when the client leaves (to stop an upstream call).
Cancel cancelOnClose(const ContextPtr &ctx, std::function<void()> also = {})
{
    auto cancel = std::make_shared<std::atomic_bool>(false);
    ctx->exchange()->onClosed([cancel, also = std::move(also)] {
        cancel->store(true);
        if (also)
            also();
    });
    return cancel;
}

// An upstream call that failed, in the route's envelope (429 with Retry-After).
// Frames at `rate` in `seconds`, rounded up, but not past a whole number that floating point
// missed by a hair (a WAV's stated 12345 / 16000 s is 12345 frames, not 12346).
qint64 framesIn(double seconds, int rate)
{
    const double f = seconds * rate;
    const double r = std::round(f);
    return std::abs(f - r) < 1e-6 ? qint64(r) : qint64(std::ceil(f));
}

std::optional<MultipartForm> readForm(const ContextPtr &ctx, const MultipartLimits &limits,
                                      const QString &what)
{
    QString error;
    const auto boundary = multipartBoundary(ctx->request().header("content-type"), &error);
    if (!boundary) {
        ctx->respondError(400, QStringLiteral("%1 takes multipart/form-data: %2").arg(what, error),
                          QStringLiteral("invalid_request_error"));
        return std::nullopt;
    }
    MultipartForm form = parseMultipart(ctx->request().body, *boundary, limits);
    if (form.error) {
        ctx->respondError(form.error->status, form.error->message,
                          QStringLiteral("invalid_request_error"), form.error->param);
        return std::nullopt;
    }
    return form;
}

RequestError decodeError(const AudioDecoder &decoder, const QString &param)
{
    if (decoder.error() == AudioDecoder::Error::Empty)
        return {400, QStringLiteral("The audio in '%1' is empty.").arg(param), param,
                QStringLiteral("empty_file")};
    return {400,
            QStringLiteral("The audio in '%1' could not be decoded (%2). Supported formats: %3.")
                .arg(param, decoder.message(),
                     AudioDecoder::supportedFormats().join(QStringLiteral(", "))),
            param, QStringLiteral("invalid_file_format")};
}

std::unique_ptr<AudioDecoder> decoderFor(const MultipartPart *part, const QString &path)
{
    return part ? AudioDecoder::fromBytes(part->data) : AudioDecoder::fromFile(path);
}

// ---- POST /v1/audio/transcriptions --------------------------------------------------------

// One transcription in flight: the validated request, its audio (a view into the body or a
// downloaded temporary file) and the stages, each on the thread it belongs to.
// What both routes' requests share: the request, the family and this server's objects, the
// pool slot held from admission to answer, and the cancel flag the client's leaving sets.
struct AudioJob
{
    ContextPtr ctx;
    AudioFamily *family = nullptr;
    QPointer<QObject> home;
    AudioUpstream *upstream = nullptr;
    AudioWorkers::Slot slot;
    Cancel cancel;
};

// Fills a job's shared part; the client leaving cancels the job and aborts its upstream call.
template <typename Job>
void attach(const std::shared_ptr<Job> &job, const ContextPtr &ctx, AudioFamily &family,
            const QPointer<QObject> &home, AudioUpstream *upstream)
{
    job->ctx = ctx;
    job->family = &family;
    job->home = home;
    job->upstream = upstream;
    std::weak_ptr<Job> weak = job;
    job->cancel = cancelOnClose(ctx, [weak] {
        if (auto self = weak.lock())
            self->clientLeft();
    });
}

struct Transcription : AudioJob, std::enable_shared_from_this<Transcription>
{
    GuardedFetch *fetcher = nullptr;
    MultipartForm form; // req.file points into it; its data into the request body
    TranscriptionRequest req;
    std::unique_ptr<QTemporaryFile> download;
    // Upstream: the form to send (built on a worker) and the frames billed (the local probe's).
    QByteArray upstreamBody;
    QByteArray upstreamBoundary;
    // The decoded duration in frames at 16 kHz: what is held, then billed (both engines).
    qint64 billedFrames = 0;
    qint64 floorHold = 0; // held before the audio is looked at
    AudioUpstream::CallPtr call;

    bool isUpstream() const { return req.provider->type == AudioProviderType::OpenAI; }

    void start()
    {
        if (!ctx->allowsModel(req.model->id))
            return;
        if (!req.provider->unusableReason().isEmpty()) {
            ctx->respondError(503, req.provider->unusableReason(), {}, QStringLiteral("model"),
                              QStringLiteral("provider_not_configured"));
            return;
        }
        if (req.provider->type == AudioProviderType::FishSpeech) {
            ctx->respondError(
                503,
                QStringLiteral("The audio provider '%1' (type %2) cannot transcribe: fish-speech "
                               "serves speech only; put the model on a local or openai provider.")
                    .arg(req.provider->name, audioProviderTypeName(req.provider->type)),
                {}, QStringLiteral("model"), QStringLiteral("provider_not_available"));
            return;
        }
        if (!isUpstream() && !req.language.isEmpty() && req.language != u"en") {
            ctx->respondError(
                400,
                QStringLiteral("The local engine of '%1' transcribes English (en) only; a model "
                               "on an upstream provider (such as vendorB-asr-1) serves '%2'.")
                    .arg(req.model->id, req.language),
                QStringLiteral("invalid_request_error"), QStringLiteral("language"),
                QStringLiteral("unsupported_language"));
            return;
        }
        slot = family->workers().acquire();
        if (!slot)
            return ctx->respondBusy(family->workers(), QStringLiteral("The audio engines"));
        // Before the audio is decoded (or downloaded), the price of the shortest audio served:
        // a balance that cannot pay for any transcription is refused before any work. The
        // rest of the hold follows once the decoded duration is known, before the recognizer
        // or the upstream runs.
        floorHold = cost(framesIn(kMinSeconds, SpeechRecognizer::kRate));
        auto self = shared_from_this();
        ctx->reserve(floorHold, [self] {
            if (self->cancel->load())
                return gone(self->ctx);
            if (self->req.fileUri.isEmpty())
                self->probe();
            else
                self->fetch();
        });
    }

    qint64 cost(qint64 frames) const
    {
        return AudioConfig::transcriptionCost(frames, SpeechRecognizer::kRate, req.model->price);
    }

    // file_uri: streamed to a temporary file through the outbound URL guard.
    void fetch()
    {
        download = std::make_unique<QTemporaryFile>();
        if (!download->open()) {
            ctx->respondError(500, QStringLiteral("No temporary file for the download."));
            return;
        }
        const UrlPolicy &policy = family->config().fileUri;
        FetchRequest request;
        request.url = req.fileUri;
        GuardedFetchCallPtr call = fetcher->start(request, policy);
        auto self = shared_from_this();
        call->onData = [self](const QByteArray &chunk) {
            return !self->cancel->load() && self->download->write(chunk) == chunk.size();
        };
        call->onDone = [self, call, maxBytes = policy.maxBytes](const FetchOutcome &o) {
            Q_UNUSED(call); // kept alive until done
            if (self->cancel->load())
                return gone(self->ctx);
            if (!o.ok()) {
                const bool tooLarge = o.error == FetchError::TooLarge;
                self->ctx->respondError(
                    tooLarge ? 413 : 400,
                    tooLarge ? QStringLiteral("The audio at 'file_uri' is larger than the limit "
                                              "of %1 bytes.")
                                   .arg(maxBytes)
                             : QStringLiteral("'file_uri' could not be fetched: %1").arg(o.message),
                    QStringLiteral("invalid_request_error"), QStringLiteral("file_uri"),
                    tooLarge ? QStringLiteral("file_too_large") : QStringLiteral("fetch_failed"));
                return;
            }
            self->download->flush();
            self->probe();
        };
    }

    // On a worker: is it audio, and how long? The duration is measured by decoding the whole
    // stream (never taken from the container's header, which may claim more or less than the
    // audio holds); it sets the hold and the bill. An upstream's form is built here too, off the
    // event loop.
    void probe()
    {
        auto self = shared_from_this();
        family->workers().run(slot, [self] {
            auto decoder =
                decoderFor(self->req.file, self->download ? self->download->fileName() : QString());
            std::optional<RequestError> error;
            double seconds = 0;
            QByteArray form;
            QByteArray boundary;
            if (!decoder->open() || (seconds = decoder->measureDuration(self->cancel.get())) < 0)
                error = decodeError(*decoder, QStringLiteral("file"));
            if (!error && self->isUpstream() && seconds >= kMinSeconds) {
                QByteArray audio;
                if (self->req.file) {
                    audio = self->req.file->data;
                } else {
                    QFile f(self->download->fileName());
                    if (f.open(QIODevice::ReadOnly))
                        audio = f.readAll();
                }
                if (audio.isEmpty()) {
                    error = RequestError{500, QStringLiteral("The downloaded audio could not "
                                                             "be read back.")};
                } else {
                    boundary = AudioUpstream::boundaryFor(audio);
                    form = AudioUpstream::transcriptionForm(
                        self->req, self->req.model->upstreamModel, audio,
                        AudioUpstream::fileNameFor(decoder->container()), boundary);
                }
            }
            onServer(self->home, [self, error, seconds, form, boundary] {
                if (self->cancel->load())
                    return gone(self->ctx);
                if (error)
                    return self->ctx->respondError(*error);
                if (seconds < kMinSeconds)
                    return self->ctx->respondError(tooShort(seconds));
                self->upstreamBody = form;
                self->upstreamBoundary = boundary;
                self->billedFrames = framesIn(seconds, SpeechRecognizer::kRate);
                // The whole bound held (the floor is part of it) before any recognition or
                // upstream call.
                self->ctx->reserve(self->cost(self->billedFrames) - self->floorHold, [self] {
                    if (self->isUpstream())
                        self->callUpstream();
                    else
                        self->recognize();
                });
            });
        });
    }

    // An OpenAI-compatible upstream transcribes; its answer is passed through as it is.
    void callUpstream()
    {
        if (cancel->load())
            return gone(ctx);
        auto self = shared_from_this();
        call = upstream->post(*req.provider, "/audio/transcriptions",
                              "multipart/form-data; boundary=" + upstreamBoundary, upstreamBody,
                              [self](const AudioUpstreamAnswer &a) {
                                  self->call.reset();
                                  self->upstreamAnswered(a);
                              });
        upstreamBody.clear(); // the call holds it (for a retry on another key)
    }

    void upstreamAnswered(const AudioUpstreamAnswer &a)
    {
        if (!a.ok())
            return respondUpstreamFailure(ctx, a);
        if (!AudioUpstream::transcriptLooksValid(req.format, a.body)) {
            ctx->respondRaw(502, "application/json",
                            ErrorEnvelope::body(
                                ctx->errorStyle(), 502,
                                QStringLiteral("The upstream provider '%1' sent a malformed "
                                               "%2 transcript.")
                                    .arg(req.provider->name, TranscriptFormat::name(req.format)),
                                QStringLiteral("upstream_error"), {},
                                QStringLiteral("upstream_malformed")));
            return;
        }
        bill();
        ctx->respondRaw(200, AudioUpstream::transcriptContentType(req.format), a.body);
    }

    // Both engines bill the decoded duration that was held.
    void bill()
    {
        UsageRecord &u = ctx->usage();
        u.model = req.model->id;
        u.setMeter(AudioFamily::kAudioMeter, billedFrames * 1000 / SpeechRecognizer::kRate);
        u.cost = cost(billedFrames);
    }

    // The client left while the upstream worked: stop it and close the record.
    void clientLeft()
    {
        if (!call)
            return;
        call->abort();
        call.reset();
        gone(ctx);
    }

    static RequestError tooShort(double seconds)
    {
        return {400,
                QStringLiteral("The audio is %1 s long; the minimum is 0.1 s.")
                    .arg(std::max(0.0, seconds), 0, 'f', 3),
                QStringLiteral("file"), QStringLiteral("audio_too_short")};
    }

    void recognize()
    {
        auto self = shared_from_this();
        family->workers().run(slot, [self] {
            QString error;
            auto recognizer = self->family->workers().recognizer(&error);
            std::optional<RequestError> failure;
            Transcript transcript;
            qint64 frames = -1;
            if (!recognizer) {
                failure = RequestError{500, error};
            } else {
                auto decoder = decoderFor(self->req.file,
                                          self->download ? self->download->fileName() : QString());
                recognizer->begin(self->cancel.get());
                if (decoder->open())
                    frames = decoder->decode(
                        SpeechRecognizer::kRate, 1,
                        [&](const int16_t *samples, qsizetype n) {
                            return recognizer->feed(samples, n);
                        },
                        self->cancel.get());
                if (frames < 0)
                    failure = decodeError(*decoder, QStringLiteral("file"));
                else
                    transcript = recognizer->finish();
            }
            onServer(self->home, [self, failure, transcript, frames] {
                self->answer(failure, transcript, frames);
            });
        });
    }

    void answer(const std::optional<RequestError> &failure, const Transcript &t, qint64 frames)
    {
        if (cancel->load())
            return gone(ctx);
        if (failure)
            return ctx->respondError(*failure);
        if (frames < qint64(kMinSeconds * SpeechRecognizer::kRate))
            return ctx->respondError(tooShort(double(frames) / SpeechRecognizer::kRate));
        TranscriptFormat::Options options;
        options.language = TranscriptFormat::languageName(
            req.language.isEmpty() ? QStringLiteral("en") : req.language);
        options.words = req.wordTimestamps;
        options.segments = req.segmentTimestamps;
        QByteArray type;
        const QByteArray body = TranscriptFormat::render(t, req.format, options, &type);
        bill();
        ctx->respondRaw(200, type, body);
    }
};

// ---- POST /v1/audio/speech -------------------------------------------------------------------

struct Speech : AudioJob, std::enable_shared_from_this<Speech>
{
    MultipartForm form; // req.promptAudio points into it
    SpeechRequest req;
    SpeechParams params;
    QByteArray cloneHeader; // X-Voice-Clone: approximate (local) or upstream
    bool started = false;
    // All audio written: the charge waits for the connection to take it (or for the client to
    // leave, which bills what it took).
    bool produced = false;
    bool settled = false;
    bool polling = false;
    SpeechMeter meter;
    // Made and not yet given to the connection (the flag: audio, not the WAV header); the
    // first one from pendingFrom on.
    std::deque<std::pair<QByteArray, bool>> pending;
    qsizetype pendingFrom = 0;
    qint64 audioMade = 0; // bytes of audio made so far, where the next sentence starts
    // Audio made on the worker and not yet given to the connection (kMaxAhead).
    std::mutex aheadMutex;
    std::condition_variable aheadFree;
    qint64 ahead = 0;

    // On the worker, before a piece of audio goes to the server thread: waits while the
    // connection is more than kMaxAhead behind. False once the request is cancelled.
    bool waitForRoom(qint64 bytes)
    {
        std::unique_lock lock(aheadMutex);
        // Timed, so that a cancel is seen even without a wake-up.
        while (ahead > kMaxAhead && !cancel->load())
            aheadFree.wait_for(lock, std::chrono::milliseconds(50));
        ahead += bytes;
        return !cancel->load();
    }
    // On the server thread: audio given to the connection, or dropped.
    void tookAhead(qint64 bytes)
    {
        {
            std::lock_guard lock(aheadMutex);
            ahead -= bytes;
        }
        aheadFree.notify_one();
    }
    // Where the speech comes from: nullptr for the local engines, else an upstream provider
    // (the clone provider for a cloning request when one is set, else the model's).
    const AudioProvider *target = nullptr;
    AudioUpstream::CallPtr call;
    int failStatus = 500;
    QString failPrefix = QStringLiteral("Speech synthesis failed");

    void start()
    {
        if (!ctx->allowsModel(req.model->id))
            return;
        const AudioConfig &config = family->config();
        if (req.promptAudio && !config.cloneProvider.isEmpty())
            target = config.provider(config.cloneProvider);
        else if (req.provider->type != AudioProviderType::Local)
            target = req.provider;
        const AudioProvider *used = target ? target : req.provider;
        if (!used->unusableReason().isEmpty()) {
            ctx->respondError(503, used->unusableReason(), {}, QStringLiteral("model"),
                              QStringLiteral("provider_not_configured"));
            return;
        }
        if (target && target->type == AudioProviderType::OpenAI && req.promptAudio) {
            ctx->respondError(
                400,
                QStringLiteral("The model '%1' is served by the OpenAI-compatible provider '%2', "
                               "which cannot clone a voice: leave out prompt_audio, use a local "
                               "model (approximate cloning), or ask the operator to set "
                               "audio.clone_provider.")
                    .arg(req.model->id, target->name),
                QStringLiteral("invalid_request_error"), QStringLiteral("prompt_audio"),
                QStringLiteral("cloning_not_available"));
            return;
        }
        slot = family->workers().acquire();
        if (!slot)
            return ctx->respondBusy(family->workers(), QStringLiteral("The audio engines"));
        params.speed = req.speed;
        const qint64 cost = AudioConfig::speechCost(req.characters, req.model->price);
        auto self = shared_from_this();
        ctx->reserve(cost, [self] {
            if (self->cancel->load())
                return gone(self->ctx);
            if (self->req.promptAudio)
                self->analyzeReference();
            else if (self->target)
                self->callUpstream();
            else
                self->synthesize();
        });
    }

    // OpenAI's /audio/speech or fish-speech's /v1/tts, asked for WAV; the answer is converted
    // to 48 kHz stereo on a worker.
    void callUpstream()
    {
        if (cancel->load())
            return gone(ctx);
        QByteArray path;
        QByteArray body;
        if (target->type == AudioProviderType::FishSpeech) {
            path = "/v1/tts";
            body = AudioUpstream::fishSpeechJson(req.input, req.promptAudio ? &req.promptAudio->data
                                                                            : nullptr);
            if (req.promptAudio)
                cloneHeader = "upstream";
        } else {
            path = "/audio/speech";
            body = AudioUpstream::speechJson(req, req.model->upstreamModel);
        }
        auto self = shared_from_this();
        call = upstream->post(*target, path, "application/json", body,
                              [self](const AudioUpstreamAnswer &a) {
                                  self->call.reset();
                                  if (self->cancel->load())
                                      return gone(self->ctx);
                                  if (!a.ok())
                                      return respondUpstreamFailure(self->ctx, a);
                                  self->convert(a.body);
                              });
    }

    // The upstream's audio (any container FFmpeg reads) to 48 kHz stereo s16le, streamed to
    // the client as it converts.
    void convert(const QByteArray &audio)
    {
        failStatus = 502;
        failPrefix = QStringLiteral("The upstream provider '%1' sent audio that could not be "
                                    "converted")
                         .arg(target->name);
        auto self = shared_from_this();
        family->workers().run(slot, [self, audio] {
            auto decoder = AudioDecoder::fromBytes(audio);
            QString error;
            double seconds = -1;
            if (!decoder->open() || (seconds = decoder->measureDuration(self->cancel.get())) < 0) {
                error = decoder->message();
            } else {
                // What the answer will hold, for billing a client that leaves before its end
                // by the share of it that was taken.
                const qint64 expected =
                    framesIn(seconds, SpeechSynthesizer::kRate) * SpeechSynthesizer::kChannels * 2;
                onServer(self->home, [self, expected] { self->meter.expect(expected); });
                const qint64 frames = decoder->decode(
                    SpeechSynthesizer::kRate, SpeechSynthesizer::kChannels,
                    [self](const int16_t *samples, qsizetype n) {
                        const QByteArray pcm(reinterpret_cast<const char *>(samples),
                                             n * SpeechSynthesizer::kChannels * 2);
                        if (!self->waitForRoom(pcm.size()))
                            return false;
                        onServer(self->home, [self, pcm] { self->write(pcm); });
                        return true;
                    },
                    self->cancel.get());
                if (frames < 0 && !self->cancel->load())
                    error = decoder->message();
            }
            onServer(self->home, [self, error] { self->finish(error); });
        });
    }

    // The client left (or was dropped for not reading). Before the audio: the upstream call
    // stops and nothing is billed. While the engine works, it stops at its next chunk and
    // finish() bills what was taken; once all audio was written, that is billed here.
    void clientLeft()
    {
        aheadFree.notify_all(); // a worker waiting for room sees the cancel at once
        if (call) {
            call->abort();
            call.reset();
            gone(ctx);
            return;
        }
        if (produced)
            settle(true);
    }

    // Voice cloning without a cloning upstream: the reference's pitch and speaking rate.
    void analyzeReference()
    {
        auto self = shared_from_this();
        family->workers().run(slot, [self] {
            auto decoder = AudioDecoder::fromBytes(self->req.promptAudio->data);
            std::optional<RequestError> error;
            ReferenceVoice ref;
            if (!decoder->open()) {
                error = decodeError(*decoder, QStringLiteral("prompt_audio"));
            } else {
                std::vector<int16_t> pcm;
                const qint64 limit = qint64(kMaxReferenceSeconds + 1) * 16'000;
                const qint64 frames = decoder->decode(
                    16'000, 1,
                    [&](const int16_t *s, qsizetype n) {
                        pcm.insert(pcm.end(), s, s + n);
                        return qint64(pcm.size()) <= limit;
                    },
                    self->cancel.get());
                const double seconds = double(pcm.size()) / 16'000;
                if (frames < 0 && decoder->error() != AudioDecoder::Error::Cancelled)
                    error = decodeError(*decoder, QStringLiteral("prompt_audio"));
                else if (seconds < kMinReferenceSeconds || seconds > kMaxReferenceSeconds)
                    error = RequestError{
                        400,
                        QStringLiteral("prompt_audio is %1 s long; it must be 1 to 30 s "
                                       "(5 to 15 s of clear speech works best).")
                            .arg(frames < 0 ? QStringLiteral("over 30")
                                            : QString::number(seconds, 'f', 1)),
                        QStringLiteral("prompt_audio"), QStringLiteral("invalid_duration")};
                else
                    ref = ::analyzeReference(pcm.data(), qsizetype(pcm.size()), 16'000);
            }
            onServer(self->home, [self, error, ref] {
                if (error)
                    return self->ctx->respondError(*error);
                if (self->target) // checked here, cloned upstream
                    return self->callUpstream();
                if (ref.meanPitchHz > 0)
                    self->params.pitchHz = ref.meanPitchHz;
                if (ref.syllablesPerSecond > 0)
                    self->params.syllablesPerSecond = ref.syllablesPerSecond;
                self->cloneHeader = "approximate";
                self->synthesize();
            });
        });
    }

    void synthesize()
    {
        auto self = shared_from_this();
        family->workers().run(slot, [self] {
            const QString error = SpeechSynthesizer::synthesize(
                self->req.voice, self->req.input, self->params,
                [self](const QByteArray &pcm) {
                    if (!self->waitForRoom(pcm.size()))
                        return false;
                    onServer(self->home, [self, pcm] { self->write(pcm); });
                    return true;
                },
                self->cancel.get(),
                [self](qint64 characters) {
                    onServer(self->home, [self, characters] {
                        self->meter.sentence(self->audioMade, characters);
                    });
                });
            onServer(self->home, [self, error] { self->finish(error); });
        });
    }

    void write(const QByteArray &pcm)
    {
        if (cancel->load() || (!started && ctx->isAnswered()))
            return tookAhead(pcm.size()); // dropped: the worker stops at its next piece
        if (!started) {
            started = true;
            HttpHeaders headers{
                {"Content-Type", req.wav ? "audio/wav" : "application/octet-stream"},
                {"X-Audio-Format", "s16le; rate=48000; channels=2"}};
            if (!cloneHeader.isEmpty())
                headers.append(qMakePair(QByteArray("X-Voice-Clone"), cloneHeader));
            ctx->startStream(200, headers);
            ctx->exchange()->limitSendQueue(kSendQueue);
            if (req.wav)
                pending.emplace_back(
                    Wav::header(SpeechSynthesizer::kRate, SpeechSynthesizer::kChannels), false);
        }
        if (!pcm.isEmpty()) {
            pending.emplace_back(pcm, true);
            audioMade += pcm.size();
        }
        pump();
    }

    // Gives the connection audio while little of it waits unsent, and notes what it has taken
    // (only while it is open: after it closed, the count of unsent bytes is gone). Runs at each
    // piece of audio and every kTakenPollMs while anything waits; once all audio has been
    // written and taken, the answer is billed whole and ends.
    void pump()
    {
        if (settled || !ctx->exchange()->isOpen())
            return;
        qint64 unsent = ctx->exchange()->unsentBytes();
        meter.observe(ctx->exchange()->unackedBytes());
        while (!pending.empty() && unsent < kUnsentWindow) {
            const auto &[bytes, audio] = pending.front();
            const qsizetype n = std::min(bytes.size() - pendingFrom, kMaxPiece);
            ctx->writeStream(pendingFrom == 0 && n == bytes.size() ? bytes
                                                                   : bytes.mid(pendingFrom, n));
            meter.wrote(n, audio);
            if (audio)
                tookAhead(n);
            pendingFrom += n;
            if (pendingFrom == bytes.size()) {
                pending.pop_front();
                pendingFrom = 0;
            }
            unsent = ctx->exchange()->unsentBytes();
            meter.observe(ctx->exchange()->unackedBytes());
        }
        if (pending.empty() && unsent == 0 && produced)
            return settle(false);
        if ((unsent > 0 || !pending.empty()) && !polling && home) {
            polling = true;
            // Holds the job while it waits for the client: nothing else does once the audio
            // is made.
            QTimer::singleShot(kTakenPollMs, home.data(), [self = shared_from_this()] {
                self->polling = false;
                self->pump();
            });
        }
    }

    // Charges the characters whose audio the connection took (all of them for an answer taken
    // whole) and ends the stream; the charge commits before its last bytes leave.
    void settle(bool left)
    {
        if (settled)
            return;
        settled = true;
        UsageRecord &u = ctx->usage();
        const qint64 characters = left ? meter.billedCharacters(req.characters) : req.characters;
        u.setMeter(AudioFamily::kCharactersMeter, characters);
        u.cost = AudioConfig::speechCost(characters, req.model->price);
        if (left)
            ctx->setStreamStatus(499);
        ctx->finishStream({});
    }

    void finish(const QString &error)
    {
        ctx->usage().model = req.model->id;
        if (cancel->load()) {
            if (!started)
                return gone(ctx);
            return settle(true); // billed for the audio the client took
        }
        if (!error.isEmpty()) {
            if (!started) {
                ctx->respondError(failStatus, QStringLiteral("%1: %2").arg(failPrefix, error),
                                  failStatus == 502 ? QStringLiteral("upstream_error") : QString());
                return;
            }
            // Our failure mid-stream: nothing is charged, and the client must not take a cut
            // answer for a whole one.
            settled = true;
            ctx->setStreamStatus(failStatus);
            ctx->exchange()->abortConnection();
            ctx->finishStream({});
            return;
        }
        if (!started) // no audio at all (text of only punctuation): an empty but valid answer
            write(QByteArray());
        produced = true;
        pump();
    }
};

} // namespace

QList<RouteSpec> audioRoutes(AudioFamily &family, const ServerScope &scope)
{
    QPointer<QObject> home(scope.parent());
    auto *fetcher = new GuardedFetch(scope.parent());
    auto *upstream = new AudioUpstream(family.keys(), scope.parent());
    QList<RouteSpec> routes;

    RouteSpec transcriptions;
    transcriptions.method = "POST";
    transcriptions.pattern = QStringLiteral("/v1/audio/transcriptions");
    transcriptions.bucket = QStringLiteral("audio");
    transcriptions.upload = true;
    transcriptions.bodyLimit = AudioRequests::kMaxFileBytes + 1024 * 1024;
    transcriptions.tooLarge = QStringLiteral("The field 'file' is limited to 26214400 bytes "
                                             "(25 MiB).");
    transcriptions.handler = [&family, home, fetcher, upstream](const ContextPtr &ctx) {
        auto form = readForm(ctx, AudioRequests::transcriptionLimits(),
                             QStringLiteral("POST /v1/audio/transcriptions"));
        if (!form)
            return;
        auto t = std::make_shared<Transcription>();
        t->form = std::move(*form);
        if (auto e = AudioRequests::transcription(t->form, family.config(), &t->req))
            return ctx->respondError(*e);
        attach(t, ctx, family, home, upstream);
        t->fetcher = fetcher;
        t->start();
    };
    routes.append(transcriptions);

    RouteSpec speech;
    speech.method = "POST";
    speech.pattern = QStringLiteral("/v1/audio/speech");
    speech.bucket = QStringLiteral("audio");
    speech.upload = true; // the cloning form carries up to 1 MiB of reference audio
    speech.bodyLimit = AudioRequests::kMaxPromptAudioBytes + 256 * 1024;
    speech.tooLarge = QStringLiteral("The field 'prompt_audio' is limited to 1048576 bytes "
                                     "(1 MiB).");
    speech.handler = [&family, home, upstream](const ContextPtr &ctx) {
        auto s = std::make_shared<Speech>();
        const QByteArray type = ctx->request().header("content-type").trimmed().toLower();
        if (type.startsWith("multipart/")) {
            auto form = readForm(ctx, AudioRequests::speechLimits(),
                                 QStringLiteral("POST /v1/audio/speech"));
            if (!form)
                return;
            s->form = std::move(*form);
            if (auto e = AudioRequests::speechFromForm(s->form, family.config(), family.voices(),
                                                       &s->req))
                return ctx->respondError(*e);
        } else {
            const auto body = ctx->jsonBody();
            if (!body)
                return;
            if (auto e =
                    AudioRequests::speechFromJson(*body, family.config(), family.voices(), &s->req))
                return ctx->respondError(*e);
        }
        attach(s, ctx, family, home, upstream);
        s->start();
    };
    routes.append(speech);

    RouteSpec voices;
    voices.method = "GET";
    voices.pattern = QStringLiteral("/v1/audio/voices");
    voices.auth = AuthMode::Public;
    voices.handler = [&family](const ContextPtr &ctx) {
        ctx->respondJson(200, QJsonObject{{"object", "list"}, {"data", family.voices().toJson()}});
    };
    routes.append(voices);
    return routes;
}
