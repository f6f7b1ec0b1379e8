#pragma once

#include "DecisionsConfig.h"
#include "RequestContext.h"

#include <QJsonObject>
#include <QString>

class Gateway;

// A decisions request (already validated, its model not a decisions model) evaluated over a
// chat model of the text gateway (server/decisions/README.md, "Chat evaluator"):
//   the model   resolved by the gateway for chat.completions (catalog ids, auto,
//               gateway/{provider}/{model}) and allowed by config.models, else 400
//               model_not_found (`notDecisions` says which decisions models exist);
//   the call    one non-streaming chat call through the gateway's own GatewayCall (its keys
//               in rotation, auth, relays, error mapping) with ChatEvaluator's request, its
//               output bound the smaller of config.maxOutputTokens and the model's
//               max_output_tokens, within config.timeoutMs; first a hold of max(
//               minimumReservation, the call's worst case by CostBound::text) (402 before any
//               upstream call);
//   the answer  ChatEvaluator::answers() in {id, object, model, answers, usage}, billed as
//               the gateway bills that chat call; an answer that is not the expected JSON is
//               502 upstream_invalid_answer and not billed.
void evaluateOverChat(const ChatEvaluatorConfig &config, qint64 minimumReservation,
                      Gateway &gateway, const ContextPtr &ctx, const QJsonObject &body,
                      const QString &notDecisions);
