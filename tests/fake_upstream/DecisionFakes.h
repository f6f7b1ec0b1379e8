#pragma once

#include "ImageFakes.h"
#include "Json.h"

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

#include <optional>

// What the fake's decisions endpoint produces (README.md, "Decisions"): an OpenRouter-style
// typed decision evaluation, POST /api/v1/decisions. Request checks and deterministic answers
// derived from SHA-256(state text, question id); pure functions.
namespace DecisionFakes {

// The served model is the asked one with this suffix, as a router names a pinned snapshot.
inline constexpr char kServedSuffix[] = "@2026-01";
inline constexpr int kOutputTokensPerQuestion = 12;
// Probabilities are multiples of 1/10^kProbabilityScale, so a distribution sums to 1 exactly.
inline constexpr int kProbabilityScale = 4;

enum class Type
{
    Noul, // a probability that the statement holds
    Choice,
    Score
};

struct Question
{
    QString id;
    Type type = Type::Noul;
    QString instructions;
    QStringList criteria; // choice: the option ids; score: the legend, lowest first
};

// A request that passed the checks.
struct Request
{
    QString model;
    QString stateText;         // the state string, or the compact JSON text of an object or array
    QList<Question> questions; // in id order
};

// A 400 invalid_request_error as OpenAI words it (the images endpoint's).
using Invalid = ImageFakes::Invalid;

// Checks model (non-empty string), state (string, object or array), questions (a non-empty
// object of id -> {type, instructions, criteria}); criteria is an array of at least two
// distinct non-empty strings, required for choice and score, optional for noul. Other fields
// are ignored. Nested params are named like "questions.q1.type".
std::optional<Invalid> parseRequest(const QJsonObject &body, Request *request);

// ceil(bytes / 4).
qint64 inputTokens(qint64 bodyBytes);

// A JSON number for a cost option value: digits, optionally a point and digits (0.000123).
bool isDecimal(const QString &text);

// units / 10^scale written exactly as a JSON number, without trailing zeros: 412, 6 -> 0.000412.
QByteArray decimal(qint64 units, int scale);

// The default cost in USD: input * 0.000001 + output * 0.000004, as a JSON number.
QByteArray defaultCost(qint64 inputTokens, qint64 outputTokens);

// The answer to one question, from SHA-256(state text, question id).
Json answer(const Question &question, const QString &stateText);

// The whole 200 body. cost: empty for the default, "none" to leave usage.cost out, else a
// decimal written as given.
QByteArray responseBody(const Request &request, const QByteArray &id, qint64 bodyBytes,
                        const QString &cost);

} // namespace DecisionFakes
