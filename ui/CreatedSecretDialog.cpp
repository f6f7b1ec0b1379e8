#include "CreatedSecretDialog.h"

#include <QClipboard>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

CreatedSecretDialog::CreatedSecretDialog(const QString &title, const QString &intro,
                                         const QString &secret, QWidget *parent)
    : QDialog(parent), m_secret(secret)
{
    setObjectName(QStringLiteral("createdSecretDialog"));
    setWindowTitle(title);
    setModal(true);

    auto *introLabel = new QLabel(intro, this);
    introLabel->setObjectName(QStringLiteral("introLabel"));
    introLabel->setWordWrap(true);

    m_field = new QLineEdit(secret, this);
    m_field->setObjectName(QStringLiteral("secretField"));
    m_field->setReadOnly(true);
    m_field->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_field->setMinimumWidth(m_field->fontMetrics().horizontalAdvance(secret) + 24);
    m_field->selectAll();

    m_copy = new QPushButton(tr("Copy"), this);
    m_copy->setObjectName(QStringLiteral("copyButton"));
    connect(m_copy, &QPushButton::clicked, this, &CreatedSecretDialog::copy);

    auto *warning = new QLabel(
        tr("<b>Copy this value now.</b> It is shown only this once and cannot be shown again; "
           "only a short prefix is kept. If it is lost, revoke it and create a new one."),
        this);
    warning->setObjectName(QStringLiteral("warningLabel"));
    warning->setWordWrap(true);
    warning->setTextFormat(Qt::RichText);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    buttons->setObjectName(QStringLiteral("buttons"));
    buttons->button(QDialogButtonBox::Close)->setText(tr("Done"));
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto *row = new QHBoxLayout;
    row->addWidget(m_field, 1);
    row->addWidget(m_copy);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(introLabel);
    layout->addLayout(row);
    layout->addWidget(warning);
    layout->addWidget(buttons);
}

CreatedSecretDialog *CreatedSecretDialog::showOnce(const QString &title, const QString &intro,
                                                   const QString &secret, QWidget *parent)
{
    auto *dialog = new CreatedSecretDialog(title, intro, secret, parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->open();
    return dialog;
}

void CreatedSecretDialog::done(int result)
{
    // Once dismissed there is no way back to the value, as promised.
    m_field->clear();
    m_secret.clear();
    QDialog::done(result);
}

void CreatedSecretDialog::copy()
{
    QGuiApplication::clipboard()->setText(m_secret);
    m_copy->setText(tr("Copied"));
}
