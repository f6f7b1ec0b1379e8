#pragma once

#include "FamilyThread.h"
#include "ImagesConfig.h"
#include "ServiceFamily.h"
#include "upstream/UpstreamProvider.h"
#include "WebhookOutbox.h"

#include <memory>
#include <QObject>
#include <QPointer>

class DatabaseService;
class ImageRunner;
class WebhookDispatcher;
namespace ImageStore {
struct Task;
}

// What the family announces, from its worker thread (connect with queued connections): the
// window's delivery log and the servers' synchronous waiters listen, and the servers' credit
// gates learn the balance a task's end left (ledgerId: the entry that left it).
class ImagesEvents : public QObject
{
    Q_OBJECT
signals:
    void taskEnded(const QString &taskId);
    void deliveryChanged(qint64 deliveryId);
    void balanceCommitted(qint64 accountId, qint64 balance, qint64 ledgerId);
    // A task's charge, for the key's budget (KeyBudgets::charged) on every server.
    void keyCharged(qint64 keyId, qint64 cost, qint64 timeMs);
};

// Image tasks and their webhook callbacks as a service family;
// server/images/README.md has every shape, the states, the configuration and the tables.
//   config   the "images" section (ImagesConfig.h);
//   routes   POST/GET /v1/images/generations, GET /v1/images/files/{file} (signed links), and
//            the control API /api/v1/webhooks/... (scopes webhooks:read, webhooks:write);
//   models   the image models in GET /v1/models.
// The work runs on one thread of the family's, shared by its servers: the task runner
// (ImageRunner: upstream calls, images into the database) and the webhook dispatcher
// (WebhookDispatcher: the outbox). Tasks, images and deliveries live in the database, so any
// instance sharing a PostgreSQL database serves them and a restart loses nothing.
class ImagesFamily : public ServiceFamily, public WebhookOutbox
{
public:
    ImagesFamily();
    ~ImagesFamily() override;

    QString name() const override { return QStringLiteral("images"); }
    void configure(const QJsonObject &section, const ServerSettings &server) override;
    QList<Migrations::Component> migrations() const override;
    QStringList scopes() const override;
    QList<MeterSpec> meters() const override; // images (ImageStore::kImagesMeter)
    void start(DatabaseService &db) override;
    QList<RouteSpec> routes(const ServerScope &scope) override;
    void stop() override;
    QJsonArray models() const override;

    const ImagesConfig &config() const { return m_config; }
    ImagesEvents *events() const { return m_events.get(); }
    DatabaseService *database() const { return m_db; }
    // This process's name in leases and the delivery log: host, pid and a random part.
    const QString &instance() const { return m_instance; }
    // The key that signs image links (shared by every instance through the database).
    const QByteArray &linkSecret() const { return m_linkSecret; }
    KeyRotation &keys() { return m_keys; }

    // Hands a created task to the runner (any thread).
    void run(const ImageStore::Task &task);
    // Asks the dispatcher to look for due deliveries now (any thread).
    void wakeDispatcher();

    // The outbox offered to the core (ServerScope::provideOutbox): alerts.
    void enqueue(Store &store, const Message &message) const override;
    void wake() override { wakeDispatcher(); }

private:
    ImagesConfig m_config;
    QString m_instance;
    QByteArray m_linkSecret;
    KeyRotation m_keys;
    DatabaseService *m_db = nullptr;
    std::unique_ptr<ImagesEvents> m_events;
    FamilyThread m_thread{QStringLiteral("images")};
    QPointer<ImageRunner> m_runner;
    QPointer<WebhookDispatcher> m_dispatcher;
};
