#include "SocialExtract.h"

#include "EnvelopeScanner.h"
#include "RequestContext.h"
#include "SocialFamily.h"
#include "upstream/GuardedFetch.h"
#include "upstream/UpstreamClient.h"
#include "upstream/UrlGuard.h"
#include "VideoExtract.h"

#include <QJsonDocument>
#include <QUrlQuery>
#include <utility>

namespace {

constexpr int kMaxHops = 3;
constexpr qsizetype kMaxAnswerBytes = 16 * 1024 * 1024;

// One extraction: resolve (when needed), then the upstream calls, then the answer.
class ExtractJob : public std::enable_shared_from_this<ExtractJob>
{
public:
    ExtractJob(SocialFamily &family, UpstreamClient &client, GuardedFetch &fetch,
               const ContextPtr &ctx)
        : m_family(family), m_client(client), m_fetch(fetch), m_ctx(ctx)
    {
    }

    void start(const VideoExtract::Target &target)
    {
        m_target = target;
        std::weak_ptr<ExtractJob> weak = shared_from_this();
        m_ctx->exchange()->onClosed([weak] {
            if (auto self = weak.lock())
                self->stop();
        });
        if (m_target.needsResolve)
            resolve(m_target.url);
        else
            next();
    }

private:
    // The client left: the calls stop, and a 499 (unbilled) records the request's usage and
    // hands its hold back.
    void stop()
    {
        if (std::exchange(m_stopped, true))
            return; // answered already
        if (m_call)
            m_call->abort();
        if (m_hop)
            m_hop->abort();
        m_ctx->respondClientLeft();
    }

    void fail(int status, const QString &message)
    {
        if (m_stopped)
            return;
        m_stopped = true;
        m_ctx->respondError(status, message,
                            status >= 500 ? QStringLiteral("server_error")
                                          : QStringLiteral("invalid_request_error"));
    }

    // One hop of a short link: its redirect's Location is detected again.
    void resolve(const QString &url)
    {
        UrlPolicy policy = UrlPolicy::download(m_family.config().extractFetch);
        policy.maxRedirects = 0; // each hop is judged here, as a link
        policy.maxBytes = 64 * 1024;
        policy.totalTimeoutMs = 15'000;
        m_hop = m_fetch.start(FetchRequest{url, "GET", {}, {}}, policy);
        auto self = shared_from_this();
        m_hop->onDone = [self, url](const FetchOutcome &o) { self->resolved(url, o); };
    }

    void resolved(const QString &url, const FetchOutcome &o)
    {
        m_hop.reset();
        if (m_stopped)
            return;
        const QByteArray location = headerValue(o.headers, "location");
        if (o.status < 300 || o.status > 399 || location.isEmpty())
            return fail(400,
                        QStringLiteral("The short link %1 could not be resolved: %2.")
                            .arg(url, o.ok() ? QStringLiteral("it does not redirect") : o.message));
        const auto hop = UrlGuard::resolveRedirect(o.url, location);
        QString why;
        const auto target = hop ? VideoExtract::detect(QString::fromUtf8(*hop), &why,
                                                       m_family.config().shortLinkHosts)
                                : std::nullopt;
        if (!target)
            return fail(
                400, QStringLiteral("The short link %1 leads to an unsupported URL%2.")
                         .arg(url, why.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(why)));
        if (target->needsResolve) {
            if (++m_hops >= kMaxHops)
                return fail(400, QStringLiteral("The short link %1 redirects more than %2 times.")
                                     .arg(m_target.url)
                                     .arg(kMaxHops));
            return resolve(target->url);
        }
        if (m_family.config().publicName(target->platform).isEmpty())
            return fail(403,
                        QStringLiteral("Platform \"%1\" is not available").arg(target->platform));
        m_target = *target;
        next();
    }

    void next()
    {
        if (m_stopped)
            return;
        const auto call = VideoExtract::nextCall(m_target, m_answers);
        if (!call)
            return finish();
        const SocialConfig &config = m_family.config();
        QUrlQuery query;
        for (const auto &[name, value] : call->query)
            query.addQueryItem(QString::fromUtf8(QUrl::toPercentEncoding(name)),
                               QString::fromUtf8(QUrl::toPercentEncoding(value)));
        UpstreamRequest req;
        req.method = "GET";
        req.url = (config.provider.baseUrl + config.provider.actionPrefix + call->action).toUtf8() +
                  "?" + query.query(QUrl::FullyEncoded).toUtf8();
        req.headers = {"Accept: application/json"};
        m_key = m_family.keys().pick(config.provider);
        if (!m_key.isEmpty())
            req.headers.append("Authorization: Bearer " + m_key.toUtf8());
        config.provider.applyTimeouts(req);
        m_body.clear();
        m_status = 0;
        m_action = call->action;
        m_call = m_client.start(req);
        auto self = shared_from_this();
        m_call->onHead = [self](int status, const HttpHeaders &) { self->m_status = status; };
        m_call->onData = [self](const QByteArray &d) {
            self->m_body += d;
            if (self->m_body.size() > kMaxAnswerBytes) {
                self->m_call->abort();
                self->m_call.reset();
                self->fail(502, QStringLiteral("The upstream's answer to %1 is larger than %2 MiB.")
                                    .arg(self->m_action)
                                    .arg(kMaxAnswerBytes >> 20));
            }
        };
        m_call->onDone = [self](UpstreamError e, const QString &m) { self->answered(e, m); };
    }

    void answered(UpstreamError error, const QString &)
    {
        m_call.reset();
        if (m_stopped)
            return;
        if (error == UpstreamError::Timeout)
            return fail(504, QStringLiteral("Upstream request timed out"));
        if (error != UpstreamError::None)
            return fail(503, QStringLiteral("Failed to reach upstream service"));
        if (m_status == 429 || m_status >= 500)
            m_family.keys().rest(m_family.config().provider, m_key);
        EnvelopeScanner scanner;
        scanner.feed(m_body);
        const QJsonObject envelope = QJsonDocument::fromJson(m_body).object();
        if (m_status < 200 || m_status > 299 || !scanner.success())
            return fail(502, QStringLiteral("The upstream could not answer %1 (HTTP %2, code %3).")
                                 .arg(m_action)
                                 .arg(m_status)
                                 .arg(scanner.code() ? QString::number(*scanner.code())
                                                     : QStringLiteral("none")));
        m_answers.append(envelope.value("data").toObject());
        next();
    }

    void finish()
    {
        QString why;
        const auto result = VideoExtract::normalize(m_target, m_answers, &why);
        if (!result)
            return fail(502, QStringLiteral("The upstream's answer holds no video: %1.").arg(why));
        m_stopped = true;
        m_ctx->usage().cost = m_family.config().price;
        m_ctx->respondJson(200, *result);
    }

    SocialFamily &m_family;
    UpstreamClient &m_client;
    GuardedFetch &m_fetch;
    ContextPtr m_ctx;
    VideoExtract::Target m_target;
    QList<QJsonObject> m_answers;
    UpstreamCallPtr m_call;
    GuardedFetchCallPtr m_hop;
    QByteArray m_body;
    QString m_key;
    QString m_action;
    int m_status = 0;
    int m_hops = 0;
    bool m_stopped = false;
};

void extract(SocialFamily &family, UpstreamClient *client, GuardedFetch *fetch,
             const ContextPtr &ctx)
{
    const QString url =
        ctx->request().query.queryItemValue(QStringLiteral("url"), QUrl::FullyDecoded);
    if (url.isEmpty())
        return ctx->respondError(400, QStringLiteral("Missing required query parameter: url"),
                                 QStringLiteral("invalid_request_error"));
    const SocialConfig &config = family.config();
    QString why;
    const auto target = VideoExtract::detect(url, &why, config.shortLinkHosts);
    if (!target)
        return ctx->respondError(
            400,
            QStringLiteral("Unsupported URL%1. Supported hosts: %2.")
                .arg(why.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(why),
                     VideoExtract::supportedHosts().join(QLatin1String(", "))),
            QStringLiteral("invalid_request_error"));
    if (!target->needsResolve && config.publicName(target->platform).isEmpty())
        return ctx->respondError(
            403, QStringLiteral("Platform \"%1\" is not available").arg(target->platform),
            QStringLiteral("invalid_request_error"));
    if (const QString unusable = config.unusableReason(); !unusable.isEmpty())
        return ctx->respondError(503, unusable, QStringLiteral("server_error"));
    ctx->usage().model = QStringLiteral("extract");
    ctx->reserve(config.price, [&family, client, fetch, ctx, t = *target] {
        std::make_shared<ExtractJob>(family, *client, *fetch, ctx)->start(t);
    });
}

} // namespace

QList<RouteSpec> extractRoutes(SocialFamily &family, const ServerScope &scope)
{
    UpstreamClient *client = &scope.upstream(); // the server's one client, shared
    auto *fetch = new GuardedFetch(scope.parent());
    RouteSpec r;
    r.method = "GET";
    r.pattern = QStringLiteral("/v1/social-media/video/extract");
    r.auth = AuthMode::ApiKey;
    r.bucket = QStringLiteral("social");
    r.errorStyle = SocialFamily::errorStyle();
    r.head = false; // an upstream call and a charge for an answer without its content
    r.handler = [&family, client, fetch](const ContextPtr &ctx) {
        extract(family, client, fetch, ctx);
    };
    return {r};
}
