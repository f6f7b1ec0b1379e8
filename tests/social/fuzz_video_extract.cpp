// libFuzzer target for video-URL extraction: detect() on any bytes (as UTF-8 and as Latin-1),
// nextCall() on what it accepts, and normalize() on any JSON object for every platform. Built
// with clang outside the main build by tests/social/fuzz_video_extract.sh. Besides "no crash,
// no sanitizer report", it checks the properties the family relies on, and traps when one fails:
//  1. a refusal says "unsupported URL: ..." in a short message;
//  2. an accepted URL's host, as QUrl reads it, is exactly a supported host (or the operator's
//     extra short host, then needsResolve), and its scheme is http or https;
//  3. an accepted id has the platform's shape (no separators, no spaces);
//  4. an accepted URL that needs no resolving leads to an action of its own platform, with
//     every query value non-empty;
//  5. normalize() output, when there is one, has only http(s) URLs and at most 64 videos.

#include "FuzzRequire.h"
#include "VideoExtract.h"

#include <cstdio>
#include <QJsonArray>
#include <QJsonDocument>
#include <QUrl>

using namespace VideoExtract;

namespace {

const QStringList Extra{QStringLiteral("go.example.com")};

void checkDetect(const QString &url, const QByteArray &input)
{
    QString error;
    const std::optional<Target> t = detect(url, &error, Extra);
    if (!t) {
        require(error.startsWith(u"unsupported URL: ") && error.size() < 200, "refusal message",
                input);
        return;
    }
    const QUrl u(t->url);
    QString host = u.host(QUrl::EncodeUnicode).toLower();
    if (host.endsWith(u'.'))
        host.chop(1);
    require(u.scheme() == u"http" || u.scheme() == u"https", "scheme", input);
    if (t->platform.isEmpty())
        require(t->needsResolve && host == Extra.first(), "extra host", input);
    else
        require(supportedHosts().contains(host), "supported host", input);
    for (QChar c : t->videoId)
        require(c.isLetterOrNumber() || c == u'-' || c == u'_' || c == u':', "id shape", input);
    require(t->url == url.trimmed(), "url kept", input);

    const std::optional<Call> call = nextCall(*t, {});
    if (t->needsResolve) {
        require(!call, "no call before resolving", input);
        return;
    }
    require(call.has_value(), "a call", input);
    require(call->action.startsWith(t->platform + u'/'), "own platform's action", input);
    for (const auto &item : call->query)
        require(!item.first.isEmpty() && !item.second.isEmpty(), "query values", input);
}

bool httpOnly(const QJsonArray &list)
{
    for (const QJsonValue &v : list) {
        const QString u = v.toObject().value(u"url").toString();
        if (!u.startsWith(u"http://", Qt::CaseInsensitive) &&
            !u.startsWith(u"https://", Qt::CaseInsensitive))
            return false;
    }
    return true;
}

void checkNormalize(const QJsonObject &data, const QByteArray &input)
{
    for (const char *platform : {"youtube", "tiktok", "douyin", "twitter", "bilibili", "instagram",
                                 "kuaishou", "xiaohongshu", "weibo"}) {
        Target t;
        t.platform = QLatin1StringView(platform).toString();
        t.videoId = QStringLiteral("id");
        t.url = QStringLiteral("https://example.com/");
        QString error;
        // As the first answer, and as the second (Bilibili's play URLs).
        for (const QList<QJsonObject> &answers :
             {QList<QJsonObject>{data}, QList<QJsonObject>{data, data}}) {
            const std::optional<QJsonObject> r = normalize(t, answers, &error);
            if (!r)
                continue;
            const QJsonArray videos = r->value(u"videos").toArray();
            require(!videos.isEmpty() && videos.size() <= 64, "video count", input);
            require(httpOnly(videos) && httpOnly(r->value(u"audios").toArray()), "http URLs",
                    input);
            const QJsonValue cover = r->value(u"coverUrl");
            require(cover.isNull() || cover.toString().startsWith(u"http"), "cover URL", input);
        }
        nextCall(t, {data});
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray input(reinterpret_cast<const char *>(data), qsizetype(size));
    checkDetect(QString::fromUtf8(input), input);
    checkDetect(QString::fromLatin1(input), input);
    if (input.startsWith('{')) {
        const QJsonDocument doc = QJsonDocument::fromJson(input);
        if (doc.isObject())
            checkNormalize(doc.object(), input);
    }
    return 0;
}
