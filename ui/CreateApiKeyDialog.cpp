#include "CreateApiKeyDialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace {
constexpr int kMaxNameLength = 100;
}

CreateApiKeyDialog::CreateApiKeyDialog(const QStringList &tiers, QWidget *parent) : QDialog(parent)
{
    setObjectName(QStringLiteral("createApiKeyDialog"));
    setWindowTitle(tr("Create API key"));
    setModal(true);

    m_name = new QLineEdit(this);
    m_name->setObjectName(QStringLiteral("keyNameEdit"));
    m_name->setMaxLength(kMaxNameLength);
    m_name->setPlaceholderText(tr("What uses this key, e.g. \"staging backend\""));

    m_tier = new QComboBox(this);
    m_tier->setObjectName(QStringLiteral("keyTierCombo"));
    m_tier->setEditable(true);
    m_tier->addItems(tiers);
    m_tier->setToolTip(tr("The rate-limit tier from the server configuration."));

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->setObjectName(QStringLiteral("buttons"));
    m_create = buttons->button(QDialogButtonBox::Ok);
    m_create->setText(tr("Create"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_name, &QLineEdit::textChanged, this, &CreateApiKeyDialog::validate);
    connect(m_tier, &QComboBox::currentTextChanged, this, &CreateApiKeyDialog::validate);

    auto *form = new QFormLayout;
    form->addRow(tr("&Name:"), m_name);
    form->addRow(tr("&Tier:"), m_tier);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(buttons);
    validate();
}

QString CreateApiKeyDialog::name() const
{
    return m_name->text().trimmed();
}

QString CreateApiKeyDialog::tier() const
{
    return m_tier->currentText().trimmed();
}

void CreateApiKeyDialog::validate()
{
    m_create->setEnabled(!name().isEmpty() && !tier().isEmpty());
}
