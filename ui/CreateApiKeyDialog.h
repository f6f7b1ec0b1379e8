#pragma once

#include <QDialog>

class QComboBox;
class QLineEdit;
class QPushButton;

// Asks for a new API key's name and rate-limit tier. Accepting only collects the answers; the
// panel creates the key. Widgets are named ("keyNameEdit", "keyTierCombo", "buttons") so tests
// can fill the dialog in like a user.
class CreateApiKeyDialog : public QDialog
{
    Q_OBJECT
public:
    // tiers: the choices offered (the first is preselected); a tier can also be typed.
    explicit CreateApiKeyDialog(const QStringList &tiers, QWidget *parent = nullptr);

    QString name() const;
    QString tier() const;

private:
    void validate();

    QLineEdit *m_name;
    QComboBox *m_tier;
    QPushButton *m_create;
};
