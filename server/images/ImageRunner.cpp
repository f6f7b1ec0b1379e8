#include "ImageRunner.h"

#include "DatabaseService.h"
#include "ImageLinks.h"
#include "ImageRequests.h"
#include "ImagesFamily.h"
#include "upstream/UpstreamClient.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace {

qint64 now()
{
    return QDateTime::currentMSecsSinceEpoch();
}

// A writeMoney job's result with the ledger entries it committed.
template <class R> struct WithEntries
{
    R value{};
    QList<LedgerEntry> entries;
};

} // namespace

struct ImageRunner::Running
{
    ImageStore::Task task;
    ProviderCallPtr call;
    QList<GuardedFetchCallPtr> downloads;
    int waiting = 0;                    // downloads not done yet
    QList<ImageStore::ImageFile> files; // one slot per upstream item; empty data: not produced
    QStringList problems;               // why items were not produced
    bool finishing = false;
};

ImageRunner::ImageRunner(ImagesFamily &family, QObject *parent)
    : QObject(parent), m_family(family), m_client(new UpstreamClient(this)),
      m_fetch(new GuardedFetch(this))
{
    const ImagesConfig &c = family.config();
    m_renew.setInterval(qMax(100, c.taskLeaseMs / 3));
    connect(&m_renew, &QTimer::timeout, this, &ImageRunner::renew);
    m_renew.start();
    m_sweep.setInterval(c.sweepMs);
    connect(&m_sweep, &QTimer::timeout, this, &ImageRunner::sweep);
    m_sweep.start();
    QTimer::singleShot(0, this, &ImageRunner::sweep);
}

ImageRunner::~ImageRunner()
{
    shutdown();
}

void ImageRunner::shutdown()
{
    m_stopping = true;
    m_renew.stop();
    m_sweep.stop();
    for (const auto &r : std::as_const(m_running)) {
        if (r->call)
            r->call->abort();
        for (const auto &d : std::as_const(r->downloads))
            d->abort();
    }
    m_running.clear();
    m_queue.clear();
}

qint64 ImageRunner::leaseUntil() const
{
    return now() + m_family.config().taskLeaseMs;
}

void ImageRunner::enqueue(const ImageStore::Task &task)
{
    if (m_stopping)
        return;
    m_queue.append(task);
    pump();
}

void ImageRunner::pump()
{
    while (!m_stopping && !m_queue.isEmpty() && m_running.size() < m_family.config().maxConcurrent)
        begin(m_queue.takeFirst());
}

void ImageRunner::begin(const ImageStore::Task &task)
{
    auto running = std::make_shared<Running>();
    running->task = task;
    m_running.insert(task.id, running);
    const QString owner = m_family.instance();
    const qint64 lease = leaseUntil();
    const QString id = task.id;
    m_family.database()->write<bool>(
        this,
        [id, owner, lease](Store &s) {
            return ImageStore::setActive(s, id, QString::fromLatin1(ImageStore::Status::InProgress),
                                         owner, lease, now());
        },
        [this, id](const DbResult<bool> &r) {
            auto running = m_running.value(id);
            if (!running)
                return;
            if (!r.ok() || !r.value) { // ended or taken elsewhere meanwhile
                if (!r.ok())
                    qWarning("image task %s could not start: %s", qPrintable(id),
                             qPrintable(r.error));
                m_running.remove(id);
                return pump();
            }
            const ImagesConfig &c = m_family.config();
            const ImageModel *model = c.model(running->task.model);
            const ImageProvider *provider = model ? c.provider(model->provider) : nullptr;
            if (!model || !provider)
                return finish(id, QString::fromLatin1(ImageStore::Status::Failed),
                              QStringLiteral("The model '%1' is no longer configured.")
                                  .arg(running->task.model),
                              503, QStringLiteral("model_unavailable"));
            const ImageRequest req = ImageRequests::fromTask(running->task);
            ProviderCall::Request post;
            post.url = provider->baseUrl.toUtf8() + "/images/generations";
            post.headers = {"Content-Type: application/json"};
            post.body =
                ImageRequests::upstreamBody(req, model->upstreamModel, provider->responseFormat);
            post.configPath = QStringLiteral("images.providers");
            post.maxKeys = 2;
            // Ten base64 images of the largest accepted size, with room for the JSON.
            post.maxAnswerBytes = qMin<qint64>(c.maxImageBytes * 14, 1LL << 30);
            running->call =
                ProviderCall::start(*m_client, m_family.keys(), *provider, std::move(post),
                                    [this, id](const UpstreamAnswer &a) { answered(id, a); });
        });
}

void ImageRunner::answered(const QString &taskId, const UpstreamAnswer &a)
{
    auto running = m_running.value(taskId);
    if (!running)
        return;
    running->call.reset();
    const QString failed = QString::fromLatin1(ImageStore::Status::Failed);
    if (!a.ok())
        return finish(taskId, failed, a.message, a.status, a.code);
    const QJsonDocument doc = QJsonDocument::fromJson(a.body);
    const QJsonValue data = doc.object().value("data");
    if (!data.isArray())
        return finish(taskId, failed,
                      QStringLiteral("The image provider sent an answer without a data array."),
                      502, QStringLiteral("upstream_invalid_answer"));
    const QJsonArray items = data.toArray();
    const ImagesConfig &c = m_family.config();
    const qint64 expires = now() + qint64(c.linkTtlS) * 1000;
    // The task's images are the first n items, whatever the upstream sent beyond.
    const int count = int(qMin<qsizetype>(items.size(), running->task.n));
    for (int i = 0; i < count; ++i) {
        ImageStore::ImageFile f;
        f.id = ImageRequests::newFileId();
        f.taskId = taskId;
        f.index = i;
        f.expiresMs = expires;
        const QJsonObject item = items.at(i).toObject();
        f.revisedPrompt = item.value("revised_prompt").toString();
        running->files.append(f);
        if (item.value("b64_json").isString()) {
            auto decoded =
                QByteArray::fromBase64Encoding(item.value("b64_json").toString().toLatin1(),
                                               QByteArray::AbortOnBase64DecodingErrors);
            if (!decoded || decoded.decoded.size() > c.maxImageBytes) {
                running->problems.append(
                    QStringLiteral("image %1: %2")
                        .arg(i)
                        .arg(decoded ? QStringLiteral("larger than %1 bytes").arg(c.maxImageBytes)
                                     : QStringLiteral("invalid base64")));
                continue;
            }
            running->files.last().data = decoded.decoded;
        } else if (item.value("url").isString()) {
            FetchRequest get;
            get.url = item.value("url").toString();
            auto call = m_fetch->start(get, c.download);
            auto buffer = std::make_shared<QByteArray>();
            call->onData = [buffer](const QByteArray &chunk) {
                buffer->append(chunk);
                return true;
            };
            call->onDone = [this, taskId, i, buffer](const FetchOutcome &out) {
                auto r = m_running.value(taskId);
                if (!r)
                    return;
                if (out.ok())
                    r->files[i].data = *buffer;
                else
                    r->problems.append(
                        QStringLiteral("image %1: download failed: %2").arg(i).arg(out.message));
                if (--r->waiting == 0)
                    collect(taskId);
            };
            running->downloads.append(call);
            ++running->waiting;
        } else {
            running->problems.append(QStringLiteral("image %1: neither b64_json nor url").arg(i));
        }
    }
    if (items.size() < running->task.n)
        running->problems.append(QStringLiteral("the provider produced %1 of %2 images")
                                     .arg(items.size())
                                     .arg(running->task.n));
    // Uploading: the answer is in; the images are being fetched and stored.
    const QString owner = m_family.instance();
    const qint64 lease = leaseUntil();
    m_family.database()->write<bool>(
        this,
        [taskId, owner, lease](Store &s) {
            return ImageStore::setActive(
                s, taskId, QString::fromLatin1(ImageStore::Status::Uploading), owner, lease, now());
        },
        [](const DbResult<bool> &) {});
    if (running->waiting == 0)
        collect(taskId);
}

void ImageRunner::collect(const QString &taskId)
{
    auto running = m_running.value(taskId);
    if (!running)
        return;
    QList<ImageStore::ImageFile> produced;
    for (ImageStore::ImageFile f : std::as_const(running->files)) {
        if (f.data.isEmpty())
            continue;
        f.mime = ImageLinks::sniffMime(f.data);
        if (f.mime.isEmpty()) {
            running->problems.append(
                QStringLiteral("image %1: not a PNG, JPEG, WebP or GIF image").arg(f.index));
            continue;
        }
        f.bytes = f.data.size();
        f.index = int(produced.size());
        produced.append(f);
    }
    running->files = produced;
    const QString detail = running->problems.join(u"; ");
    if (produced.isEmpty())
        return finish(taskId, QString::fromLatin1(ImageStore::Status::Failed),
                      QStringLiteral("The image provider produced no usable image (%1).")
                          .arg(detail.isEmpty() ? QStringLiteral("none sent") : detail),
                      502, QStringLiteral("upstream_no_images"));
    const bool all = produced.size() == running->task.n;
    finish(taskId,
           QString::fromLatin1(all ? ImageStore::Status::Completed : ImageStore::Status::Partial),
           all ? QString() : detail, 0, {});
}

void ImageRunner::finish(const QString &taskId, const QString &status, const QString &error,
                         int errorStatus, const QString &errorCode)
{
    auto running = m_running.value(taskId);
    if (!running || running->finishing)
        return;
    running->finishing = true;
    ImageStore::Final f;
    f.taskId = taskId;
    f.owner = m_family.instance();
    f.status = status;
    f.error = error;
    f.errorStatus = errorStatus;
    f.errorCode = errorCode;
    f.files = running->files;
    if (status == u"failed")
        f.files.clear();
    f.nowMs = now();
    f.deliveryDueMs = f.nowMs;
    UsageRecord &u = f.usage;
    u.accountId = running->task.accountId;
    u.keyId = running->task.keyId;
    u.time = QDateTime::fromMSecsSinceEpoch(f.nowMs, Qt::UTC);
    u.endpoint = QStringLiteral("/v1/images/generations");
    u.model = running->task.model;
    u.status = 200;
    u.latencyMs = int(qMin<qint64>(f.nowMs - running->task.createdMs, INT_MAX));
    u.requestId = running->task.requestId;
    m_family.database()->writeMoney<WithEntries<bool>>(
        this,
        [f](MoneyJournal &j) {
            return WithEntries<bool>{ImageStore::finish(j, f), j.entries()};
        },
        [this, taskId, keyId = u.keyId, timeMs = f.nowMs](const DbResult<WithEntries<bool>> &r) {
            if (!r.ok())
                qWarning("image task %s could not be finished: %s", qPrintable(taskId),
                         qPrintable(r.error));
            m_running.remove(taskId);
            if (r.ok() && r.value.value) {
                noteBalances(r.value.entries);
                // The task's charge (its request id is the task's) counts in the key's budget
                // before the waiting request, if any, is answered and lets its hold go.
                for (const LedgerEntry &e : r.value.entries)
                    if (keyId && e.kind == u"charge" && e.requestId == taskId)
                        emit m_family.events()->keyCharged(keyId, -e.amount, timeMs);
                emit m_family.events()->taskEnded(taskId);
                m_family.wakeDispatcher();
            }
            pump();
        });
}

void ImageRunner::noteBalances(const QList<LedgerEntry> &entries)
{
    // The newest is enough: the gates order what they learn by ledger id.
    QHash<qint64, const LedgerEntry *> newest;
    for (const LedgerEntry &e : entries)
        newest.insert(e.accountId, &e);
    for (const LedgerEntry *e : std::as_const(newest))
        emit m_family.events()->balanceCommitted(e->accountId, e->balanceAfter, e->id);
}

void ImageRunner::renew()
{
    if (m_running.isEmpty() && m_queue.isEmpty())
        return;
    const QString owner = m_family.instance();
    const qint64 lease = leaseUntil();
    m_family.database()->write<bool>(
        this,
        [owner, lease](Store &s) {
            ImageStore::renewLeases(s, owner, lease);
            return true;
        },
        [](const DbResult<bool> &) {});
}

void ImageRunner::sweep()
{
    if (m_stopping)
        return;
    // Expired image data, and task records past their retention (cheap: both by index).
    const qint64 retentionMs = qint64(m_family.config().retentionHours) * 3'600'000;
    m_family.database()->write<QPair<int, int>>(
        this,
        [retentionMs](Store &s) {
            const qint64 t = now();
            return ImageStore::purge(s, t, t - retentionMs);
        },
        [](const DbResult<QPair<int, int>> &r) {
            if (!r.ok())
                qWarning("image purge failed: %s", qPrintable(r.error));
        });
    const QString owner = m_family.instance();
    const qint64 lease = leaseUntil();
    struct Swept
    {
        QList<ImageStore::Task> adopted;
        QStringList failed;
    };
    m_family.database()->writeMoney<WithEntries<Swept>>(
        this,
        [owner, lease](MoneyJournal &j) {
            Store &s = j.store();
            Swept out;
            const qint64 t = now();
            for (const ImageStore::Task &task : ImageStore::abandoned(s, t, 100)) {
                if (task.status == QLatin1String(ImageStore::Status::Queued)) {
                    if (ImageStore::adopt(s, task.id, owner, lease, t)) {
                        ImageStore::Task adopted = task;
                        adopted.owner = owner;
                        out.adopted.append(adopted);
                    }
                    continue;
                }
                ImageStore::Final f;
                f.taskId = task.id;
                f.status = QString::fromLatin1(ImageStore::Status::Failed);
                f.error = QStringLiteral("The task was interrupted: the Switchyard instance "
                                         "running it stopped before it ended. Nothing was "
                                         "charged; submit it again.");
                f.errorStatus = 503;
                f.errorCode = QStringLiteral("task_interrupted");
                f.nowMs = t;
                f.deliveryDueMs = t;
                if (ImageStore::finish(j, f))
                    out.failed.append(task.id);
            }
            return WithEntries<Swept>{out, j.entries()};
        },
        [this](const DbResult<WithEntries<Swept>> &r) {
            if (!r.ok()) {
                qWarning("image task sweep failed: %s", qPrintable(r.error));
                return;
            }
            const Swept &swept = r.value.value;
            noteBalances(r.value.entries);
            for (const QString &id : swept.failed)
                emit m_family.events()->taskEnded(id);
            if (!swept.failed.isEmpty())
                m_family.wakeDispatcher();
            for (const ImageStore::Task &t : swept.adopted)
                enqueue(t);
        });
}
