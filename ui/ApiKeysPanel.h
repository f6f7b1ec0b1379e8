#pragma once

#include <QWidget>

class ApiKeyModel;
class QLabel;
class QPushButton;
class QTableView;

// Settings > API Keys: the account's keys (masked) with their budget spent (a bar), expiry and
// status (a key whose rules refuse it stands out), Create Key (name, tier and rules; the full
// value shown once), Edit (tier and rules) and Revoke (after confirmation). All persistence
// goes through ApiKeyModel.
class ApiKeysPanel : public QWidget
{
    Q_OBJECT
public:
    explicit ApiKeysPanel(ApiKeyModel *model, QWidget *parent = nullptr);

    QTableView *view() const { return m_view; }

public slots:
    // Asks for a name (CreateApiKeyDialog), creates the key, shows it once (CreatedSecretDialog).
    void createKey();
    // Asks for confirmation ("revokeConfirmation"), then revokes the selected key.
    void revokeSelected();
    // Edits the selected key's name, tier and rules (CreateApiKeyDialog on that key).
    void editSelected();

private:
    qint64 selectedId() const;
    void updateActions();
    void showError(const QString &message);
    QStringList knownTiers() const;

    ApiKeyModel *m_model;
    QTableView *m_view;
    QPushButton *m_create;
    QPushButton *m_revoke;
    QPushButton *m_edit;
    QLabel *m_message;
};
