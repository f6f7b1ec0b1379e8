#pragma once

#include <memory>
#include <QMainWindow>
#include <QMetaObject>
#include <QTimer>

class AddressFamily;
class AudioFamily;
class ApiKeyModel;
class ControlTokenModel;
class DatabaseService;
class LedgerModel;
class ProviderRegistry;
class ProvidersPanel;
class QLabel;
class QListWidget;
class QStackedWidget;
class RequestMeter;
class ServerHost;
class Services;
class UsageBucketModel;
class UsageModel;

// The operator's console: a sidebar of sections, one panel per concern, and a status bar with
// the API's address, requests in the last minute and error counts. Owns the shared item models
// the panels are bound to. host may be null (the server did not start).
class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    // The program's window: every panel, bound to the services' database, server and families
    // (the token scopes they declare, the gateway's providers, the address tools and import,
    // the audio family's speech playground).
    explicit MainWindow(Services &services, QWidget *parent = nullptr);
    // The core's panels over a database alone (no families), for tests; the address tool
    // answers from an engine of its own, without import, and the speech playground from an
    // audio family of its own with the default configuration.
    MainWindow(DatabaseService &db, ServerHost *host, QWidget *parent = nullptr);
    ~MainWindow() override;

    // Adds a panel under a sidebar section heading (created on first use) and returns its
    // index in the panel stack.
    int addPanel(const QString &section, const QString &title, QWidget *panel);
    // Shows the panel with this sidebar title; false if there is none.
    bool showPanel(const QString &title);
    QWidget *currentPanel() const;

    // Adds Settings > Providers, the gateway's upstream providers, edited through the registry
    // (which must outlive the window). Only the first call adds the panel.
    void setProviderRegistry(ProviderRegistry *registry);
    ProvidersPanel *providersPanel() const { return m_providers; }

    ApiKeyModel *apiKeyModel() const { return m_keys; }
    ControlTokenModel *controlTokenModel() const { return m_tokens; }
    LedgerModel *ledgerModel() const { return m_ledger; }
    UsageModel *usageModel() const { return m_usage; }
    UsageBucketModel *usageBucketModel() const { return m_buckets; }

private:
    MainWindow(DatabaseService &db, ServerHost *host, const QStringList &scopes,
               AddressFamily *address, AudioFamily *audio, QWidget *parent);
    void updateStatus();

    ServerHost *m_host;
    ApiKeyModel *m_keys;
    ControlTokenModel *m_tokens;
    LedgerModel *m_ledger;
    UsageModel *m_usage;
    UsageBucketModel *m_buckets;
    ProvidersPanel *m_providers = nullptr;
    QListWidget *m_sidebar;
    QStackedWidget *m_stack;
    QLabel *m_address;
    QLabel *m_rate;
    QLabel *m_errors;
    std::shared_ptr<RequestMeter> m_meter;
    QMetaObject::Connection m_served;
    QTimer m_statusTick;
};
