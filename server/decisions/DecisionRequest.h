#pragma once

#include "RequestError.h"

#include <optional>
#include <QJsonObject>
#include <QString>

// POST /v1/decisions as a client sends it, checked before any upstream call. Every
// failure names the JSON path of the bad value in RequestError::param, e.g.
// "questions.q1.criteria". Pure.
//   model      a string (the catalog decides whether it exists);
//   state      a string, an object or an array, not empty;
//   questions  a non-empty object of question id -> question, at most maxQuestions;
//   question   {type: noul|choice|score, instructions: non-empty string, criteria?}:
//     noul     criteria optional: an object with only "true" and "false", each a string;
//     choice   criteria required: an object of option id -> description (string or null),
//              at least 2 and at most maxOptions options;
//     score    criteria required: an ordered array of at least 2 and at most maxOptions
//              descriptions (strings).
// Ids (questions, options) are 1 to 128 characters without '.', which would make the paths of
// errors ambiguous. Other fields are passed to the upstream untouched.
struct DecisionBounds
{
    int maxQuestions = 64;
    int maxOptions = 32;
    int maxIdChars = 128;
    int maxInstructionsChars = 8'000;
    int maxDescriptionChars = 2'000;
};

struct DecisionRequest
{
    QString model;
    int questions = 0;
};

namespace DecisionRequests {

std::optional<DecisionRequest> validate(const QJsonObject &body, const DecisionBounds &bounds,
                                        RequestError *error);

} // namespace DecisionRequests
