#pragma once

// Complete, so that a caller can pass services.family<SocialFamily>().
#include "SocialFamily.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTableView;

// Settings > Social data: the social-data family's catalog as it stands (where it came from,
// when, how many actions, the last refresh's error, the next refresh), its platforms with the
// operator's rules (enabled, published name, actions), the selected platform's actions with
// their method and required query parameters (filterable), and Refresh, which fetches the
// catalog from the upstream now and shows progress and the outcome. Live: the catalog keeper's
// changed() (a new catalog or status, from the family's thread) reloads the panel; nothing here
// blocks the GUI thread (the refresh runs on the keeper's thread).
//
// Without the family (a build without it, or a family that has not started) a label says so.
//
// Widgets are named for tests: "unavailableLabel" (without the family only); "statusLabel",
// "refreshButton", "messageLabel", "platformsTable", "actionsFilterEdit", "actionsTable".
class SocialDataPanel : public QWidget
{
    Q_OBJECT
public:
    // family: the services' social-data family (must outlive the panel), or null.
    explicit SocialDataPanel(SocialFamily *family, QWidget *parent = nullptr);

    bool isAvailable() const { return m_platforms != nullptr; }
    QStandardItemModel *platformModel() const { return m_platforms; }
    QSortFilterProxyModel *actionModel() const { return m_actionFilter; }
    QTableView *platformView() const { return m_platformView; }
    // The upstream name of the selected platform, or empty.
    QString selectedPlatform() const;
    // Selects the platform with this upstream name; false when it is not listed.
    bool selectPlatform(const QString &name);

    enum PlatformColumn
    {
        NameColumn,
        EnabledColumn,
        PublicNameColumn,
        ActionsColumn,
        PlatformColumns
    };
    enum ActionColumn
    {
        PathColumn,
        MethodColumn,
        RequiredColumn,
        SummaryColumn,
        ActionColumns
    };

public slots:
    // Reads the family's status and catalog again.
    void reload();
    // Fetches the catalog from the upstream now.
    void refreshCatalog();

signals:
    void refreshFinished(bool ok);

private:
    void showActions();

    SocialFamily *m_family;
    QLabel *m_status = nullptr;
    QLabel *m_message = nullptr;
    QPushButton *m_refresh = nullptr;
    QStandardItemModel *m_platforms = nullptr;
    QStandardItemModel *m_actions = nullptr;
    QSortFilterProxyModel *m_actionFilter = nullptr;
    QTableView *m_platformView = nullptr;
    QTableView *m_actionView = nullptr;
    QLineEdit *m_filter = nullptr;
    std::shared_ptr<const SocialCatalog> m_shown; // the catalog the tables show
    bool m_refreshing = false;
};
