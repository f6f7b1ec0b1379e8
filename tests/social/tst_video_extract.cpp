// Video-URL extraction: detect() over many URL forms per platform and hostile input,
// nextCall() sequences, and normalize() over the fake upstream's data (the shapes of the real
// upstream's answers) and over missing, partial and malformed data.

#include "SocialVideoFakes.h"
#include "VideoExtract.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QSet>
#include <QTest>
#include <QUrlQuery>

using namespace VideoExtract;

namespace {

const QJsonValue Null = QJsonValue::Null;

QJsonObject video(const QString &url, const QJsonValue &quality, const QJsonValue &format,
                  const QJsonValue &width, const QJsonValue &height, const QJsonValue &size,
                  const QJsonValue &hasAudio)
{
    return QJsonObject{{"url", url},          {"quality", quality}, {"format", format},
                       {"width", width},      {"height", height},   {"size", size},
                       {"hasAudio", hasAudio}};
}

QJsonObject audio(const QString &url, const QJsonValue &format, const QJsonValue &bitrate,
                  const QJsonValue &size)
{
    return QJsonObject{{"url", url}, {"format", format}, {"bitrate", bitrate}, {"size", size}};
}

QJsonObject result(const QString &platform, const QJsonValue &videoId, const QJsonValue &title,
                   const QJsonValue &author, const QJsonValue &authorId, const QJsonValue &coverUrl,
                   const QJsonValue &duration, const QJsonArray &videos, const QJsonArray &audios)
{
    return QJsonObject{{"platform", platform}, {"videoId", videoId},   {"title", title},
                       {"author", author},     {"authorId", authorId}, {"coverUrl", coverUrl},
                       {"duration", duration}, {"videos", videos},     {"audios", audios}};
}

QUrlQuery toQuery(const Call &call)
{
    QUrlQuery q;
    for (const auto &item : call.query)
        q.addQueryItem(item.first, item.second);
    return q;
}

// Runs the calls a target needs against the fake upstream, as the family does.
QList<QJsonObject> runCalls(const Target &t, QStringList *actions = nullptr)
{
    QList<QJsonObject> answers;
    for (int i = 0; i < 5; ++i) {
        const std::optional<Call> call = nextCall(t, answers);
        if (!call)
            break;
        if (actions)
            actions->append(call->action);
        const std::optional<QJsonObject> data =
            SocialVideoFakes::data(call->action, toQuery(*call));
        if (!data)
            qFatal("the fake has no data for %s", qPrintable(call->action));
        answers.append(*data);
    }
    return answers;
}

Target mustDetect(const QString &url)
{
    QString error;
    const std::optional<Target> t = detect(url, &error);
    if (!t)
        qFatal("detect failed for %s: %s", qPrintable(url), qPrintable(error));
    return *t;
}

QJsonObject extract(const QString &url)
{
    const Target t = mustDetect(url);
    QString error;
    const std::optional<QJsonObject> r = normalize(t, runCalls(t), &error);
    if (!r)
        qFatal("normalize failed for %s: %s", qPrintable(url), qPrintable(error));
    return *r;
}

// JSON written with single quotes (no raw strings in a moc'ed file).
QJsonObject json(const char *text)
{
    QByteArray bytes(text);
    bytes.replace('\'', '"');
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
    if (!doc.isObject())
        qFatal("bad JSON in the test: %s", qPrintable(error.errorString()));
    return doc.object();
}

QByteArray pretty(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Indented);
}

#define COMPARE_JSON(actual, expected)                                                             \
    do {                                                                                           \
        const QJsonObject a_ = (actual), e_ = (expected);                                          \
        if (a_ != e_)                                                                              \
            qWarning("actual:\n%s\nexpected:\n%s", pretty(a_).constData(),                         \
                     pretty(e_).constData());                                                      \
        QCOMPARE(a_, e_);                                                                          \
    } while (false)

} // namespace

class TestVideoExtract : public QObject
{
    Q_OBJECT

private slots:
    void detectAccepts_data();
    void detectAccepts();
    void detectRejects_data();
    void detectRejects();
    void detectHostileInput();
    void detectExtraShortHosts();
    void supportedHostsAreDetected();
    void nextCallSequences();
    void normalizeDouyin();
    void normalizeDouyinShareLink();
    void normalizeTiktok();
    void normalizeBilibili();
    void normalizeBilibiliSecondPart();
    void normalizeYoutube();
    void normalizeTwitter();
    void normalizeInstagram();
    void normalizeKuaishou();
    void normalizeXiaohongshu();
    void normalizeWeibo();
    void normalizeNoVideo();
    void normalizePartialData();
    void normalizeHostileData();
};

void TestVideoExtract::detectAccepts_data()
{
    QTest::addColumn<QString>("url");
    QTest::addColumn<QString>("platform");
    QTest::addColumn<QString>("videoId");
    QTest::addColumn<bool>("needsResolve");

    auto row = [](const char *name, const char *url, const char *platform, const char *id,
                  bool resolve = false) {
        QTest::newRow(name) << QString::fromUtf8(url) << QString::fromLatin1(platform)
                            << QString::fromLatin1(id) << resolve;
    };
    // YouTube
    row("yt watch", "https://www.youtube.com/watch?v=LuIL5JATZsc", "youtube", "LuIL5JATZsc");
    row("yt watch params", "https://youtube.com/watch?feature=share&v=LuIL5JATZsc&t=42s#c",
        "youtube", "LuIL5JATZsc");
    row("yt mobile", "https://m.youtube.com/watch?v=dQw4w9WgXcQ", "youtube", "dQw4w9WgXcQ");
    row("yt music", "https://music.youtube.com/watch?v=dQw4w9WgXcQ&list=RD", "youtube",
        "dQw4w9WgXcQ");
    row("yt short link", "https://youtu.be/dQw4w9WgXcQ?si=abc", "youtube", "dQw4w9WgXcQ");
    row("yt shorts", "https://www.youtube.com/shorts/a_B-c1d2e3F", "youtube", "a_B-c1d2e3F");
    row("yt embed", "https://www.youtube-nocookie.com/embed/dQw4w9WgXcQ", "youtube", "dQw4w9WgXcQ");
    row("yt live", "https://www.youtube.com/live/dQw4w9WgXcQ?feature=shared", "youtube",
        "dQw4w9WgXcQ");
    row("yt http upper", "HTTP://WWW.YOUTUBE.COM/watch?v=dQw4w9WgXcQ", "youtube", "dQw4w9WgXcQ");
    row("yt trailing dot", "https://www.youtube.com./watch?v=dQw4w9WgXcQ", "youtube",
        "dQw4w9WgXcQ");
    row("yt port 443", "https://www.youtube.com:443/watch?v=dQw4w9WgXcQ", "youtube", "dQw4w9WgXcQ");
    row("yt fullwidth host", "https://ｗｗｗ.ｙｏｕｔｕｂｅ.ｃｏｍ/watch?v=dQw4w9WgXcQ", "youtube",
        "dQw4w9WgXcQ");
    row("yt spaces around", "  https://youtu.be/dQw4w9WgXcQ \n", "youtube", "dQw4w9WgXcQ");
    // TikTok
    row("tt video", "https://www.tiktok.com/@scout2015/video/6718335390845095173", "tiktok",
        "6718335390845095173");
    row("tt video query",
        "https://www.tiktok.com/@a.b_c/video/7350810998023949599?is_from_webapp=1&lang=en#x",
        "tiktok", "7350810998023949599");
    row("tt mobile", "https://m.tiktok.com/v/6718335390845095173.html", "tiktok",
        "6718335390845095173");
    row("tt embed", "https://www.tiktok.com/embed/v2/6718335390845095173", "tiktok",
        "6718335390845095173");
    row("tt vm share", "https://vm.tiktok.com/ZMeAbCdEf/", "tiktok", "");
    row("tt vt share", "https://vt.tiktok.com/ZSabc123/", "tiktok", "");
    row("tt t share", "https://www.tiktok.com/t/ZTFNEj8Hk/", "tiktok", "");
    // Douyin
    row("dy video", "https://www.douyin.com/video/7448118827402972455", "douyin",
        "7448118827402972455");
    row("dy modal", "https://www.douyin.com/jingxuan?modal_id=7448118827402972455", "douyin",
        "7448118827402972455");
    row("dy user modal", "https://www.douyin.com/user/MS4wLjABAAAA?modal_id=7448118827402972455",
        "douyin", "7448118827402972455");
    row("dy ies share page", "https://www.iesdouyin.com/share/video/7448118827402972455/?region=CN",
        "douyin", "7448118827402972455");
    row("dy mobile share page", "https://m.douyin.com/share/video/7448118827402972455", "douyin",
        "7448118827402972455");
    row("dy short", "https://v.douyin.com/e3x2fjE/", "douyin", "");
    row("dy short http", "http://v.douyin.com/iRNBho6u/", "douyin", "");
    // X / Twitter
    row("x status", "https://x.com/elonmusk/status/1808168603721650364", "twitter",
        "1808168603721650364");
    row("x status video", "https://x.com/elonmusk/status/1808168603721650364/video/1?s=20",
        "twitter", "1808168603721650364");
    row("twitter mobile", "https://mobile.twitter.com/jack/status/20", "twitter", "20");
    row("twitter i web", "https://twitter.com/i/web/status/1808168603721650364", "twitter",
        "1808168603721650364");
    row("x i status", "https://x.com/i/status/1808168603721650364", "twitter",
        "1808168603721650364");
    row("t.co", "https://t.co/AbCdEf1234", "twitter", "", true);
    // Bilibili
    row("bili video", "https://www.bilibili.com/video/BV1M1421t7hT/", "bilibili", "BV1M1421t7hT");
    row("bili params", "https://www.bilibili.com/video/BV1M1421t7hT?spm_id_from=333&vd_source=x#r",
        "bilibili", "BV1M1421t7hT");
    row("bili mobile", "https://m.bilibili.com/video/BV1y7411Q7Eq", "bilibili", "BV1y7411Q7Eq");
    row("bili lower prefix", "https://www.bilibili.com/video/bv1y7411Q7Eq", "bilibili",
        "BV1y7411Q7Eq");
    row("b23", "https://b23.tv/xYz12Ab", "bilibili", "", true);
    // Instagram
    row("ig post", "https://www.instagram.com/p/DPwhVB-jo9k/", "instagram", "DPwhVB-jo9k");
    row("ig reel", "https://www.instagram.com/reel/DRhvwVLAHAG/?igsh=abc", "instagram",
        "DRhvwVLAHAG");
    row("ig reels", "https://instagram.com/reels/DRhvwVLAHAG", "instagram", "DRhvwVLAHAG");
    row("ig user reel", "https://www.instagram.com/someone/reel/DRhvwVLAHAG/", "instagram",
        "DRhvwVLAHAG");
    row("ig tv", "https://www.instagram.com/tv/B_abcdefgh1/", "instagram", "B_abcdefgh1");
    row("instagr.am", "http://instagr.am/p/DPwhVB-jo9k/", "instagram", "DPwhVB-jo9k");
    row("ig share", "https://www.instagram.com/share/reel/BAabc12345/", "instagram", "", true);
    // Kuaishou
    row("ks short-video", "https://www.kuaishou.com/short-video/3xhpk3xcf6e4iac?authorId=3x",
        "kuaishou", "3xhpk3xcf6e4iac");
    row("ks fw photo", "https://v.m.chenzhongtech.com/fw/photo/3xhpk3xcf6e4iac?cc=share",
        "kuaishou", "3xhpk3xcf6e4iac");
    row("ks gifshow", "https://m.gifshow.com/fw/photo/5246975215478907538", "kuaishou",
        "5246975215478907538");
    row("ks short", "https://v.kuaishou.com/GKTpYm", "kuaishou", "");
    row("ks f", "https://www.kuaishou.com/f/X8aBcD1eFg2H", "kuaishou", "");
    // Xiaohongshu
    row("xhs explore", "https://www.xiaohongshu.com/explore/697c0eee000000000a03c308?xsec_token=AB",
        "xiaohongshu", "697c0eee000000000a03c308");
    row("xhs discovery", "https://www.xiaohongshu.com/discovery/item/6411CF99000000001300B6D9",
        "xiaohongshu", "6411cf99000000001300b6d9");
    row("xhs profile",
        "https://www.xiaohongshu.com/user/profile/5c31698d0000000007018a31/"
        "697c0eee000000000a03c308",
        "xiaohongshu", "697c0eee000000000a03c308");
    row("xhslink", "http://xhslink.com/a/AbCdEfG", "xiaohongshu", "", true);
    // Weibo
    row("weibo tv", "https://weibo.com/tv/show/1034:5232127105761312?from=old_pc_videoshow",
        "weibo", "1034:5232127105761312");
    row("weibo video fid", "https://video.weibo.com/show?fid=1034:5232127105761312", "weibo",
        "1034:5232127105761312");
    row("weibo post", "https://weibo.com/1642909335/5242977759006596", "weibo", "5242977759006596");
    row("weibo post base62", "https://weibo.com/1642909335/z0JH2lOMb", "weibo", "3501756485200075");
    row("weibo mobile detail", "https://m.weibo.cn/detail/5242977759006596", "weibo",
        "5242977759006596");
    row("weibo mobile status", "https://m.weibo.cn/status/z0JH2lOMb?from=x", "weibo",
        "3501756485200075");
    row("t.cn", "http://t.cn/A6abcDeF", "weibo", "", true);
}

void TestVideoExtract::detectAccepts()
{
    QFETCH(QString, url);
    QFETCH(QString, platform);
    QFETCH(QString, videoId);
    QFETCH(bool, needsResolve);
    QString error;
    const std::optional<Target> t = detect(url, &error);
    QVERIFY2(t.has_value(), qPrintable(error));
    QCOMPARE(t->platform, platform);
    QCOMPARE(t->videoId, videoId);
    QCOMPARE(t->needsResolve, needsResolve);
    QCOMPARE(t->url, url.trimmed());
    QCOMPARE(t->part, 1);
}

void TestVideoExtract::detectRejects_data()
{
    QTest::addColumn<QString>("url");
    auto row = [](const char *name, const QString &url) { QTest::newRow(name) << url; };
    row("empty", QString());
    row("blank", QStringLiteral("   \t\n"));
    row("garbage", QStringLiteral("not a url at all"));
    row("no scheme", QStringLiteral("www.youtube.com/watch?v=dQw4w9WgXcQ"));
    row("scheme-relative", QStringLiteral("//www.youtube.com/watch?v=dQw4w9WgXcQ"));
    row("ftp", QStringLiteral("ftp://www.youtube.com/watch?v=dQw4w9WgXcQ"));
    row("javascript", QStringLiteral("javascript:alert(1)//youtube.com/watch?v=dQw4w9WgXcQ"));
    row("file", QStringLiteral("file:///etc/passwd"));
    row("data", QStringLiteral("data:text/html,youtube.com"));
    row("http no slashes", QStringLiteral("https:www.youtube.com/watch?v=dQw4w9WgXcQ"));
    row("other host", QStringLiteral("https://vimeo.com/123456"));
    row("suffix look-alike",
        QStringLiteral("https://youtube.com.evil.example/watch?v=dQw4w9WgXcQ"));
    row("prefix look-alike", QStringLiteral("https://evilyoutube.com/watch?v=dQw4w9WgXcQ"));
    row("subdomain not listed", QStringLiteral("https://evil.youtube.com/watch?v=dQw4w9WgXcQ"));
    row("tiktok look-alike",
        QStringLiteral("https://www.tiktok.com.cn/@a/video/6718335390845095173"));
    row("douyin share look-alike", QStringLiteral("https://v.douyin.com.evil.example/abc/"));
    row("t.co look-alike", QStringLiteral("https://t.co.evil.example/abc"));
    row("punycode look-alike", QStringLiteral("https://xn--yutube-wqf.com/watch?v=dQw4w9WgXcQ"));
    row("cyrillic look-alike", QString::fromUtf8("https://www.yоutube.com/watch?v=dQw4w9WgXcQ"));
    row("user info", QStringLiteral("https://user:pw@www.youtube.com/watch?v=dQw4w9WgXcQ"));
    row("user info host swap",
        QStringLiteral("https://www.youtube.com@evil.example/watch?v=dQw4w9WgXcQ"));
    row("empty user info", QStringLiteral("https://@www.youtube.com/watch?v=dQw4w9WgXcQ"));
    row("backslash", QStringLiteral("https://evil.example\\@www.youtube.com/watch?v=dQw4w9WgXcQ"));
    row("odd port", QStringLiteral("https://www.youtube.com:8443/watch?v=dQw4w9WgXcQ"));
    row("http on 443", QStringLiteral("http://www.youtube.com:443/watch?v=dQw4w9WgXcQ"));
    row("inner space", QStringLiteral("https://www.youtube.com/watch?v=dQw4w9WgXcQ x"));
    row("control char", QStringLiteral("https://www.youtube.com/watch?v=dQw4w9WgXcQ\x01"));
    row("zero width", QString::fromUtf8("https://www.youtube.com\u200b/watch?v=dQw4w9WgXcQ"));
    row("ip literal", QStringLiteral("https://127.0.0.1/watch?v=dQw4w9WgXcQ"));
    row("yt no id", QStringLiteral("https://www.youtube.com/"));
    row("yt channel", QStringLiteral("https://www.youtube.com/@somechannel"));
    row("yt short id", QStringLiteral("https://youtu.be/dQw4w9WgXc"));
    row("yt long id", QStringLiteral("https://youtu.be/dQw4w9WgXcQQ"));
    row("yt bad chars", QStringLiteral("https://www.youtube.com/watch?v=dQw4w9WgX%3CQ"));
    row("youtu.be empty", QStringLiteral("https://youtu.be/"));
    row("tt user page", QStringLiteral("https://www.tiktok.com/@scout2015"));
    row("tt non-digit id", QStringLiteral("https://www.tiktok.com/@a/video/12ab34"));
    row("tt share no code", QStringLiteral("https://vm.tiktok.com/"));
    row("dy user page", QStringLiteral("https://www.douyin.com/user/MS4wLjABAAAA"));
    row("x profile", QStringLiteral("https://x.com/elonmusk"));
    row("x status no id", QStringLiteral("https://x.com/elonmusk/status/"));
    row("x status letters", QStringLiteral("https://x.com/elonmusk/status/12a4"));
    row("t.co no code", QStringLiteral("https://t.co/"));
    row("bili av", QStringLiteral("https://www.bilibili.com/video/av170001"));
    row("bili short bv", QStringLiteral("https://www.bilibili.com/video/BV1M1421t7h"));
    row("bili home", QStringLiteral("https://www.bilibili.com/"));
    row("ig profile", QStringLiteral("https://www.instagram.com/someone/"));
    row("ig stories", QStringLiteral("https://www.instagram.com/stories/someone/123/"));
    row("ks user", QStringLiteral("https://www.kuaishou.com/profile/3xabc"));
    row("xhs non-hex",
        QStringLiteral("https://www.xiaohongshu.com/explore/zzzc0eee000000000a03c308"));
    row("xhs short id", QStringLiteral("https://www.xiaohongshu.com/explore/697c0eee"));
    row("weibo user", QStringLiteral("https://weibo.com/u/1642909335"));
    row("weibo bad tv id", QStringLiteral("https://weibo.com/tv/show/1034:abc"));
    row("huge",
        QStringLiteral("https://www.youtube.com/watch?v=dQw4w9WgXcQ&x=") + QString(5000, u'a'));
}

void TestVideoExtract::detectRejects()
{
    QFETCH(QString, url);
    QString error;
    const std::optional<Target> t = detect(url, &error);
    QVERIFY2(!t.has_value(), qPrintable(t ? t->platform + u' ' + t->videoId : QString()));
    QVERIFY2(error.startsWith(u"unsupported URL: "), qPrintable(error));
    // The reason is short and never echoes the input beyond a short host.
    QVERIFY2(error.size() < 160, qPrintable(error));
    // Without an error pointer it fails the same way.
    QVERIFY(!detect(url, nullptr).has_value());
}

void TestVideoExtract::detectHostileInput()
{
    // A huge input is refused before any parsing, quickly.
    QElapsedTimer timer;
    timer.start();
    const QString huge = QStringLiteral("https://youtu.be/") + QString(4 * 1024 * 1024, u'A');
    QString error;
    QVERIFY(!detect(huge, &error));
    QVERIFY2(error.contains(u"longer than"), qPrintable(error));
    // Exactly at the limit it is parsed (and fails on the id, not the length).
    QString atLimit = QStringLiteral("https://www.youtube.com/watch?v=dQw4w9WgXcQ&pad=");
    atLimit += QString(4096 - atLimit.size(), u'x');
    QCOMPARE(atLimit.size(), 4096);
    QVERIFY(detect(atLimit, &error).has_value());
    atLimit += u'x';
    QVERIFY(!detect(atLimit, &error));

    // Many path segments and query items: bounded, no crash.
    QString deep = QStringLiteral("https://x.com");
    while (deep.size() < 4000)
        deep += QStringLiteral("/status");
    QVERIFY(!detect(deep, &error));
    QString manyQueries = QStringLiteral("https://www.douyin.com/?");
    while (manyQueries.size() < 4000)
        manyQueries += QStringLiteral("a=1&");
    QVERIFY(!detect(manyQueries, &error));

    // Random bytes (as Latin-1 and as UTF-8) and random mutations of valid URLs: no crash,
    // and an accepted URL always has a platform from the list and a validated shape.
    QRandomGenerator rng(12345);
    const QStringList seeds{QStringLiteral("https://www.youtube.com/watch?v=dQw4w9WgXcQ"),
                            QStringLiteral("https://v.douyin.com/e3x2fjE/"),
                            QStringLiteral("https://weibo.com/1642909335/z0JH2lOMb"),
                            QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT?p=2")};
    const QStringList platforms{"youtube",   "tiktok",   "douyin",      "twitter", "bilibili",
                                "instagram", "kuaishou", "xiaohongshu", "weibo"};
    for (int i = 0; i < 3000; ++i) {
        QByteArray bytes(int(rng.bounded(200)), Qt::Uninitialized);
        for (char &c : bytes)
            c = char(rng.bounded(256));
        detect(QString::fromLatin1(bytes), &error);
        detect(QString::fromUtf8(bytes), &error);
        QString mutated = seeds.at(i % seeds.size());
        for (int k = 0; k < 3; ++k) {
            const int pos = int(rng.bounded(mutated.size()));
            mutated[pos] = QChar(ushort(rng.bounded(0x80)));
        }
        const std::optional<Target> t = detect(mutated, &error);
        if (t) {
            QVERIFY2(platforms.contains(t->platform), qPrintable(mutated));
            QVERIFY(t->url == mutated.trimmed());
        }
    }
    QVERIFY2(timer.elapsed() < 20000, "detect() is too slow on hostile input");
}

void TestVideoExtract::detectExtraShortHosts()
{
    QString error;
    const QStringList extra{QStringLiteral("Go.Example.COM."), QStringLiteral("")};
    std::optional<Target> t = detect(QStringLiteral("https://go.example.com/abc"), &error, extra);
    QVERIFY2(t.has_value(), qPrintable(error));
    QVERIFY(t->needsResolve);
    QVERIFY(t->platform.isEmpty());
    QVERIFY(!nextCall(*t, {}).has_value());
    // Matched exactly: not a suffix.
    QVERIFY(!detect(QStringLiteral("https://evil.go.example.com/abc"), &error, extra));
    QVERIFY(!detect(QStringLiteral("https://go.example.com.evil.example/abc"), &error, extra));
    // The same checks as everywhere else.
    QVERIFY(!detect(QStringLiteral("https://u@go.example.com/abc"), &error, extra));
    QVERIFY(!detect(QStringLiteral("ftp://go.example.com/abc"), &error, extra));
}

void TestVideoExtract::supportedHostsAreDetected()
{
    const QStringList hosts = supportedHosts();
    for (const char *h : {"youtube.com", "youtu.be", "tiktok.com", "vm.tiktok.com", "douyin.com",
                          "v.douyin.com", "x.com", "twitter.com", "t.co", "bilibili.com", "b23.tv",
                          "instagram.com", "instagr.am", "kuaishou.com", "v.kuaishou.com",
                          "xiaohongshu.com", "xhslink.com", "weibo.com", "m.weibo.cn"})
        QVERIFY2(hosts.contains(QLatin1StringView(h)), h);
    QCOMPARE(QSet<QString>(hosts.begin(), hosts.end()).size(), hosts.size());
    // Every host is recognised (a bare host page names no video, so it fails on the id, not
    // on the host).
    for (const QString &h : hosts) {
        QString error;
        detect(QStringLiteral("https://") + h + QStringLiteral("/"), &error);
        QVERIFY2(!error.contains(u"not a supported host"), qPrintable(h + u' ' + error));
        QCOMPARE(h, h.toLower());
    }
}

void TestVideoExtract::nextCallSequences()
{
    auto calls = [](const QString &url) {
        QStringList actions;
        runCalls(mustDetect(url), &actions);
        return actions;
    };
    auto firstCall = [](const QString &url) { return *nextCall(mustDetect(url), {}); };

    Call c = firstCall(QStringLiteral("https://youtu.be/dQw4w9WgXcQ"));
    QCOMPARE(c.action, QStringLiteral("youtube/web/get_video_info"));
    QCOMPARE(c.query, (QList<QPair<QString, QString>>{
                          qMakePair(QStringLiteral("video_id"), QStringLiteral("dQw4w9WgXcQ")),
                          qMakePair(QStringLiteral("subtitles"), QStringLiteral("false")),
                          qMakePair(QStringLiteral("related"), QStringLiteral("false"))}));

    c = firstCall(QStringLiteral("https://www.douyin.com/video/7448118827402972455"));
    QCOMPARE(c.action, QStringLiteral("douyin/app/v3/fetch_one_video"));
    QCOMPARE(c.query, (QList<QPair<QString, QString>>{qMakePair(
                          QStringLiteral("aweme_id"), QStringLiteral("7448118827402972455"))}));
    c = firstCall(QStringLiteral(" https://v.douyin.com/e3x2fjE/ "));
    QCOMPARE(c.action, QStringLiteral("douyin/app/v3/fetch_one_video_by_share_url"));
    QCOMPARE(c.query,
             (QList<QPair<QString, QString>>{qMakePair(
                 QStringLiteral("share_url"), QStringLiteral("https://v.douyin.com/e3x2fjE/"))}));
    c = firstCall(QStringLiteral("https://www.tiktok.com/@a/video/7350810998023949599"));
    QCOMPARE(c.action, QStringLiteral("tiktok/app/v3/fetch_one_video"));
    c = firstCall(QStringLiteral("https://vm.tiktok.com/ZMeAbCdEf/"));
    QCOMPARE(c.action, QStringLiteral("tiktok/app/v3/fetch_one_video_by_share_url"));
    QCOMPARE(c.query.value(0).second, QStringLiteral("https://vm.tiktok.com/ZMeAbCdEf/"));
    c = firstCall(QStringLiteral("https://x.com/a/status/1808168603721650364"));
    QCOMPARE(c.action, QStringLiteral("twitter/web/fetch_tweet_detail"));
    QCOMPARE(c.query.value(0),
             qMakePair(QStringLiteral("tweet_id"), QStringLiteral("1808168603721650364")));
    c = firstCall(QStringLiteral("https://www.instagram.com/reel/DRhvwVLAHAG/"));
    QCOMPARE(c.action, QStringLiteral("instagram/v2/fetch_post_info"));
    QCOMPARE(c.query.value(0),
             qMakePair(QStringLiteral("code_or_url"), QStringLiteral("DRhvwVLAHAG")));
    c = firstCall(QStringLiteral("https://v.kuaishou.com/GKTpYm"));
    QCOMPARE(c.action, QStringLiteral("kuaishou/web/fetch_one_video_by_url"));
    QCOMPARE(c.query.value(0),
             qMakePair(QStringLiteral("url"), QStringLiteral("https://v.kuaishou.com/GKTpYm")));
    c = firstCall(QStringLiteral("https://www.xiaohongshu.com/explore/697c0eee000000000a03c308"));
    QCOMPARE(c.action, QStringLiteral("xiaohongshu/app_v2/get_video_note_detail"));
    QCOMPARE(c.query.value(0),
             qMakePair(QStringLiteral("note_id"), QStringLiteral("697c0eee000000000a03c308")));
    c = firstCall(QStringLiteral("https://weibo.com/tv/show/1034:5232127105761312"));
    QCOMPARE(c.action, QStringLiteral("weibo/app/fetch_video_detail"));
    QCOMPARE(c.query.value(0),
             qMakePair(QStringLiteral("mid"), QStringLiteral("1034:5232127105761312")));

    // One call each, except Bilibili (details, then the play URLs of the part's cid).
    QCOMPARE(calls(QStringLiteral("https://youtu.be/dQw4w9WgXcQ")).size(), 1);
    QCOMPARE(calls(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT")),
             (QStringList{"bilibili/web/fetch_one_video", "bilibili/web/fetch_video_playurl"}));

    const Target bili = mustDetect(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT"));
    const QJsonObject view =
        *SocialVideoFakes::data(QStringLiteral("bilibili/web/fetch_one_video"),
                                QUrlQuery(QStringLiteral("bv_id=BV1M1421t7hT")));
    c = *nextCall(bili, {view});
    QCOMPARE(c.action, QStringLiteral("bilibili/web/fetch_video_playurl"));
    const QString cid1 = QString::number(view["data"]["pages"][0]["cid"].toInteger());
    const QString cid2 = QString::number(view["data"]["pages"][1]["cid"].toInteger());
    QVERIFY(cid1 != cid2);
    QCOMPARE(c.query, (QList<QPair<QString, QString>>{
                          qMakePair(QStringLiteral("bv_id"), QStringLiteral("BV1M1421t7hT")),
                          qMakePair(QStringLiteral("cid"), cid1)}));
    QVERIFY(!nextCall(bili, {view, QJsonObject()}).has_value());
    // ?p=2: the second part's cid; a part past the list falls back to the video's cid.
    Target part2 = mustDetect(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT?p=2"));
    QCOMPARE(part2.part, 2);
    QCOMPARE(nextCall(part2, {view})->query.value(1).second, cid2);
    Target part9 = mustDetect(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT?p=9"));
    QCOMPARE(nextCall(part9, {view})->query.value(1).second, cid1);
    QCOMPARE(mustDetect(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT?p=0")).part, 1);
    QCOMPARE(mustDetect(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT?p=x")).part, 1);
    // No cid (or a non-numeric one): no second call.
    QVERIFY(!nextCall(bili,
                      {QJsonObject{{"code", 0}, {"data", QJsonObject{{"bvid", "BV1M1421t7hT"}}}}}));
    QVERIFY(!nextCall(bili, {QJsonObject{{"data", QJsonObject{{"cid", "12;drop"}}}}}));
    // The cid also read without the envelope, as a string.
    QCOMPARE(nextCall(bili, {QJsonObject{{"cid", "4242"}}})->query.value(1).second,
             QStringLiteral("4242"));

    // Other platforms stop after one answer; links that need resolving make no call.
    const Target yt = mustDetect(QStringLiteral("https://youtu.be/dQw4w9WgXcQ"));
    QVERIFY(!nextCall(yt, {QJsonObject()}).has_value());
    for (const char *url : {"https://t.co/AbCdEf1234", "https://b23.tv/xYz12Ab",
                            "http://xhslink.com/a/AbCdEfG", "http://t.cn/A6abcDeF"})
        QVERIFY2(!nextCall(mustDetect(QLatin1StringView(url)), {}).has_value(), url);
    // An unknown platform (a Target built by hand) makes no call.
    Target unknown;
    unknown.platform = QStringLiteral("myspace");
    unknown.videoId = QStringLiteral("1");
    QVERIFY(!nextCall(unknown, {}).has_value());
}

void TestVideoExtract::normalizeDouyin()
{
    const QString id = QStringLiteral("7448118827402972455");
    const QString cdn = QStringLiteral("https://v26-web.douyinvod.com/") + id;
    const QString img = QStringLiteral("https://p3-sign.douyinpic.com/obj/") + id;
    COMPARE_JSON(extract(QStringLiteral("https://www.douyin.com/video/") + id),
                 result("douyin", id, QStringLiteral("抖音视频 ") + id,
                        QStringLiteral("抖音作者 2455"), "1002972455", img + "-cover.jpeg", 15.3,
                        QJsonArray{video(cdn + "/1080/video.mp4?mime_type=video_mp4", "1080p",
                                         "mp4", 1080, 1920, 4118321, true),
                                   video(cdn + "/720/video.mp4?mime_type=video_mp4", "720p", "mp4",
                                         720, 1280, 2531043, true)},
                        QJsonArray{audio("https://sf3-cdn-tos.douyinstatic.com/obj/" + id + ".mp3",
                                         "mp3", Null, Null)}));
}

void TestVideoExtract::normalizeDouyinShareLink()
{
    // The upstream resolves the share link; the video id comes from its answer.
    const QJsonObject r = extract(QStringLiteral("https://v.douyin.com/e3x2fjE/"));
    QCOMPARE(r["platform"].toString(), QStringLiteral("douyin"));
    const QString id = r["videoId"].toString();
    QCOMPARE(id.size(), 19);
    QCOMPARE(r["title"].toString(), QStringLiteral("抖音视频 ") + id);
    QCOMPARE(r["videos"].toArray().size(), 2);
    // TikTok's share links the same way.
    const QJsonObject t = extract(QStringLiteral("https://vm.tiktok.com/ZMeAbCdEf/"));
    QCOMPARE(t["platform"].toString(), QStringLiteral("tiktok"));
    QCOMPARE(t["videoId"].toString().size(), 19);
}

void TestVideoExtract::normalizeTiktok()
{
    const QString id = QStringLiteral("7350810998023949599");
    const QString cdn = QStringLiteral("https://v16m.tiktokcdn.com/") + id;
    // TikTok's bit_rate entries name no container (mp4 is assumed); its default play_addr is a
    // third, smaller rendition.
    COMPARE_JSON(
        extract(QStringLiteral("https://www.tiktok.com/@creator/video/") + id + "?lang=en"),
        result("tiktok", id, QStringLiteral("TikTok video ") + id,
               QStringLiteral("TikTok author 9599"), "1023949599",
               QStringLiteral("https://p16-sign-va.tiktokcdn.com/obj/") + id + "-cover.jpeg", 15.3,
               QJsonArray{video(cdn + "/1080/video.mp4?mime_type=video_mp4", "1080p", "mp4", 1080,
                                1920, 4118321, true),
                          video(cdn + "/720/video.mp4?mime_type=video_mp4", "720p", "mp4", 720,
                                1280, 2531043, true),
                          video(cdn + "/540/video.mp4?mime_type=video_mp4", "576p", "mp4", 576,
                                1024, 1520980, true)},
               QJsonArray{audio("https://sf16-ies-music.tiktokcdn.com/obj/" + id + ".mp3", "mp3",
                                Null, Null)}));
}

void TestVideoExtract::normalizeBilibili()
{
    const QString bv = QStringLiteral("BV1M1421t7hT");
    const QJsonObject view = *SocialVideoFakes::data(QStringLiteral("bilibili/web/fetch_one_video"),
                                                     QUrlQuery(QStringLiteral("bv_id=") + bv));
    const QString cid = QString::number(view["data"]["pages"][0]["cid"].toInteger());
    const QString mid = QString::number(view["data"]["owner"]["mid"].toInteger());
    const QString base = "https://upos-sz-mirrorcos.bilivideo.com/upgcxcode/" + cid + "/" + cid;
    const QString q = "?bvid=" + bv;
    // DASH: video-only tracks, best first, named by accept_description; audio tracks apart.
    COMPARE_JSON(extract(QStringLiteral("https://www.bilibili.com/video/") + bv),
                 result("bilibili", bv, QStringLiteral("哔哩哔哩视频 ") + bv,
                        QStringLiteral("UP主 t7hT"), mid,
                        "http://i0.hdslb.com/bfs/archive/" + bv + ".jpg", 245,
                        QJsonArray{video(base + "-1-100050.m4s" + q, QStringLiteral("1080P 高清"),
                                         "mp4", 1920, 1080, Null, false),
                                   video(base + "-1-100048.m4s" + q, QStringLiteral("720P 高清"),
                                         "mp4", 1280, 720, Null, false),
                                   video(base + "-1-100023.m4s" + q, QStringLiteral("480P 清晰"),
                                         "mp4", 852, 480, Null, false)},
                        QJsonArray{audio(base + "-1-30280.m4s" + q, "m4a", 319173, Null),
                                   audio(base + "-1-30216.m4s" + q, "m4a", 67000, Null)}));
}

void TestVideoExtract::normalizeBilibiliSecondPart()
{
    const QJsonObject r =
        extract(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT?p=2"));
    QCOMPARE(r["duration"].toDouble(), 120.0); // the part's own duration
    const QJsonObject view =
        *SocialVideoFakes::data(QStringLiteral("bilibili/web/fetch_one_video"),
                                QUrlQuery(QStringLiteral("bv_id=BV1M1421t7hT")));
    const QString cid2 = QString::number(view["data"]["pages"][1]["cid"].toInteger());
    QVERIFY(r.value("videos").toArray().at(0).toObject().value("url").toString().contains(
        u'/' + cid2 + u'/'));

    // durl (whole files with sound) instead of DASH; sizes from durl, dimensions from the part.
    const Target t = mustDetect(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT?p=2"));
    const QJsonObject play{
        {"code", 0},
        {"data",
         QJsonObject{{"quality", 64},
                     {"format", "mp4720"},
                     {"timelength", 120500},
                     {"accept_quality", QJsonArray{80, 64}},
                     {"accept_description", QJsonArray{"1080P 高清", "720P 高清"}},
                     {"durl", QJsonArray{QJsonObject{{"order", 1},
                                                     {"length", 120500},
                                                     {"size", 7654321},
                                                     {"url", "https://cn.bilivideo.com/a.mp4"}},
                                         QJsonObject{{"order", 2},
                                                     {"size", -5},
                                                     {"url", "ftp://cn.bilivideo.com/b.mp4"}}}}}}};
    QString error;
    const std::optional<QJsonObject> d = normalize(t, {view, play}, &error);
    QVERIFY2(d, qPrintable(error));
    QCOMPARE((*d)["videos"].toArray(),
             (QJsonArray{video("https://cn.bilivideo.com/a.mp4", QStringLiteral("720P 高清"), "mp4",
                               1280, 720, 7654321, true)}));
    QCOMPARE((*d)["audios"].toArray(), QJsonArray());
}

void TestVideoExtract::normalizeYoutube()
{
    const QString id = QStringLiteral("LuIL5JATZsc");
    const QString gv = "https://rr1---sn-ab5l6nrz.googlevideo.com/videoplayback?id=" + id;
    COMPARE_JSON(
        extract(QStringLiteral("https://www.youtube.com/watch?v=") + id),
        result("youtube", id, "YouTube video " + id, "Channel LuI", "UC" + id + "channel1",
               "https://i.ytimg.com/vi/" + id + "/maxresdefault.jpg", 212,
               QJsonArray{video(gv + "&itag=137", "1080p", "mp4", 1920, 1080, 53110234, false),
                          video(gv + "&itag=247", "720p", "webm", 1280, 720, 21345678, false),
                          video(gv + "&itag=18", "360p", "mp4", 640, 360, 11264571, true)},
               QJsonArray{audio(gv + "&itag=140", "m4a", Null, 3431234),
                          // No extension: the format from the MIME type.
                          audio(gv + "&itag=251", "webm", Null, 3301999)}));
}

void TestVideoExtract::normalizeTwitter()
{
    const QString id = QStringLiteral("1808168603721650364");
    const QString v = "https://video.twimg.com/amplify_video/" + id;
    // MP4 variants sized from their paths, best first; the HLS playlist last (no size).
    COMPARE_JSON(
        extract(QStringLiteral("https://x.com/xauthor/status/") + id),
        result(
            "twitter", id, "A post with a video " + id, "X Author", "2337692364",
            "https://pbs.twimg.com/amplify_video_thumb/" + id + "/img/thumb.jpg", Null,
            QJsonArray{
                video(v + "/vid/avc1/720x1280/c.mp4?tag=16", "720p", "mp4", 720, 1280, Null, true),
                video(v + "/vid/avc1/480x852/b.mp4?tag=16", "480p", "mp4", 480, 852, Null, true),
                video(v + "/vid/avc1/320x568/a.mp4?tag=16", "320p", "mp4", 320, 568, Null, true),
                video(v + "/pl/playlist.m3u8?tag=16", Null, "m3u8", Null, Null, Null, true)},
            QJsonArray()));
}

void TestVideoExtract::normalizeInstagram()
{
    const QString code = QStringLiteral("DRhvwVLAHAG");
    const QString cdn = "https://scontent.cdninstagram.com/o1/v/t16/" + code;
    // Duplicate renditions (video_versions type 103, video_url) appear once.
    COMPARE_JSON(extract(QStringLiteral("https://www.instagram.com/reel/") + code + "/?igsh=x"),
                 result("instagram", code, "Instagram reel " + code, "Insta Author", "1234567",
                        cdn + "_cover.jpg", 12.345,
                        QJsonArray{video(cdn + "_720.mp4", "720p", "mp4", 720, 1280, Null, true),
                                   video(cdn + "_480.mp4", "480p", "mp4", 480, 854, Null, true)},
                        QJsonArray()));
}

void TestVideoExtract::normalizeKuaishou()
{
    const QString id = QStringLiteral("3xhpk3xcf6e4iac");
    const QString cdn = "https://v2.kwaicdn.com/upic/" + id;
    COMPARE_JSON(
        extract(QStringLiteral("https://www.kuaishou.com/short-video/") + id),
        result("kuaishou", id, QStringLiteral("快手视频 ") + id, QStringLiteral("快手作者"),
               "3xauthor4iac", "https://p2.a.yximgs.com/upic/" + id + ".jpg", 30.2,
               QJsonArray{video(cdn + "_hd15.mp4", "720p", "mp4", 720, 1280, 5123456, true),
                          video(cdn + "_sd.mp4", "540p", "mp4", 540, 960, 2123456, true),
                          video(cdn + "_b.mp4", Null, "mp4", Null, Null, Null, true)},
               QJsonArray()));
    // A share link: the id comes from the answer.
    const QJsonObject share = extract(QStringLiteral("https://v.kuaishou.com/GKTpYm"));
    QVERIFY(share["videoId"].toString().startsWith(u"3x"));
    QCOMPARE(share["videos"].toArray().size(), 3);
}

void TestVideoExtract::normalizeXiaohongshu()
{
    const QString id = QStringLiteral("697c0eee000000000a03c308");
    const QString cdn = "https://sns-video-qc.xhscdn.com/stream/110/" + id;
    COMPARE_JSON(
        extract(QStringLiteral("https://www.xiaohongshu.com/explore/") + id),
        result("xiaohongshu", id, QStringLiteral("小红书视频 697c0e"), QStringLiteral("薯队长"),
               "5c31698d0000000007018a31", "https://sns-img-qc.xhscdn.com/" + id + "_cover.jpg", 37,
               QJsonArray{video(cdn + "_258.mp4", "1080p", "mp4", 1080, 1440, 9123456, true),
                          video(cdn + "_259.mp4", "1080p", "mp4", 1080, 1440, 6123456, true)},
               QJsonArray()));
}

void TestVideoExtract::normalizeWeibo()
{
    const QString mid = QStringLiteral("5242977759006596");
    const QString cdn = "https://f.video.weibocdn.com/o0/" + mid;
    // playback_list first; the flat mp4_* URLs add only what is new (the "sd" rendition).
    COMPARE_JSON(extract(QStringLiteral("https://m.weibo.cn/detail/") + mid),
                 result("weibo", mid, QStringLiteral("微博视频 ") + mid, QStringLiteral("微博作者"),
                        "1642909335", "https://wx1.sinaimg.cn/orj480/" + mid + ".jpg", 65.2,
                        QJsonArray{video(cdn + "_720.mp4", "720p", "mp4", 720, 1280, 8123456, true),
                                   video(cdn + "_hd.mp4", "480p", "mp4", 480, 854, 4123456, true),
                                   video(cdn + "_ld.mp4", "sd", "mp4", Null, Null, Null, true)},
                        QJsonArray()));
}

void TestVideoExtract::normalizeNoVideo()
{
    QString error;
    // No answers at all, for every platform.
    for (const char *url :
         {"https://youtu.be/dQw4w9WgXcQ", "https://www.douyin.com/video/7448118827402972455",
          "https://www.tiktok.com/@a/video/7350810998023949599", "https://x.com/a/status/1",
          "https://www.bilibili.com/video/BV1M1421t7hT", "https://www.instagram.com/p/DPwhVB-jo9k/",
          "https://v.kuaishou.com/GKTpYm",
          "https://www.xiaohongshu.com/explore/697c0eee000000000a03c308",
          "https://m.weibo.cn/detail/5242977759006596"}) {
        const Target t = mustDetect(QLatin1StringView(url));
        error.clear();
        QVERIFY2(!normalize(t, {}, &error), url);
        QVERIFY2(error.contains(u"no video"), qPrintable(error));
        QVERIFY2(!normalize(t, {QJsonObject()}, &error), url);
        QVERIFY2(!normalize(t, {QJsonObject{{"data", QJsonArray{1, 2}}}}, nullptr), url);
    }
    // Douyin: a filtered aweme (aweme_detail null); X: a post without media.
    for (const char *url : {"https://www.douyin.com/video/4040000000000000001",
                            "https://www.tiktok.com/@a/video/4040000000000000001",
                            "https://x.com/a/status/4040000000000000001"}) {
        const Target t = mustDetect(QLatin1StringView(url));
        QVERIFY2(!normalize(t, runCalls(t), &error), url);
    }
    // Bilibili: the details alone (the play URLs never came) hold no video.
    const Target bili = mustDetect(QStringLiteral("https://www.bilibili.com/video/BV1M1421t7hT"));
    const QList<QJsonObject> both = runCalls(bili);
    QVERIFY(!normalize(bili, {both.at(0)}, &error));
    // A target that still needs resolving has nothing to normalize.
    QVERIFY(!normalize(mustDetect(QStringLiteral("https://b23.tv/xYz12Ab")), both, &error));
    // An image-only Douyin post.
    const Target dy =
        mustDetect(QStringLiteral("https://www.douyin.com/video/7448118827402972455"));
    const QJsonObject images{
        {"aweme_detail",
         QJsonObject{
             {"aweme_id", "7448118827402972455"},
             {"images",
              QJsonArray{QJsonObject{{"url_list", QJsonArray{"https://p3.douyinpic.com/a.jpg"}}}}},
             {"video", QJsonObject{{"play_addr", QJsonObject{{"url_list", QJsonArray()}}}}}}}};
    QVERIFY(!normalize(dy, {images}, &error));
}

void TestVideoExtract::normalizePartialData()
{
    QString error;
    // Douyin with only a play address: everything else null, the id from the target.
    const Target dy =
        mustDetect(QStringLiteral("https://www.douyin.com/video/7448118827402972455"));
    const QJsonObject bare{
        {"aweme_detail",
         QJsonObject{
             {"video",
              QJsonObject{{"bit_rate", QJsonArray()},
                          {"play_addr",
                           QJsonObject{{"url_list", QJsonArray{"", "https://a.example/v.mp4"}}}}}},
             {"author", QJsonObject{{"uid", 12345}, {"nickname", ""}}},
             {"music", QJsonObject{{"play_url", QJsonObject{{"url_list", QJsonArray()}}}}}}}};
    std::optional<QJsonObject> r = normalize(dy, {bare}, &error);
    QVERIFY2(r, qPrintable(error));
    COMPARE_JSON(*r, result("douyin", "7448118827402972455", Null, Null, "12345", Null, Null,
                            QJsonArray{video("https://a.example/v.mp4", Null, "mp4", Null, Null,
                                             Null, true)},
                            QJsonArray()));

    // YouTube without channel, thumbnails or sizes; numbers as strings are read.
    const Target yt = mustDetect(QStringLiteral("https://youtu.be/dQw4w9WgXcQ"));
    const QJsonObject ytData{
        {"lengthSeconds", "61"},
        {"videos", QJsonObject{{"items", QJsonArray{QJsonObject{{"url", "https://g.example/1"},
                                                                {"width", "640"},
                                                                {"height", 360},
                                                                {"size", "abc"}}}}}},
        {"audios",
         QJsonObject{{"items", QJsonArray{QJsonObject{{"url", "https://g.example/a.m4a"}}}}}}};
    r = normalize(yt, {ytData}, &error);
    QVERIFY2(r, qPrintable(error));
    COMPARE_JSON(
        *r, result("youtube", "dQw4w9WgXcQ", Null, Null, Null, Null, 61,
                   QJsonArray{video("https://g.example/1", "360p", Null, 640, 360, Null, Null)},
                   QJsonArray{audio("https://g.example/a.m4a", "m4a", Null, Null)}));

    // Weibo with only a stream URL; Instagram in a carousel (the first video item).
    const Target wb = mustDetect(QStringLiteral("https://m.weibo.cn/detail/5242977759006596"));
    r = normalize(
        wb,
        {QJsonObject{
            {"items",
             QJsonArray{QJsonObject{
                 {"data",
                  QJsonObject{
                      {"page_info", QJsonObject{{"media_info",
                                                 QJsonObject{{"stream_url",
                                                              "https://w.example/s.mp4"}}}}}}}}}}}},
        &error);
    QVERIFY2(r, qPrintable(error));
    QCOMPARE((*r)["videos"].toArray(),
             (QJsonArray{video("https://w.example/s.mp4", "sd", "mp4", Null, Null, Null, true)}));
    QCOMPARE((*r)["videoId"], QJsonValue("5242977759006596"));
    QCOMPARE((*r)["title"], Null);

    const Target ig = mustDetect(QStringLiteral("https://www.instagram.com/p/DPwhVB-jo9k/"));
    const QJsonObject carousel = json(
        "{'code': 'DPwhVB-jo9k', 'carousel_media': ["
        " {'image_versions2': {'candidates': [{'url': 'https://i.example/1.jpg'}]}},"
        " {'video_versions': [{'url': 'https://i.example/2.mp4', 'width': 640, 'height': 640}],"
        "  'image_versions2': {'candidates': [{'url': 'https://i.example/2.jpg'}]},"
        "  'video_duration': 3}]}");
    r = normalize(ig, {carousel}, &error);
    QVERIFY2(r, qPrintable(error));
    COMPARE_JSON(
        *r,
        result("instagram", "DPwhVB-jo9k", Null, Null, Null, "https://i.example/2.jpg", 3,
               QJsonArray{video("https://i.example/2.mp4", "640p", "mp4", 640, 640, Null, true)},
               QJsonArray()));

    // Xiaohongshu as a web note_card (video.media.stream), no cover.
    const Target xhs =
        mustDetect(QStringLiteral("https://www.xiaohongshu.com/explore/697c0eee000000000a03c308"));
    const QJsonObject web =
        json("{'items': [{'note_card': {'note_id': '697c0eee000000000a03c308',"
             " 'user': {'user_id': 'u1', 'nickname': 'n'},"
             " 'video': {'media': {'stream': {'h264': [{'backup_urls': ['https://x.example/b.mp4'],"
             " 'duration': 5000}]}}}}}]}");
    r = normalize(xhs, {web}, &error);
    QVERIFY2(r, qPrintable(error));
    COMPARE_JSON(*r, result("xiaohongshu", "697c0eee000000000a03c308", Null, "n", "u1", Null, 5,
                            QJsonArray{video("https://x.example/b.mp4", Null, "mp4", Null, Null,
                                             Null, true)},
                            QJsonArray()));
}

void TestVideoExtract::normalizeHostileData()
{
    QString error;
    const Target dy =
        mustDetect(QStringLiteral("https://www.douyin.com/video/7448118827402972455"));
    // Non-http URLs are dropped; wrong types read as absent; negative and zero numbers null.
    QJsonArray rates;
    for (int i = 0; i < 500; ++i)
        rates.append(QJsonObject{
            {"play_addr",
             QJsonObject{
                 {"url_list", QJsonArray{QStringLiteral("https://c.example/%1.mp4").arg(i)}},
                 {"width", i % 2 ? 0 : -1},
                 {"height", "tall"},
                 {"data_size", true}}}});
    rates.prepend(QJsonObject{
        {"play_addr",
         QJsonObject{{"url_list", QJsonArray{"javascript:alert(1)", "file:///etc/passwd"}}}}});
    rates.prepend(QJsonObject{{"play_addr", "not an object"}});
    rates.prepend(QJsonValue(42));
    const QJsonObject data{
        {"aweme_detail",
         QJsonObject{{"desc", QJsonArray{"x"}},
                     {"author", "nobody"},
                     {"video", QJsonObject{{"bit_rate", rates}, {"duration", -3}, {"cover", 7}}}}}};
    const std::optional<QJsonObject> r = normalize(dy, {data}, &error);
    QVERIFY2(r, qPrintable(error));
    const QJsonArray videos = (*r)["videos"].toArray();
    // Bounded: the first 64 entries are read (three of them junk).
    QCOMPARE(videos.size(), 61);
    for (const QJsonValue &v : videos) {
        QVERIFY(v["url"].toString().startsWith(u"https://c.example/"));
        QCOMPARE(v["width"], Null);
        QCOMPARE(v["height"], Null);
        QCOMPARE(v["size"], Null);
        QCOMPARE(v["quality"], Null);
    }
    QCOMPARE((*r)["title"], Null);
    QCOMPARE((*r)["author"], Null);
    QCOMPARE((*r)["duration"], Null);
    QCOMPARE((*r)["coverUrl"], Null);
    // Every platform's reader survives answers of the wrong shapes.
    const QList<QJsonObject> junk{
        QJsonObject{{"data", "x"},
                    {"items", 3},
                    {"note_list", QJsonObject()},
                    {"aweme_detail", QJsonArray()},
                    {"media", QJsonArray{1}},
                    {"visionVideoDetail", "s"},
                    {"videos", QJsonObject{{"items", 1}}}},
        QJsonObject{{"data", QJsonObject{{"dash", QJsonArray()}, {"durl", QJsonObject()}}}}};
    for (const char *url :
         {"https://youtu.be/dQw4w9WgXcQ", "https://www.douyin.com/video/7448118827402972455",
          "https://x.com/a/status/1", "https://www.bilibili.com/video/BV1M1421t7hT",
          "https://www.instagram.com/p/DPwhVB-jo9k/", "https://v.kuaishou.com/GKTpYm",
          "https://www.xiaohongshu.com/explore/697c0eee000000000a03c308",
          "https://m.weibo.cn/detail/5242977759006596"})
        QVERIFY2(!normalize(mustDetect(QLatin1StringView(url)), junk, &error), url);

    // Numbers beyond what a qint64 holds: an id is null, not a converted garbage value, and the
    // largest sizes still sort (width x height overflowed a qint64 before; the fuzzer found the
    // id case).
    const Target yt = mustDetect(QStringLiteral("https://youtu.be/dQw4w9WgXcQ"));
    const QJsonObject huge{
        {"id", 1.4e45},
        {"channel", QJsonObject{{"id", -1e300}, {"name", "n"}}},
        {"videos",
         QJsonObject{{"items", QJsonArray{QJsonObject{{"url", "https://v.example/small.mp4"},
                                                      {"width", 640},
                                                      {"height", 360}},
                                          QJsonObject{{"url", "https://v.example/big.mp4"},
                                                      {"width", 1e15},
                                                      {"height", 1e15}}}}}}};
    const std::optional<QJsonObject> h = normalize(yt, {huge}, &error);
    QVERIFY2(h, qPrintable(error));
    QCOMPARE((*h)["videoId"].toString(), QStringLiteral("dQw4w9WgXcQ")); // from the URL
    QCOMPARE((*h)["authorId"], Null);
    const QJsonArray sized = (*h)["videos"].toArray();
    QCOMPARE(sized.size(), 2);
    QCOMPARE(sized[0]["url"].toString(), QStringLiteral("https://v.example/big.mp4"));
    QCOMPARE(sized[0]["width"].toDouble(), 1e15);
}

QTEST_APPLESS_MAIN(TestVideoExtract)
#include "tst_video_extract.moc"
