#include "WebhookDispatcher.h"

#include "DatabaseService.h"
#include "ImageLinks.h"
#include "ImageRequests.h"
#include "ImagesFamily.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QMessageAuthenticationCode>
#include <QRandomGenerator>

namespace {

constexpr qsizetype kExcerptBytes = 2'048;

qint64 now()
{
    return QDateTime::currentMSecsSinceEpoch();
}

// The delivery log's words for what went wrong.
QString describe(const FetchOutcome &o)
{
    switch (o.error) {
    case FetchError::None:
    case FetchError::Stopped: // the excerpt was read; the answer was a 2xx
        return {};
    case FetchError::Refused:
        return QStringLiteral("blocked by the URL guard: ") + o.message;
    case FetchError::Resolve:
        return QStringLiteral("resolve: ") + o.message;
    case FetchError::Connect:
        return QStringLiteral("connect: ") + o.message;
    case FetchError::Timeout:
        return QStringLiteral("timeout: ") + o.message;
    case FetchError::Http:
        return o.message;
    case FetchError::TooLarge:
    case FetchError::TooManyRedirects:
    case FetchError::Broken:
    case FetchError::Failed:
        return o.message;
    }
    return o.message;
}

} // namespace

WebhookDispatcher::WebhookDispatcher(ImagesFamily &family, QObject *parent)
    : QObject(parent), m_family(family), m_fetch(new GuardedFetch(this))
{
    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, &WebhookDispatcher::poll);
    m_timer.start(0);
}

WebhookDispatcher::~WebhookDispatcher()
{
    shutdown();
}

void WebhookDispatcher::shutdown()
{
    m_stopping = true;
    m_timer.stop();
}

void WebhookDispatcher::wake()
{
    if (!m_stopping)
        m_timer.start(0);
}

void WebhookDispatcher::schedule(qint64 dueMs)
{
    const WebhookSettings &w = m_family.config().webhooks;
    qint64 wait = w.pollMs;
    if (dueMs > 0)
        wait = qBound(qint64(0), dueMs - now(), qint64(w.pollMs));
    if (!m_timer.isActive() || m_timer.remainingTime() > wait)
        m_timer.start(int(wait));
}

void WebhookDispatcher::poll()
{
    if (m_stopping)
        return;
    if (m_polling) { // a look is on its way; look again when it is back
        m_again = true;
        return;
    }
    if (m_inFlight >= m_family.config().webhooks.concurrency)
        return; // an attempt's end polls again
    m_polling = true;
    m_again = false;
    // A read first: an idle outbox costs no write transaction.
    m_family.database()->read<qint64>(
        this, [](Store &s) { return ImageStore::nextDue(s, now()); },
        [this](const DbResult<qint64> &r) {
            if (m_stopping)
                return;
            if (r.ok() && r.value > 0 && r.value <= now())
                return claim();
            m_polling = false;
            if (!r.ok())
                qWarning("webhook poll failed: %s", qPrintable(r.error));
            if (m_again)
                return wake();
            schedule(r.ok() ? r.value : 0);
        });
}

void WebhookDispatcher::claim()
{
    const WebhookSettings &w = m_family.config().webhooks;
    const int free = w.concurrency - m_inFlight;
    const QString owner = m_family.instance();
    const int leaseMs = w.leaseMs;
    struct Claimed
    {
        QList<ImageStore::Delivery> deliveries;
        qint64 nextDue = 0;
    };
    m_family.database()->write<Claimed>(
        this,
        [owner, leaseMs, free](Store &s) {
            Claimed c;
            const qint64 t = now();
            c.deliveries = ImageStore::claim(s, owner, t, t + leaseMs, free);
            c.nextDue = ImageStore::nextDue(s, t);
            return c;
        },
        [this](const DbResult<Claimed> &r) {
            m_polling = false;
            if (m_stopping)
                return;
            if (!r.ok()) {
                qWarning("webhook claim failed: %s", qPrintable(r.error));
                return schedule(0);
            }
            for (const ImageStore::Delivery &d : r.value.deliveries)
                attempt(d);
            if (m_again)
                return wake();
            schedule(r.value.nextDue);
        });
}

void WebhookDispatcher::attempt(const ImageStore::Delivery &delivery)
{
    ++m_inFlight;
    struct Payload
    {
        std::optional<ImageStore::Task> task;
        QList<ImageStore::ImageFile> files;
        std::optional<QString> secret;
    };
    const QString taskId = delivery.taskId;
    const bool event = !delivery.body.isEmpty();
    m_family.database()->read<Payload>(
        this,
        [taskId, event](Store &s) {
            Payload p;
            if (!event) {
                p.task = ImageStore::task(s, taskId);
                p.files = ImageStore::files(s, taskId, false);
            }
            p.secret = ImageStore::setting(s, QStringLiteral("webhook_secret"));
            return p;
        },
        [this, delivery](const DbResult<Payload> &r) {
            if (r.ok() && !delivery.body.isEmpty()) // an event: its body as it fired
                return send(delivery, delivery.body, r.value.secret.value_or(QString()));
            if (!r.ok() || !r.value.task) {
                FetchOutcome o;
                o.error = FetchError::Failed;
                o.message = r.ok() ? QStringLiteral("the task no longer exists") : r.error;
                return record(delivery, o, {}, now(), 0);
            }
            const QByteArray secret = m_family.linkSecret();
            const QString base = r.value.task->baseUrl;
            const auto link = [&](const ImageStore::ImageFile &f) {
                return ImageLinks::url(base, secret, f.id, ImageLinks::extensionFor(f.mime),
                                       f.expiresMs / 1000);
            };
            // The delivery as the receiver sees it: this attempt under way.
            ImageStore::Delivery shown = delivery;
            shown.attempts += 1;
            const QByteArray body =
                QJsonDocument(ImageRequests::taskJson(*r.value.task, r.value.files, shown, link))
                    .toJson(QJsonDocument::Compact);
            send(delivery, body, r.value.secret.value_or(QString()));
        });
}

void WebhookDispatcher::send(const ImageStore::Delivery &delivery, const QByteArray &body,
                             const QString &secret)
{
    const int attemptNo = delivery.attempts + 1;
    FetchRequest req;
    req.url = delivery.url;
    req.method = "POST";
    req.body = body;
    req.headers = {"Content-Type: application/json", "User-Agent: Switchyard-Webhooks/1",
                   "X-Switchyard-Delivery: " + QByteArray::number(delivery.id),
                   "X-Switchyard-Attempt: " + QByteArray::number(attemptNo),
                   (delivery.body.isEmpty() ? "X-Switchyard-Task: " : "X-Switchyard-Event: ") +
                       delivery.taskId.toUtf8()};
    if (!secret.isEmpty())
        req.headers +=
            signatureHeaders(secret, QStringLiteral("whd_%1").arg(delivery.id), now() / 1000, body);
    const qint64 started = now();
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    auto excerpt = std::make_shared<QByteArray>();
    auto call = m_fetch->start(req, m_family.config().webhooks.policy);
    call->onData = [excerpt](const QByteArray &chunk) {
        excerpt->append(chunk.left(kExcerptBytes - excerpt->size()));
        return excerpt->size() < kExcerptBytes;
    };
    call->onDone = [this, delivery, excerpt, started, clock](const FetchOutcome &outcome) {
        record(delivery, outcome, *excerpt, started, int(clock->elapsed()));
    };
}

void WebhookDispatcher::record(const ImageStore::Delivery &delivery, const FetchOutcome &outcome,
                               const QByteArray &excerpt, qint64 startedMs, int durationMs)
{
    const WebhookSettings &w = m_family.config().webhooks;
    ImageStore::Attempt a;
    a.deliveryId = delivery.id;
    a.attempt = delivery.attempts + 1;
    a.manual = delivery.manual;
    a.startedMs = startedMs;
    a.url = delivery.url;
    a.address = outcome.address;
    a.status = outcome.status;
    a.error = describe(outcome);
    a.durationMs = durationMs;
    a.excerpt = QString::fromUtf8(excerpt);
    a.instance = m_family.instance();
    const bool delivered = outcome.status >= 200 && outcome.status <= 299 &&
                           (outcome.ok() || outcome.error == FetchError::Stopped);
    const bool scheduled = !delivery.manual;
    const int spent = delivery.scheduled + (scheduled ? 1 : 0);
    QString status = QStringLiteral("delivered");
    qint64 next = 0;
    if (!delivered) {
        if (a.error.isEmpty())
            a.error = QStringLiteral("HTTP %1").arg(outcome.status);
        if (spent >= 1 + w.retries) {
            status = QStringLiteral("failed");
        } else {
            status = QStringLiteral("pending");
            next = now() + w.backoffAfter(qMax(1, spent));
        }
    }
    const QString owner = m_family.instance();
    m_family.database()->write<std::optional<ImageStore::Delivery>>(
        this,
        [a, owner, scheduled, status, next](Store &s) {
            return ImageStore::recordAttempt(s, a, owner, scheduled, status, next);
        },
        [this, id = delivery.id](const DbResult<std::optional<ImageStore::Delivery>> &r) {
            --m_inFlight;
            if (!r.ok())
                qWarning("webhook attempt of delivery %lld not recorded: %s", id,
                         qPrintable(r.error));
            emit m_family.events()->deliveryChanged(id);
            wake();
        });
}

QList<QByteArray> WebhookDispatcher::signatureHeaders(const QString &secret,
                                                      const QString &messageId, qint64 timestampS,
                                                      const QByteArray &body)
{
    const QByteArray key = QByteArray::fromBase64(secret.mid(6).toLatin1()); // after "whsec_"
    const QByteArray signed_ =
        messageId.toUtf8() + '.' + QByteArray::number(timestampS) + '.' + body;
    const QByteArray mac =
        QMessageAuthenticationCode::hash(signed_, key, QCryptographicHash::Sha256).toBase64();
    return {"webhook-id: " + messageId.toUtf8(),
            "webhook-timestamp: " + QByteArray::number(timestampS), "webhook-signature: v1," + mac};
}

QString WebhookDispatcher::newSecret()
{
    quint32 words[8];
    QRandomGenerator::system()->generate(std::begin(words), std::end(words));
    const QByteArray bytes(reinterpret_cast<const char *>(words), sizeof words);
    return QStringLiteral("whsec_") + QString::fromLatin1(bytes.toBase64());
}
