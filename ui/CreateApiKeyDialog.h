#pragma once

#include "Records.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDateTimeEdit;
class QLabel;
class QLineEdit;
class QPushButton;

// Asks for a new API key's name, rate-limit tier and rules (budget, models, addresses, expiry),
// or, given a key, edits them. Accepting only collects the answers; the panel writes them.
// Widgets are named ("keyNameEdit", "keyTierCombo", "budgetEdit", "budgetPeriodCombo",
// "modelsEdit", "allowedIpsEdit", "expiresCheck", "expiresEdit", "problemLabel", "buttons") so
// tests can fill the dialog in like a user. A value the rules would refuse disables the button
// and says why.
class CreateApiKeyDialog : public QDialog
{
    Q_OBJECT
public:
    // tiers: the choices offered (the first is preselected); a tier can also be typed.
    explicit CreateApiKeyDialog(const QStringList &tiers, QWidget *parent = nullptr);
    // Edits `key`'s name, tier and rules.
    CreateApiKeyDialog(const QStringList &tiers, const ApiKeyRecord &key,
                       QWidget *parent = nullptr);

    QString name() const;
    QString tier() const;
    // The rules as entered (valid when the dialog was accepted).
    KeyRules rules() const;

private:
    void build(const QStringList &tiers);
    void validate();
    // Empty when the rule fields are valid, else what is wrong.
    QString problem() const;

    QLineEdit *m_name;
    QComboBox *m_tier;
    QLineEdit *m_budget;
    QComboBox *m_period;
    QLineEdit *m_models;
    QLineEdit *m_ips;
    QCheckBox *m_expires;
    QDateTimeEdit *m_expiry;
    QLabel *m_problem;
    QPushButton *m_create;
};
