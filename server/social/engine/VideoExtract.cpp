#include "VideoExtract.h"

#include <algorithm>
#include <cmath>
#include <QJsonArray>
#include <QUrl>
#include <QUrlQuery>

namespace VideoExtract {

namespace {

constexpr qsizetype MaxUrlLength = 4096;
constexpr qsizetype MaxSegments = 16;  // path segments looked at
constexpr qsizetype MaxListItems = 64; // entries read from any upstream list

// How a host's links are handled.
enum class Kind
{
    Site,    // the platform's own pages: the id is in the URL
    Share,   // a share link the upstream resolves itself (by-share-URL or by-URL action)
    Resolve, // a short link only Switchyard can resolve (needsResolve)
};

struct Host
{
    const char *name;
    const char *platform;
    Kind kind;
};

// Exact host names (lower case, ASCII/ACE, no trailing dot).
constexpr Host Hosts[] = {
    {"youtube.com", "youtube", Kind::Site},
    {"www.youtube.com", "youtube", Kind::Site},
    {"m.youtube.com", "youtube", Kind::Site},
    {"music.youtube.com", "youtube", Kind::Site},
    {"youtube-nocookie.com", "youtube", Kind::Site},
    {"www.youtube-nocookie.com", "youtube", Kind::Site},
    {"youtu.be", "youtube", Kind::Site},
    {"tiktok.com", "tiktok", Kind::Site},
    {"www.tiktok.com", "tiktok", Kind::Site},
    {"m.tiktok.com", "tiktok", Kind::Site},
    {"vm.tiktok.com", "tiktok", Kind::Share},
    {"vt.tiktok.com", "tiktok", Kind::Share},
    {"douyin.com", "douyin", Kind::Site},
    {"www.douyin.com", "douyin", Kind::Site},
    {"m.douyin.com", "douyin", Kind::Site},
    {"iesdouyin.com", "douyin", Kind::Site},
    {"www.iesdouyin.com", "douyin", Kind::Site},
    {"v.douyin.com", "douyin", Kind::Share},
    {"x.com", "twitter", Kind::Site},
    {"www.x.com", "twitter", Kind::Site},
    {"mobile.x.com", "twitter", Kind::Site},
    {"twitter.com", "twitter", Kind::Site},
    {"www.twitter.com", "twitter", Kind::Site},
    {"mobile.twitter.com", "twitter", Kind::Site},
    {"t.co", "twitter", Kind::Resolve},
    {"bilibili.com", "bilibili", Kind::Site},
    {"www.bilibili.com", "bilibili", Kind::Site},
    {"m.bilibili.com", "bilibili", Kind::Site},
    {"b23.tv", "bilibili", Kind::Resolve},
    {"bili2233.cn", "bilibili", Kind::Resolve},
    {"instagram.com", "instagram", Kind::Site},
    {"www.instagram.com", "instagram", Kind::Site},
    {"m.instagram.com", "instagram", Kind::Site},
    {"instagr.am", "instagram", Kind::Site},
    {"www.instagr.am", "instagram", Kind::Site},
    {"kuaishou.com", "kuaishou", Kind::Site},
    {"www.kuaishou.com", "kuaishou", Kind::Site},
    {"m.kuaishou.com", "kuaishou", Kind::Site},
    {"v.kuaishou.com", "kuaishou", Kind::Share},
    {"gifshow.com", "kuaishou", Kind::Site},
    {"www.gifshow.com", "kuaishou", Kind::Site},
    {"m.gifshow.com", "kuaishou", Kind::Site},
    {"v.m.chenzhongtech.com", "kuaishou", Kind::Site},
    {"xiaohongshu.com", "xiaohongshu", Kind::Site},
    {"www.xiaohongshu.com", "xiaohongshu", Kind::Site},
    {"m.xiaohongshu.com", "xiaohongshu", Kind::Site},
    {"xhslink.com", "xiaohongshu", Kind::Resolve},
    {"www.xhslink.com", "xiaohongshu", Kind::Resolve},
    {"weibo.com", "weibo", Kind::Site},
    {"www.weibo.com", "weibo", Kind::Site},
    {"m.weibo.com", "weibo", Kind::Site},
    {"m.weibo.cn", "weibo", Kind::Site},
    {"video.weibo.com", "weibo", Kind::Site},
    {"t.cn", "weibo", Kind::Resolve},
};

const Host *findHost(QStringView host)
{
    for (const Host &h : Hosts)
        if (host == QLatin1StringView(h.name))
            return &h;
    return nullptr;
}

bool isAsciiDigit(QChar c)
{
    return c >= u'0' && c <= u'9';
}
bool isAsciiAlnum(QChar c)
{
    return isAsciiDigit(c) || (c >= u'a' && c <= u'z') || (c >= u'A' && c <= u'Z');
}

// s has between min and max characters, each a digit, or alphanumeric, or alphanumeric/-/_.
enum class Chars
{
    Digits,
    Alnum,
    Token, // [A-Za-z0-9_-]
    Hex,
};

bool idOk(QStringView s, qsizetype min, qsizetype max, Chars chars)
{
    if (s.size() < min || s.size() > max)
        return false;
    for (QChar c : s) {
        bool ok = false;
        switch (chars) {
        case Chars::Digits:
            ok = isAsciiDigit(c);
            break;
        case Chars::Alnum:
            ok = isAsciiAlnum(c);
            break;
        case Chars::Token:
            ok = isAsciiAlnum(c) || c == u'-' || c == u'_';
            break;
        case Chars::Hex:
            ok = isAsciiDigit(c) || (c >= u'a' && c <= u'f') || (c >= u'A' && c <= u'F');
            break;
        }
        if (!ok)
            return false;
    }
    return true;
}

// A Weibo base62 mid ("Ox4qF0XJd") to the numeric mid: from the right, groups of four base62
// digits, each written as seven decimal digits (the leftmost group unpadded).
QString weiboMidFromBase62(QStringView code)
{
    static const QLatin1StringView alphabet(
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
    QString out;
    for (qsizetype end = code.size(); end > 0; end -= 4) {
        const qsizetype start = std::max<qsizetype>(0, end - 4);
        qint64 value = 0;
        for (QChar c : code.mid(start, end - start))
            value = value * 62 + alphabet.indexOf(c);
        QString group = QString::number(value);
        if (start > 0)
            group = group.rightJustified(7, u'0');
        out.prepend(group);
    }
    // Leading zeros from an all-zero leftmost group are not part of a mid.
    while (out.size() > 1 && out.startsWith(u'0'))
        out.remove(0, 1);
    return out;
}

struct Parsed
{
    QStringList segments; // decoded, non-empty path segments (at most MaxSegments)
    QUrlQuery query;
    QString host;
};

QString lastSegmentCode(const QStringList &segments, qsizetype index)
{
    return index < segments.size() ? segments.at(index) : QString();
}

using Result = std::optional<Target>;

Result siteTarget(const QString &platform, const QString &id, const QString &url)
{
    Target t;
    t.platform = platform;
    t.videoId = id;
    t.url = url;
    return t;
}

Result detectYoutube(const Parsed &p, const QString &url, QString *why)
{
    const QStringList &s = p.segments;
    QString id;
    if (p.host == u"youtu.be") {
        id = lastSegmentCode(s, 0);
    } else if (!s.isEmpty() && s.at(0) == u"watch") {
        id = p.query.queryItemValue(QStringLiteral("v"), QUrl::FullyDecoded);
    } else if (s.size() >= 2 && (s.at(0) == u"shorts" || s.at(0) == u"embed" ||
                                 s.at(0) == u"live" || s.at(0) == u"v" || s.at(0) == u"e")) {
        id = s.at(1);
    }
    if (!idOk(id, 11, 11, Chars::Token)) {
        *why = QStringLiteral("no YouTube video id in the URL");
        return std::nullopt;
    }
    return siteTarget(QStringLiteral("youtube"), id, url);
}

// TikTok and Douyin share the aweme id (digits).
bool awemeId(QStringView id)
{
    return idOk(id, 5, 25, Chars::Digits);
}

Result shareTarget(const QString &platform, const Parsed &p, qsizetype codeIndex,
                   const QString &url, QString *why)
{
    if (!idOk(lastSegmentCode(p.segments, codeIndex), 1, 64, Chars::Token)) {
        *why = QStringLiteral("no share code in the link");
        return std::nullopt;
    }
    return siteTarget(platform, QString(), url);
}

Result detectTiktok(const Parsed &p, const QString &url, QString *why)
{
    const QStringList &s = p.segments;
    if (p.host == u"vm.tiktok.com" || p.host == u"vt.tiktok.com")
        return shareTarget(QStringLiteral("tiktok"), p, 0, url, why);
    if (!s.isEmpty() && s.at(0) == u"t")
        return shareTarget(QStringLiteral("tiktok"), p, 1, url, why);
    QString id;
    if (s.size() >= 3 && s.at(0).startsWith(u'@') && s.at(1) == u"video")
        id = s.at(2);
    else if (s.size() >= 2 && (s.at(0) == u"v" || s.at(0) == u"video"))
        id = s.at(1).endsWith(u".html") ? s.at(1).chopped(5) : s.at(1);
    else if (s.size() >= 3 && (s.at(0) == u"embed" || s.at(0) == u"player") &&
             (s.at(1) == u"v2" || s.at(1) == u"v1"))
        id = s.at(2);
    else if (s.size() >= 2 && s.at(0) == u"embed")
        id = s.at(1);
    if (!awemeId(id)) {
        *why = QStringLiteral("no TikTok video id in the URL");
        return std::nullopt;
    }
    return siteTarget(QStringLiteral("tiktok"), id, url);
}

Result detectDouyin(const Parsed &p, const QString &url, QString *why)
{
    const QStringList &s = p.segments;
    if (p.host == u"v.douyin.com")
        return shareTarget(QStringLiteral("douyin"), p, 0, url, why);
    QString id;
    if (s.size() >= 2 && s.at(0) == u"video")
        id = s.at(1);
    else if (s.size() >= 3 && s.at(0) == u"share" && s.at(1) == u"video")
        id = s.at(2);
    else if (p.query.hasQueryItem(QStringLiteral("modal_id")))
        id = p.query.queryItemValue(QStringLiteral("modal_id"), QUrl::FullyDecoded);
    else if (p.query.hasQueryItem(QStringLiteral("vid")))
        id = p.query.queryItemValue(QStringLiteral("vid"), QUrl::FullyDecoded);
    if (!awemeId(id)) {
        *why = QStringLiteral("no Douyin video id in the URL");
        return std::nullopt;
    }
    return siteTarget(QStringLiteral("douyin"), id, url);
}

Result detectTwitter(const Parsed &p, const QString &url, QString *why)
{
    const QStringList &s = p.segments;
    // /<user>/status/<id>, /i/status/<id>, /i/web/status/<id>, then anything (/video/1).
    QString id;
    for (qsizetype i = 1; i < std::min<qsizetype>(s.size() - 1, 3); ++i) {
        if (s.at(i) == u"status" || s.at(i) == u"statuses") {
            id = s.at(i + 1);
            break;
        }
    }
    if (!idOk(id, 1, 25, Chars::Digits)) {
        *why = QStringLiteral("no post id in the X/Twitter URL");
        return std::nullopt;
    }
    return siteTarget(QStringLiteral("twitter"), id, url);
}

Result detectBilibili(const Parsed &p, const QString &url, QString *why)
{
    const QStringList &s = p.segments;
    QString id;
    if (s.size() >= 2 && s.at(0) == u"video")
        id = s.at(1);
    else if (p.query.hasQueryItem(QStringLiteral("bvid")))
        id = p.query.queryItemValue(QStringLiteral("bvid"), QUrl::FullyDecoded);
    if (id.size() == 12 && id.startsWith(u"bv", Qt::CaseInsensitive))
        id.replace(0, 2, QStringLiteral("BV"));
    if (!id.startsWith(u"BV") || !idOk(QStringView(id).mid(2), 10, 10, Chars::Alnum)) {
        *why = id.startsWith(u"av", Qt::CaseInsensitive)
                   ? QStringLiteral("Bilibili av links are not supported; use the BV link")
                   : QStringLiteral("no Bilibili BV id in the URL");
        return std::nullopt;
    }
    Result t = siteTarget(QStringLiteral("bilibili"), id, url);
    bool ok = false;
    const int part = p.query.queryItemValue(QStringLiteral("p")).toInt(&ok);
    if (ok && part >= 1 && part <= 1000)
        t->part = part;
    return t;
}

Result detectInstagram(const Parsed &p, const QString &url, QString *why)
{
    const QStringList &s = p.segments;
    // Instagram's /share/... links redirect to the post: Switchyard resolves them.
    if (!s.isEmpty() && s.at(0) == u"share") {
        if (!idOk(s.last(), 1, 64, Chars::Token)) {
            *why = QStringLiteral("no share code in the Instagram link");
            return std::nullopt;
        }
        Result t = siteTarget(QStringLiteral("instagram"), QString(), url);
        t->needsResolve = true;
        return t;
    }
    QString code;
    for (qsizetype i = 0; i < std::min<qsizetype>(s.size() - 1, 2); ++i) {
        const QString &k = s.at(i);
        if (k == u"p" || k == u"reel" || k == u"reels" || k == u"tv") {
            code = s.at(i + 1);
            break;
        }
    }
    if (!idOk(code, 5, 64, Chars::Token)) {
        *why = QStringLiteral("no Instagram post code in the URL");
        return std::nullopt;
    }
    return siteTarget(QStringLiteral("instagram"), code, url);
}

Result detectKuaishou(const Parsed &p, const QString &url, QString *why)
{
    const QStringList &s = p.segments;
    if (p.host == u"v.kuaishou.com")
        return shareTarget(QStringLiteral("kuaishou"), p, 0, url, why);
    if (!s.isEmpty() && s.at(0) == u"f")
        return shareTarget(QStringLiteral("kuaishou"), p, 1, url, why);
    QString id;
    if (s.size() >= 2 && s.at(0) == u"short-video")
        id = s.at(1);
    else if (s.size() >= 3 && s.at(0) == u"fw" && s.at(1) == u"photo")
        id = s.at(2);
    if (!idOk(id, 5, 40, Chars::Alnum)) {
        *why = QStringLiteral("no Kuaishou video id in the URL");
        return std::nullopt;
    }
    return siteTarget(QStringLiteral("kuaishou"), id, url);
}

Result detectXiaohongshu(const Parsed &p, const QString &url, QString *why)
{
    const QStringList &s = p.segments;
    QString id;
    if (s.size() >= 2 && s.at(0) == u"explore")
        id = s.at(1);
    else if (s.size() >= 3 && s.at(0) == u"discovery" && s.at(1) == u"item")
        id = s.at(2);
    else if (s.size() >= 4 && s.at(0) == u"user" && s.at(1) == u"profile")
        id = s.at(3);
    if (!idOk(id, 24, 24, Chars::Hex)) {
        *why = QStringLiteral("no Xiaohongshu note id in the URL");
        return std::nullopt;
    }
    return siteTarget(QStringLiteral("xiaohongshu"), id.toLower(), url);
}

// "1034:<digits>", a numeric mid, or a base62 mid (converted).
QString weiboMid(const QString &id)
{
    if (id.startsWith(u"1034:") && idOk(QStringView(id).mid(5), 5, 25, Chars::Digits))
        return id;
    if (idOk(id, 5, 25, Chars::Digits))
        return id;
    if (idOk(id, 5, 16, Chars::Alnum))
        return weiboMidFromBase62(id);
    return QString();
}

Result detectWeibo(const Parsed &p, const QString &url, QString *why)
{
    const QStringList &s = p.segments;
    QString id;
    if (s.size() >= 3 && s.at(0) == u"tv" && s.at(1) == u"show")
        id = s.at(2);
    else if (p.host == u"video.weibo.com" && !s.isEmpty() && s.at(0) == u"show")
        id = p.query.queryItemValue(QStringLiteral("fid"), QUrl::FullyDecoded);
    else if (s.size() >= 2 && (s.at(0) == u"detail" || s.at(0) == u"status"))
        id = s.at(1);
    else if (s.size() >= 2 && idOk(s.at(0), 1, 20, Chars::Digits))
        id = s.at(1); // /<uid>/<mid>
    const QString mid = weiboMid(id);
    if (mid.isEmpty()) {
        *why = QStringLiteral("no Weibo post id in the URL");
        return std::nullopt;
    }
    return siteTarget(QStringLiteral("weibo"), mid, url);
}

// ---- JSON reading --------------------------------------------------------------------------

// The value at a dot-separated path of keys and array indexes ("video.play_addr.url_list.0").
QJsonValue at(const QJsonValue &root, QLatin1StringView path)
{
    QJsonValue v = root;
    qsizetype start = 0;
    while (start <= path.size()) {
        qsizetype end = path.indexOf(u'.', start);
        if (end < 0)
            end = path.size();
        const QLatin1StringView key = path.sliced(start, end - start);
        bool isIndex = false;
        const int index = QString(key).toInt(&isIndex);
        if (v.isArray() && isIndex)
            v = v.toArray().at(index);
        else if (v.isObject())
            v = v.toObject().value(key);
        else
            return QJsonValue(QJsonValue::Undefined);
        start = end + 1;
    }
    return v;
}

QJsonValue at(const QJsonValue &root, const char *path)
{
    return at(root, QLatin1StringView(path));
}

// A non-empty string (numbers become their integer text: ids are sometimes numbers), or null.
QJsonValue text(const QJsonValue &v)
{
    if (v.isString() && !v.toString().trimmed().isEmpty())
        return v.toString().trimmed();
    if (v.isDouble()) {
        // Only whole numbers a qint64 holds: converting any other double is undefined.
        const double d = v.toDouble();
        if (std::abs(d) < 9.0e18 && d == std::trunc(d))
            return QString::number(qint64(d));
    }
    return QJsonValue::Null;
}

// The first of these that is a non-empty text, or null.
QJsonValue firstText(std::initializer_list<QJsonValue> values)
{
    for (const QJsonValue &v : values) {
        const QJsonValue t = text(v);
        if (!t.isNull())
            return t;
    }
    return QJsonValue::Null;
}

// A positive number (or a numeric string), or nullopt.
std::optional<double> number(const QJsonValue &v)
{
    double d = 0;
    bool ok = false;
    if (v.isDouble()) {
        d = v.toDouble();
        ok = true;
    } else if (v.isString()) {
        d = v.toString().toDouble(&ok);
    }
    if (!ok || !(d > 0) || d > 1e15)
        return std::nullopt;
    return d;
}

// A positive integer as a JSON number, or null.
QJsonValue count(const QJsonValue &v)
{
    const std::optional<double> d = number(v);
    return d ? QJsonValue(qint64(*d)) : QJsonValue(QJsonValue::Null);
}

// Seconds, from a value in seconds or milliseconds; null when absent.
QJsonValue seconds(const QJsonValue &v, double divisor = 1)
{
    const std::optional<double> d = number(v);
    if (!d)
        return QJsonValue::Null;
    return std::round(*d / divisor * 1000) / 1000;
}

// An http(s) URL ("//host/..." gets https:), or an empty string.
QString httpUrl(const QJsonValue &v)
{
    QString s = v.toString().trimmed();
    if (s.startsWith(u"//"))
        s.prepend(u"https:");
    if (s.startsWith(u"https://", Qt::CaseInsensitive) ||
        s.startsWith(u"http://", Qt::CaseInsensitive))
        return s;
    return QString();
}

QJsonValue urlOrNull(const QJsonValue &v)
{
    const QString u = httpUrl(v);
    return u.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(u);
}

// The first http(s) URL of a url_list-style array.
QString firstUrl(const QJsonValue &list)
{
    const QJsonArray a = list.toArray();
    for (qsizetype i = 0; i < std::min<qsizetype>(a.size(), MaxListItems); ++i) {
        const QString u = httpUrl(a.at(i));
        if (!u.isEmpty())
            return u;
    }
    return QString();
}

QJsonValue firstUrlOrNull(const QJsonValue &list)
{
    const QString u = firstUrl(list);
    return u.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(u);
}

// "video/mp4; codecs=..." -> mp4, "audio/mp4" -> m4a, ...; null when unknown.
QJsonValue formatFromMime(const QJsonValue &mime)
{
    const QString m = mime.toString().section(u';', 0, 0).trimmed().toLower();
    if (m == u"video/mp4")
        return QStringLiteral("mp4");
    if (m == u"audio/mp4" || m == u"audio/m4a" || m == u"audio/x-m4a")
        return QStringLiteral("m4a");
    if (m == u"video/webm" || m == u"audio/webm")
        return QStringLiteral("webm");
    if (m == u"audio/mpeg" || m == u"audio/mp3")
        return QStringLiteral("mp3");
    if (m == u"video/x-flv")
        return QStringLiteral("flv");
    if (m == u"application/x-mpegurl" || m == u"application/vnd.apple.mpegurl")
        return QStringLiteral("m3u8");
    return QJsonValue::Null;
}

// The extension of a URL's last path segment, when it is a known media one.
QJsonValue formatFromUrl(const QString &url)
{
    const QString path = QUrl(url).path().toLower();
    static const char *const known[] = {"mp4", "m4a", "mp3", "webm", "flv", "m3u8", "m4s", "aac"};
    for (const char *ext : known)
        if (path.endsWith(u'.' + QLatin1StringView(ext)))
            return QLatin1StringView(ext).toString();
    return QJsonValue::Null;
}

// "<shorter side>p" ("1080p" for 1080x1920), or null.
QJsonValue qualityFromSize(const QJsonValue &w, const QJsonValue &h)
{
    if (!w.isDouble() || !h.isDouble())
        return QJsonValue::Null;
    return QStringLiteral("%1p").arg(std::min(w.toInteger(), h.toInteger()));
}

struct Collector
{
    QJsonArray videos;
    QJsonArray audios;
    QStringList seen;

    // url must already be http(s) (empty: skipped).
    void video(const QString &url, QJsonValue quality, QJsonValue format, QJsonValue width,
               QJsonValue height, QJsonValue size, QJsonValue hasAudio)
    {
        if (url.isEmpty() || seen.contains(url) || videos.size() >= MaxListItems)
            return;
        seen.append(url);
        if (format.isNull())
            format = formatFromUrl(url);
        if (quality.isNull())
            quality = qualityFromSize(width, height);
        videos.append(QJsonObject{{QStringLiteral("url"), url},
                                  {QStringLiteral("quality"), quality},
                                  {QStringLiteral("format"), format},
                                  {QStringLiteral("width"), width},
                                  {QStringLiteral("height"), height},
                                  {QStringLiteral("size"), size},
                                  {QStringLiteral("hasAudio"), hasAudio}});
    }

    void audio(const QString &url, QJsonValue format, QJsonValue bitrate, QJsonValue size)
    {
        if (url.isEmpty() || seen.contains(url) || audios.size() >= MaxListItems)
            return;
        seen.append(url);
        if (format.isNull())
            format = formatFromUrl(url);
        audios.append(QJsonObject{{QStringLiteral("url"), url},
                                  {QStringLiteral("format"), format},
                                  {QStringLiteral("bitrate"), bitrate},
                                  {QStringLiteral("size"), size}});
    }

    // Best first: most pixels; entries without a size keep their order after the others.
    QJsonArray sortedVideos() const
    {
        QList<QJsonObject> list;
        for (const QJsonValue &v : videos)
            list.append(v.toObject());
        auto pixels = [](const QJsonObject &o) {
            const QJsonValue w = o.value(u"width"), h = o.value(u"height");
            // In double: sizes go up to 1e15 each, and their product would overflow a qint64.
            return w.isDouble() && h.isDouble() ? w.toDouble() * h.toDouble() : -1.0;
        };
        std::stable_sort(list.begin(), list.end(), [&](const QJsonObject &a, const QJsonObject &b) {
            return pixels(a) > pixels(b);
        });
        QJsonArray out;
        for (const QJsonObject &o : list)
            out.append(o);
        return out;
    }
};

struct Meta
{
    QJsonValue videoId = QJsonValue::Null;
    QJsonValue title = QJsonValue::Null;
    QJsonValue author = QJsonValue::Null;
    QJsonValue authorId = QJsonValue::Null;
    QJsonValue coverUrl = QJsonValue::Null;
    QJsonValue duration = QJsonValue::Null;
};

QJsonArray list(const QJsonValue &v)
{
    QJsonArray a = v.toArray();
    while (a.size() > MaxListItems)
        a.removeLast();
    return a;
}

// Douyin and TikTok app v3: data.aweme_detail (or aweme_details[0]).
void readAweme(const QJsonObject &data, Meta &m, Collector &c)
{
    QJsonValue aweme = data.value(u"aweme_detail");
    if (!aweme.isObject())
        aweme = at(data, "aweme_details.0");
    if (!aweme.isObject())
        return;
    const QJsonValue video = at(aweme, "video");
    m.videoId = text(at(aweme, "aweme_id"));
    m.title = text(at(aweme, "desc"));
    m.author = text(at(aweme, "author.nickname"));
    m.authorId = firstText({at(aweme, "author.uid"), at(aweme, "author.sec_uid")});
    m.coverUrl = firstUrlOrNull(at(video, "cover.url_list"));
    if (m.coverUrl.isNull())
        m.coverUrl = firstUrlOrNull(at(video, "origin_cover.url_list"));
    m.duration = seconds(at(video, "duration"), 1000);
    if (m.duration.isNull())
        m.duration = seconds(at(aweme, "duration"), 1000);
    // The app serves MP4 (H.264 or H.265) with the sound track in.
    const QJsonValue mp4 = QStringLiteral("mp4");
    for (const QJsonValue &b : list(at(video, "bit_rate"))) {
        const QJsonValue addr = at(b, "play_addr");
        QJsonValue format = text(at(b, "format"));
        c.video(firstUrl(at(addr, "url_list")), QJsonValue::Null, format.isNull() ? mp4 : format,
                count(at(addr, "width")), count(at(addr, "height")), count(at(addr, "data_size")),
                true);
    }
    const QJsonValue addr = at(video, "play_addr");
    c.video(firstUrl(at(addr, "url_list")), QJsonValue::Null, mp4, count(at(addr, "width")),
            count(at(addr, "height")), count(at(addr, "data_size")), true);
    c.audio(firstUrl(at(aweme, "music.play_url.url_list")), QJsonValue::Null, QJsonValue::Null,
            QJsonValue::Null);
}

// Some actions relay the platform's own envelope ({code, message, data: {...}}): its data.
QJsonObject inner(const QJsonObject &data)
{
    const QJsonValue d = data.value(u"data");
    return d.isObject() ? d.toObject() : data;
}

void readBilibili(const Target &t, const QList<QJsonObject> &answers, Meta &m, Collector &c)
{
    const QJsonObject view = answers.isEmpty() ? QJsonObject() : inner(answers.at(0));
    m.videoId = text(view.value(u"bvid"));
    m.title = text(view.value(u"title"));
    m.author = text(at(view, "owner.name"));
    m.authorId = text(at(view, "owner.mid"));
    m.coverUrl = urlOrNull(view.value(u"pic"));
    // The part's own duration and size when it is a multi-part video.
    const QJsonValue page = list(view.value(u"pages")).at(t.part - 1);
    m.duration = seconds(at(page, "duration"));
    if (m.duration.isNull())
        m.duration = seconds(view.value(u"duration"));
    QJsonValue dimension = at(page, "dimension");
    if (!dimension.isObject())
        dimension = view.value(u"dimension");
    if (answers.size() < 2)
        return;
    const QJsonObject play = inner(answers.at(1));
    if (m.duration.isNull())
        m.duration = seconds(play.value(u"timelength"), 1000);

    // Quality ids to their descriptions ("1080P 高清").
    QHash<qint64, QString> names;
    const QJsonArray ids = list(play.value(u"accept_quality"));
    const QJsonArray descs = list(play.value(u"accept_description"));
    for (qsizetype i = 0; i < std::min(ids.size(), descs.size()); ++i)
        names.insert(ids.at(i).toInteger(), descs.at(i).toString());
    for (const QJsonValue &f : list(play.value(u"support_formats")))
        if (!names.contains(f[u"quality"].toInteger()))
            names.insert(f[u"quality"].toInteger(), f[u"new_description"].toString());
    auto qualityName = [&](const QJsonValue &id) -> QJsonValue {
        const QString n = names.value(id.toInteger());
        return n.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(n);
    };

    // DASH: separate video and audio tracks.
    for (const QJsonValue &v : list(at(play, "dash.video"))) {
        const QJsonValue u = v[u"baseUrl"].isString() ? v[u"baseUrl"] : v[u"base_url"];
        const QJsonValue mime = v[u"mimeType"].isString() ? v[u"mimeType"] : v[u"mime_type"];
        c.video(httpUrl(u), qualityName(v[u"id"]), formatFromMime(mime), count(v[u"width"]),
                count(v[u"height"]), QJsonValue::Null, false);
    }
    for (const QJsonValue &a : list(at(play, "dash.audio"))) {
        const QJsonValue u = a[u"baseUrl"].isString() ? a[u"baseUrl"] : a[u"base_url"];
        const QJsonValue mime = a[u"mimeType"].isString() ? a[u"mimeType"] : a[u"mime_type"];
        c.audio(httpUrl(u), formatFromMime(mime), count(a[u"bandwidth"]), QJsonValue::Null);
    }
    // durl: whole files (FLV or MP4) with the sound in.
    const QString container = play.value(u"format").toString();
    const QJsonValue format = container.startsWith(u"mp4")   ? QJsonValue(QStringLiteral("mp4"))
                              : container.startsWith(u"flv") ? QJsonValue(QStringLiteral("flv"))
                                                             : QJsonValue(QJsonValue::Null);
    const QJsonArray durl = list(play.value(u"durl"));
    for (const QJsonValue &d : durl) {
        c.video(httpUrl(d[u"url"]), qualityName(play.value(u"quality")), format,
                count(at(dimension, "width")), count(at(dimension, "height")), count(d[u"size"]),
                true);
    }
}

// youtube/web/get_video_info: the metadata with simplified videos.items / audios.items.
void readYoutube(const QJsonObject &data, Meta &m, Collector &c)
{
    m.videoId = text(data.value(u"id"));
    m.title = text(data.value(u"title"));
    m.author = text(at(data, "channel.name"));
    m.authorId = text(at(data, "channel.id"));
    m.duration = seconds(data.value(u"lengthSeconds"));
    qint64 best = -1;
    for (const QJsonValue &th : list(data.value(u"thumbnails"))) {
        const qint64 w = th[u"width"].toInteger();
        const QString u = httpUrl(th[u"url"]);
        if (!u.isEmpty() && w > best) {
            best = w;
            m.coverUrl = u;
        }
    }
    for (const QJsonValue &v : list(at(data, "videos.items"))) {
        QJsonValue format = text(v[u"extension"]);
        if (format.isNull())
            format = formatFromMime(v[u"mimeType"]);
        const QJsonValue hasAudio = v[u"hasAudio"].isBool() ? v[u"hasAudio"] : QJsonValue();
        c.video(httpUrl(v[u"url"]), text(v[u"quality"]), format, count(v[u"width"]),
                count(v[u"height"]), count(v[u"size"]), hasAudio);
    }
    for (const QJsonValue &a : list(at(data, "audios.items"))) {
        QJsonValue format = text(a[u"extension"]);
        if (format.isNull())
            format = formatFromMime(a[u"mimeType"]);
        c.audio(httpUrl(a[u"url"]), format, count(a[u"bitrate"]), count(a[u"size"]));
    }
}

// twitter/web/fetch_tweet_detail: the tweet with media.video[].variants; the first video.
void readTwitter(const QJsonObject &data, Meta &m, Collector &c)
{
    m.videoId = firstText({data.value(u"id"), data.value(u"tweet_id")});
    m.title = firstText({data.value(u"text"), data.value(u"display_text")});
    m.author = firstText({at(data, "author.name"), at(data, "author.screen_name")});
    m.authorId = text(at(data, "author.rest_id"));
    const QJsonValue video = at(data, "media.video.0");
    if (!video.isObject())
        return;
    m.coverUrl = urlOrNull(video[u"media_url_https"]);
    m.duration = seconds(video[u"duration_millis"], 1000);
    if (m.duration.isNull())
        m.duration = seconds(at(video, "video_info.duration_millis"), 1000);
    QJsonArray variants = list(video[u"variants"]);
    if (variants.isEmpty())
        variants = list(at(video, "video_info.variants"));
    for (const QJsonValue &v : variants) {
        const QString url = httpUrl(v[u"url"]);
        // The MP4 variants carry their size in the path: /vid/avc1/720x1280/...
        QJsonValue width = QJsonValue::Null, height = QJsonValue::Null;
        const QStringList parts = QUrl(url).path().split(u'/', Qt::SkipEmptyParts);
        for (const QString &part : parts) {
            const qsizetype x = part.indexOf(u'x');
            bool okW = false, okH = false;
            const int w = part.left(x).toInt(&okW), h = part.mid(x + 1).toInt(&okH);
            if (x > 0 && okW && okH && w > 0 && h > 0) {
                width = w;
                height = h;
                break;
            }
        }
        c.video(url, QJsonValue::Null, formatFromMime(v[u"content_type"]), width, height,
                QJsonValue::Null, true);
    }
}

// instagram/v2/fetch_post_info: the media item (video_versions); in a carousel, the first
// video.
void readInstagram(const QJsonObject &data, Meta &m, Collector &c)
{
    m.videoId = firstText({data.value(u"code"), data.value(u"shortcode")});
    m.title =
        firstText({at(data, "caption.text"), at(data, "edge_media_to_caption.edges.0.node.text")});
    const QJsonValue user =
        data.value(u"user").isObject() ? data.value(u"user") : data.value(u"owner");
    m.author = firstText({at(user, "full_name"), at(user, "username")});
    m.authorId = firstText({at(user, "pk"), at(user, "id")});
    QJsonValue media = data;
    if (!data.value(u"video_versions").isArray() && !data.value(u"video_url").isString()) {
        for (const QJsonValue &item : list(data.value(u"carousel_media"))) {
            if (item[u"video_versions"].isArray()) {
                media = item;
                break;
            }
        }
    }
    m.coverUrl = firstText({at(media, "image_versions.items.0.url"),
                            at(media, "image_versions2.candidates.0.url"),
                            at(media, "thumbnail_url"), at(media, "display_url")});
    m.coverUrl = urlOrNull(m.coverUrl);
    m.duration = seconds(at(media, "video_duration"));
    const QJsonValue mp4 = QStringLiteral("mp4");
    for (const QJsonValue &v : list(at(media, "video_versions")))
        c.video(httpUrl(v[u"url"]), QJsonValue::Null, mp4, count(v[u"width"]), count(v[u"height"]),
                QJsonValue::Null, true);
    c.video(httpUrl(at(media, "video_url")), QJsonValue::Null, mp4,
            count(at(media, "original_width")), count(at(media, "original_height")),
            QJsonValue::Null, true);
}

// kuaishou/web/fetch_one_video_by_url: the web detail ({author, photo}), possibly under
// visionVideoDetail.
void readKuaishou(const QJsonObject &data, Meta &m, Collector &c)
{
    QJsonValue detail = data;
    if (data.value(u"visionVideoDetail").isObject())
        detail = data.value(u"visionVideoDetail");
    else if (at(data, "data.visionVideoDetail").isObject())
        detail = at(data, "data.visionVideoDetail");
    const QJsonValue photo = detail[u"photo"];
    m.videoId = text(photo[u"id"]);
    m.title = text(photo[u"caption"]);
    m.author = text(at(detail, "author.name"));
    m.authorId = text(at(detail, "author.id"));
    m.coverUrl = urlOrNull(photo[u"coverUrl"]);
    m.duration = seconds(photo[u"duration"], 1000);
    for (const QJsonValue &set : list(at(photo, "manifest.adaptationSet")))
        for (const QJsonValue &r : list(set[u"representation"]))
            c.video(httpUrl(r[u"url"]), text(r[u"qualityType"]), QStringLiteral("mp4"),
                    count(r[u"width"]), count(r[u"height"]), count(r[u"fileSize"]), true);
    c.video(httpUrl(photo[u"photoUrl"]), QJsonValue::Null, QStringLiteral("mp4"), QJsonValue::Null,
            QJsonValue::Null, QJsonValue::Null, true);
}

// xiaohongshu/app_v2/get_video_note_detail: the note (note_list[0], or a web note_card).
void readXiaohongshu(const QJsonObject &data, Meta &m, Collector &c)
{
    QJsonValue note;
    for (const char *path :
         {"note_list.0", "data.0.note_list.0", "items.0.note_card", "note_card", "note"}) {
        note = at(data, path);
        if (note.isObject())
            break;
    }
    if (!note.isObject())
        note = data;
    m.videoId = firstText({note[u"id"], note[u"note_id"]});
    m.title = firstText({note[u"title"], note[u"desc"]});
    m.author = text(at(note, "user.nickname"));
    m.authorId =
        firstText({at(note, "user.userid"), at(note, "user.user_id"), at(note, "user.id")});
    m.coverUrl = urlOrNull(firstText(
        {at(note, "images_list.0.url"), at(note, "image_list.0.url_default"),
         at(note, "image_list.0.info_list.0.url"), at(note, "video_info_v2.image.thumbnail")}));
    QJsonValue media = at(note, "video_info_v2.media");
    if (!media.isObject())
        media = at(note, "video.media");
    m.duration = seconds(at(media, "video.duration"));
    if (m.duration.isNull())
        m.duration = seconds(at(note, "video.duration"));
    for (const char *codec : {"h264", "h265", "h266", "av1"}) {
        const QJsonArray streams = list(media[u"stream"][QLatin1StringView(codec)]);
        for (const QJsonValue &s : streams) {
            QString url = httpUrl(s[u"master_url"]);
            if (url.isEmpty())
                url = firstUrl(s[u"backup_urls"]);
            if (m.duration.isNull())
                m.duration = seconds(s[u"duration"], 1000);
            c.video(url, QJsonValue::Null, text(s[u"format"]), count(s[u"width"]),
                    count(s[u"height"]), count(s[u"size"]), true);
        }
    }
    c.video(httpUrl(at(note, "video.url")), QJsonValue::Null, QStringLiteral("mp4"),
            count(at(note, "video.width")), count(at(note, "video.height")), QJsonValue::Null,
            true);
}

// weibo/app/fetch_video_detail: items[0].data, the post with page_info.media_info.
void readWeibo(const QJsonObject &data, Meta &m, Collector &c)
{
    QJsonValue post = at(data, "items.0.data");
    if (!post.isObject())
        post = data;
    const QJsonValue page = post[u"page_info"];
    const QJsonValue media = page[u"media_info"];
    m.videoId = firstText({post[u"idstr"], post[u"mid"], post[u"id"]});
    m.title = firstText(
        {page[u"title"], page[u"page_title"], media[u"name"], post[u"text_raw"], post[u"text"]});
    m.author = text(at(post, "user.screen_name"));
    m.authorId = firstText({at(post, "user.idstr"), at(post, "user.id")});
    m.coverUrl = urlOrNull(firstText({at(page, "page_pic.url"), media[u"big_pic_info"]}));
    m.duration = seconds(media[u"duration"]);
    for (const QJsonValue &p : list(media[u"playback_list"])) {
        const QJsonValue info = p[u"play_info"];
        QJsonValue format = formatFromMime(info[u"mime"]);
        c.video(httpUrl(info[u"url"]), firstText({at(p, "meta.quality_label"), info[u"label"]}),
                format, count(info[u"width"]), count(info[u"height"]), count(info[u"size"]), true);
    }
    const struct
    {
        const char *key;
        const char *quality;
    } fallbacks[] = {{"mp4_720p_mp4", "720p"},
                     {"mp4_hd_url", "hd"},
                     {"mp4_sd_url", "sd"},
                     {"stream_url_hd", "hd"},
                     {"stream_url", "sd"}};
    for (const auto &f : fallbacks)
        c.video(httpUrl(media[QLatin1StringView(f.key)]), QLatin1StringView(f.quality).toString(),
                QJsonValue::Null, QJsonValue::Null, QJsonValue::Null, QJsonValue::Null, true);
}

} // namespace

QStringList supportedHosts()
{
    QStringList hosts;
    for (const Host &h : Hosts)
        hosts.append(QLatin1StringView(h.name).toString());
    return hosts;
}

std::optional<Target> detect(const QString &url, QString *error, const QStringList &extraShortHosts)
{
    QString why;
    auto fail = [&](const QString &reason) -> std::optional<Target> {
        if (error)
            *error = QStringLiteral("unsupported URL: ") + reason;
        return std::nullopt;
    };
    const QString trimmed = url.trimmed();
    if (trimmed.isEmpty())
        return fail(QStringLiteral("empty"));
    if (trimmed.size() > MaxUrlLength)
        return fail(QStringLiteral("longer than %1 characters").arg(MaxUrlLength));
    for (QChar c : trimmed)
        if (c.unicode() <= 0x20 || c.unicode() == 0x7f || c == u'\\' || c.isSpace() ||
            c.category() == QChar::Other_Control || c.category() == QChar::Other_Format)
            return fail(QStringLiteral("whitespace, control characters or backslashes"));
    const qsizetype colon = trimmed.indexOf(u':');
    const QString scheme = colon > 0 ? trimmed.left(colon).toLower() : QString();
    if (scheme != u"http" && scheme != u"https")
        return fail(QStringLiteral("only http and https URLs are supported"));
    if (!trimmed.mid(colon + 1).startsWith(u"//"))
        return fail(QStringLiteral("malformed"));

    const QUrl u(trimmed, QUrl::StrictMode);
    if (!u.isValid())
        return fail(QStringLiteral("malformed"));
    const QString authority = trimmed.section(u'/', 2, 2).section(u'?', 0, 0).section(u'#', 0, 0);
    if (!u.userInfo().isEmpty() || authority.contains(u'@'))
        return fail(QStringLiteral("user info is not accepted"));
    const int defaultPort = scheme == u"https" ? 443 : 80;
    const bool otherPort = u.port() != -1 && u.port() != defaultPort;

    Parsed p;
    p.host = u.host(QUrl::EncodeUnicode).toLower();
    if (p.host.endsWith(u'.'))
        p.host.chop(1);
    if (p.host.isEmpty())
        return fail(QStringLiteral("no host"));
    const QString shownHost =
        p.host.size() <= 64 ? p.host : p.host.left(64) + QStringLiteral("...");

    // An operator's host matches with the scheme's port, or with the port it names.
    const QString bracketed = p.host.contains(u':') ? u'[' + p.host + u']' : p.host;
    const QString hostPort = otherPort ? bracketed + u':' + QString::number(u.port()) : p.host;
    for (const QString &extra : extraShortHosts) {
        QString e = extra.trimmed().toLower();
        if (e.endsWith(u'.'))
            e.chop(1);
        if (!e.isEmpty() && e == hostPort) {
            Target t;
            t.url = trimmed;
            t.needsResolve = true;
            return t;
        }
    }
    if (otherPort)
        return fail(QStringLiteral("a port other than %1").arg(defaultPort));

    const Host *host = findHost(p.host);
    if (!host)
        return fail(shownHost + QStringLiteral(" is not a supported host"));
    const QString platform = QLatin1StringView(host->platform).toString();

    const QStringList all = u.path(QUrl::FullyDecoded).split(u'/', Qt::SkipEmptyParts);
    p.segments = all.mid(0, MaxSegments);
    p.query = QUrlQuery(u);

    if (host->kind == Kind::Resolve) {
        if (p.segments.isEmpty())
            return fail(QStringLiteral("no link code after ") + shownHost);
        Target t;
        t.platform = platform;
        t.url = trimmed;
        t.needsResolve = true;
        return t;
    }

    Result r;
    if (platform == u"youtube")
        r = detectYoutube(p, trimmed, &why);
    else if (platform == u"tiktok")
        r = detectTiktok(p, trimmed, &why);
    else if (platform == u"douyin")
        r = detectDouyin(p, trimmed, &why);
    else if (platform == u"twitter")
        r = detectTwitter(p, trimmed, &why);
    else if (platform == u"bilibili")
        r = detectBilibili(p, trimmed, &why);
    else if (platform == u"instagram")
        r = detectInstagram(p, trimmed, &why);
    else if (platform == u"kuaishou")
        r = detectKuaishou(p, trimmed, &why);
    else if (platform == u"xiaohongshu")
        r = detectXiaohongshu(p, trimmed, &why);
    else if (platform == u"weibo")
        r = detectWeibo(p, trimmed, &why);
    if (!r)
        return fail(why.isEmpty() ? QStringLiteral("no video in the URL") : why);
    return r;
}

std::optional<Call> nextCall(const Target &target, const QList<QJsonObject> &answers)
{
    if (target.needsResolve)
        return std::nullopt;
    const QString &p = target.platform;
    const bool first = answers.isEmpty();
    auto call = [](const char *action, QList<QPair<QString, QString>> query) {
        return Call{QLatin1StringView(action).toString(), std::move(query)};
    };
    auto one = [](const char *name, const QString &value) {
        return QList<QPair<QString, QString>>{qMakePair(QLatin1StringView(name).toString(), value)};
    };
    if (p == u"bilibili") {
        if (target.videoId.isEmpty())
            return std::nullopt;
        if (first)
            return call("bilibili/web/fetch_one_video", one("bv_id", target.videoId));
        if (answers.size() > 1)
            return std::nullopt;
        const QJsonObject view = inner(answers.at(0));
        QJsonValue cid = text(list(view.value(u"pages")).at(target.part - 1)[u"cid"]);
        if (cid.isNull())
            cid = text(view.value(u"cid"));
        if (cid.isNull() || !idOk(cid.toString(), 1, 20, Chars::Digits))
            return std::nullopt;
        QList<QPair<QString, QString>> query = one("bv_id", target.videoId);
        query.append(qMakePair(QStringLiteral("cid"), cid.toString()));
        return call("bilibili/web/fetch_video_playurl", std::move(query));
    }
    if (!first)
        return std::nullopt;
    const QString &id = target.videoId;
    if (p == u"youtube" && !id.isEmpty()) {
        QList<QPair<QString, QString>> query = one("video_id", id);
        // Only the media: subtitles and related videos cost time and bytes the result drops.
        query.append(qMakePair(QStringLiteral("subtitles"), QStringLiteral("false")));
        query.append(qMakePair(QStringLiteral("related"), QStringLiteral("false")));
        return call("youtube/web/get_video_info", std::move(query));
    }
    if (p == u"tiktok" || p == u"douyin") {
        const bool tiktok = p == u"tiktok";
        if (!id.isEmpty())
            return call(tiktok ? "tiktok/app/v3/fetch_one_video" : "douyin/app/v3/fetch_one_video",
                        one("aweme_id", id));
        return call(tiktok ? "tiktok/app/v3/fetch_one_video_by_share_url"
                           : "douyin/app/v3/fetch_one_video_by_share_url",
                    one("share_url", target.url));
    }
    if (p == u"twitter" && !id.isEmpty())
        return call("twitter/web/fetch_tweet_detail", one("tweet_id", id));
    if (p == u"instagram" && !id.isEmpty())
        return call("instagram/v2/fetch_post_info", one("code_or_url", id));
    if (p == u"kuaishou" && !target.url.isEmpty())
        return call("kuaishou/web/fetch_one_video_by_url", one("url", target.url));
    if (p == u"xiaohongshu" && !id.isEmpty())
        return call("xiaohongshu/app_v2/get_video_note_detail", one("note_id", id));
    if (p == u"weibo" && !id.isEmpty())
        return call("weibo/app/fetch_video_detail", one("mid", id));
    return std::nullopt;
}

std::optional<QJsonObject> normalize(const Target &target, const QList<QJsonObject> &answers,
                                     QString *error)
{
    if (target.needsResolve) {
        if (error)
            *error = QStringLiteral("the link must be resolved (and detected again) first");
        return std::nullopt;
    }
    Meta m;
    Collector c;
    const QString &p = target.platform;
    const QJsonObject first = answers.value(0);
    if (p == u"tiktok" || p == u"douyin")
        readAweme(first, m, c);
    else if (p == u"bilibili")
        readBilibili(target, answers, m, c);
    else if (p == u"youtube")
        readYoutube(first, m, c);
    else if (p == u"twitter")
        readTwitter(first, m, c);
    else if (p == u"instagram")
        readInstagram(first, m, c);
    else if (p == u"kuaishou")
        readKuaishou(first, m, c);
    else if (p == u"xiaohongshu")
        readXiaohongshu(first, m, c);
    else if (p == u"weibo")
        readWeibo(first, m, c);

    if (c.videos.isEmpty()) {
        if (error)
            *error = QStringLiteral("no video in the upstream's answer (an image post, or a "
                                    "private or deleted video?)");
        return std::nullopt;
    }
    if (m.videoId.isNull() && !target.videoId.isEmpty())
        m.videoId = target.videoId;
    return QJsonObject{
        {QStringLiteral("platform"), p},          {QStringLiteral("videoId"), m.videoId},
        {QStringLiteral("title"), m.title},       {QStringLiteral("author"), m.author},
        {QStringLiteral("authorId"), m.authorId}, {QStringLiteral("coverUrl"), m.coverUrl},
        {QStringLiteral("duration"), m.duration}, {QStringLiteral("videos"), c.sortedVideos()},
        {QStringLiteral("audios"), c.audios}};
}

} // namespace VideoExtract
