#pragma once

#include "RequestError.h"

#include <optional>
#include <QJsonObject>
#include <QString>

// The parameter rules of the three endpoints (server/llm/README.md). Each failure names
// the parameter (a 400 whose param is the parameter); fields the gateway does not check pass
// through to the upstream unchanged.
namespace RequestValidation {

// Chat's `n`, the answers asked for, is at most this (as the providers cap it).
constexpr int kMaxChoices = 128;

std::optional<RequestError> chat(const QJsonObject &body);
std::optional<RequestError> responses(const QJsonObject &body);
std::optional<RequestError> messages(const QJsonObject &body);

} // namespace RequestValidation
