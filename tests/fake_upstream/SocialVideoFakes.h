#pragma once

#include <optional>
#include <QJsonObject>
#include <QString>
#include <QUrlQuery>

// The fake's answers to the upstream video actions that GET /v1/social-media/video/extract
// calls (server/social/engine/VideoExtract.h): a `data` object shaped as the real upstream
// shapes it for that platform, derived deterministically from the ids in the query.
namespace SocialVideoFakes {

// The `data` of action (catalog path, "bilibili/web/fetch_one_video") for this query, or
// nullopt when the action is not one of the video actions (the fake answers it generically).
std::optional<QJsonObject> data(const QString &action, const QUrlQuery &query);

} // namespace SocialVideoFakes
