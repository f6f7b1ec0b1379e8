// SocialCatalog (server/social/engine/SocialCatalog.h): the upstream's OpenAPI catalog read into
// actions, and Switchyard's own OpenAPI 3.1 document built from it. The real upstream document
// (SOCIAL_OPENAPI) and small ones written here, hostile shapes included; parse() and document()
// are timed on the real one.

#include "SocialCatalog.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QSet>
#include <QTest>

namespace {

QByteArray readReal()
{
    QFile f(QStringLiteral(SOCIAL_OPENAPI));
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", SOCIAL_OPENAPI);
    return f.readAll();
}

QByteArray json(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

// A minimal OpenAPI 3 document with these paths and components.
QJsonObject openapi(const QJsonObject &paths, const QJsonObject &components = {})
{
    return {{"openapi", "3.0.3"},
            {"info", QJsonObject{{"title", "T"}, {"version", "1.2"}}},
            {"paths", paths},
            {"components", components}};
}

QJsonObject getOp(const QJsonArray &params = {}, const QString &operationId = {})
{
    QJsonObject op{{"summary", "s"}, {"responses", QJsonObject{}}};
    if (!params.isEmpty())
        op.insert("parameters", params);
    if (!operationId.isNull())
        op.insert("operationId", operationId);
    return op;
}

QJsonObject query(const QString &name, bool required = false)
{
    return {{"name", name},
            {"in", "query"},
            {"required", required},
            {"schema", QJsonObject{{"type", "string"}}}};
}

// The value at a local JSON pointer ("#/a/b~1c"), or undefined.
QJsonValue pointer(const QJsonObject &doc, const QString &ref)
{
    if (!ref.startsWith(u"#/"))
        return QJsonValue(QJsonValue::Undefined);
    QJsonValue at = doc;
    for (QString token : ref.mid(2).split(u'/')) {
        token = QString::fromUtf8(QByteArray::fromPercentEncoding(token.toUtf8()));
        token.replace(QLatin1String("~1"), QLatin1String("/"))
            .replace(QLatin1String("~0"), QLatin1String("~"));
        if (at.isObject() && at.toObject().contains(token)) {
            at = at.toObject().value(token);
        } else if (at.isArray()) {
            bool ok = false;
            const int i = token.toInt(&ok);
            if (!ok || i < 0 || i >= at.toArray().size())
                return QJsonValue(QJsonValue::Undefined);
            at = at.toArray().at(i);
        } else {
            return QJsonValue(QJsonValue::Undefined);
        }
    }
    return at;
}

// Every "$ref" anywhere in `v`.
void collectRefs(const QJsonValue &v, QStringList *refs)
{
    if (v.isArray()) {
        for (const QJsonValue &item : v.toArray())
            collectRefs(item, refs);
    } else if (v.isObject()) {
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            if (it.key() == u"$ref")
                refs->append(it.value().isString() ? it.value().toString()
                                                   : QStringLiteral("<not a string>"));
            else
                collectRefs(it.value(), refs);
        }
    }
}

// The structural promises of document(): every $ref resolves inside it, operationIds are
// unique, each path has one operation with query parameters and responses, components.schemas
// holds exactly what is referenced (transitively) plus nothing else. Returns "" or the problem.
QString checkDocument(const QJsonObject &doc,
                      const QString &pathPrefix = QStringLiteral("/v1/social-media/data/"))
{
    QStringList refs;
    collectRefs(doc, &refs);
    for (const QString &ref : refs)
        if (pointer(doc, ref).isUndefined() ||
            !(pointer(doc, ref).isObject() || pointer(doc, ref).isBool()))
            return QStringLiteral("dangling $ref %1").arg(ref);
    if (doc.value("openapi") != QLatin1String("3.1.0"))
        return QStringLiteral("openapi");
    if (!doc.value("info").toObject().value("title").isString() ||
        doc.value("info").toObject().value("version").toString().isEmpty())
        return QStringLiteral("info");
    QSet<QString> ids;
    const QJsonObject paths = doc.value("paths").toObject();
    for (auto it = paths.begin(); it != paths.end(); ++it) {
        if (!it.key().startsWith(pathPrefix) || it.key().contains(u'{'))
            return QStringLiteral("path %1").arg(it.key());
        const QJsonObject item = it.value().toObject();
        if (item.size() != 1 || !(item.contains("get") || item.contains("post")))
            return QStringLiteral("methods of %1").arg(it.key());
        const QJsonObject op = item.begin().value().toObject();
        const QString id = op.value("operationId").toString();
        if (id.isEmpty() || ids.contains(id))
            return QStringLiteral("operationId %1").arg(id);
        ids.insert(id);
        QSet<QString> names;
        for (const QJsonValue &p : op.value("parameters").toArray()) {
            const QJsonObject param = p.toObject();
            if (param.value("in") != QLatin1String("query") || !param.value("required").isBool() ||
                !param.value("schema").isObject() || param.value("name").toString().isEmpty() ||
                names.contains(param.value("name").toString()))
                return QStringLiteral("parameter of %1").arg(it.key());
            names.insert(param.value("name").toString());
        }
        const QJsonObject responses = op.value("responses").toObject();
        for (const char *status : {"200", "400", "401", "402", "403", "429", "503", "504"})
            if (!responses.contains(QLatin1String(status)))
                return QStringLiteral("response %1 of %2").arg(QLatin1String(status), it.key());
        for (const QJsonValue &tag : op.value("tags").toArray())
            if (!tag.isString())
                return QStringLiteral("tags");
    }
    // The schemas: all referenced from outside components.schemas, or from a referenced one.
    const QJsonObject schemas = doc.value("components").toObject().value("schemas").toObject();
    QSet<QString> reached;
    QStringList todo;
    QJsonObject outside = doc;
    QJsonObject components = doc.value("components").toObject();
    components.remove("schemas");
    outside.insert("components", components);
    QStringList start;
    collectRefs(outside, &start);
    for (const QString &ref : start)
        if (ref.startsWith(u"#/components/schemas/"))
            todo.append(ref.mid(21));
    while (!todo.isEmpty()) {
        const QString name = todo.takeLast();
        if (reached.contains(name))
            continue;
        reached.insert(name);
        QStringList inner;
        collectRefs(schemas.value(name), &inner);
        for (const QString &ref : inner)
            todo.append(ref.mid(21));
    }
    for (auto it = schemas.begin(); it != schemas.end(); ++it) {
        if (!reached.contains(it.key()))
            return QStringLiteral("schema %1 copied but not referenced").arg(it.key());
        static const QRegularExpression name(QStringLiteral("^[a-zA-Z0-9._-]+$"));
        if (!name.match(it.key()).hasMatch())
            return QStringLiteral("schema name %1").arg(it.key());
    }
    const QJsonObject security =
        doc.value("components").toObject().value("securitySchemes").toObject();
    if (security.value("bearerAuth").toObject().value("scheme") != QLatin1String("bearer") ||
        security.value("apiKeyHeader").toObject().value("name") != QLatin1String("X-API-Key") ||
        security.value("apiKeyHeader").toObject().value("in") != QLatin1String("header"))
        return QStringLiteral("securitySchemes");
    return {};
}

SocialCatalog::DocumentOptions e2eOptions()
{
    SocialCatalog::DocumentOptions o;
    o.serverUrl = QStringLiteral("https://sy.example.com");
    o.version = QStringLiteral("0.1.0");
    o.publicName = [](const QString &p) {
        if (p == u"twitter")
            return QStringLiteral("x");
        if (p == u"reddit" || p == u"tikhub")
            return QString();
        return p;
    };
    return o;
}

// A random JSON value of any type, small.
QJsonValue randomValue(QRandomGenerator &rng, int depth = 0)
{
    switch (rng.bounded(depth > 2 ? 6 : 8)) {
    case 0:
        return QJsonValue();
    case 1:
        return rng.bounded(2) == 1;
    case 2:
        return double(rng.bounded(1000)) - 500;
    case 3:
        return QStringLiteral("#/components/schemas/A");
    case 4:
        return QString();
    case 5:
        return QStringLiteral("query");
    case 6: {
        QJsonArray a;
        for (int n = rng.bounded(3); n > 0; --n)
            a.append(randomValue(rng, depth + 1));
        return a;
    }
    default: {
        static const char *const keys[] = {"$ref", "name", "in", "schema", "type", "items", "get"};
        QJsonObject o;
        for (int n = rng.bounded(3); n > 0; --n)
            o.insert(QLatin1String(keys[rng.bounded(int(std::size(keys)))]),
                     randomValue(rng, depth + 1));
        return o;
    }
    }
}

// `v` with the value at a random place (any depth) replaced by `replacement`.
QJsonValue mutate(const QJsonValue &v, QRandomGenerator &rng, const QJsonValue &replacement)
{
    if (rng.bounded(4) == 0)
        return replacement;
    if (v.isObject()) {
        QJsonObject o = v.toObject();
        if (o.isEmpty())
            return replacement;
        auto it = o.begin() + rng.bounded(int(o.size()));
        *it = mutate(*it, rng, replacement);
        return o;
    }
    if (v.isArray()) {
        QJsonArray a = v.toArray();
        if (a.isEmpty())
            return replacement;
        const int i = rng.bounded(int(a.size()));
        a[i] = mutate(a.at(i), rng, replacement);
        return a;
    }
    return replacement;
}

} // namespace

class TestSocialCatalog : public QObject
{
    Q_OBJECT

private slots:
    void realFile()
    {
        QString error;
        const auto c = SocialCatalog::parse(readReal(), &error);
        QVERIFY2(c, qPrintable(error));
        QCOMPARE(c->size(), 1010);
        int get = 0, post = 0;
        for (const SocialAction &a : c->actions()) {
            (a.method == "GET" ? get : post)++;
            QVERIFY(a.method == "GET" || a.method == "POST");
            QVERIFY(a.path.startsWith(a.platform + u'/'));
            QCOMPARE(c->find(a.path), &a);
        }
        QCOMPARE(get, 897);
        QCOMPARE(post, 113);
        QCOMPARE(c->version(), QStringLiteral("V5.3.2"));
        QVERIFY(c->title().startsWith(u"TikHub"));
        QCOMPARE(c->schemas().size(), 114);

        // Platforms: sorted by name, with their counts.
        const QList<SocialPlatform> platforms = c->platforms();
        QCOMPARE(platforms.size(), 26);
        QHash<QString, int> counts;
        int total = 0;
        for (qsizetype i = 0; i < platforms.size(); ++i) {
            if (i > 0)
                QVERIFY(platforms.at(i - 1).name < platforms.at(i).name);
            counts.insert(platforms.at(i).name, platforms.at(i).actions);
            total += platforms.at(i).actions;
        }
        QCOMPARE(total, 1010);
        QCOMPARE(counts.value("douyin"), 246);
        QCOMPARE(counts.value("tiktok"), 205);
        QCOMPARE(counts.value("instagram"), 88);
        QCOMPARE(counts.value("xiaohongshu"), 79);
        QCOMPARE(counts.value("twitter"), 13);
        QCOMPARE(counts.value("wechat_channels"), 10);
        QCOMPARE(counts.value("health"), 1);

        // A known GET action.
        const SocialAction *video = c->find(u"douyin/app/v3/fetch_one_video");
        QVERIFY(video);
        QCOMPARE(video->method, QByteArray("GET"));
        QCOMPARE(video->platform, QStringLiteral("douyin"));
        QCOMPARE(video->requiredParams(), QStringList{"aweme_id"});
        QCOMPARE(video->params.size(), 1);
        QCOMPARE(video->params.at(0).schema.value("type").toString(), QStringLiteral("string"));
        QCOMPARE(video->params.at(0).example.toString(), QStringLiteral("7448118827402972455"));
        QVERIFY(video->params.at(0).description.contains(u"Video id"));
        QCOMPARE(video->operationId,
                 QStringLiteral("fetch_one_video_api_v1_douyin_app_v3_fetch_one_video_get"));
        QCOMPARE(video->tags, QStringList{"Douyin-App-V3-API"});
        QVERIFY(video->summary.contains(u"Get single video data"));
        QVERIFY(video->requestBody.isEmpty());
        // Exact and case-sensitive, no leading slash.
        QVERIFY(!c->find(u"Douyin/app/v3/fetch_one_video"));
        QVERIFY(!c->find(u"/douyin/app/v3/fetch_one_video"));
        QVERIFY(!c->find(u"douyin/app/v3/fetch_one_video/"));
        QVERIFY(!c->find(u"douyin/app/v3"));
        // An action without an interface segment.
        QCOMPARE(c->find(u"wechat_channels/fetch_home_page")->platform,
                 QStringLiteral("wechat_channels"));

        // A POST action with its body, as written ($ref into components.schemas).
        const SocialAction *feed = c->find(u"tiktok/web/fetch_home_feed");
        QVERIFY(feed);
        QCOMPARE(feed->method, QByteArray("POST"));
        const QString ref = feed->requestBody.value("content")
                                .toObject()
                                .value("application/json")
                                .toObject()
                                .value("schema")
                                .toObject()
                                .value("$ref")
                                .toString();
        QCOMPARE(ref,
                 QStringLiteral("#/components/schemas/"
                                "Body_fetch_home_feed_api_v1_tiktok_web_fetch_home_feed_post"));
        QVERIFY(c->schemas().contains(ref.mid(21)));
        // The one POST without a body, and the multipart one.
        QVERIFY(c->find(u"douyin/xingtu_v2/get_playlet_actor_rank_catalog")->requestBody.isEmpty());
        QVERIFY(c->find(u"sora2/upload_image")
                    ->requestBody.value("content")
                    .toObject()
                    .contains("multipart/form-data"));
        // A parameter whose schema refers to a component.
        const SocialAction *info = c->find(u"youtube/web/get_video_info");
        QVERIFY(info);
        bool refSchema = false;
        for (const SocialParam &p : info->params)
            refSchema = refSchema || p.schema.value("$ref") ==
                                         QLatin1String("#/components/schemas/UrlAccessMode");
        QVERIFY(refSchema);
    }

    // The benchmark asked for: parse() and document() on the real file (best of 5).
    void realFileTimes()
    {
        const QByteArray data = readReal();
        qint64 parseBest = std::numeric_limits<qint64>::max(), documentBest = parseBest;
        qsizetype bytes = 0;
        for (int i = 0; i < 5; ++i) {
            QElapsedTimer t;
            t.start();
            const auto c = SocialCatalog::parse(data, nullptr);
            parseBest = qMin(parseBest, t.nsecsElapsed());
            QVERIFY(c);
            t.restart();
            const QJsonObject doc = c->document(e2eOptions());
            documentBest = qMin(documentBest, t.nsecsElapsed());
            bytes = QJsonDocument(doc).toJson(QJsonDocument::Compact).size();
        }
        qInfo("parse %.1f ms, document %.1f ms (%.1f MB of JSON), best of 5", parseBest / 1e6,
              documentBest / 1e6, bytes / 1e6);
        QVERIFY(parseBest < 1000 * 1000 * 1000LL);
    }

    void realDocument()
    {
        const auto c = SocialCatalog::parse(readReal(), nullptr);
        QVERIFY(c);
        const QJsonObject doc = c->document(e2eOptions());
        QCOMPARE(checkDocument(doc), QString());
        const QJsonObject paths = doc.value("paths").toObject();
        QCOMPARE(paths.size(), 1010 - 24 - 8); // reddit and tikhub left out
        QCOMPARE(doc.value("servers").toArray().at(0).toObject().value("url").toString(),
                 QStringLiteral("https://sy.example.com"));
        QCOMPARE(doc.value("info").toObject().value("version").toString(), QStringLiteral("0.1.0"));
        QCOMPARE(doc.value("security").toArray(),
                 (QJsonArray{QJsonObject{{"bearerAuth", QJsonArray()}},
                             QJsonObject{{"apiKeyHeader", QJsonArray()}}}));
        // Renamed: under the public name only; disabled: absent.
        QVERIFY(paths.contains("/v1/social-media/data/x/web/fetch_tweet_detail"));
        for (auto it = paths.begin(); it != paths.end(); ++it) {
            QVERIFY2(!it.key().startsWith(u"/v1/social-media/data/twitter/"), qPrintable(it.key()));
            QVERIFY2(!it.key().startsWith(u"/v1/social-media/data/reddit/"), qPrintable(it.key()));
            QVERIFY2(!it.key().startsWith(u"/v1/social-media/data/tikhub/"), qPrintable(it.key()));
        }
        // The known action, as the e2e test reads it.
        const QJsonObject op = paths.value("/v1/social-media/data/douyin/app/v3/fetch_one_video")
                                   .toObject()
                                   .value("get")
                                   .toObject();
        const QJsonArray params = op.value("parameters").toArray();
        QCOMPARE(params.size(), 1);
        QCOMPARE(params.at(0).toObject(),
                 (QJsonObject{{"name", "aweme_id"},
                              {"in", "query"},
                              {"required", true},
                              {"description", "作品id/Video id"},
                              {"example", "7448118827402972455"},
                              {"schema", QJsonObject{{"type", "string"},
                                                     {"description", "作品id/Video id"},
                                                     {"title", "Aweme Id"}}}}));
        QCOMPARE(op.value("operationId").toString(),
                 QStringLiteral("fetch_one_video_api_v1_douyin_app_v3_fetch_one_video_get"));
        // A POST body and the schema it needs, copied.
        const QJsonObject post = paths.value("/v1/social-media/data/tiktok/web/fetch_home_feed")
                                     .toObject()
                                     .value("post")
                                     .toObject();
        const QString ref = post.value("requestBody")
                                .toObject()
                                .value("content")
                                .toObject()
                                .value("application/json")
                                .toObject()
                                .value("schema")
                                .toObject()
                                .value("$ref")
                                .toString();
        QVERIFY(pointer(doc, ref).isObject());
        // The multipart body is not offered (the route takes JSON bodies only).
        QVERIFY(!paths.value("/v1/social-media/data/sora2/upload_image")
                     .toObject()
                     .value("post")
                     .toObject()
                     .contains("requestBody"));
        // FastAPI's named examples in a parameter schema become JSON Schema's array.
        for (const QJsonValue &p :
             paths.value("/v1/social-media/data/youtube/web/get_general_search")
                 .toObject()
                 .value("get")
                 .toObject()
                 .value("parameters")
                 .toArray()) {
            const QJsonValue examples = p.toObject().value("schema").toObject().value("examples");
            QVERIFY(examples.isUndefined() || examples.isArray());
        }
        // The envelope and the error body.
        const QJsonObject schemas = doc.value("components").toObject().value("schemas").toObject();
        QCOMPARE(schemas.value("SwitchyardEnvelope")
                     .toObject()
                     .value("properties")
                     .toObject()
                     .value("code"),
                 QJsonValue(QJsonObject{{"type", "integer"}}));
        QVERIFY(schemas.value("SwitchyardError")
                    .toObject()
                    .value("properties")
                    .toObject()
                    .value("error")
                    .toObject()
                    .value("properties")
                    .toObject()
                    .contains("message"));
        QVERIFY(!schemas.contains("HTTPValidationError")); // not referenced by anything shown

        // Everything enabled, no public names given: every action, under its own name.
        const QJsonObject all = c->document({});
        QCOMPARE(checkDocument(all), QString());
        QCOMPARE(all.value("paths").toObject().size(), 1010);
        QCOMPARE(all.value("info").toObject().value("version").toString(), QStringLiteral("0"));
        QCOMPARE(all.value("servers").toArray().at(0).toObject().value("url").toString(),
                 QStringLiteral("/"));
    }

    void refParameters()
    {
        const QJsonObject components{
            {"parameters",
             QJsonObject{{"Id", query("id", true)},
                         {"Alias", QJsonObject{{"$ref", "#/components/parameters/Id"}}},
                         {"Loop", QJsonObject{{"$ref", "#/components/parameters/Loop"}}},
                         {"Header", QJsonObject{{"name", "h"}, {"in", "header"}}},
                         {"a/b", query("slash")},
                         {"NotObject", 5}}}};
        const QJsonObject item{
            {"parameters", QJsonArray{query("shared"), query("over", false)}},
            {"get", getOp(QJsonArray{QJsonObject{{"$ref", "#/components/parameters/Alias"}},
                                     QJsonObject{{"$ref", "#/components/parameters/Loop"}},
                                     QJsonObject{{"$ref", "#/components/parameters/Header"}},
                                     QJsonObject{{"$ref", "#/components/parameters/Missing"}},
                                     QJsonObject{{"$ref", "#/components/parameters/NotObject"}},
                                     QJsonObject{{"$ref", "#/components/parameters/a~1b"}},
                                     QJsonObject{{"$ref", "other.json#/components/parameters/Id"}},
                                     QJsonObject{{"$ref", 7}}, query("over", true),
                                     QJsonObject{{"name", "p"}, {"in", "path"}, {"required", true}},
                                     QJsonObject{{"name", "noschema"}, {"in", "query"}}})}};
        QString error;
        const auto c =
            SocialCatalog::parse(json(openapi({{"/api/v1/a/b", item}}, components)), &error);
        QVERIFY2(c, qPrintable(error));
        const SocialAction *a = c->find(u"a/b");
        QVERIFY(a);
        QStringList names;
        for (const SocialParam &p : a->params)
            names.append(p.name);
        QCOMPARE(names, (QStringList{"shared", "over", "id", "slash", "noschema"}));
        QCOMPARE(a->requiredParams(), (QStringList{"over", "id"}));
        QVERIFY(a->params.at(4).schema.isEmpty());
        QVERIFY(a->params.at(4).example.isUndefined());

        const QJsonObject doc = c->document({});
        QCOMPARE(checkDocument(doc, "/v1/social-media/data/"), QString());
        const QJsonArray params = doc.value("paths")
                                      .toObject()
                                      .value("/v1/social-media/data/a/b")
                                      .toObject()
                                      .value("get")
                                      .toObject()
                                      .value("parameters")
                                      .toArray();
        QCOMPARE(params.size(), 5);
        QCOMPARE(params.at(4).toObject().value("schema").toObject(),
                 (QJsonObject{{"type", "string"}}));
    }

    void failures_data()
    {
        QTest::addColumn<QByteArray>("document");
        QTest::addColumn<QString>("prefix");
        QTest::addColumn<QString>("error");
        const QString v1 = QStringLiteral("/api/v1/");
        QTest::newRow("empty") << QByteArray() << v1 << "not JSON (illegal value at offset 0)";
        QTest::newRow("html") << QByteArray("<html>") << v1
                              << "not JSON (illegal value at offset 1)";
        QTest::newRow("truncated") << QByteArray(R"({"openapi":"3.1.0","paths":{)") << v1
                                   << "not JSON (unterminated object at offset 28)";
        QTest::newRow("array") << QByteArray("[]") << v1 << "not an OpenAPI 3 document";
        QTest::newRow("swagger 2")
            << QByteArray(R"({"swagger":"2.0","paths":{}})") << v1 << "not an OpenAPI 3 document";
        QTest::newRow("openapi 2")
            << QByteArray(R"({"openapi":"2.0","paths":{}})") << v1 << "not an OpenAPI 3 document";
        QTest::newRow("openapi number")
            << QByteArray(R"({"openapi":3.1,"paths":{}})") << v1 << "not an OpenAPI 3 document";
        QTest::newRow("paths an array")
            << QByteArray(R"({"openapi":"3.1.0","paths":[]})") << v1 << "not an OpenAPI 3 document";
        QTest::newRow("no paths") << QByteArray(R"({"openapi":"3.1.0"})") << v1
                                  << "no operations under /api/v1/";
        QTest::newRow("empty paths") << QByteArray(R"({"openapi":"3.0.0","paths":{}})") << v1
                                     << "no operations under /api/v1/";
        QTest::newRow("outside the prefix")
            << json(openapi({{"/api/v2/a/b", QJsonObject{{"get", getOp()}}}})) << v1
            << "no operations under /api/v1/";
        QTest::newRow("other methods only")
            << json(openapi({{"/api/v1/a/b", QJsonObject{{"put", getOp()}, {"delete", getOp()}}}}))
            << v1 << "no operations under /api/v1/";
        QTest::newRow("another prefix")
            << json(openapi({{"/api/v1/a/b", QJsonObject{{"get", getOp()}}}}))
            << QStringLiteral("/data/") << "no operations under /data/";
    }

    void failures()
    {
        QFETCH(QByteArray, document);
        QFETCH(QString, prefix);
        QFETCH(QString, error);
        QString why = QStringLiteral("untouched");
        QVERIFY(!SocialCatalog::parse(document, &why, prefix));
        QCOMPARE(why, error);
        QVERIFY(!SocialCatalog::parse(document, nullptr, prefix)); // no error wanted
    }

    // Paths the routes could not match literally, or the relay send as they are, are skipped.
    void pathsAndMethods()
    {
        const QJsonObject get{{"get", getOp()}};
        QJsonObject paths;
        for (const char *p :
             {"/api/v1/ok/one", "/api/v1/single", "/api/v1/a/{id}", "/api/v1/a//b", "/api/v1/a/b/",
              "/api/v1/a/b?x=1", "/api/v1/a/b#f", "/api/v1/a/%41", "/api/v1/a/b c",
              "/api/v1/a/../b", "/api/v1/a/./b", "/api/v1/中文/b", "/api/v1//a/b", "/API/V1/up/per",
              "/api/v1/ok/two.json", "/api/v1/ok/t~i-l_d"})
            paths.insert(QLatin1String(p), get);
        paths.insert("/api/v1/both/ways",
                     QJsonObject{{"post", getOp({}, "p")}, {"get", getOp({}, "g")}});
        paths.insert("/api/v1/post/only", QJsonObject{{"post", getOp()}, {"put", getOp()}});
        paths.insert("/api/v1/bad/get", QJsonObject{{"get", 1}, {"post", getOp()}});
        paths.insert("/api/v1/not/object", 1);
        const auto c = SocialCatalog::parse(json(openapi(paths)), nullptr);
        QVERIFY(c);
        QStringList found;
        for (const SocialAction &a : c->actions())
            found.append(a.path + u' ' + QString::fromLatin1(a.method));
        QCOMPARE(found, (QStringList{"bad/get POST", "both/ways GET", "ok/one GET",
                                     "ok/two.json GET", "ok/t~i-l_d GET", "post/only POST"}));
        QCOMPARE(c->find(u"both/ways")->operationId, QStringLiteral("g"));
        QCOMPARE(checkDocument(c->document({})), QString());
    }

    // A path key written twice in the document's text, once behind a byte-order mark that Qt's
    // parser drops: one action each (found by fuzz_social_engine: find() returned the other).
    void pathWrittenTwice()
    {
        const QByteArray doc =
            R"({"openapi":"3.0.0","paths":{"/api/v1/a/b":{"get":{"operationId":"first"}},)"
            R"("/api/v1/c/d":{"get":{}},"/api/v1/a/b":{"get":{"operationId":"second"}},)"
            "\"\xEF\xBB\xBF/api/v1/c/d\":{\"get\":{\"operationId\":\"bom\"}}}}";
        const auto c = SocialCatalog::parse(doc, nullptr);
        QVERIFY(c);
        QCOMPARE(c->size(), 2);
        for (const SocialAction &a : c->actions())
            QCOMPARE(c->find(a.path), &a);
        QCOMPARE(c->find(u"a/b")->operationId, QStringLiteral("second"));
    }

    void operationIds()
    {
        QJsonObject paths;
        paths.insert("/api/v1/p/dup1", QJsonObject{{"get", getOp({}, "same")}});
        paths.insert("/api/v1/p/dup2", QJsonObject{{"get", getOp({}, "same")}});
        paths.insert("/api/v1/p/none", QJsonObject{{"get", getOp()}});
        paths.insert("/api/v1/p/empty", QJsonObject{{"get", getOp({}, "")}});
        paths.insert("/api/v1/p/number", QJsonObject{{"get", QJsonObject{{"operationId", 5}}}});
        paths.insert("/api/v1/p/spaces", QJsonObject{{"get", getOp({}, "has spaces")}});
        // Taken already: the derived id of p/none, and a derived one's suffix.
        paths.insert("/api/v1/p/taken", QJsonObject{{"get", getOp({}, "p_none_get")}});
        paths.insert("/api/v1/p/taken2", QJsonObject{{"get", getOp({}, "p_dup1_get")}});
        paths.insert("/api/v1/p/unique", QJsonObject{{"post", getOp({}, "unique.id-1")}});
        paths.insert("/api/v1/q/x", QJsonObject{{"get", getOp({}, "same_in_q")}});
        paths.insert("/api/v1/r/x", QJsonObject{{"get", getOp({}, "same_in_q")}});
        const auto c = SocialCatalog::parse(json(openapi(paths)), nullptr);
        QVERIFY(c);
        SocialCatalog::DocumentOptions o;
        // Only r's duplicate is shown: q is disabled, so r keeps the upstream's id.
        o.publicName = [](const QString &p) { return p == u"q" ? QString() : p; };
        const QJsonObject doc = c->document(o);
        QCOMPARE(checkDocument(doc), QString());
        QHash<QString, QString> ids;
        const QJsonObject docPaths = doc.value("paths").toObject();
        for (auto it = docPaths.begin(); it != docPaths.end(); ++it)
            ids.insert(
                it.key().mid(22),
                it.value().toObject().begin().value().toObject().value("operationId").toString());
        QCOMPARE(ids.value("p/dup1"), QStringLiteral("p_dup1_get_2"));
        QCOMPARE(ids.value("p/dup2"), QStringLiteral("p_dup2_get"));
        QCOMPARE(ids.value("p/none"), QStringLiteral("p_none_get_2"));
        QCOMPARE(ids.value("p/empty"), QStringLiteral("p_empty_get"));
        QCOMPARE(ids.value("p/number"), QStringLiteral("p_number_get"));
        QCOMPARE(ids.value("p/spaces"), QStringLiteral("p_spaces_get"));
        QCOMPARE(ids.value("p/taken"), QStringLiteral("p_none_get"));
        QCOMPARE(ids.value("p/taken2"), QStringLiteral("p_dup1_get"));
        QCOMPARE(ids.value("p/unique"), QStringLiteral("unique.id-1"));
        QCOMPARE(ids.value("r/x"), QStringLiteral("same_in_q"));
        QVERIFY(!ids.contains("q/x"));
        // A renamed platform: derived ids use the public path.
        o.publicName = [](const QString &p) { return p == u"p" ? QStringLiteral("pub") : p; };
        const QJsonObject renamed = c->document(o);
        QCOMPARE(checkDocument(renamed), QString());
        QCOMPARE(renamed.value("paths")
                     .toObject()
                     .value("/v1/social-media/data/pub/none")
                     .toObject()
                     .value("get")
                     .toObject()
                     .value("operationId")
                     .toString(),
                 QStringLiteral("pub_none_get"));
    }

    // Only the schemas referenced, transitively, wherever a $ref sits; no $ref left dangling.
    void schemaClosure()
    {
        const QJsonObject ref{{"$ref", "#/components/schemas/Leaf"}};
        const QJsonObject schemas{
            {"Body",
             QJsonObject{
                 {"type", "object"},
                 {"properties",
                  QJsonObject{
                      {"a", QJsonObject{{"$ref", "#/components/schemas/InProps"}}},
                      {"b", QJsonObject{{"type", "array"},
                                        {"items",
                                         QJsonObject{{"$ref", "#/components/schemas/InItems"}}}}},
                      {"$ref", QJsonObject{{"type", "string"}}}}},
                 {"additionalProperties",
                  QJsonObject{{"$ref", "#/components/schemas/InAdditional"}}},
                 {"allOf", QJsonArray{QJsonObject{{"$ref", "#/components/schemas/InAllOf"}}}},
                 {"anyOf", QJsonArray{QJsonObject{{"$ref", "#/components/schemas/InAnyOf"}},
                                      QJsonObject{{"type", "null"}}}},
                 {"oneOf", QJsonArray{QJsonObject{{"$ref", "#/components/schemas/Cycle"}}}},
                 {"not", QJsonObject{{"$ref", "#/components/schemas/Missing"}}},
                 {"$id", "https://evil.example/x"}}},
            {"InProps", ref},
            {"InItems", QJsonObject{{"type", "integer"}}},
            {"InAdditional", QJsonObject{{"$ref", "other.json#/Leaf"}}},
            {"InAllOf", QJsonObject{{"$ref", "#/components/schemas/Leaf/properties/x"}}},
            {"InAnyOf", true},
            {"Cycle",
             QJsonObject{
                 {"properties",
                  QJsonObject{{"self", QJsonObject{{"$ref", "#/components/schemas/Cycle"}}}}}}},
            {"Leaf", QJsonObject{{"type", "string"}}},
            {"Unused", QJsonObject{{"$ref", "#/components/schemas/Leaf"}}},
            {"NotSchema", 5},
            {"Param", QJsonObject{{"enum", QJsonArray{"a", "b"}}}},
            {"Bad Name/x", QJsonObject{{"type", "string"}}},
            {"SwitchyardError", QJsonObject{{"type", "boolean"}}},
        };
        QJsonObject body{
            {"required", true},
            {"content",
             QJsonObject{
                 {"application/json",
                  QJsonObject{{"schema", QJsonObject{{"$ref", "#/components/schemas/Body"}}}}},
                 {"application/vnd.x+json; charset=utf-8",
                  QJsonObject{{"schema", QJsonObject{{"$ref", "#/components/schemas/NotSchema"}}}}},
                 {"text/plain",
                  QJsonObject{{"schema", QJsonObject{{"$ref", "#/components/schemas/Unused"}}}}}}}};
        QJsonObject post = getOp(QJsonArray{
            QJsonObject{{"name", "e"},
                        {"in", "query"},
                        {"schema", QJsonObject{{"$ref", "#/components/schemas/Param"}}}},
            QJsonObject{{"name", "f"},
                        {"in", "query"},
                        {"schema", QJsonObject{{"$ref", "#/components/schemas/Bad%20Name~1x"}}}},
            QJsonObject{
                {"name", "g"},
                {"in", "query"},
                {"schema", QJsonObject{{"$ref", "#/components/schemas/SwitchyardError"}}}}});
        post.insert("requestBody", body);
        const auto c =
            SocialCatalog::parse(json(openapi({{"/api/v1/s/post", QJsonObject{{"post", post}}}},
                                              {{"schemas", schemas}})),
                                 nullptr);
        QVERIFY(c);
        const QJsonObject doc = c->document({});
        QCOMPARE(checkDocument(doc), QString());
        const QJsonObject out = doc.value("components").toObject().value("schemas").toObject();
        QStringList names = out.keys();
        QCOMPARE(names,
                 (QStringList{"Bad_Name_x", "Body", "Cycle", "InAdditional", "InAllOf", "InAnyOf",
                              "InItems", "InProps", "Leaf", "Param", "SwitchyardEnvelope",
                              "SwitchyardError", "SwitchyardError_2"}));
        QCOMPARE(out.value("SwitchyardError_2").toObject(), (QJsonObject{{"type", "boolean"}}));
        QCOMPARE(out.value("InAdditional").toObject(), QJsonObject()); // an external $ref, dropped
        QCOMPARE(out.value("InAllOf").toObject(),
                 QJsonObject()); // a pointer into a schema, dropped
        QVERIFY(!out.value("Body").toObject().contains("not") ||
                out.value("Body").toObject().value("not").toObject().isEmpty());
        QVERIFY(!out.value("Body").toObject().contains("$id"));
        // A property named "$ref" is dropped like any $ref that is not a usable reference.
        QCOMPARE(out.value("Body").toObject().value("properties").toObject().keys(),
                 (QStringList{"a", "b"}));
        const QJsonObject op = doc.value("paths")
                                   .toObject()
                                   .value("/v1/social-media/data/s/post")
                                   .toObject()
                                   .value("post")
                                   .toObject();
        // JSON bodies only; the one whose schema is no schema keeps its media type without one.
        QCOMPARE(op.value("requestBody").toObject().value("content").toObject().keys(),
                 (QStringList{"application/json", "application/vnd.x+json; charset=utf-8"}));
        QCOMPARE(op.value("requestBody").toObject().value("required"), QJsonValue(true));
    }

    // Public names: renamed, disabled, colliding, unusable.
    void publicNames()
    {
        QJsonObject paths;
        for (const char *p : {"/api/v1/twitter/web/a", "/api/v1/x/web/a", "/api/v1/reddit/app/a",
                              "/api/v1/weibo/web/a", "/api/v1/one/a", "/api/v1/two/a"})
            paths.insert(QLatin1String(p), QJsonObject{{"get", getOp()}});
        const auto c = SocialCatalog::parse(json(openapi(paths)), nullptr);
        QVERIFY(c);
        SocialCatalog::DocumentOptions o;
        o.pathPrefix = QStringLiteral("/data"); // a slash is added at both ends as needed
        o.publicName = [](const QString &p) {
            if (p == u"twitter")
                return QStringLiteral("x"); // wins over the upstream's own "x"
            if (p == u"reddit")
                return QString();
            if (p == u"weibo")
                return QStringLiteral("we/ibo"); // not a segment: left out
            if (p == u"one" || p == u"two")
                return QStringLiteral("both"); // the first by name
            return p;
        };
        const QJsonObject doc = c->document(o);
        QCOMPARE(checkDocument(doc, "/data/"), QString());
        QCOMPARE(doc.value("paths").toObject().keys(),
                 (QStringList{"/data/both/a", "/data/x/web/a"}));
        QCOMPARE(doc.value("paths")
                     .toObject()
                     .value("/data/x/web/a")
                     .toObject()
                     .value("get")
                     .toObject()
                     .value("tags"),
                 QJsonValue(QJsonArray{"x"}));
        o.publicName = [](const QString &) { return QString(); };
        const QJsonObject none = c->document(o);
        QCOMPARE(checkDocument(none, "/data/"), QString());
        QVERIFY(none.value("paths").toObject().isEmpty());
    }

    // Wrong types anywhere: skipped or refused, never a crash; whatever parses gives a sound
    // document.
    void hostileShapes_data()
    {
        QTest::addColumn<QByteArray>("document");
        const QByteArray shapes[] = {
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"get":{"parameters":5}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"get":{"parameters":[1,"x",null,[],{"in":"query"},{"name":5,"in":"query"},{"name":"n","in":5},{"name":"n","in":"query","required":"yes","schema":[],"description":7}]}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"get":{"tags":"x","summary":[],"description":{},"operationId":null}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"get":{"tags":[1,null,"t","t",""]}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"post":{"requestBody":5}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"post":{"requestBody":{"content":[]}}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"post":{"requestBody":{"content":{"application/json":5}}}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"post":{"requestBody":{"content":{"application/json":{"schema":5,"example":{"$ref":"#/x"}}},"required":"no","description":1}}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"post":{"requestBody":{"$ref":"#/components/requestBodies/B"}}}},"components":{"requestBodies":{"B":{"$ref":"#/components/requestBodies/B"}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"post":{"requestBody":{"$ref":"#/components/requestBodies/B"}}}},"components":{"requestBodies":{"B":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/S"}}}}},"schemas":5}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"get":{"parameters":[{"$ref":"#/components/parameters/P"}]}}},"components":{"parameters":[]}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"get":{"parameters":[{"name":"q","in":"query","schema":{"$ref":"#/components/schemas/S","items":{"$ref":5}},"example":{"$ref":"#/components/schemas/S"}}]}}},"components":{"schemas":{"S":{"properties":{"x":{"$ref":"#/components/schemas/S"}}}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"get":{"parameters":[{"name":"q","in":"query","schema":{"examples":5}},{"name":"r","in":"query","schema":{"examples":{"a":1,"b":{"value":[1]}}}}]}}}})",
            R"({"openapi":"3.1.0","info":5,"components":7,"paths":{"/api/v1/a/b":{"get":{}}}})",
            R"({"openapi":"3.1.0","info":{"title":1,"version":[]},"paths":{"/api/v1/a/b":{"get":{},"parameters":{"x":1}}}})",
            R"({"openapi":"3.1.0","paths":{"/api/v1/a/b":{"get":[]},"/api/v1/c/d":{"get":{}}}})",
        };
        int i = 0;
        for (const QByteArray &s : shapes)
            QTest::addRow("shape %d", i++) << s;
    }

    void hostileShapes()
    {
        QFETCH(QByteArray, document);
        QVERIFY2(!QJsonDocument::fromJson(document).isNull(), "the test's JSON");
        QString error;
        const auto c = SocialCatalog::parse(document, &error);
        if (!c)
            return;
        for (const SocialAction &a : c->actions())
            a.requiredParams();
        c->platforms();
        QCOMPARE(checkDocument(c->document({})), QString());
        QCOMPARE(checkDocument(c->document(e2eOptions())), QString());
    }

    // Random wrong types at random places of a small valid document, many times.
    void mutatedDocuments()
    {
        const QJsonObject schemas{
            {"A",
             QJsonObject{{"type", "object"},
                         {"properties",
                          QJsonObject{{"b", QJsonObject{{"$ref", "#/components/schemas/B"}}}}}}},
            {"B", QJsonObject{{"items", QJsonObject{{"$ref", "#/components/schemas/A"}}}}}};
        QJsonObject post = getOp(
            QJsonArray{query("q", true), QJsonObject{{"$ref", "#/components/parameters/P"}}}, "op");
        post.insert(
            "requestBody",
            QJsonObject{
                {"content",
                 QJsonObject{
                     {"application/json",
                      QJsonObject{{"schema", QJsonObject{{"$ref", "#/components/schemas/A"}}}}}}}});
        const QJsonObject base =
            openapi({{"/api/v1/a/b", QJsonObject{{"get", getOp(QJsonArray{query("x")}, "g")}}},
                     {"/api/v1/a/c", QJsonObject{{"post", post}}},
                     {"/api/v1/twitter/c",
                      QJsonObject{{"parameters", QJsonArray{query("y")}}, {"get", getOp()}}}},
                    {{"schemas", schemas}, {"parameters", QJsonObject{{"P", query("p")}}}});
        // CATALOG_SEED=<n> repeats a run.
        const quint32 seed = qEnvironmentVariableIsSet("CATALOG_SEED")
                                 ? qgetenv("CATALOG_SEED").toUInt()
                                 : QRandomGenerator::global()->generate();
        qInfo("seed %u (CATALOG_SEED)", seed);
        QRandomGenerator rng(seed);
        int parsed = 0;
        for (int i = 0; i < 3000; ++i) {
            QJsonValue doc = base;
            for (int n = 1 + rng.bounded(3); n > 0; --n)
                doc = mutate(doc, rng, randomValue(rng));
            const QByteArray bytes = QJsonDocument(doc.toObject()).toJson(QJsonDocument::Compact);
            const auto c = SocialCatalog::parse(doc.isObject() ? bytes : QByteArray("[]"), nullptr);
            if (!c)
                continue;
            ++parsed;
            const QString problem = checkDocument(c->document(e2eOptions()));
            QVERIFY2(problem.isEmpty(), qPrintable(problem + u'\n' + QString::fromUtf8(bytes)));
        }
        QVERIFY(parsed > 300);
    }
};

QTEST_GUILESS_MAIN(TestSocialCatalog)
#include "tst_social_catalog.moc"
