#pragma once

#include "Json.h"

#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

enum class Protocol
{
    Chat,      // POST /v1/chat/completions (OpenAI)
    Responses, // POST /v1/responses (OpenAI)
    Messages   // POST /v1/messages (Anthropic)
};

// The knobs of one request, after the command line defaults, the [fake ...] directive in the
// last user message and the x-fake-* headers (in that order of precedence, lowest first).
struct GenerationOptions
{
    int chunks = 8;
    int tool = -1; // -1: automatic (tools present and "weather" asked), 0: never, 1: always
    qint64 cacheRead = 0;
    qint64 cacheWrite = 0;
    std::optional<QString> text; // replaces the generated text
    bool fullDeltaUsage = false; // messages: message_delta carries every usage counter
    // Generate every piece whatever the request's max tokens say (an upstream that ignores
    // them): the usage then reports more output tokens than were asked for.
    bool ignoreMaxTokens = false;
};

// The log-probabilities of one generated piece (chat completions' choices[0].logprobs): its
// own, and its most probable alternatives, the piece itself included, most probable first.
struct PieceLogprobs
{
    double logprob = 0;
    QList<QPair<QString, double>> top;
};

// A deterministic instance of a JSON schema as plausible tokens: every scalar value is one
// piece, each key (quoted) and each punctuation mark ({ } [ ] , :) its own piece. Values come
// from SHA-256 of (seed, the value's path: "", "/q1", "/q1/answer", "/list/0"): enum (one of
// the values), const, boolean, integer and number (within minimum/maximum; defaults 0 to 100
// and 0 to 1), string, null, array (items; minItems/maxItems, default 1 to 3, at most 8),
// object (every property, in key order, then required names it does not list), anyOf/oneOf
// (the first branch). A value piece chosen among alternatives (enum, boolean) gets those
// alternatives with a deterministic distribution in which it is the most probable; any other
// piece has logprob -0.000001 and no other alternative. Logprobs have 6 decimals.
struct SchemaInstance
{
    QStringList pieces;
    QList<PieceLogprobs> logprobs; // one per piece
};
SchemaInstance schemaInstance(const QJsonObject &schema, const QString &seed);

// What the fake "generates" for one request, derived deterministically from it.
struct Generation
{
    Protocol protocol = Protocol::Chat;
    quint64 seq = 0;    // request number: every id is derived from it
    qint64 created = 0; // Unix seconds
    QString model;
    QJsonObject request;
    bool includeUsage = false; // chat: stream_options.include_usage
    bool toolCall = false;
    QString toolName;
    QString toolArguments;  // the whole arguments JSON text, padded like any content
    QJsonObject toolInput;  // the same, parsed (messages non-streaming tool_use.input)
    QStringList pieces;     // what is emitted; one completion token each
    QString text;           // the pieces joined
    bool truncated = false; // cut by max_tokens / max_output_tokens
    qint64 inputTokens = 0; // prompt tokens not read from the cache
    qint64 cacheRead = 0;
    qint64 cacheWrite = 0;
    bool fullDeltaUsage = false;
    // chat with "logprobs": true and a text answer: one entry per piece, sent as
    // choices[0].logprobs (per chunk when streaming), cut to "top_logprobs" alternatives.
    bool logprobs = false;
    int topLogprobs = 0;
    QList<PieceLogprobs> pieceLogprobs;

    qint64 outputTokens() const { return pieces.size(); }
};

// The text of the last user message that has text (parts joined by a space).
QString lastUserText(Protocol protocol, const QJsonObject &request);
// Words (runs of non-space characters) in a string.
qint64 countWords(const QString &text);
// Prompt tokens by the fake's rule: for each message (a system prompt or instructions count as
// one), 3 plus the words of every string under a "content" or "text" key at any depth.
qint64 promptTokens(Protocol protocol, const QJsonObject &request);
// Splits text into exactly n pieces of nearly equal length (in code points), padding it with
// spaces first when it has fewer than n code points.
QStringList splitPieces(const QString &text, int n);

Generation makeGeneration(Protocol protocol, const QJsonObject &request,
                          const GenerationOptions &options, quint64 seq, qint64 created,
                          bool forceTool);

// Ids derived from the request number, shaped like the real ones.
QByteArray fakeId(const char *prefix, quint64 seq);

// An error body in the protocol's envelope. OpenAI: {"error":{message,type,param,code}};
// Anthropic: {"type":"error","error":{type,message},"request_id"}.
QByteArray errorBody(Protocol protocol, int status, const QString &message,
                     const QByteArray &requestId, const QByteArray &param = {},
                     const QByteArray &code = {});

// Writes one request's output in its protocol: the whole body, or the stream's events in
// order (preamble, one event per piece, epilogue). Events are complete SSE events
// ("event: ...\ndata: ...\n\n" or "data: ...\n\n"). Call them in stream order: the responses
// protocol numbers its events.
class ProtocolWriter
{
public:
    explicit ProtocolWriter(Generation generation) : m_gen(std::move(generation)) {}
    virtual ~ProtocolWriter() = default;

    static std::unique_ptr<ProtocolWriter> create(Generation generation);

    const Generation &generation() const { return m_gen; }
    virtual QByteArray body() = 0;
    virtual QList<QByteArray> preamble() = 0;
    virtual QByteArray piece(int index) = 0;
    virtual QList<QByteArray> epilogue() = 0;
    // The event of piece index with its JSON cut in half.
    QByteArray brokenPiece(int index);
    // An in-stream failure, in the protocol's format.
    virtual QByteArray errorEvent(const QString &message) = 0;

    static QByteArray sse(const QByteArray &data);
    static QByteArray sse(const char *event, const QByteArray &data);

protected:
    Generation m_gen;
};
