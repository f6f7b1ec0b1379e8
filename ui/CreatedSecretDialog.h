#pragma once

#include <QDialog>

class QLineEdit;
class QPushButton;

// Shows a newly created API key or control token, the only time its full value exists outside
// the store's hash: read-only, selectable, with a Copy button and a warning that it cannot be
// shown again. The value is dropped from the widgets when the dialog closes.
class CreatedSecretDialog : public QDialog
{
    Q_OBJECT
public:
    CreatedSecretDialog(const QString &title, const QString &intro, const QString &secret,
                        QWidget *parent = nullptr);

    // Shows the dialog window-modal and deletes it once closed.
    static CreatedSecretDialog *showOnce(const QString &title, const QString &intro,
                                         const QString &secret, QWidget *parent);

    QString secret() const { return m_secret; }

    void done(int result) override;

private:
    void copy();

    QString m_secret;
    QLineEdit *m_field;
    QPushButton *m_copy;
};
