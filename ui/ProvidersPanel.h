#pragma once

#include "llm/GatewayConfig.h"

#include <QHash>
#include <QSet>
#include <QWidget>

class ProviderRegistry;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTableView;
class QTableWidget;

// Settings > Providers: the gateway's upstream providers (name, type, base URL, upstream keys
// shown masked, timeouts), edited as a draft (Add / Edit / Remove) and applied with Save
// (ProviderRegistry::applyAndSave: live at once and written to the config file's "gateway"
// section; a refused config is explained inline and nothing changes). "Test connection" checks
// the selected provider as drafted. For a catalog provider, the live model list with its prices,
// "Refresh catalog", and local price overrides (part of the draft).
//
// Widgets are named for tests: "providersTable", "addProviderButton", "editProviderButton",
// "removeProviderButton", "saveProvidersButton", "revertProvidersButton", "providersMessageLabel",
// "testConnectionButton", "testResultLabel" (property "result": "running", "ok" or "failed"),
// "catalogBox", "catalogStatusLabel", "refreshCatalogButton", "catalogFilterEdit",
// "catalogModelsTable", "overrideInputEdit", "overrideOutputEdit", "overrideCacheReadEdit",
// "overrideCacheWriteEdit", "setOverrideButton", "clearOverrideButton", "overrideMessageLabel".
class ProvidersPanel : public QWidget
{
    Q_OBJECT
public:
    enum Column
    {
        NameColumn,
        TypeColumn,
        BaseUrlColumn,
        KeysColumn,
        TimeoutsColumn,
        ColumnCount
    };
    enum CatalogColumn
    {
        ModelIdColumn,
        ModelNameColumn,
        InputPriceColumn,
        OutputPriceColumn,
        CacheReadPriceColumn,
        CacheWritePriceColumn,
        OverrideColumn,
        CatalogColumnCount
    };

    explicit ProvidersPanel(ProviderRegistry *registry, QWidget *parent = nullptr);

    QTableWidget *providersTable() const { return m_table; }
    QTableView *catalogView() const { return m_catalogView; }
    // The configuration as edited here (what Save would apply).
    const GatewayConfig &draft() const { return m_draft; }
    bool hasUnsavedChanges() const { return m_dirty; }
    // Selects the provider row with this name; false if there is none.
    bool selectProvider(const QString &name);
    QString selectedProvider() const;

    // "N keys: sk-a••••wxyz, ..." (never the keys themselves).
    static QString keysSummary(const QStringList &keys);
    static QString timeoutsSummary(const ProviderConfig &p);

public slots:
    void addProvider();
    void editSelected();
    // Asks for confirmation ("removeProviderConfirmation"), then removes it from the draft.
    void removeSelected();
    void save();
    void revert();
    void testSelected();
    void refreshSelectedCatalog();

private:
    void loadFromRegistry();
    void markDirty();
    void fillTable();
    void fillCatalog();
    void updateActions();
    void updateCatalogStatus();
    void updateOverrideForm();
    void setOverride();
    void clearOverride();
    QString selectedModelId() const;
    void showMessage(const QString &text, bool error);
    void showTestResult(const QString &text, const QString &result);
    QStringList namesExcept(const QString &name) const;
    ProviderConfig *draftProvider(const QString &name);

    ProviderRegistry *m_registry;
    GatewayConfig m_draft;
    bool m_dirty = false;
    bool m_testing = false;
    QSet<QString> m_refreshing;
    QHash<QString, QString> m_refreshErrors; // provider -> last refresh error

    QLabel *m_where;
    QTableWidget *m_table;
    QPushButton *m_add;
    QPushButton *m_edit;
    QPushButton *m_remove;
    QPushButton *m_save;
    QPushButton *m_revert;
    QPushButton *m_test;
    QLabel *m_message;
    QLabel *m_testResult;

    QGroupBox *m_catalogBox;
    QLabel *m_catalogStatus;
    QPushButton *m_refresh;
    QLineEdit *m_filter;
    QStandardItemModel *m_catalogModel;
    QSortFilterProxyModel *m_catalogProxy;
    QTableView *m_catalogView;
    QLineEdit *m_overrideInput;
    QLineEdit *m_overrideOutput;
    QLineEdit *m_overrideCacheRead;
    QLineEdit *m_overrideCacheWrite;
    QPushButton *m_setOverride;
    QPushButton *m_clearOverride;
    QLabel *m_overrideMessage;
};
