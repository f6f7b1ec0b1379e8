#pragma once

#include "llm/GatewayConfig.h"

#include <QDialog>
#include <QStringList>

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;

// Adds or edits one upstream provider: name, type, base URL, upstream keys and timeouts.
// Upstream keys are typed into a password field and, once added, only ever shown masked
// (ProviderConfig::maskKey); a key can be removed but never revealed. Accepting only collects
// the answers; the Providers panel applies them. Widgets are named so tests can fill the dialog
// in like a user: "providerNameEdit", "providerTypeCombo", "baseUrlEdit", "keysList",
// "newKeyEdit", "addKeyButton", "removeKeyButton", "connectTimeoutSpin", "firstByteTimeoutSpin",
// "idleTimeoutSpin", "totalTimeoutSpin", "messagesTimeoutSpin", "keyRestSpin",
// "refreshMinutesSpin", "validationLabel", "buttons".
class ProviderDialog : public QDialog
{
    Q_OBJECT
public:
    // takenNames: the other providers' names (a new name must differ from all of them).
    ProviderDialog(const ProviderConfig &initial, const QStringList &takenNames, bool adding,
                   QWidget *parent = nullptr);

    // The provider as entered (price overrides and anything not shown are kept from `initial`).
    ProviderConfig provider() const;

    // Why these answers cannot be accepted, empty if they can. Shared with the panel's checks.
    static QString nameProblem(const QString &name, const QStringList &takenNames);
    static QString baseUrlProblem(const QString &url);
    static QString keyProblem(const QString &key, const QStringList &existing);

    // A key still typed in the password field is added first; nothing is accepted while the
    // answers are invalid.
    void accept() override;
    void done(int result) override;

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    bool addTypedKey();
    void removeSelectedKey();
    void refreshKeys();
    void validate();
    QString problem() const;

    ProviderConfig m_initial;
    QStringList m_taken;
    QStringList m_keys; // never put into a widget unmasked
    QString m_keyProblem;

    QLineEdit *m_name;
    QComboBox *m_type;
    QLineEdit *m_baseUrl;
    QListWidget *m_keyList;
    QLineEdit *m_newKey;
    QPushButton *m_addKey;
    QPushButton *m_removeKey;
    QSpinBox *m_connect;
    QSpinBox *m_firstByte;
    QSpinBox *m_idle;
    QSpinBox *m_total;
    QSpinBox *m_messages;
    QSpinBox *m_rest;
    QSpinBox *m_refresh;
    QLabel *m_problem;
    QPushButton *m_ok;
};
