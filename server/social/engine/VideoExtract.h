#pragma once

#include <optional>
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

// GET /v1/social-media/video/extract: from any supported social-media URL to one standardized
// video result, through the upstream's actions. Pure functions; the family makes the calls.
// server/social/README.md, "Video extract", documents the hosts, the actions and the shape.
namespace VideoExtract {

// What a URL names.
struct Target
{
    QString platform; // youtube, tiktok, douyin, twitter, bilibili, instagram, kuaishou,
                      // xiaohongshu, weibo (the upstream's platform names)
    QString videoId;  // when the URL carries it (empty for share links the upstream resolves)
    QString url;      // the URL as given, trimmed (what share-URL actions receive)
    // A short link that Switchyard must resolve itself (its redirect's Location is detected
    // again); the family fetches it through the outbound URL guard.
    bool needsResolve = false;
};

// One upstream action to call: its catalog path (upstream platform names) and query.
struct Call
{
    QString action;                           // "bilibili/web/fetch_one_video"
    QList<QPair<QString, QString>> query;     // in order
};

// The hosts detect() accepts, for the 400 that lists them ("youtube.com, youtu.be, ...").
QStringList supportedHosts();

// Detects the platform and id of `url` (http or https; www., m. and mobile. prefixes; short
// links: youtu.be, vm.tiktok.com, vt.tiktok.com, v.douyin.com, t.co, b23.tv, xhslink.com,
// v.kuaishou.com, instagr.am, ...). extraShortHosts: hosts the operator adds whose links are
// always resolved (needsResolve). nullopt with *error ("unsupported URL: ...") otherwise.
std::optional<Target> detect(const QString &url, QString *error,
                             const QStringList &extraShortHosts = {});

// The next upstream call for a target, given the `data` objects of the calls made so far (in
// order), or nullopt when the answers so far are enough (some platforms need two calls, e.g.
// Bilibili's play URLs need the cid from the video's details).
std::optional<Call> nextCall(const Target &target, const QList<QJsonObject> &answers);

// The standardized result from the answers' `data` objects: {platform, videoId, title, author,
// authorId, coverUrl, duration (seconds, number), videos: [{url, quality, format, width,
// height, size}], audios: [{url, format, bitrate, size}]}; fields the upstream did not give are
// null (arrays empty). nullopt with *error when the answers hold no video at all.
std::optional<QJsonObject> normalize(const Target &target, const QList<QJsonObject> &answers,
                                     QString *error);

} // namespace VideoExtract
