#pragma once

#include <optional>
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>

// GET /v1/social-media/video/extract: from any supported social-media URL to one standardized
// video result, through the upstream's actions. Pure functions, no I/O; the family makes the
// calls (and resolves short links through the outbound URL guard). Untrusted input throughout:
// detect() takes any string (bounded work, never crashes: fuzz_video_extract), normalize() any
// JSON. server/social/engine/README.md, "Video extract", documents the hosts, the actions, the
// field mapping per platform and the shape.
namespace VideoExtract {

// What a URL names.
struct Target
{
    QString platform; // youtube, tiktok, douyin, twitter, bilibili, instagram, kuaishou,
                      // xiaohongshu, weibo (the upstream's platform names); for a link that
                      // needsResolve, the platform it usually leads to (empty for an operator's
                      // extra short host): only the resolved URL's detect() is authoritative
    QString videoId;  // when the URL carries it, validated by the platform's id pattern (empty
                      // for share links the upstream resolves); Weibo base62 mids are converted
                      // to the numeric mid
    QString url;      // the URL as given, trimmed (what share-URL actions receive)
    // A short link that Switchyard must resolve itself (its redirect's Location is detected
    // again); the family fetches it through the outbound URL guard. nextCall() gives nothing
    // for such a target.
    bool needsResolve = false;
    int part = 1; // Bilibili: the 1-based part (?p=N) whose cid the play-URL call uses
};

// One upstream action to call: its catalog path (upstream platform names) and query.
struct Call
{
    QString action;                       // "bilibili/web/fetch_one_video"
    QList<QPair<QString, QString>> query; // in order
};

// The hosts detect() accepts, for the 400 that lists them ("youtube.com, youtu.be, ...").
QStringList supportedHosts();

// Detects the platform and id of `url` (http or https; www., m. and mobile. prefixes; short
// links: youtu.be, vm.tiktok.com, vt.tiktok.com, v.douyin.com, t.co, b23.tv, xhslink.com,
// v.kuaishou.com, instagr.am, ...). Hosts match exactly, after lower-casing, IDNA (UTS #46) and
// dropping one trailing dot; URLs with user info, a port other than the scheme's default,
// whitespace, control characters or backslashes, or longer than 4096 characters are refused.
// extraShortHosts: hosts the operator adds whose links are always resolved (needsResolve);
// an entry "host:port" matches URLs with that port (the only way a non-default port passes).
// nullopt with *error ("unsupported URL: ...", never echoing more than a short host name)
// otherwise.
std::optional<Target> detect(const QString &url, QString *error,
                             const QStringList &extraShortHosts = {});

// The next upstream call for a target, given the `data` objects of the calls made so far (in
// order), or nullopt when the answers so far are enough (some platforms need two calls, e.g.
// Bilibili's play URLs need the cid from the video's details; with no cid there is no second
// call and normalize() reports no video). nullopt for a target that needsResolve.
std::optional<Call> nextCall(const Target &target, const QList<QJsonObject> &answers);

// The standardized result from the answers' `data` objects: {platform, videoId, title, author,
// authorId, coverUrl, duration (seconds, number), videos: [{url, quality, format, width,
// height, size, hasAudio}], audios: [{url, format, bitrate, size}]}; fields the upstream did not
// give are null (arrays empty). videos are best first (most pixels; unknown sizes last) without
// duplicate URLs; only http(s) URLs are kept. nullopt with *error when the answers hold no
// video at all (an image post, a deleted or private video, an unknown shape).
std::optional<QJsonObject> normalize(const Target &target, const QList<QJsonObject> &answers,
                                     QString *error);

} // namespace VideoExtract
