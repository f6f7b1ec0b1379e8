// The webhook control API (server/images/README.md, "Control API"): the delivery log, one
// delivery with its attempts, a manual resend, and the signing secret.
#include "ControlApi.h"
#include "DatabaseService.h"
#include "ImagesFamily.h"
#include "ImagesRoutes.h"
#include "RequestContext.h"
#include "WebhookDispatcher.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonObject>
#include <QUrlQuery>

namespace {

using namespace ControlApi;

const QLatin1StringView kRead{"webhooks:read"};
const QLatin1StringView kWrite{"webhooks:write"};
const QString kSecretSetting = QStringLiteral("webhook_secret");

QJsonObject deliveryJson(const ImageStore::Delivery &d)
{
    return {{"id", QString::number(d.id)},
            {"object", "webhook_delivery"},
            {"task_id", d.body.isEmpty() ? QJsonValue(d.taskId) : QJsonValue()},
            {"event_id", d.body.isEmpty() ? QJsonValue() : QJsonValue(d.taskId)},
            {"url", d.url},
            {"status", d.status},
            {"attempts", d.attempts},
            {"scheduled_attempts", d.scheduled},
            {"manual_pending", d.manual},
            {"last_status", d.attempts > 0 ? QJsonValue(d.lastStatus) : QJsonValue()},
            {"last_error", d.lastError.isEmpty() ? QJsonValue() : QJsonValue(d.lastError)},
            {"next_attempt_at", d.status == u"pending" ? timeJsonMs(d.nextMs) : QJsonValue()},
            {"created_at", timeJsonMs(d.createdMs)},
            {"updated_at", timeJsonMs(d.updatedMs)}};
}

QJsonObject attemptJson(const ImageStore::Attempt &a)
{
    return {{"attempt", a.attempt},
            {"trigger", a.manual ? "manual" : "scheduled"},
            {"started_at", timeJsonMs(a.startedMs)},
            {"url", a.url},
            {"address", a.address.isEmpty() ? QJsonValue() : QJsonValue(a.address)},
            {"status", a.status},
            {"error", a.error.isEmpty() ? QJsonValue() : QJsonValue(a.error)},
            {"duration_ms", a.durationMs},
            {"response_excerpt", a.excerpt},
            {"instance", a.instance}};
}

void list(ImagesFamily &f, QObject *home, const ContextPtr &ctx)
{
    ImageStore::DeliveryQuery dq;
    dq.accountId = ctx->identity().accountId;
    const QUrlQuery &q = ctx->request().query;
    dq.status = q.queryItemValue("status");
    if (!dq.status.isEmpty() && dq.status != u"pending" && dq.status != u"delivered" &&
        dq.status != u"failed")
        return ctx->respondError(400,
                                 QStringLiteral("'status' must be pending, delivered or failed."),
                                 {}, QStringLiteral("status"));
    dq.taskId = q.queryItemValue("task", QUrl::FullyDecoded);
    dq.text = q.queryItemValue("q", QUrl::FullyDecoded);
    QDateTime from, to;
    if (!timeParam(ctx, "from", &from) || !timeParam(ctx, "to", &to) ||
        !limitParam(ctx, 50, &dq.limit) || !cursorParam(ctx, &dq.beforeId))
        return;
    dq.fromMs = from.isValid() ? from.toMSecsSinceEpoch() : 0;
    dq.toMs = to.isValid() ? to.toMSecsSinceEpoch() : 0;
    const int limit = dq.limit;
    dq.limit += 1;
    f.database()->read<QList<ImageStore::Delivery>>(
        home, [dq](Store &s) { return ImageStore::deliveries(s, dq); },
        [ctx, limit](const DbResult<QList<ImageStore::Delivery>> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            QJsonArray data;
            const bool more = r.value.size() > limit;
            for (qsizetype i = 0; i < qMin<qsizetype>(limit, r.value.size()); ++i)
                data.append(deliveryJson(r.value[i]));
            QJsonObject body{{"object", "list"}, {"data", data}, {"has_more", more}};
            if (more)
                body.insert("next_cursor", QString::number(r.value[limit - 1].id));
            ctx->respondJson(200, body);
        });
}

void notFound(const ContextPtr &ctx)
{
    ctx->respondError(
        404,
        QStringLiteral("No webhook delivery with id '%1'.").arg(ctx->param(QStringLiteral("id"))));
}

void one(ImagesFamily &f, QObject *home, const ContextPtr &ctx)
{
    const auto id = parseId(ctx->param(QStringLiteral("id")));
    if (!id)
        return notFound(ctx);
    const qint64 account = ctx->identity().accountId;
    using Found = std::optional<std::pair<ImageStore::Delivery, QList<ImageStore::Attempt>>>;
    f.database()->read<Found>(
        home,
        [id, account](Store &s) -> Found {
            auto d = ImageStore::delivery(s, *id, account);
            if (!d)
                return std::nullopt;
            return std::pair{*d, ImageStore::attempts(s, *id)};
        },
        [ctx](const DbResult<Found> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            if (!r.value)
                return notFound(ctx);
            QJsonObject body = deliveryJson(r.value->first);
            QJsonArray attempts;
            for (const ImageStore::Attempt &a : r.value->second)
                attempts.append(attemptJson(a));
            body.insert("attempts_log", attempts);
            ctx->respondJson(200, body);
        });
}

void resend(ImagesFamily &f, QObject *home, const ContextPtr &ctx)
{
    const auto id = parseId(ctx->param(QStringLiteral("id")));
    if (!id)
        return notFound(ctx);
    const qint64 account = ctx->identity().accountId;
    f.database()->write<std::optional<ImageStore::Delivery>>(
        home,
        [id, account](Store &s) {
            return ImageStore::resend(s, *id, account, QDateTime::currentMSecsSinceEpoch());
        },
        [&f, ctx](const DbResult<std::optional<ImageStore::Delivery>> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            if (!r.value)
                return notFound(ctx);
            f.wakeDispatcher();
            emit f.events()->deliveryChanged(r.value->id);
            ctx->respondJson(202, deliveryJson(*r.value));
        });
}

void secretStatus(ImagesFamily &f, QObject *home, const ContextPtr &ctx)
{
    f.database()->read<std::optional<QString>>(
        home, [](Store &s) { return ImageStore::setting(s, kSecretSetting); },
        [ctx](const DbResult<std::optional<QString>> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            ctx->respondJson(200, QJsonObject{{"object", "webhook_signing"},
                                              {"enabled", r.value.has_value()},
                                              {"scheme", "standard-webhooks v1"}});
        });
}

void secretRotate(ImagesFamily &f, QObject *home, const ContextPtr &ctx)
{
    const QString secret = WebhookDispatcher::newSecret();
    f.database()->write<bool>(
        home,
        [secret](Store &s) {
            ImageStore::setSetting(s, kSecretSetting, secret);
            return true;
        },
        [ctx, secret](const DbResult<bool> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            // The only time the secret is shown.
            ctx->respondJson(201, QJsonObject{{"object", "webhook_signing"},
                                              {"enabled", true},
                                              {"scheme", "standard-webhooks v1"},
                                              {"secret", secret}});
        });
}

void secretRemove(ImagesFamily &f, QObject *home, const ContextPtr &ctx)
{
    f.database()->write<bool>(
        home,
        [](Store &s) {
            ImageStore::removeSetting(s, kSecretSetting);
            return true;
        },
        [ctx](const DbResult<bool> &r) {
            if (!r.ok())
                return storeUnavailable(ctx, r.error);
            ctx->respondJson(200, QJsonObject{{"object", "webhook_signing"}, {"enabled", false}});
        });
}

} // namespace

QList<RouteSpec> webhookControlRoutes(ImagesFamily &family, const ServerScope &scope)
{
    QObject *home = scope.parent(); // answers are made on the server's thread
    QList<RouteSpec> routes;
    auto route = [&](const char *method, const char *pattern, QLatin1StringView scope,
                     void (*fn)(ImagesFamily &, QObject *, const ContextPtr &)) {
        RouteSpec r;
        r.method = method;
        r.pattern = QLatin1String(pattern);
        r.family = QStringLiteral("control");
        r.auth = AuthMode::ControlToken;
        r.scope = scope;
        r.bucket = QStringLiteral("control");
        r.handler = [&family, home, fn](const ContextPtr &ctx) { fn(family, home, ctx); };
        routes.append(std::move(r));
    };
    route("GET", "/api/v1/webhooks/deliveries", kRead, list);
    route("GET", "/api/v1/webhooks/deliveries/{id}", kRead, one);
    route("POST", "/api/v1/webhooks/deliveries/{id}/resend", kWrite, resend);
    route("GET", "/api/v1/webhooks/signing-secret", kRead, secretStatus);
    route("POST", "/api/v1/webhooks/signing-secret", kWrite, secretRotate);
    route("DELETE", "/api/v1/webhooks/signing-secret", kWrite, secretRemove);
    return routes;
}
