#pragma once

#include "images/ImageStore.h"
#include "upstream/GuardedFetch.h"

#include <QObject>
#include <QTimer>

class ImagesFamily;

// The webhook outbox's sender, on the family's thread (server/images/README.md, "Webhooks").
// Due deliveries are claimed from the database with a lease (FOR UPDATE SKIP LOCKED on
// PostgreSQL, so each attempt is made by one instance), POSTed through the URL guard
// (https only, no redirects, the configured timeout), and their outcome recorded with the
// attempt: 2xx delivered; anything else retried after the backoff, until the retries are
// spent, then failed. A 3xx is a failure and is not followed. A manual resend is one attempt
// now that does not count against the schedule. Deliveries are at-least-once: an instance that
// dies mid-attempt leaves its lease to run out, and the delivery is attempted again.
class WebhookDispatcher : public QObject
{
public:
    explicit WebhookDispatcher(ImagesFamily &family, QObject *parent = nullptr);
    ~WebhookDispatcher() override;

    // Looks for due deliveries now.
    void wake();
    void shutdown();

    // The signature headers of the Standard Webhooks scheme for `body`:
    // webhook-id, webhook-timestamp, webhook-signature ("v1,<base64 HMAC-SHA256 of
    // id.timestamp.body>" with the secret's bytes after "whsec_").
    static QList<QByteArray> signatureHeaders(const QString &secret, const QString &messageId,
                                              qint64 timestampS, const QByteArray &body);
    // A new signing secret: "whsec_" + base64 of 32 random bytes.
    static QString newSecret();

private:
    void poll();
    void claim();
    void schedule(qint64 dueMs);
    void attempt(const ImageStore::Delivery &delivery);
    void send(const ImageStore::Delivery &delivery, const QByteArray &body, const QString &secret);
    void record(const ImageStore::Delivery &delivery, const FetchOutcome &outcome,
                const QByteArray &excerpt, qint64 startedMs, int durationMs);

    ImagesFamily &m_family;
    GuardedFetch *m_fetch;
    QTimer m_timer;
    int m_inFlight = 0;
    bool m_polling = false;
    bool m_again = false;
    bool m_stopping = false;
};
