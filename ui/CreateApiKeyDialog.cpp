#include "CreateApiKeyDialog.h"

#include "Money.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTimeEdit>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace {

constexpr int kMaxNameLength = 100;

QStringList listOf(const QString &text)
{
    QStringList out;
    for (const QString &part : text.split(u',', Qt::SkipEmptyParts))
        if (!part.trimmed().isEmpty() && !out.contains(part.trimmed()))
            out.append(part.trimmed());
    return out;
}

} // namespace

CreateApiKeyDialog::CreateApiKeyDialog(const QStringList &tiers, QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("Create API key"));
    build(tiers);
}

CreateApiKeyDialog::CreateApiKeyDialog(const QStringList &tiers, const ApiKeyRecord &key,
                                       QWidget *parent)
    : QDialog(parent)
{
    setWindowTitle(tr("Edit API key \"%1\"").arg(key.name));
    build(tiers);
    m_name->setText(key.name);
    m_tier->setCurrentText(key.tier);
    if (key.rules.budget) {
        m_budget->setText(Money::formatCredits(key.rules.budget->amount));
        m_period->setCurrentIndex(m_period->findData(int(key.rules.budget->period)));
    }
    m_models->setText(key.rules.models.join(QStringLiteral(", ")));
    m_ips->setText(key.rules.allowedIps.join(QStringLiteral(", ")));
    m_expires->setChecked(key.rules.expires.isValid());
    if (key.rules.expires.isValid())
        m_expiry->setDateTime(key.rules.expires.toLocalTime());
    m_create->setText(tr("Save"));
    validate();
}

void CreateApiKeyDialog::build(const QStringList &tiers)
{
    setObjectName(QStringLiteral("createApiKeyDialog"));
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

    m_budget = new QLineEdit(this);
    m_budget->setObjectName(QStringLiteral("budgetEdit"));
    m_budget->setPlaceholderText(tr("No budget"));
    m_budget->setToolTip(tr("The most this key may spend per period, in credits (e.g. 5 or "
                            "0.25). Empty: no budget beyond the balance."));
    m_period = new QComboBox(this);
    m_period->setObjectName(QStringLiteral("budgetPeriodCombo"));
    for (KeyRules::Period p : {KeyRules::Period::Day, KeyRules::Period::Week,
                               KeyRules::Period::Month, KeyRules::Period::Total})
        m_period->addItem(KeyRules::periodName(p), int(p));
    auto *budgetRow = new QHBoxLayout;
    budgetRow->addWidget(m_budget, 1);
    budgetRow->addWidget(new QLabel(tr("per"), this));
    budgetRow->addWidget(m_period);

    m_models = new QLineEdit(this);
    m_models->setObjectName(QStringLiteral("modelsEdit"));
    m_models->setPlaceholderText(tr("Any model"));
    m_models->setToolTip(tr("Model IDs the key may use, comma-separated; * matches anything "
                            "(vendorB-*, gateway/openrouter/*)."));
    m_ips = new QLineEdit(this);
    m_ips->setObjectName(QStringLiteral("allowedIpsEdit"));
    m_ips->setPlaceholderText(tr("Any address"));
    m_ips->setToolTip(tr("Addresses or CIDRs the key may be used from, comma-separated "
                         "(10.0.0.0/8, 192.168.1.7)."));
    m_expires = new QCheckBox(tr("Expires"), this);
    m_expires->setObjectName(QStringLiteral("expiresCheck"));
    m_expiry = new QDateTimeEdit(QDateTime::currentDateTime().addDays(30), this);
    m_expiry->setObjectName(QStringLiteral("expiresEdit"));
    m_expiry->setCalendarPopup(true);
    m_expiry->setDisplayFormat(QStringLiteral("yyyy-MM-dd HH:mm"));
    m_expiry->setEnabled(false);
    connect(m_expires, &QCheckBox::toggled, m_expiry, &QWidget::setEnabled);
    auto *expiryRow = new QHBoxLayout;
    expiryRow->addWidget(m_expires);
    expiryRow->addWidget(m_expiry, 1);

    m_problem = new QLabel(this);
    m_problem->setObjectName(QStringLiteral("problemLabel"));
    m_problem->setWordWrap(true);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->setObjectName(QStringLiteral("buttons"));
    m_create = buttons->button(QDialogButtonBox::Ok);
    m_create->setText(tr("Create"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    for (QLineEdit *edit : {m_name, m_budget, m_models, m_ips})
        connect(edit, &QLineEdit::textChanged, this, &CreateApiKeyDialog::validate);
    connect(m_tier, &QComboBox::currentTextChanged, this, &CreateApiKeyDialog::validate);
    connect(m_expires, &QCheckBox::toggled, this, &CreateApiKeyDialog::validate);
    connect(m_expiry, &QDateTimeEdit::dateTimeChanged, this, &CreateApiKeyDialog::validate);

    auto *form = new QFormLayout;
    form->addRow(tr("&Name:"), m_name);
    form->addRow(tr("&Tier:"), m_tier);
    form->addRow(tr("&Budget:"), budgetRow);
    form->addRow(tr("&Models:"), m_models);
    form->addRow(tr("&Addresses:"), m_ips);
    form->addRow(QString(), expiryRow);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_problem);
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

KeyRules CreateApiKeyDialog::rules() const
{
    KeyRules r;
    const auto amount = Money::parseCredits(m_budget->text().trimmed());
    if (amount && *amount > 0)
        r.budget = KeyRules::Budget{*amount, KeyRules::Period(m_period->currentData().toInt())};
    r.models = listOf(m_models->text());
    r.allowedIps = listOf(m_ips->text());
    if (m_expires->isChecked())
        r.expires = m_expiry->dateTime().toUTC();
    return r;
}

QString CreateApiKeyDialog::problem() const
{
    const QString budget = m_budget->text().trimmed();
    if (!budget.isEmpty()) {
        const auto amount = Money::parseCredits(budget);
        if (!amount || *amount <= 0)
            return tr("The budget must be a positive amount of credits, e.g. 5 or 0.25.");
    }
    for (const QString &m : listOf(m_models->text()))
        if (!KeyRules::validGlob(m))
            return tr("\"%1\" is not a model ID or pattern.").arg(m);
    for (const QString &ip : listOf(m_ips->text()))
        if (!KeyRules::validCidr(ip))
            return tr("\"%1\" is not an address or CIDR (e.g. 10.0.0.0/8).").arg(ip);
    if (m_expires->isChecked() && m_expiry->dateTime() <= QDateTime::currentDateTime())
        return tr("The expiry is in the past: the key would be refused at once.");
    return {};
}

void CreateApiKeyDialog::validate()
{
    const QString why = problem();
    m_problem->setText(why);
    m_problem->setVisible(!why.isEmpty());
    m_create->setEnabled(!name().isEmpty() && !tier().isEmpty() && why.isEmpty());
}
