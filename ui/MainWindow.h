#pragma once

#include "PanelRegistry.h"

#include <memory>
#include <QJsonObject>
#include <QMainWindow>
#include <QMetaObject>
#include <QTimer>

class ApiKeyModel;
class ControlTokenModel;
class LedgerModel;
class QLabel;
class QListWidget;
class QStackedWidget;
class RequestMeter;
class ServerHost;
class Services;
class UsageBucketModel;
class UsageModel;

// The operator's console: a sidebar of sections, one panel per concern, and a status bar with
// the API's URL, requests in the last minute and error counts. Owns the shared item models
// the panels are bound to. The panels are the families': each family of the services that
// `panels` has panels for offers them (PanelRegistry), and the sidebar shows them in their
// order, the first one selected.
class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    // services must be started and outlive the window; the status bar follows its server when
    // it is serving.
    explicit MainWindow(Services &services, const PanelRegistry &panels = PanelRegistry::builtIn(),
                        QWidget *parent = nullptr);
    ~MainWindow() override;

    // Adds a panel under a sidebar section heading (created on first use) and returns its
    // index in the panel stack.
    int addPanel(const QString &section, const QString &title, QWidget *panel);
    // Shows the panel with this sidebar title; false if there is none.
    bool showPanel(const QString &title);
    QWidget *currentPanel() const;

    ApiKeyModel *apiKeyModel() const { return m_keys; }
    ControlTokenModel *controlTokenModel() const { return m_tokens; }
    LedgerModel *ledgerModel() const { return m_ledger; }
    UsageModel *usageModel() const { return m_usage; }
    UsageBucketModel *usageBucketModel() const { return m_buckets; }

    // An alert that fired (server/Alerts.h; the server's come here by themselves): shown in
    // the banner above the panels until dismissed, and as a tray message where a system tray
    // exists.
    void showAlert(const QJsonObject &alert);
    QWidget *alertBanner() const { return m_banner; }

private:
    void addFamilyPanels(Services &services, const PanelRegistry &panels);
    void updateStatus();

    ServerHost *m_host;
    ApiKeyModel *m_keys;
    ControlTokenModel *m_tokens;
    LedgerModel *m_ledger;
    UsageModel *m_usage;
    UsageBucketModel *m_buckets;
    QListWidget *m_sidebar;
    QStackedWidget *m_stack;
    QLabel *m_listening;
    QLabel *m_rate;
    QLabel *m_errors;
    std::shared_ptr<RequestMeter> m_meter;
    QMetaObject::Connection m_served;
    QWidget *m_banner;
    QLabel *m_bannerText;
    int m_unseenAlerts = 0;
    class QSystemTrayIcon *m_tray = nullptr;
    QTimer m_statusTick;
};
