#pragma once

#include "http/HttpHandler.h"
#include "ImageFakes.h"
#include "Protocols.h"

#include <QFile>
#include <QHash>
#include <QHostAddress>
#include <QMap>
#include <QObject>
#include <QPointer>
#include <QTimer>

#include <memory>
#include <optional>

class HttpConnection;
class HttpServer;
class FakeJob;
namespace SocialFakes {
class Catalog;
}

// An injected failure (x-fake-fault, [fake fault=...], --key-fault or --fault).
struct Fault
{
    enum class Kind
    {
        None,
        Status,         // 4xx/5xx in the protocol's error envelope (429 with retry-after)
        SlowFirstByte,  // value: delay before the status line, ms (default 10000)
        ResetMidStream, // value: pieces delivered before a TCP reset
        StallMidStream, // value: pieces delivered before going silent
        ErrorMidStream, // value: pieces delivered before an in-stream error event
        MalformedJson,  // value: index of the piece whose JSON is cut in half
        Hang,           // never answers
        Reset           // resets the connection without answering
    };
    Kind kind = Kind::None;
    int value = -1;     // -1: the default for the kind
    int retryAfter = 2; // seconds, for 429

    // Accepts: none, NNN (400-599), 429:SECONDS, slow-first-byte[:MS],
    // reset-mid-stream[:K], stall-mid-stream[:K], error-mid-stream[:K], malformed-json[:K],
    // hang, reset; reset-mid-body and stall-mid-body are other names of the mid-stream ones.
    static std::optional<Fault> parse(const QString &text);
};

struct FakeOptions
{
    QHostAddress address{QHostAddress::LocalHost};
    quint16 port = 0;
    int chunks = 8;
    int firstByteMs = 0;
    int intervalMs = 0;
    QString fault;                        // applies to requests that do not choose their own
    QList<QByteArray> requireKeys;        // empty: any key is accepted
    QHash<QByteArray, QString> keyFaults; // a fault for the requests made with this key
    QString logPath;
    QString catalogPath;       // served at /api/v1/models instead of the built-in catalog
    QString socialOpenApiPath; // --social-openapi: the TikHub-style API of SocialFakes.h
};

// Everything decided for one request before it is answered.
struct RequestPlan
{
    GenerationOptions generation;
    int firstByteMs = 0;
    int intervalMs = 0;
    Fault fault;
    int images = -1; // images: answer at most this many (-1: as many as asked)
    QString cost;    // decisions: usage.cost; empty: the default, "none": left out
};

// The fake upstream: OpenAI chat completions and responses, Anthropic messages, model lists,
// with pacing, usage and faults chosen per request. Single-threaded, all on the event loop.
class FakeUpstream : public QObject, public PlainHttpHandler
{
    Q_OBJECT
public:
    explicit FakeUpstream(FakeOptions options, QObject *parent = nullptr);
    ~FakeUpstream() override;

    bool start(QString *error);
    quint16 port() const;

    qint64 bodyLimit(const HttpRequest &head) const override;
    void handle(const ExchangePtr &exchange) override;
    void reject(const ExchangePtr &exchange, int status, const QString &message) override;

    enum class JobEnd
    {
        Completed, // answered in full (an error answer included)
        Cancelled, // the client left first
        Faulted    // ended by an injected reset
    };
    void jobStarted(bool stream);
    void jobEnded(bool stream, JobEnd how);
    // Sends what is buffered, then resets the TCP connection (RST).
    static void resetConnection(HttpConnection *connection);

private:
    struct Context;
    void trackConnection(HttpConnection *connection);
    HttpConnection *claimConnection(const ExchangePtr &exchange);
    void handleControl(const ExchangePtr &exchange);
    void handleGeneration(Context &ctx);
    void handleModels(Context &ctx, bool catalog);
    // Audio (README.md, "Audio"): OpenAI's transcriptions and speech, fish-speech's /v1/tts.
    void handleTranscription(Context &ctx);
    void handleSpeech(Context &ctx);
    void handleFishTts(Context &ctx);
    // Images (README.md, "Images"): OpenAI's generations; the files at /fake/images/<id>.png.
    void handleImages(Context &ctx);
    void serveImage(const ExchangePtr &exchange);
    // Decisions (README.md, "Decisions"): OpenRouter-style typed decision evaluation.
    void handleDecisions(Context &ctx);
    // The plan of a request whose directive is in one text field (audio, images) and its early
    // fault; false when the request was answered.
    bool planFromText(Context &ctx, const QString &directiveText, RequestPlan *plan);
    bool authorize(Context &ctx);
    // The request's body as a JSON object; nothing, after a 400 answer, when it is not one.
    std::optional<QJsonObject> jsonBody(Context &ctx);
    std::optional<RequestPlan> makePlan(Context &ctx, const QHash<QString, QString> &directive,
                                        QString *error) const;
    void respondNow(Context &ctx, int status, const QByteArray &body,
                    const HttpHeaders &extra = {});
    void respondError(Context &ctx, int status, const QString &message,
                      const QByteArray &param = {}, const QByteArray &code = {});
    // Answers with body after the plan's delay, applying its fault.
    void respondPlanned(Context &ctx, const RequestPlan &plan, const QByteArray &body,
                        const HttpHeaders &headers = {});
    // An error body in the request's envelope (OpenAI, Anthropic or fish-speech).
    QByteArray errorPayload(const Context &ctx, int status, const QString &message,
                            const QByteArray &param = {}, const QByteArray &code = {}) const;
    bool applyEarlyFault(Context &ctx, const RequestPlan &plan, bool stream);
    HttpHeaders jsonHeaders(const Context &ctx) const;
    HttpHeaders streamHeaders(const Context &ctx) const;
    QByteArray catalogJson() const;
    QByteArray modelsJson(bool anthropic) const;
    QByteArray statsJson() const;
    void writeLog(quint64 seq, const HttpRequest &request);

    FakeOptions m_options;
    Fault m_defaultFault;
    HttpServer *m_server = nullptr;
    QHash<HttpConnection *, std::weak_ptr<HttpExchange>> m_owners;
    QFile m_log;
    QByteArray m_catalogFile;
    std::unique_ptr<SocialFakes::Catalog> m_social;        // --social-openapi, or none
    ImageFakes::Store m_images{ImageFakes::kStoredImages}; // the images of url answers

    quint64 m_seq = 0;
    qint64 m_requests = 0;
    qint64 m_completed = 0;
    qint64 m_cancelled = 0;
    qint64 m_faulted = 0;
    qint64 m_imageFetches = 0;
    int m_openStreams = 0;
    int m_maxOpenStreams = 0;
    int m_openRequests = 0;
    int m_maxOpenRequests = 0;
    QMap<QString, qint64> m_byPath;
    bool m_stopping = false;
};

// One request being answered: after a delay, in one piece or as a paced stream, or never.
class FakeJob : public QObject
{
    Q_OBJECT
public:
    enum class Mode
    {
        Respond,
        Stream,
        Hang
    };
    FakeJob(FakeUpstream &owner, ExchangePtr exchange, HttpConnection *connection, bool stream,
            Mode mode);
    ~FakeJob() override;

    void setResponse(int status, HttpHeaders headers, QByteArray body);
    void setStream(std::unique_ptr<ProtocolWriter> writer, HttpHeaders headers, int intervalMs);
    void setFault(const Fault &fault);
    void start(int firstByteMs);

private:
    void begin();
    void step();
    void midStreamFault();
    void clientGone();
    void end(FakeUpstream::JobEnd how);
    void write(const QByteArray &event);

    FakeUpstream &m_owner;
    ExchangePtr m_exchange;
    QPointer<HttpConnection> m_connection;
    bool m_stream;
    Mode m_mode;
    int m_status = 200;
    HttpHeaders m_headers;
    QByteArray m_body;
    std::unique_ptr<ProtocolWriter> m_writer;
    int m_intervalMs = 0;
    Fault m_fault;
    int m_faultAt = -1;
    int m_next = 0;
    bool m_ended = false;
    bool m_resetting = false;
    QTimer m_timer;
};
