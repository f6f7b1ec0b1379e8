#pragma once

#include <optional>
#include <QJsonObject>
#include <QString>

// The contract's parameter rules for the three endpoints (spec 4.1 to 4.3). Each failure names
// the parameter; fields the gateway does not check pass through to the upstream unchanged.
namespace RequestValidation {

struct Problem
{
    QString param;
    QString message;
};

// Chat's `n`, the answers asked for, is at most this (as the providers cap it).
constexpr int kMaxChoices = 128;

std::optional<Problem> chat(const QJsonObject &body);
std::optional<Problem> responses(const QJsonObject &body);
std::optional<Problem> messages(const QJsonObject &body);

} // namespace RequestValidation
