#pragma once

#include <optional>
#include <QWidget>

class LedgerModel;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;

// Credits: the balance, a form to grant credits (decimal amount, exact to 10^-9, and a note)
// and the ledger, newest first; all live from LedgerModel.
class CreditsPanel : public QWidget
{
    Q_OBJECT
public:
    explicit CreditsPanel(LedgerModel *model, QWidget *parent = nullptr);

    QTableView *view() const { return m_view; }

public slots:
    void grant();
    // Writes every ledger entry to `path` as CSV (the API's bytes); Export CSV asks for the file.
    void exportCsv(const QString &path);

signals:
    void exported(bool ok);

private:
    std::optional<qint64> enteredAmount() const;
    void validate();
    void showBalance();

    LedgerModel *m_model;
    QLabel *m_balance;
    QLineEdit *m_amount;
    QLineEdit *m_note;
    QPushButton *m_grant;
    QLabel *m_message;
    QTableView *m_view;
    bool m_granting = false;
};
