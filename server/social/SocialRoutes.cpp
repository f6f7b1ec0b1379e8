#include "SocialRoutes.h"

#include "DatabaseService.h"
#include "RequestContext.h"
#include "social/SocialStore.h"
#include "SocialFamily.h"
#include "SocialRelay.h"
#include "upstream/UpstreamClient.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QPointer>
#include <QUrl>

namespace {

const QString kDataPrefix = QStringLiteral("/v1/social-media/data/");
// A POST action's body: JSON, or an upload (sora2/upload_image takes an image).
constexpr qint64 kMaxBodyBytes = 10 * 1024 * 1024;

void invalidPath(const ContextPtr &ctx)
{
    ctx->respondError(400, QStringLiteral("Invalid path"), QStringLiteral("invalid_request_error"));
}

// The query as the client sent it, after '?', byte for byte.
QByteArray rawQuery(const HttpRequest &request)
{
    const qsizetype q = request.target.indexOf('?');
    return q < 0 ? QByteArray() : request.target.mid(q + 1);
}

// The names present in a raw query (percent-decoded, '+' as a space), as the upstream reads them.
QSet<QString> queryNames(const QByteArray &query)
{
    QSet<QString> names;
    for (const QByteArray &pair : query.split('&')) {
        if (pair.isEmpty())
            continue;
        QByteArray name = pair.left(pair.indexOf('=') < 0 ? pair.size() : pair.indexOf('='));
        name.replace('+', ' ');
        names.insert(QString::fromUtf8(QByteArray::fromPercentEncoding(name)));
    }
    return names;
}

// The catalog, or a 503 when none is loaded yet.
std::shared_ptr<const SocialCatalog> catalogOr503(SocialFamily &family, const ContextPtr &ctx)
{
    auto catalog = family.catalog() ? family.catalog()->current() : nullptr;
    if (!catalog) {
        const CatalogStatus s = family.catalog() ? family.catalog()->status() : CatalogStatus{};
        ctx->respondError(
            503,
            QStringLiteral("The social-data catalog is not loaded yet%1; try again "
                           "later.")
                .arg(s.lastError.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(s.lastError)),
            QStringLiteral("server_error"));
    }
    return catalog;
}

// The upstream call, once the price is held.
void relay(SocialFamily &family, UpstreamClient *client, const ContextPtr &ctx,
           const SocialRelay::Request &req)
{
    ctx->reserve(req.price, [&family, client, ctx, req] {
        SocialRelay::start(*client, family.keys(), family.config().provider, ctx, req);
    });
}

void relayAction(SocialFamily &family, UpstreamClient *client, QObject *home, const ContextPtr &ctx)
{
    const auto catalog = catalogOr503(family, ctx);
    if (!catalog)
        return;
    const SocialConfig &config = family.config();
    // The path as sent (decoded), empty segments kept: "douyin//x" is no action.
    const QString path = ctx->request().path.mid(kDataPrefix.size());
    const qsizetype slash = path.indexOf(u'/');
    if (slash <= 0 || path.endsWith(u'/') || path.contains(QLatin1String("//")))
        return invalidPath(ctx);
    const QString prefix = path.left(slash);
    const QSet<QString> known = family.platformNames(catalog);
    const QString platform =
        config.upstreamPlatform(prefix, QStringList(known.begin(), known.end()));
    if (platform.isEmpty()) {
        if (known.contains(prefix)) // disabled, or published under another name
            return ctx->respondError(403,
                                     QStringLiteral("Platform \"%1\" is not available").arg(prefix),
                                     QStringLiteral("invalid_request_error"));
        return invalidPath(ctx);
    }
    const SocialAction *action = catalog->find(platform + path.mid(slash));
    if (!action)
        return invalidPath(ctx);
    // Both methods reach every action path (HEAD reaches none: the routes refuse it).
    const QByteArray &method = ctx->request().method;
    if (action->method != method)
        return ctx->respondError(
            405,
            QStringLiteral("%1 takes %2, not %3.")
                .arg(path, QString::fromLatin1(action->method), QString::fromLatin1(method)),
            QStringLiteral("invalid_request_error"), {}, {}, {{"Allow", action->method}});
    const QByteArray query = rawQuery(ctx->request());
    const QSet<QString> present = queryNames(query);
    for (const QString &name : action->requiredParams())
        if (!present.contains(name))
            return ctx->respondError(
                400, QStringLiteral("Missing required query parameter: %1").arg(name),
                QStringLiteral("invalid_request_error"));
    QByteArray contentType;
    if (method == "POST") {
        // JSON unless the action declares another body (a multipart upload), whose
        // Content-Type (boundary included) then goes upstream as the client sent it.
        const QByteArray &body = ctx->request().body;
        const QByteArray sent = ctx->request().header("content-type");
        const qsizetype semicolon = sent.indexOf(';');
        const QByteArray media = (semicolon < 0 ? sent : sent.left(semicolon)).trimmed().toLower();
        const QStringList declared = action->requestBody.value("content").toObject().keys();
        if (media.isEmpty() || media == "application/json") {
            QJsonParseError error;
            if (!body.isEmpty() && (QJsonDocument::fromJson(body, &error).isNull() ||
                                    error.error != QJsonParseError::NoError))
                return ctx->respondError(400,
                                         QStringLiteral("The request body must be JSON (%1 at "
                                                        "byte %2).")
                                             .arg(error.errorString())
                                             .arg(error.offset),
                                         QStringLiteral("invalid_request_error"));
            contentType = "application/json";
        } else if (declared.contains(QString::fromLatin1(media))) {
            contentType = sent;
        } else {
            return ctx->respondError(415,
                                     QStringLiteral("%1 takes a body of type %2, not %3.")
                                         .arg(path,
                                              declared.isEmpty()
                                                  ? QStringLiteral("application/json")
                                                  : declared.join(QLatin1String(" or ")),
                                              QString::fromLatin1(media)),
                                     QStringLiteral("invalid_request_error"));
        }
    }
    if (const QString why = config.unusableReason(); !why.isEmpty())
        return ctx->respondError(503, why, QStringLiteral("server_error"));

    SocialRelay::Request req;
    req.method = action->method;
    req.url = (config.provider.baseUrl + config.provider.actionPrefix).toUtf8() +
              action->path.toUtf8() + (query.isEmpty() ? QByteArray() : "?" + query);
    req.body = method == "POST" ? ctx->request().body : QByteArray();
    req.contentType = contentType;
    req.platform = prefix;
    req.price = config.price;
    ctx->usage().model = prefix;
    if (const auto &cache = family.cache(); cache && method == "GET") {
        const int ttl = config.cache.platformTtl.value(platform, config.cache.ttlSeconds);
        if (ttl > 0) {
            req.cache = cache;
            req.cacheKey = action->path.toUtf8() + '?' + query;
            req.cacheTtlMs = ttl * 1000LL;
            const qint64 price = config.cache.billHits ? config.price : 0;
            const auto answer = [ctx, price](const ResponseCache::Answer &hit) {
                const auto respond = [ctx, price, hit] {
                    ctx->usage().cost = price;
                    ctx->respondRaw(
                        hit.status, hit.contentType, hit.body,
                        {qMakePair(QByteArray("X-Switchyard-Cache"), QByteArray("hit"))});
                };
                return price > 0 ? ctx->reserve(price, respond) : respond();
            };
            const qint64 now = QDateTime::currentMSecsSinceEpoch();
            if (auto hit = cache->find(req.cacheKey, now))
                return answer(*hit);
            if (DatabaseService *db = family.sharedCache()) {
                // Another instance may have it: a miss there relays, a failure too.
                req.sharedCache = db;
                req.sharedMaxBytes = config.cache.maxBytes;
                db->read<std::optional<SocialStore::SharedResponse>>(
                    home,
                    [key = req.cacheKey, now](Store &s) {
                        return SocialStore::findResponse(s, key, now);
                    },
                    [&family, client, ctx, req, answer,
                     now](const DbResult<std::optional<SocialStore::SharedResponse>> &r) {
                        if (ctx->isAnswered())
                            return;
                        if (r.ok() && r.value) {
                            const ResponseCache::Answer hit{r.value->status, r.value->contentType,
                                                            r.value->body};
                            req.cache->store(req.cacheKey, hit, now, r.value->expiresMs - now);
                            return answer(hit);
                        }
                        relay(family, client, ctx, req);
                    });
                return;
            }
        }
    }
    relay(family, client, ctx, req);
}

void openApi(SocialFamily &family, const ContextPtr &ctx)
{
    if (!catalogOr503(family, ctx))
        return;
    QString serverUrl = family.config().publicBaseUrl;
    if (serverUrl.isEmpty()) {
        const QByteArray host = ctx->request().header("host");
        serverUrl = QStringLiteral("http://") +
                    (host.isEmpty() ? QStringLiteral("localhost") : QString::fromLatin1(host));
    }
    ctx->respondRaw(200, "application/json",
                    CatalogKeeper::openApiFor(family.catalog()->openApiDocument(), serverUrl));
}

void catalogStatus(SocialFamily &family, const ContextPtr &ctx)
{
    ctx->respondJson(200, family.statusJson());
}

void catalogRefresh(SocialFamily &family, QObject *home, const ContextPtr &ctx)
{
    CatalogKeeper *keeper = family.catalog();
    if (!keeper)
        return ctx->respondError(503, QStringLiteral("The social family is not running."));
    QPointer<QObject> back = home;
    QMetaObject::invokeMethod(keeper, [keeper, back, ctx, &family] {
        keeper->refresh([back, ctx, &family](bool ok, const QString &message) {
            if (!back)
                return;
            QMetaObject::invokeMethod(back, [ctx, ok, message, &family] {
                if (ok)
                    return ctx->respondJson(200, family.statusJson());
                ctx->respondError(502,
                                  QStringLiteral("The catalog could not be refreshed: %1. The "
                                                 "catalog in use is kept.")
                                      .arg(message),
                                  QStringLiteral("upstream_error"), {},
                                  QStringLiteral("catalog_refresh_failed"));
            });
        });
    });
}

} // namespace

QList<RouteSpec> socialRoutes(SocialFamily &family, const ServerScope &scope)
{
    UpstreamClient *client = &scope.upstream(); // the server's one client, shared
    QObject *home = scope.parent();
    QList<RouteSpec> routes;
    for (const char *method : {"GET", "POST"}) {
        RouteSpec r;
        r.method = method;
        r.pattern = kDataPrefix + QStringLiteral("{action+}");
        r.auth = AuthMode::ApiKey;
        r.bucket = QStringLiteral("social");
        r.bodyLimit = kMaxBodyBytes;
        r.errorStyle = SocialFamily::errorStyle();
        r.head = false; // an upstream call and a charge for an answer without its content
        r.handler = [&family, client, home](const ContextPtr &ctx) {
            relayAction(family, client, home, ctx);
        };
        routes.append(std::move(r));
    }
    {
        RouteSpec r;
        r.method = "GET";
        r.pattern = QStringLiteral("/openapi.json");
        r.family = QStringLiteral("public");
        r.auth = AuthMode::Public;
        r.handler = [&family](const ContextPtr &ctx) { openApi(family, ctx); };
        routes.append(std::move(r));
    }
    auto control = [&](const char *method, const char *pattern, const char *scopeName,
                       std::function<void(const ContextPtr &)> handler) {
        RouteSpec r;
        r.method = method;
        r.pattern = QLatin1String(pattern);
        r.family = QStringLiteral("control");
        r.auth = AuthMode::ControlToken;
        r.scope = QLatin1String(scopeName);
        r.bucket = QStringLiteral("control");
        r.handler = std::move(handler);
        routes.append(std::move(r));
    };
    control("GET", "/api/v1/social/catalog", "social:read",
            [&family](const ContextPtr &ctx) { catalogStatus(family, ctx); });
    control("POST", "/api/v1/social/catalog/refresh", "social:write",
            [&family, home](const ContextPtr &ctx) { catalogRefresh(family, home, ctx); });
    return routes;
}
