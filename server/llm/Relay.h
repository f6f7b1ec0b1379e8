#pragma once

#include "SseParser.h"

#include <memory>
#include <QByteArray>
#include <QJsonObject>
#include <QString>

struct ModelPrice;

// The three protocols of the gateway. A client speaks one to us; an upstream speaks one too.
enum class Protocol
{
    Chat,      // POST /chat/completions
    Responses, // POST /responses
    Messages   // POST /messages
};

// Token counts as billed: input excludes cached tokens; cacheRead and cacheWrite are separate.
struct TokenUsage
{
    qint64 input = 0;
    qint64 output = 0;
    qint64 cacheRead = 0;
    qint64 cacheWrite = 0;
    bool haveInput = false;  // the upstream reported the input side
    bool haveOutput = false; // ... and the output side

    // cost = ceil(sum(tokens x units per 1M) / 1M): exact, one rounding per request.
    qint64 cost(const ModelPrice &price) const;
};

// Converts one request between the client's protocol and the upstream's. The gateway does the
// HTTP; a relay only transforms bytes, in order:
//   prepare() -> upstream body; then either convertBody() for a whole answer, or onEvent()
//   per upstream SSE event, then tail() (the client protocol's final event, sent after the
//   charge commits) or errorEvent() when the stream broke.
// Pass-through relays (same protocol both sides) copy bytes and rewrite only the model name;
// a translating relay builds the client's shapes. New protocol pairs are new subclasses.
class Relay
{
public:
    virtual ~Relay() = default;

    // Builds the upstream request body from the client's (validated) body. Returns an error
    // message for a request the upstream protocol cannot express (a 400), else empty.
    virtual QString prepare(const QJsonObject &clientBody, const QString &upstreamModel) = 0;
    // A whole upstream answer (2xx) converted for the client; false when it is malformed.
    virtual bool convertBody(const QByteArray &upstream, QByteArray *client) = 0;
    // One upstream event; appends what the client gets now to *out.
    virtual void onEvent(const SseEvent &event, QByteArray *out) = 0;
    // The final bytes of a complete stream (held back until settlement).
    virtual QByteArray tail() const = 0;
    // An error event in the client's protocol, ending a broken stream.
    virtual QByteArray errorEvent(const QString &message, const QString &type) const = 0;

    // The output bound sent upstream when the client gives none (0: none is sent, the model's
    // own limit applies).
    virtual qint64 defaultMaxTokens() const { return 0; }

    Protocol upstreamProtocol() const { return m_upstream; }
    Protocol clientProtocol() const { return m_client; }
    const QByteArray &upstreamBody() const { return m_upstreamBody; }
    bool isStreaming() const { return m_stream; }
    bool isFinished() const { return m_finished; } // the upstream's terminal event arrived
    bool upstreamFailed() const { return !m_streamError.isEmpty(); }
    const QString &streamError() const { return m_streamError; }
    // The upstream's own in-stream error event, converted for the client; like the final event
    // it is held back until the request is settled.
    const QByteArray &heldError() const { return m_heldError; }
    const TokenUsage &usage() const { return m_usage; }
    // Usage with unreported sides estimated (see estimatePromptTokens; one token per streamed
    // piece of output).
    TokenUsage finalUsage(bool *estimated) const;
    // A prompt's size in tokens, estimated from its text when the upstream reported none.
    static qint64 estimatePromptTokens(const QJsonValue &prompt);

    // clientModel: the resolved model ID the client is shown.
    static std::unique_ptr<Relay> create(Protocol client, Protocol upstream,
                                         const QString &clientModel);

    Relay(Protocol client, Protocol upstream, QString clientModel);

protected:
    void noteDelta() { ++m_deltas; }
    // Keeps an upstream's in-stream error (its message, and the event the client will get).
    void holdError(const QString &message, const QByteArray &event)
    {
        m_streamError = message.isEmpty() ? QStringLiteral("upstream error") : message;
        m_heldError = event;
    }
    // Reads the messages protocol's usage object into m_usage. final: it comes from
    // message_delta or a whole message, so its output count is the total.
    void mergeMessagesUsage(const QJsonObject &usage, bool final);

    Protocol m_client;
    Protocol m_upstream;
    QString m_clientModel;
    QByteArray m_quotedModel; // JSON string literal of m_clientModel
    QByteArray m_upstreamBody;
    bool m_stream = false;
    bool m_finished = false;
    QString m_streamError;
    QByteArray m_heldError;
    TokenUsage m_usage;
    qint64 m_promptTokens = 0;
    qint64 m_deltas = 0;
};
