#include "ImagesRoutes.h"

#include "ControlApi.h"
#include "DatabaseService.h"
#include "ImageLinks.h"
#include "ImageRequests.h"
#include "ImagesFamily.h"
#include "KeyBudgets.h"
#include "Money.h"
#include "RequestContext.h"
#include "upstream/GuardedFetch.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QMultiHash>
#include <QPointer>
#include <QTimer>

namespace {

using ImageStore::Task;

qint64 now()
{
    return QDateTime::currentMSecsSinceEpoch();
}

// Everything GET and the waiters need to answer for a task.
struct TaskView
{
    std::optional<Task> task;
    QList<ImageStore::ImageFile> files;
    std::optional<ImageStore::Delivery> delivery;
};

TaskView readView(Store &s, const QString &id, bool withData)
{
    TaskView v;
    v.task = ImageStore::task(s, id);
    if (v.task) {
        v.files = ImageStore::files(s, id, withData);
        v.delivery = ImageStore::deliveryForTask(s, id);
    }
    return v;
}

ImageRequests::LinkMaker linkMaker(const ImagesFamily &family, const Task &task)
{
    const QByteArray secret = family.linkSecret();
    const QString base = task.baseUrl;
    return [secret, base](const ImageStore::ImageFile &f) {
        return ImageLinks::url(base, secret, f.id, ImageLinks::extensionFor(f.mime),
                               f.expiresMs / 1000);
    };
}

// The server-thread side of one server: the guard for callbackUrl and the synchronous
// requests waiting for their task to end.
class ImagesServer : public QObject
{
public:
    ImagesServer(ImagesFamily &family, const ServerScope &host)
        : QObject(host.parent()), m_family(family), m_host(host), m_fetch(new GuardedFetch(this))
    {
        connect(family.events(), &ImagesEvents::taskEnded, this, &ImagesServer::ended);
        // A task's end released its hold: this server's gate counts the balance it left.
        connect(family.events(), &ImagesEvents::balanceCommitted, this,
                [this](qint64 account, qint64 balance, qint64 ledgerId) {
                    m_host.noteBalance(account, balance, ledgerId);
                });
        connect(family.events(), &ImagesEvents::keyCharged, this,
                [this](qint64 keyId, qint64 cost, qint64 timeMs) {
                    m_host.budgets().charged(keyId, cost,
                                             QDateTime::fromMSecsSinceEpoch(timeMs, Qt::UTC));
                });
    }

    void submit(const ContextPtr &ctx);
    void get(const ContextPtr &ctx);
    void file(const ContextPtr &ctx);

private:
    struct Waiter
    {
        ContextPtr ctx;
        QString responseFormat;
        QPointer<QTimer> timer;
    };
    void create(const ContextPtr &ctx, const ImageRequest &req, bool async);
    void answerSync(const ContextPtr &ctx, const QString &taskId, const QString &format,
                    bool timedOut);
    void ended(const QString &taskId);

    ImagesFamily &m_family;
    const ServerScope &m_host;
    GuardedFetch *m_fetch;
    QMultiHash<QString, Waiter> m_waiters;
};

void ImagesServer::submit(const ContextPtr &ctx)
{
    const auto body = ctx->jsonBody();
    if (!body)
        return;
    RequestError error;
    const auto req = ImageRequests::parse(*body, m_family.config(), &error);
    if (!req)
        return ctx->respondError(error);
    const ImagesConfig &c = m_family.config();
    const ImageModel *model = c.model(req->model);
    if (!ctx->allowsModel(model->id))
        return;
    const ImageProvider *provider = c.provider(model->provider);
    if (const QString why = provider ? provider->unusableReason()
                                     : QStringLiteral("The model's provider is not configured.");
        !why.isEmpty())
        return ctx->respondError(503, why, QStringLiteral("server_error"), {},
                                 QStringLiteral("provider_unavailable"));
    const bool async = !req->callbackUrl.isEmpty() ||
                       ctx->request().header("prefer").toLower().contains("respond-async");
    // The worst case, n images, held through the core like every family's (402 when the
    // available balance cannot cover it), before anything else is done for the request.
    ctx->reserve(model->pricePerImage * req->n, [this, ctx, r = *req, async] {
        if (r.callbackUrl.isEmpty())
            return create(ctx, r, async);
        // The callback URL is checked now, resolution included: a URL that could never be
        // delivered to is refused before any task exists.
        m_fetch->preflight(
            r.callbackUrl, m_family.config().webhooks.policy, this,
            [this, ctx, r, async](FetchError err, const QString &message) {
                if (err != FetchError::None)
                    return ctx->respondError(
                        400, QStringLiteral("'callbackUrl' is not allowed: %1.").arg(message),
                        QStringLiteral("invalid_request_error"), QStringLiteral("callbackUrl"),
                        QStringLiteral("invalid_callback_url"));
                create(ctx, r, async);
            });
    });
}

void ImagesServer::create(const ContextPtr &ctx, const ImageRequest &req, bool async)
{
    if (ctx->clientGone()) // recorded, unbilled, and its hold handed back
        return ctx->respondClientLeft();
    const ImagesConfig &c = m_family.config();
    const ImageModel *model = c.model(req.model);
    const Identity &who = ctx->identity();
    Task t;
    t.id = ImageRequests::newTaskId();
    t.accountId = who.accountId;
    t.keyId = who.keyId;
    t.model = req.model;
    t.prompt = req.prompt;
    t.params = ImageRequests::paramsJson(req);
    t.n = req.n;
    t.status = QString::fromLatin1(ImageStore::Status::Queued);
    t.callbackUrl = req.callbackUrl;
    t.baseUrl = c.publicBaseUrl;
    if (t.baseUrl.isEmpty()) {
        const QByteArray host = ctx->request().header("host");
        t.baseUrl = QStringLiteral("http://") +
                    (host.isEmpty() ? QStringLiteral("localhost") : QString::fromLatin1(host));
    }
    t.price = model->pricePerImage;
    t.held = t.price * t.n;
    t.requestId = ctx->requestId();
    t.owner = m_family.instance();
    t.createdMs = now();
    t.leaseUntil = t.createdMs + c.taskLeaseMs;
    // The task's hold becomes durable: a ledger entry, visible to every instance. This
    // instance's other holds were already weighed when the gate admitted the request's hold in
    // memory, so the entry itself only must not take the balance below zero (floor 0): a
    // floor of the holds in memory, read now, would count again the holds of tasks created
    // meanwhile, whose entries the database has by the time this one is written, and refuse
    // images the balance covers. It refuses what another instance spent since.
    m_family.database()->writeMoney<ChargeResult>(
        this, [t](MoneyJournal &j) { return ImageStore::insertTask(j, t, 0); },
        [this, ctx, t, async, format = req.responseFormat](const DbResult<ChargeResult> &r) {
            if (!r.ok())
                return ControlApi::storeUnavailable(ctx, r.error);
            // The gate learns the balance the hold left before the request's hold in memory
            // goes (when it answers): no request is admitted in between on the balance from
            // before the hold.
            if (r.value.status == ChargeResult::Status::Committed && r.value.entry.id) {
                m_host.noteBalance(r.value.entry.accountId, r.value.entry.balanceAfter,
                                   r.value.entry.id);
                // The durable hold stands in for the one in memory from now on: a synchronous
                // request waiting for its images must not count them twice.
                ctx->releaseHold();
            }
            // Another instance sharing the database spent the balance meanwhile.
            if (r.value.status == ChargeResult::Status::Insufficient)
                return ctx->respondError(
                    402, QStringLiteral("Insufficient credits: this request needs %1 (%2 image(s) "
                                        "at %3 each) available.")
                             .arg(Money::formatCredits(t.held))
                             .arg(t.n)
                             .arg(Money::formatCredits(t.price)));
            if (r.value.status != ChargeResult::Status::Committed)
                return ctx->respondError(503, QStringLiteral("The account is unavailable."));
            m_family.run(t);
            if (async) {
                const QJsonObject task =
                    ImageRequests::taskJson(t, {}, std::nullopt, linkMaker(m_family, t));
                HttpHeaders extra{{"Location", ("/v1/images/generations/" + t.id).toLatin1()}};
                if (ctx->request().header("prefer").toLower().contains("respond-async"))
                    extra.append(qMakePair(QByteArray("Preference-Applied"),
                                           QByteArray("respond-async"))); // RFC 7240
                return ctx->respondJson(202, task, extra);
            }
            auto *timer = new QTimer(this);
            timer->setSingleShot(true);
            const QString id = t.id;
            connect(timer, &QTimer::timeout, this, [this, id, ctx, format, timer]() {
                timer->deleteLater();
                for (auto it = m_waiters.find(id); it != m_waiters.end() && it.key() == id;) {
                    if (it->ctx == ctx)
                        it = m_waiters.erase(it);
                    else
                        ++it;
                }
                answerSync(ctx, id, format, true);
            });
            timer->start(m_family.config().syncWaitS * 1000);
            m_waiters.insert(id, Waiter{ctx, format, timer});
        });
}

void ImagesServer::ended(const QString &taskId)
{
    const QList<Waiter> waiting = m_waiters.values(taskId);
    m_waiters.remove(taskId);
    for (const Waiter &w : waiting) {
        if (w.timer)
            w.timer->deleteLater();
        answerSync(w.ctx, taskId, w.responseFormat, false);
    }
}

void ImagesServer::answerSync(const ContextPtr &ctx, const QString &taskId, const QString &format,
                              bool timedOut)
{
    if (ctx->isAnswered())
        return;
    const bool withData = format == u"b64_json";
    m_family.database()->read<TaskView>(
        this, [taskId, withData](Store &s) { return readView(s, taskId, withData); },
        [this, ctx, format, timedOut](const DbResult<TaskView> &r) {
            if (!r.ok() || !r.value.task)
                return ControlApi::storeUnavailable(ctx,
                                                    r.ok() ? QStringLiteral("task gone") : r.error);
            const Task &t = *r.value.task;
            const auto link = linkMaker(m_family, t);
            if (timedOut || !ImageStore::isFinal(t.status))
                // Still running past the wait: the task, to poll (documented).
                return ctx->respondJson(
                    202, ImageRequests::taskJson(t, r.value.files, r.value.delivery, link),
                    {{"Location", ("/v1/images/generations/" + t.id).toLatin1()}});
            if (t.status == u"failed") {
                HttpHeaders extra;
                if (t.errorStatus == 429)
                    extra.append(qMakePair(QByteArray("Retry-After"), QByteArray("1")));
                ctx->respondJson(t.errorStatus ? t.errorStatus : 502,
                                 QJsonObject{{"error", QJsonObject{{"message", t.error},
                                                                   {"type", t.errorStatus == 429
                                                                                ? "rate_limit_error"
                                                                                : "upstream_error"},
                                                                   {"param", QJsonValue()},
                                                                   {"code", t.errorCode}}},
                                             {"id", t.id},
                                             {"status", t.status}},
                                 extra);
                return;
            }
            ctx->respondJson(200, ImageRequests::openAiJson(t, r.value.files, format, link));
        });
}

void ImagesServer::get(const ContextPtr &ctx)
{
    const QString id = ctx->param(QStringLiteral("id"));
    const qint64 account = ctx->identity().accountId;
    m_family.database()->read<TaskView>(
        this, [id](Store &s) { return readView(s, id, false); },
        [this, ctx, id, account](const DbResult<TaskView> &r) {
            if (!r.ok())
                return ControlApi::storeUnavailable(ctx, r.error);
            if (!r.value.task || r.value.task->accountId != account)
                return ctx->respondError(404, QStringLiteral("No image task with id '%1'.").arg(id),
                                         QStringLiteral("invalid_request_error"), {},
                                         QStringLiteral("task_not_found"));
            const Task &t = *r.value.task;
            if (t.purged)
                return ctx->respondError(
                    410,
                    QStringLiteral("The image task '%1' ended more than %2 hours ago; its record "
                                   "is no longer kept.")
                        .arg(id)
                        .arg(m_family.config().retentionHours),
                    QStringLiteral("invalid_request_error"), {}, QStringLiteral("task_expired"));
            ctx->respondJson(200, ImageRequests::taskJson(t, r.value.files, r.value.delivery,
                                                          linkMaker(m_family, t)));
        });
}

void ImagesServer::file(const ContextPtr &ctx)
{
    const QString name = ctx->param(QStringLiteral("name"));
    const QString id = name.section(u'.', 0, 0);
    const QUrlQuery &q = ctx->request().query;
    const auto verdict = ImageLinks::verify(m_family.linkSecret(), id, q.queryItemValue("expires"),
                                            q.queryItemValue("signature"), now() / 1000);
    if (verdict == ImageLinks::Verdict::Invalid)
        return ctx->respondError(403, QStringLiteral("This image link is invalid."),
                                 QStringLiteral("invalid_request_error"), {},
                                 QStringLiteral("invalid_link"));
    if (verdict == ImageLinks::Verdict::Expired)
        return ctx->respondError(410,
                                 QStringLiteral("This image link has expired; get a fresh one "
                                                "with GET /v1/images/generations/{id}."),
                                 QStringLiteral("invalid_request_error"), {},
                                 QStringLiteral("link_expired"));
    m_family.database()->read<std::optional<ImageStore::ImageFile>>(
        this, [id](Store &s) { return ImageStore::file(s, id); },
        [ctx](const DbResult<std::optional<ImageStore::ImageFile>> &r) {
            if (!r.ok())
                return ControlApi::storeUnavailable(ctx, r.error);
            if (!r.value || r.value->data.isEmpty())
                return ctx->respondError(410, QStringLiteral("This image is no longer kept."),
                                         QStringLiteral("invalid_request_error"), {},
                                         QStringLiteral("image_expired"));
            const qint64 left = qMax<qint64>(0, (r.value->expiresMs - now()) / 1000);
            ctx->respondRaw(200, r.value->mime.toLatin1(), r.value->data,
                            {{"Cache-Control", "private, max-age=" + QByteArray::number(left)}});
        });
}

} // namespace

QList<RouteSpec> imagesRoutes(ImagesFamily &family, const ServerScope &scope)
{
    auto *server = new ImagesServer(family, scope);
    QList<RouteSpec> routes;
    auto route = [&](const char *method, const char *pattern, AuthMode auth,
                     void (ImagesServer::*fn)(const ContextPtr &)) {
        RouteSpec r;
        r.method = method;
        r.pattern = QLatin1String(pattern);
        r.auth = auth;
        r.bucket = QStringLiteral("images");
        r.handler = [server, fn](const ContextPtr &ctx) { (server->*fn)(ctx); };
        routes.append(std::move(r));
    };
    route("POST", "/v1/images/generations", AuthMode::ApiKey, &ImagesServer::submit);
    route("GET", "/v1/images/generations/{id}", AuthMode::ApiKey, &ImagesServer::get);
    // The link is the credential: no key, so an <img> tag or a receiver can fetch it.
    route("GET", "/v1/images/files/{name}", AuthMode::Public, &ImagesServer::file);
    routes.first().bodyLimit = 256 * 1024;
    return routes;
}
