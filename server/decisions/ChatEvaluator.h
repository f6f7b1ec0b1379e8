#pragma once

#include <optional>
#include <QByteArray>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>
#include <utility>

// The chat evaluator's pure part (server/decisions/README.md, "Chat evaluator"): a decisions
// request as one chat completions request to a chat model of the gateway, and that model's
// answer read back into the contract's answers. No HTTP, no pipeline. The model's answer is
// untrusted input: every reader takes any JSON shape and never assumes a field exists.
namespace ChatEvaluator {

enum class Kind
{
    Noul,
    Choice,
    Score
};

// A question with the short labels the model answers with:
//   noul    "true" and "false";
//   choice  "1" to "N", one per option, the options in id order;
//   score   "0" to "N-1", one per level of the legend (0 the lowest).
struct Question
{
    QString id;
    Kind kind = Kind::Noul;
    QString instructions;
    QStringList labels;
    QStringList options;      // choice: the option id of each label
    QStringList descriptions; // per label: the option's or level's description, or noul's
                              // true and false criteria ("" when not given)
};

// The questions of a body that DecisionRequests::validate() accepted, in id order.
QList<Question> questions(const QJsonObject &body);

// The strict JSON schema of the answer: an object of question id ->
// {"answer": boolean | integer (one of the labels), "probabilities": {label: number 0..1}},
// every member required, nothing else allowed; "answer" comes first so that its token is
// generated before the probabilities the model writes.
QJsonObject answerSchema(const QList<Question> &questions);
QString systemPrompt();
// The state (a string as is, an object or array as compact JSON) and each question with its
// id, type, instructions and labelled criteria.
QString userPrompt(const QJsonValue &state, const QList<Question> &questions);

// How the upstream is asked for the JSON answer.
struct Ask
{
    // true: a chat completions upstream: response_format json_schema (strict), logprobs with
    // topLogprobs alternatives; false: a messages upstream (through the gateway's translation):
    // the forced tool "answer" whose input is the answer, no log-probabilities.
    bool jsonSchema = true;
    int topLogprobs = 20;
    int maxOutputTokens = 4096;
    // The chat field for the output bound: OpenAI's current max_completion_tokens, or
    // max_tokens for OpenRouter-style upstreams.
    bool maxCompletionTokens = true;
};

// The chat completions request (without "model", which the gateway's relay sets): the system
// prompt, the user prompt, temperature 0 and the answer asked as `ask` says.
QJsonObject chatRequest(const QJsonValue &state, const QList<Question> &questions, const Ask &ask);

// --- reading the answer ------------------------------------------------------------------

// One generated token of choices[0].logprobs.content: its bytes (from "bytes" when that is a
// list of byte values, else the UTF-8 of "token"), its logprob when given (NaN otherwise) and
// its alternatives ("top_logprobs"; malformed alternatives are left out).
struct Token
{
    QByteArray bytes;
    double logprob = 0;
    QList<std::pair<QByteArray, double>> top;
};

// The tokens of a logprobs "content" array; empty when it is not an array or any entry lacks
// its token text (the answer's text could not be rebuilt from them).
QList<Token> tokens(const QJsonValue &content);

// The probabilities of `labels` read at the token that starts the value at bytes [begin, end)
// of the tokens' joined text: that token must cover the value (it may carry text before and
// after it, e.g. `":3`); it and its alternatives count when their text, without that same
// surrounding text and trimmed of spaces and quotes, is exactly a label; exp(logprob) summed
// per label (a text counted once), normalised over the labels found; labels not found get 0.
// nullopt when the token cannot be found, does not cover the value, or no label is found.
std::optional<QList<double>> distributionAt(const QList<Token> &tokens, qsizetype begin,
                                            qsizetype end, const QStringList &labels);

// The same at question `id`'s "answer" value, located in the JSON text the tokens make; the
// value there must be `answerLabel` (the answer as parsed), else nullopt.
std::optional<QList<double>> answerDistribution(const QList<Token> &tokens, const QString &id,
                                                const QString &answerLabel,
                                                const QStringList &labels);

// The probabilities the model wrote (an object of label -> number): each clamped to [0, 1]
// (not a number: 0), normalised; nullopt when not an object or they sum to 0.
std::optional<QList<double>> verbalized(const QJsonValue &probabilities, const QStringList &labels);

// A distribution (non-negative, not all 0) as multiples of 1/10000 that sum to exactly 10000:
// each share rounded down, the rest handed out by largest remainder (the first on a tie).
QList<qint64> roundDistribution(const QList<double> &p);

struct Result
{
    QJsonObject answers; // question id -> the contract's answer
    QString error;       // non-empty: what is wrong with the model's answer (nothing else set)
};

// The contract's answers from a chat completion as the gateway's relay hands it over: the JSON
// in choices[0].message's tool call "answer" (a messages upstream) or its content (a code fence
// around it is tolerated), each question's distribution from the log-probabilities of its
// answer's token when there are any, else from the probabilities the model wrote, else all on
// its answer; "probability_source" says which ("logprobs", "verbalized" or "answer"). Shapes:
//   noul    {type, probability (of true), probability_source};
//   choice  {type, choice (the most probable option, the model's answer on a tie),
//            probabilities {option id: p}, confidence (its p), probability_source};
//   score   {type, score (sum of level x p), probabilities [p per level], legend,
//            confidence (the largest p), probability_source}.
// Probabilities are multiples of 0.0001 and each distribution sums to exactly 1.
Result answers(const QList<Question> &questions, const QJsonObject &chatCompletion);

} // namespace ChatEvaluator
