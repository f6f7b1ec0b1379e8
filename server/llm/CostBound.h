#pragma once

#include "ModelCatalog.h"
#include "Relay.h"

#include <optional>
#include <QJsonObject>
#include <QString>

// The most a text-generation request can cost, decided from its body before the upstream call:
// what the request holds (RequestContext::reserve) until it settles at its actual cost.
//
//   prompt tokens  at most one per byte of the body sent upstream (a token of a byte-level
//                  tokenizer is at least one byte of UTF-8 text, and the JSON around the text,
//                  its keys, quotes and escapes, only adds bytes), plus kTemplateTokens for what
//                  the provider adds around the prompt (chat template, tool-use instructions).
//                  A prompt the upstream extends beyond its bytes (opensPrompt()) is bounded by
//                  the model's context_window instead, or by its bytes when that is more;
//   input price    the highest of the input, cache-read and cache-write prices, since each
//                  prompt token is billed at one of them;
//   output tokens  the client's bound: max_completion_tokens, else max_tokens, times n (chat);
//                  max_output_tokens (responses); max_tokens (messages). Without one, what the
//                  relay sends upstream in its place (at most the model's max_output_tokens),
//                  else the model's max_output_tokens. A bound above the model's
//                  max_output_tokens is refused (400 naming the field), as the providers
//                  refuse it;
//   cost           ceil((prompt x input price + output x output price) / 1M) in 128 bits; a
//                  bound that does not fit in 64 bits is refused (402), never wrapped.
namespace CostBound {

// Tokens a provider may add around a prompt that its bytes do not show.
constexpr qint64 kTemplateTokens = 1024;

struct Hold
{
    qint64 promptTokens = 0;
    qint64 outputTokens = 0;
    qint64 units = 0;        // credit units
    bool openPrompt = false; // the prompt was bounded by the context window
    // A refusal (400 or 402) with its message and the parameter it names; 0 when held.
    int status = 0;
    QString message;
    QString param;
    bool ok() const { return status == 0; }
};

// `body`: the client's validated body in its protocol; `upstreamBytes`: the size of the body
// sent upstream; `relayDefault`: the output bound the relay sends when the client gives none
// (Relay::defaultMaxTokens(), 0: none is sent).
Hold text(Protocol client, const QJsonObject &body, qint64 upstreamBytes, const ModelEntry &model,
          qint64 relayDefault = 0);

// Whether the upstream may read more prompt tokens than the body's bytes show: any part of the
// prompt that is not text (images, files, documents, audio, references to stored items: their
// tokens follow from pixels, pages and stored state, not from bytes, or are not in the body),
// a stored conversation or prompt (previous_response_id, conversation, prompt), and tools that
// run at the provider (any tool type other than function and custom; web_search_options,
// mcp_servers, container).
bool opensPrompt(Protocol client, const QJsonObject &body);

// ceil((promptTokens x promptPrice + outputTokens x outputPrice) / 1M) credit units, exact;
// nullopt when a count or price is negative or the result does not fit in 64 bits.
std::optional<qint64> cost(qint64 promptTokens, qint64 promptPrice, qint64 outputTokens,
                           qint64 outputPrice);

} // namespace CostBound
