#pragma once

#include <QByteArray>
#include <QString>

class Store;

// An outbox of webhook deliveries that a family keeps (the image tasks' one: the URL guard,
// retries on a schedule, the optional Standard Webhooks signature, the delivery log) and
// offers to the core for its own events (ServerScope::provideOutbox), so that the core sends
// alerts without naming a family and without a second sender.
class WebhookOutbox
{
public:
    virtual ~WebhookOutbox() = default;

    struct Message
    {
        QString subject;      // what the log shows in place of a task: "alr_..."
        qint64 accountId = 0; // whose control tokens list it
        QString url;          // where to POST
        QByteArray body;      // sent as it is: application/json
        qint64 nowMs = 0;     // due now
    };
    // Inside a writer job (on the database thread, in that job's transaction): the delivery
    // commits with what caused it or not at all. Uses no state but the store.
    virtual void enqueue(Store &store, const Message &message) const = 0;
    // Any thread, after the job committed: the sender looks for due deliveries now.
    virtual void wake() = 0;
};
