#pragma once

#include <QWidget>

class ControlTokenModel;
class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableView;

// Control tokens (lpc_) for /api/v1: create one with chosen scopes, an optional name and an
// optional lifetime in days (the full value shown once), list them, revoke after confirmation.
class ControlTokensPanel : public QWidget
{
    Q_OBJECT
public:
    explicit ControlTokensPanel(ControlTokenModel *model, QWidget *parent = nullptr);

    QTableView *view() const { return m_view; }

public slots:
    void createToken();
    void revokeSelected();

private:
    QStringList checkedScopes() const;
    qint64 selectedId() const;
    void updateActions();
    void showMessage(const QString &message);

    ControlTokenModel *m_model;
    QTableView *m_view;
    QLineEdit *m_name;
    QList<QCheckBox *> m_scopes;
    QSpinBox *m_expiryDays;
    QPushButton *m_create;
    QPushButton *m_revoke;
    QLabel *m_message;
    bool m_creating = false;
};
