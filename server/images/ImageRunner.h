#pragma once

#include "images/ImageStore.h"
#include "upstream/GuardedFetch.h"
#include "upstream/ProviderCall.h"

#include <QHash>
#include <QList>
#include <QObject>
#include <QTimer>

class ImagesFamily;
class UpstreamClient;

// Runs image tasks on the family's thread (server/images/README.md, "States"):
//   queued       waiting for one of max_concurrent upstream calls;
//   in_progress  the upstream call is in flight;
//   uploading    the answer is in: images decoded (or downloaded through the URL guard) and
//                stored;
//   completed / partial / failed, written in one transaction with the images, the billing and
//   the webhook delivery (ImageStore::finish, through DatabaseService::writeMoney, which
//   announces its ledger entries and usage record).
// Every active task carries this instance's lease, renewed while it runs. Tasks whose owner's
// lease ran out (the process died) are swept up: a queued one is taken over and run (its
// upstream call never started, so repeating nothing), one in progress is failed with a clear
// error and nothing charged (its upstream call may have run and is not repeated: image
// generation is not idempotent and is billed upstream).
class ImageRunner : public QObject
{
public:
    explicit ImageRunner(ImagesFamily &family, QObject *parent = nullptr);
    ~ImageRunner() override;

    void enqueue(const ImageStore::Task &task);
    // Stops every call in flight; their tasks stay active until the sweep of a live instance.
    void shutdown();

private:
    struct Running;
    void pump();
    void begin(const ImageStore::Task &task);
    void answered(const QString &taskId, const UpstreamAnswer &answer);
    void collect(const QString &taskId);
    void finish(const QString &taskId, const QString &status, const QString &error, int errorStatus,
                const QString &errorCode);
    void sweep();
    // Tells the servers' credit gates the balance each account's newest entry left.
    void noteBalances(const QList<LedgerEntry> &entries);
    void renew();
    qint64 leaseUntil() const;

    ImagesFamily &m_family;
    UpstreamClient *m_client;
    GuardedFetch *m_fetch;
    QTimer m_renew;
    QTimer m_sweep;
    QList<ImageStore::Task> m_queue;
    QHash<QString, std::shared_ptr<Running>> m_running;
    bool m_stopping = false;
};
