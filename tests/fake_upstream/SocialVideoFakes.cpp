#include "SocialVideoFakes.h"

#include <QJsonArray>
#include <QRegularExpression>

// Shapes follow the upstream's answers for each action (the fields VideoExtract reads, plus a
// few it ignores so the reader is tested against realistic clutter). Every value derives from
// the query's ids, so a test can predict the normalized result exactly. An id that starts with
// "404" (Douyin, TikTok, X) gives an answer without a video: a filtered aweme, a text-only post.

namespace {

using O = QJsonObject;
using A = QJsonArray;

// FNV-1a: stable across runs and platforms (qHash is seeded per process).
quint64 fnv(const QString &s)
{
    quint64 h = 1469598103934665603ULL;
    for (const char c : s.toUtf8()) {
        h ^= quint8(c);
        h *= 1099511628211ULL;
    }
    return h;
}

// A digits-only id of `length` characters derived from `seed`, not starting with 0.
QString digits(const QString &seed, int length)
{
    QString out = QString::number(fnv(seed)).rightJustified(20, u'0');
    out = out.right(length - 1);
    return u'7' + out;
}

O urlList(const QStringList &urls, int width = 0, int height = 0, qint64 size = 0)
{
    O o{{"uri", urls.value(0).section(u'/', -1)}, {"url_list", A::fromStringList(urls)}};
    if (width > 0) {
        o.insert("width", width);
        o.insert("height", height);
    }
    if (size > 0)
        o.insert("data_size", size);
    return o;
}

// douyin/app/v3 and tiktok/app/v3 fetch_one_video: data.aweme_detail.
O aweme(const QString &platform, const QString &id)
{
    const bool tiktok = platform == u"tiktok";
    if (id.startsWith(u"404"))
        return O{{"aweme_detail", QJsonValue::Null},
                 {"filter_list", A{O{{"aweme_id", id}, {"filter_reason", "8"}}}},
                 {"status_code", 0}};
    const QString cdn = tiktok ? QStringLiteral("https://v16m.tiktokcdn.com/")
                               : QStringLiteral("https://v26-web.douyinvod.com/");
    const QString img = tiktok ? QStringLiteral("https://p16-sign-va.tiktokcdn.com/obj/")
                               : QStringLiteral("https://p3-sign.douyinpic.com/obj/");
    const QString v1080 = cdn + id + "/1080/video.mp4?mime_type=video_mp4";
    const QString v720 = cdn + id + "/720/video.mp4?mime_type=video_mp4";
    const QString v540 = cdn + id + "/540/video.mp4?mime_type=video_mp4";
    A bitRates{O{{"gear_name", "normal_1080_0"},
                 {"quality_type", 1},
                 {"bit_rate", 2156862},
                 {"is_h265", 0},
                 {"FPS", 30},
                 {"play_addr", urlList({v1080, v1080 + "&line=1"}, 1080, 1920, 4118321)}},
               O{{"gear_name", "normal_720_0"},
                 {"quality_type", 10},
                 {"bit_rate", 1325610},
                 {"is_h265", 0},
                 {"FPS", 30},
                 {"play_addr", urlList({v720}, 720, 1280, 2531043)}}};
    if (!tiktok) {
        // Douyin names the container; TikTok's entries leave it out.
        for (qsizetype i = 0; i < bitRates.size(); ++i) {
            O b = bitRates.at(i).toObject();
            b.insert("format", "mp4");
            bitRates.replace(i, b);
        }
    }
    O video{{"duration", 15300},
            {"width", 1080},
            {"height", 1920},
            {"ratio", "1080p"},
            {"cover", urlList({img + id + "-cover.jpeg", img + id + "-cover.webp"}, 720, 720)},
            {"origin_cover", urlList({img + id + "-origin.jpeg"}, 720, 720)},
            {"bit_rate", bitRates},
            // Douyin's default play address is its best gear; TikTok's is a separate,
            // smaller rendition.
            {"play_addr",
             tiktok ? urlList({v540}, 576, 1024, 1520980) : urlList({v1080}, 1080, 1920, 4118321)},
            {"download_addr", urlList({cdn + id + "/watermarked.mp4"}, 720, 1280)}};
    O author{
        {"uid", "10" + id.right(8)},
        {"sec_uid", "MS4wLjABAAAA" + id.right(6)},
        {"nickname",
         (tiktok ? QStringLiteral("TikTok author ") : QStringLiteral("抖音作者 ")) + id.right(4)}};
    if (tiktok)
        author.insert("unique_id", "creator" + id.right(4));
    O music{{"id", digits("music" + id, 19)},
            {"title", "original sound"},
            {"duration", 15},
            {"play_url",
             urlList({(tiktok ? QStringLiteral("https://sf16-ies-music.tiktokcdn.com/obj/")
                              : QStringLiteral("https://sf3-cdn-tos.douyinstatic.com/obj/")) +
                      id + ".mp3"})}};
    return O{
        {"aweme_detail",
         O{{"aweme_id", id},
           {"desc", (tiktok ? QStringLiteral("TikTok video ") : QStringLiteral("抖音视频 ")) + id},
           {"create_time", 1700000000},
           {"duration", 15300},
           {"author", author},
           {"video", video},
           {"music", music},
           {"statistics", O{{"digg_count", 1200}, {"comment_count", 34}}}}},
        {"status_code", 0}};
}

// The aweme id a share link stands for.
QString shareAwemeId(const QString &shareUrl)
{
    return digits(shareUrl, 19);
}

// Bilibili relays its own envelope: {code, message, ttl, data}.
O bilibiliEnvelope(const O &data)
{
    return O{{"code", 0}, {"message", "0"}, {"ttl", 1}, {"data", data}};
}

QString bilibiliCid(const QString &bvid, int part)
{
    return digits(bvid + QString::number(part), 9);
}

O bilibiliView(const QString &bvid)
{
    const O dim1080{{"width", 1920}, {"height", 1080}, {"rotate", 0}};
    return bilibiliEnvelope(
        O{{"bvid", bvid},
          {"aid", digits("aid" + bvid, 12).toLongLong()},
          {"cid", bilibiliCid(bvid, 1).toLongLong()},
          {"title", "哔哩哔哩视频 " + bvid},
          {"pic", "http://i0.hdslb.com/bfs/archive/" + bvid + ".jpg"},
          {"duration", 365},
          {"owner", O{{"mid", 2000000 + int(fnv(bvid) % 1000)}, {"name", "UP主 " + bvid.right(4)}}},
          {"dimension", dim1080},
          {"pages", A{O{{"cid", bilibiliCid(bvid, 1).toLongLong()},
                        {"page", 1},
                        {"part", "P1"},
                        {"duration", 245},
                        {"dimension", dim1080}},
                      O{{"cid", bilibiliCid(bvid, 2).toLongLong()},
                        {"page", 2},
                        {"part", "P2"},
                        {"duration", 120},
                        {"dimension", O{{"width", 1280}, {"height", 720}, {"rotate", 0}}}}}},
          {"stat", O{{"view", 12345}}}});
}

O bilibiliPlay(const QString &bvid, const QString &cid)
{
    const QString base = "https://upos-sz-mirrorcos.bilivideo.com/upgcxcode/" + cid + "/" + cid;
    auto track = [&](int id, const char *suffix, const char *mime, const char *codecs, int w, int h,
                     int bandwidth) {
        const QString url = base + suffix + "?bvid=" + bvid;
        O o{{"id", id},
            {"baseUrl", url},
            {"base_url", url},
            {"backupUrl", A{url + "&backup=1"}},
            {"bandwidth", bandwidth},
            {"mimeType", mime},
            {"mime_type", mime},
            {"codecs", codecs}};
        if (w > 0) {
            o.insert("width", w);
            o.insert("height", h);
            o.insert("frameRate", "30.000");
        }
        return o;
    };
    return bilibiliEnvelope(O{
        {"quality", 80},
        {"format", "flv"},
        {"timelength", 245000},
        {"accept_format", "flv,flv720,flv480,mp4"},
        {"accept_description", A{"1080P 高清", "720P 高清", "480P 清晰", "360P 流畅"}},
        {"accept_quality", A{80, 64, 32, 16}},
        {"dash",
         O{{"duration", 245},
           {"minBufferTime", 1.5},
           {"video", A{track(32, "-1-100023.m4s", "video/mp4", "avc1.64001F", 852, 480, 400000),
                       track(80, "-1-100050.m4s", "video/mp4", "avc1.640032", 1920, 1080, 2000000),
                       track(64, "-1-100048.m4s", "video/mp4", "avc1.640028", 1280, 720, 1100000)}},
           {"audio", A{track(30280, "-1-30280.m4s", "audio/mp4", "mp4a.40.2", 0, 0, 319173),
                       track(30216, "-1-30216.m4s", "audio/mp4", "mp4a.40.2", 0, 0, 67000)}}}},
        {"support_formats",
         A{O{{"quality", 80}, {"format", "flv"}, {"new_description", "1080P 高清"}}}}});
}

// youtube/web/get_video_info: metadata with the simplified videos.items / audios.items.
O youtube(const QString &id)
{
    const QString gv = "https://rr1---sn-ab5l6nrz.googlevideo.com/videoplayback?id=" + id;
    return O{
        {"errorId", "Success"},
        {"type", "video"},
        {"id", id},
        {"title", "YouTube video " + id},
        {"description", "A test video."},
        {"channel",
         O{{"type", "channel"}, {"id", "UC" + id + "channel1"}, {"name", "Channel " + id.left(3)}}},
        {"lengthSeconds", 212},
        {"viewCount", 1000},
        {"thumbnails", A{O{{"url", "https://i.ytimg.com/vi/" + id + "/default.jpg"},
                           {"width", 120},
                           {"height", 90}},
                         O{{"url", "https://i.ytimg.com/vi/" + id + "/maxresdefault.jpg"},
                           {"width", 1280},
                           {"height", 720}},
                         O{{"url", "https://i.ytimg.com/vi/" + id + "/hqdefault.jpg"},
                           {"width", 480},
                           {"height", 360}}}},
        {"videos", O{{"errorId", "Success"},
                     {"expiration", 1900000000},
                     {"items", A{O{{"url", gv + "&itag=18"},
                                   {"lengthMs", 212000},
                                   {"mimeType", "video/mp4; codecs=\"avc1.42001E, mp4a.40.2\""},
                                   {"extension", "mp4"},
                                   {"size", 11264571},
                                   {"sizeText", "10.7 MB"},
                                   {"hasAudio", true},
                                   {"quality", "360p"},
                                   {"width", 640},
                                   {"height", 360}},
                                 O{{"url", gv + "&itag=137"},
                                   {"lengthMs", 212000},
                                   {"mimeType", "video/mp4; codecs=\"avc1.640028\""},
                                   {"extension", "mp4"},
                                   {"size", 53110234},
                                   {"sizeText", "50.6 MB"},
                                   {"hasAudio", false},
                                   {"quality", "1080p"},
                                   {"width", 1920},
                                   {"height", 1080}},
                                 O{{"url", gv + "&itag=247"},
                                   {"lengthMs", 212000},
                                   {"mimeType", "video/webm; codecs=\"vp9\""},
                                   {"extension", "webm"},
                                   {"size", 21345678},
                                   {"sizeText", "20.4 MB"},
                                   {"hasAudio", false},
                                   {"quality", "720p"},
                                   {"width", 1280},
                                   {"height", 720}}}}}},
        {"audios", O{{"errorId", "Success"},
                     {"items", A{O{{"url", gv + "&itag=140"},
                                   {"lengthMs", 212000},
                                   {"mimeType", "audio/mp4; codecs=\"mp4a.40.2\""},
                                   {"extension", "m4a"},
                                   {"size", 3431234},
                                   {"sizeText", "3.3 MB"}},
                                 O{{"url", gv + "&itag=251"},
                                   {"lengthMs", 212000},
                                   {"mimeType", "audio/webm; codecs=\"opus\""},
                                   {"size", 3301999}}}}}}};
}

// twitter/web/fetch_tweet_detail: the tweet with media.video[].variants.
O tweet(const QString &id)
{
    O t{{"id", id},
        {"text", "A post with a video " + id},
        {"created_at", "Wed Jun 21 04:10:37 +0000 2023"},
        {"likes", 18776},
        {"lang", "en"},
        {"author", O{{"rest_id", "2337692" + id.right(3)},
                     {"name", "X Author"},
                     {"screen_name", "xauthor"},
                     {"image", "https://pbs.twimg.com/profile_images/1/a_normal.jpg"}}}};
    if (id.startsWith(u"404"))
        return t; // a text-only post
    const QString v = "https://video.twimg.com/amplify_video/" + id;
    t.insert("media",
             O{{"video", A{O{{"media_url_https",
                              "https://pbs.twimg.com/amplify_video_thumb/" + id + "/img/thumb.jpg"},
                             {"variants", A{O{{"content_type", "application/x-mpegURL"},
                                              {"url", v + "/pl/playlist.m3u8?tag=16"}},
                                            O{{"bitrate", 632000},
                                              {"content_type", "video/mp4"},
                                              {"url", v + "/vid/avc1/320x568/a.mp4?tag=16"}},
                                            O{{"bitrate", 2176000},
                                              {"content_type", "video/mp4"},
                                              {"url", v + "/vid/avc1/720x1280/c.mp4?tag=16"}},
                                            O{{"bitrate", 950000},
                                              {"content_type", "video/mp4"},
                                              {"url", v + "/vid/avc1/480x852/b.mp4?tag=16"}}}}}}}});
    return t;
}

// instagram/v2/fetch_post_info: the media item.
O instagram(const QString &codeOrUrl)
{
    // A URL's code, or the code itself.
    static const QRegularExpression re(QStringLiteral("/(?:p|reels?|tv)/([A-Za-z0-9_-]+)"));
    const QRegularExpressionMatch m = re.match(codeOrUrl);
    const QString code = m.hasMatch() ? m.captured(1) : codeOrUrl;
    const QString cdn = "https://scontent.cdninstagram.com/o1/v/t16/" + code;
    return O{{"id", digits(code, 19) + "_1234567"},
             {"code", code},
             {"media_type", 2},
             {"product_type", "clips"},
             {"caption", O{{"text", "Instagram reel " + code}}},
             {"user", O{{"pk", "1234567"},
                        {"id", "1234567"},
                        {"username", "insta.author"},
                        {"full_name", "Insta Author"}}},
             {"video_duration", 12.345},
             {"original_width", 1080},
             {"original_height", 1920},
             {"is_video", true},
             {"image_versions",
              O{{"items", A{O{{"url", cdn + "_cover.jpg"}, {"width", 1080}, {"height", 1920}}}}}},
             {"thumbnail_url", cdn + "_thumb.jpg"},
             {"video_url", cdn + "_720.mp4"},
             {"video_versions",
              A{O{{"type", 101}, {"width", 720}, {"height", 1280}, {"url", cdn + "_720.mp4"}},
                O{{"type", 102}, {"width", 480}, {"height", 854}, {"url", cdn + "_480.mp4"}},
                O{{"type", 103}, {"width", 720}, {"height", 1280}, {"url", cdn + "_720.mp4"}}}}};
}

// kuaishou/web/fetch_one_video_by_url: the web detail under visionVideoDetail.
O kuaishou(const QString &url)
{
    static const QRegularExpression re(QStringLiteral("/(?:short-video|fw/photo)/([A-Za-z0-9]+)"));
    const QRegularExpressionMatch m = re.match(url);
    const QString id =
        m.hasMatch() ? m.captured(1) : "3x" + QString::number(fnv(url) % 1000000000000ULL, 36);
    const QString cdn = "https://v2.kwaicdn.com/upic/" + id;
    const A representations{O{{"id", 1},
                              {"url", cdn + "_sd.mp4"},
                              {"width", 540},
                              {"height", 960},
                              {"fileSize", 2123456},
                              {"qualityType", "540p"},
                              {"qualityLabel", "标清"}},
                            O{{"id", 2},
                              {"url", cdn + "_hd15.mp4"},
                              {"width", 720},
                              {"height", 1280},
                              {"fileSize", 5123456},
                              {"qualityType", "720p"},
                              {"qualityLabel", "高清"}}};
    const O manifest{{"version", "1.0.0"},
                     {"adaptationSet",
                      A{O{{"id", 1}, {"duration", 30200}, {"representation", representations}}}}};
    const O photo{{"id", id},
                  {"duration", 30200},
                  {"caption", "快手视频 " + id},
                  {"likeCount", "1.2万"},
                  {"coverUrl", "https://p2.a.yximgs.com/upic/" + id + ".jpg"},
                  {"photoUrl", cdn + "_b.mp4"},
                  {"manifest", manifest}};
    const O author{{"id", "3xauthor" + id.right(4)}, {"name", "快手作者"}};
    return O{
        {"visionVideoDetail", O{{"status", 1}, {"type", 1}, {"author", author}, {"photo", photo}}}};
}

// xiaohongshu/app_v2/get_video_note_detail: note_list[0] with video_info_v2.
O xiaohongshu(const QString &noteId)
{
    const QString cdn = "https://sns-video-qc.xhscdn.com/stream/110/" + noteId;
    auto stream = [&](const char *codec, const char *suffix, qint64 size) {
        return O{{"master_url", cdn + suffix},
                 {"backup_urls", A{cdn + suffix + "?backup=1"}},
                 {"width", 1080},
                 {"height", 1440},
                 {"size", size},
                 {"duration", 37100},
                 {"format", "mp4"},
                 {"video_codec", codec},
                 {"quality_type", "HD"}};
    };
    const O streams{{"h264", A{stream("h264", "_258.mp4", 9123456)}},
                    {"h265", A{stream("h265", "_259.mp4", 6123456)}},
                    {"av1", A{}}};
    const O media{
        {"video_id", digits(noteId, 18)}, {"video", O{{"duration", 37}}}, {"stream", streams}};
    const A images{O{{"url", "https://sns-img-qc.xhscdn.com/" + noteId + "_cover.jpg"},
                     {"width", 1080},
                     {"height", 1440}}};
    const O note{{"id", noteId},
                 {"type", "video"},
                 {"title", "小红书视频 " + noteId.left(6)},
                 {"desc", "描述"},
                 {"user", O{{"userid", "5c31698d0000000007018a31"}, {"nickname", "薯队长"}}},
                 {"images_list", images},
                 {"video_info_v2", O{{"media", media}}}};
    return O{{"note_list", A{note}}};
}

// weibo/app/fetch_video_detail: items[0].data with page_info.media_info.
O weibo(const QString &mid)
{
    const QString idstr = mid.startsWith(u"1034:") ? digits(mid, 16) : mid;
    const QString cdn = "https://f.video.weibocdn.com/o0/" + idstr;
    auto playback = [&](const char *label, const char *quality, const char *suffix, int w, int h,
                        qint64 size, int bitrate) {
        return O{{"meta", O{{"label", label}, {"quality_label", quality}}},
                 {"play_info", O{{"url", cdn + suffix},
                                 {"mime", "video/mp4"},
                                 {"width", w},
                                 {"height", h},
                                 {"size", size},
                                 {"bitrate", bitrate}}}};
    };
    const O media{
        {"name", "微博视频 " + idstr},
        {"duration", 65.2},
        {"stream_url", cdn + "_ld.mp4"},
        {"mp4_sd_url", cdn + "_ld.mp4"},
        {"mp4_hd_url", cdn + "_hd.mp4"},
        {"mp4_720p_mp4", cdn + "_720.mp4"},
        {"playback_list", A{playback("mp4_720p", "720p", "_720.mp4", 720, 1280, 8123456, 1200),
                            playback("mp4_hd", "480p", "_hd.mp4", 480, 854, 4123456, 600)}}};
    const O page{{"type", "video"},
                 {"object_id", "1034:" + idstr},
                 {"page_title", "微博视频 " + idstr},
                 {"page_pic", O{{"url", "https://wx1.sinaimg.cn/orj480/" + idstr + ".jpg"}}},
                 {"media_info", media}};
    const O post{
        {"idstr", idstr},
        {"mid", idstr},
        {"text", "微博视频 <a href=\"/n/x\">@x</a>"},
        {"user", O{{"id", 1642909335}, {"idstr", "1642909335"}, {"screen_name", "微博作者"}}},
        {"page_info", page}};
    return O{{"items", A{O{{"category", "video"}, {"data", post}}}}};
}

} // namespace

std::optional<QJsonObject> SocialVideoFakes::data(const QString &action, const QUrlQuery &query)
{
    auto q = [&](const char *name) {
        return query.queryItemValue(QLatin1StringView(name), QUrl::FullyDecoded);
    };
    if (action == u"douyin/app/v3/fetch_one_video" && !q("aweme_id").isEmpty())
        return aweme(QStringLiteral("douyin"), q("aweme_id"));
    if (action == u"douyin/app/v3/fetch_one_video_by_share_url" && !q("share_url").isEmpty())
        return aweme(QStringLiteral("douyin"), shareAwemeId(q("share_url")));
    if (action == u"tiktok/app/v3/fetch_one_video" && !q("aweme_id").isEmpty())
        return aweme(QStringLiteral("tiktok"), q("aweme_id"));
    if (action == u"tiktok/app/v3/fetch_one_video_by_share_url" && !q("share_url").isEmpty())
        return aweme(QStringLiteral("tiktok"), shareAwemeId(q("share_url")));
    if (action == u"bilibili/web/fetch_one_video" && !q("bv_id").isEmpty())
        return bilibiliView(q("bv_id"));
    if (action == u"bilibili/web/fetch_video_playurl" && !q("bv_id").isEmpty() &&
        !q("cid").isEmpty())
        return bilibiliPlay(q("bv_id"), q("cid"));
    if (action == u"youtube/web/get_video_info" && !q("video_id").isEmpty())
        return youtube(q("video_id"));
    if (action == u"twitter/web/fetch_tweet_detail" && !q("tweet_id").isEmpty())
        return tweet(q("tweet_id"));
    if (action == u"instagram/v2/fetch_post_info" && !q("code_or_url").isEmpty())
        return instagram(q("code_or_url"));
    if (action == u"kuaishou/web/fetch_one_video_by_url" && !q("url").isEmpty())
        return kuaishou(q("url"));
    if (action == u"xiaohongshu/app_v2/get_video_note_detail" && !q("note_id").isEmpty())
        return xiaohongshu(q("note_id"));
    if (action == u"weibo/app/fetch_video_detail" && !q("mid").isEmpty())
        return weibo(q("mid"));
    return std::nullopt;
}
