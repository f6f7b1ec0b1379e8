#pragma once

#include "Records.h"
#include "Store.h"

#include <optional>
#include <QByteArray>
#include <QList>
#include <QString>

class MoneyJournal;

// The image-task family's SQL (tables in ImageTables.h), run on a Store's connection: the
// server reaches it through DatabaseService's writer and readers, tests directly. Times are
// milliseconds since the epoch; money is credit units. Each function that changes several rows
// is meant to run as one writer job, i.e. one transaction: a task's final state, its images,
// its billing and its webhook delivery commit together or not at all. Those that move money
// take a MoneyJournal and run in DatabaseService::writeMoney, so that their ledger entries and
// usage records are announced like every settlement's.
namespace ImageStore {

// Task states (server/images/README.md, "States"): queued and in_progress and uploading are
// active; completed, partial and failed are final.
namespace Status {
inline constexpr char Queued[] = "queued";
inline constexpr char InProgress[] = "in_progress";
inline constexpr char Uploading[] = "uploading";
inline constexpr char Completed[] = "completed";
inline constexpr char Partial[] = "partial";
inline constexpr char Failed[] = "failed";
} // namespace Status
bool isFinal(const QString &status);

// The usage meter a task's charge bills by: the images it produced (described by the images
// family, ServiceFamily::meters()).
inline const QString kImagesMeter = QStringLiteral("images");

struct Task
{
    QString id;
    qint64 accountId = 0;
    qint64 keyId = 0;
    QString model;
    QString prompt;
    QByteArray params; // JSON: n, size, quality, response_format as asked
    int n = 1;
    QString status;
    QString error;       // failed: why, for the client
    int errorStatus = 0; // failed: the HTTP status a waiting client gets (429, 502, 504, ...)
    QString errorCode;   // failed: the envelope's code
    QString callbackUrl;
    QString baseUrl;  // the scheme and host image links are built on
    qint64 price = 0; // per image
    qint64 held = 0;  // reserved at submission: price * n
    qint64 cost = 0;  // charged at the end: price * produced
    int produced = 0;
    QString requestId;
    QString owner; // the instance running it
    qint64 leaseUntil = 0;
    qint64 createdMs = 0;
    qint64 startedMs = 0;
    qint64 completedMs = 0;
    bool purged = false;
};

struct ImageFile
{
    QString id;
    QString taskId;
    int index = 0;
    QString mime;
    qint64 bytes = 0;
    QByteArray data; // empty when listed without data, or expired
    qint64 expiresMs = 0;
    QString revisedPrompt;
};

struct Delivery
{
    qint64 id = 0;
    QString taskId;
    qint64 accountId = 0;
    QString url;
    QString status;      // pending, delivered, failed
    int attempts = 0;    // every attempt made, manual ones included
    int scheduled = 0;   // scheduled attempts made (the retry budget counts these)
    bool manual = false; // a manual attempt is due
    qint64 nextMs = 0;
    QString leaseOwner;
    qint64 leaseUntil = 0;
    int lastStatus = 0;
    QString lastError;
    qint64 createdMs = 0;
    qint64 updatedMs = 0;
    QByteArray body; // an event's (an alert's), fixed; empty for a task's, built per attempt
};

struct Attempt
{
    qint64 id = 0;
    qint64 deliveryId = 0;
    int attempt = 0;
    bool manual = false;
    qint64 startedMs = 0;
    QString url;
    QString address; // the address dialled, empty when none was
    int status = 0;  // 0: no HTTP answer
    QString error;   // empty on success
    int durationMs = 0;
    QString excerpt; // the first 2 KiB of the answer
    QString instance;
};

// ---- tasks ----

// Holds task.held from the account (a ledger charge `<task>:hold` that leaves the balance >=
// floor), then inserts the task. Returns the hold (Committed with its entry also when nothing
// is held); the task exists only when it is Committed.
ChargeResult insertTask(MoneyJournal &journal, const Task &task, qint64 floor);
std::optional<Task> task(Store &store, const QString &id);
// Marks an active task in_progress (or uploading) for `owner`; false when it is no longer
// active or another instance owns it.
bool setActive(Store &store, const QString &id, const QString &status, const QString &owner,
               qint64 leaseUntil, qint64 nowMs);
// Extends the lease of every active task `owner` runs.
void renewLeases(Store &store, const QString &owner, qint64 leaseUntil);

struct Final
{
    QString taskId;
    QString owner;
    QString status; // completed, partial or failed
    QString error;
    int errorStatus = 0;
    QString errorCode;
    QList<ImageFile> files; // with data
    qint64 nowMs = 0;
    UsageRecord usage; // account, key, endpoint, model, status, request id; cost and images set
    qint64 deliveryDueMs = 0;
};
// The final state, in one transaction with everything that goes with it: the images, the
// hold released, the charge and usage record for the images produced (price * files), and the
// webhook delivery when the task has a callback URL. false (nothing written) when the task is
// not active under `owner` (empty owner: any owner whose lease ran out, for recovery).
bool finish(MoneyJournal &journal, const Final &f, std::optional<Delivery> *delivery = nullptr);

// Active tasks whose owner's lease ran out before nowMs (the owner stopped).
QList<Task> abandoned(Store &store, qint64 nowMs, int limit);
// Takes over an abandoned queued task (its upstream call never started); false when another
// instance took it first.
bool adopt(Store &store, const QString &id, const QString &owner, qint64 leaseUntil, qint64 nowMs);

QList<ImageFile> files(Store &store, const QString &taskId, bool withData);
std::optional<ImageFile> file(Store &store, const QString &id);

// Drops expired image data; tasks that ended before retentionCutoffMs lose their images,
// deliveries and prompt (purged: GET answers 410). Returns {files dropped, tasks purged}.
QPair<int, int> purge(Store &store, qint64 nowMs, qint64 retentionCutoffMs);

// ---- settings ----

// The value of a shared setting, created with `value` when absent (the first instance's wins).
QString ensureSetting(Store &store, const QString &name, const QString &value);
std::optional<QString> setting(Store &store, const QString &name);
void setSetting(Store &store, const QString &name, const QString &value);
void removeSetting(Store &store, const QString &name);

// ---- deliveries ----

// Claims up to `limit` due deliveries (pending, next_ms <= now, no live lease) for `owner`
// until leaseUntil: FOR UPDATE SKIP LOCKED on PostgreSQL, so instances never claim one twice.
QList<Delivery> claim(Store &store, const QString &owner, qint64 nowMs, qint64 leaseUntil,
                      int limit);
// A delivery of a fixed body (an event of the core's, WebhookOutbox), due at nowMs; taskId
// is the event's id, accountId the account whose control tokens list it.
void insertEvent(Store &store, const QString &eventId, qint64 accountId, const QString &url,
                 const QByteArray &body, qint64 nowMs);
// When the next pending delivery falls due (its next attempt or its lease's end), or 0.
qint64 nextDue(Store &store, qint64 nowMs);

// The outcome of an attempt made under `owner`'s lease: the attempt recorded, the delivery
// delivered, failed, or pending again at nextMs, and its lease released. `scheduled` says
// whether the attempt counted against the retry budget. Returns the delivery as it now is.
std::optional<Delivery> recordAttempt(Store &store, const Attempt &a, const QString &owner,
                                      bool scheduled, const QString &status, qint64 nextMs);

struct DeliveryQuery
{
    qint64 accountId = 0; // 0: every account (the window)
    QString status;
    QString taskId;
    QString text; // part of the task id or the URL, any case
    qint64 fromMs = 0;
    qint64 toMs = 0;
    qint64 beforeId = 0;
    int limit = 50;
};
QList<Delivery> deliveries(Store &store, const DeliveryQuery &q);
std::optional<Delivery> delivery(Store &store, qint64 id, qint64 accountId = 0);
std::optional<Delivery> deliveryForTask(Store &store, const QString &taskId);
QList<Attempt> attempts(Store &store, qint64 deliveryId);
// Asks for a manual attempt now (also after the delivery failed or was delivered).
std::optional<Delivery> resend(Store &store, qint64 id, qint64 accountId, qint64 nowMs);
// Pending deliveries (for measurements and the window's header).
qint64 pendingCount(Store &store);

} // namespace ImageStore
