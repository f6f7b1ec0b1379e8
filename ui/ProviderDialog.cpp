#include "ProviderDialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QUrl>
#include <QVBoxLayout>

namespace {

constexpr int kMaxMs = 24 * 3600 * 1000; // what the config file accepts
constexpr int kMaxNameLength = 64;

// zeroText: what 0 means for this setting (shown instead of "0 ms").
QSpinBox *msSpin(const char *name, int value, const QString &tip, const QString &zeroText,
                 QWidget *parent)
{
    auto *spin = new QSpinBox(parent);
    spin->setSpecialValueText(zeroText);
    spin->setObjectName(QLatin1String(name));
    spin->setRange(0, kMaxMs);
    spin->setSingleStep(1000);
    spin->setGroupSeparatorShown(true);
    spin->setSuffix(QStringLiteral(" ms"));
    spin->setValue(value);
    spin->setToolTip(tip);
    return spin;
}

QString trimmedUrl(QString url)
{
    url = url.trimmed();
    while (url.endsWith(u'/'))
        url.chop(1);
    return url;
}

} // namespace

ProviderDialog::ProviderDialog(const ProviderConfig &initial, const QStringList &takenNames,
                               bool adding, QWidget *parent)
    : QDialog(parent), m_initial(initial), m_taken(takenNames), m_keys(initial.keys)
{
    setObjectName(QStringLiteral("providerDialog"));
    setWindowTitle(adding ? tr("Add provider") : tr("Edit provider %1").arg(initial.name));
    setModal(true);

    m_name = new QLineEdit(initial.name, this);
    m_name->setObjectName(QStringLiteral("providerNameEdit"));
    m_name->setMaxLength(kMaxNameLength);
    m_name->setPlaceholderText(tr("e.g. openai, my-vllm"));
    m_name->setToolTip(tr("Catalog models name their provider by this name; models of a catalog "
                          "provider are reached as gateway/NAME/MODEL."));

    m_type = new QComboBox(this);
    m_type->setObjectName(QStringLiteral("providerTypeCombo"));
    m_type->addItem(tr("OpenAI-compatible (openai)"), int(ProviderType::OpenAI));
    m_type->addItem(tr("Anthropic messages (anthropic)"), int(ProviderType::Anthropic));
    m_type->addItem(tr("Live catalog, OpenRouter-style (catalog)"), int(ProviderType::Catalog));
    m_type->setCurrentIndex(m_type->findData(int(initial.type)));

    m_baseUrl = new QLineEdit(initial.baseUrl, this);
    m_baseUrl->setObjectName(QStringLiteral("baseUrlEdit"));
    m_baseUrl->setPlaceholderText(QStringLiteral("https://api.openai.com/v1"));
    m_baseUrl->setToolTip(tr("Including the version path; requests go to BASE/chat/completions, "
                             "BASE/messages, BASE/models."));

    // Upstream keys: masked list, password-style entry.
    auto *keysBox = new QGroupBox(tr("Upstream keys (used round-robin)"), this);
    m_keyList = new QListWidget(keysBox);
    m_keyList->setObjectName(QStringLiteral("keysList"));
    m_keyList->setSelectionMode(QAbstractItemView::SingleSelection);
    m_keyList->setMaximumHeight(110);
    m_newKey = new QLineEdit(keysBox);
    m_newKey->setObjectName(QStringLiteral("newKeyEdit"));
    m_newKey->setEchoMode(QLineEdit::Password);
    m_newKey->setPlaceholderText(tr("Paste a key; it is shown masked once added"));
    m_newKey->setClearButtonEnabled(true);
    m_newKey->installEventFilter(this); // Enter adds the key instead of accepting the dialog
    m_addKey = new QPushButton(tr("Add key"), keysBox);
    m_addKey->setObjectName(QStringLiteral("addKeyButton"));
    m_addKey->setAutoDefault(false);
    m_removeKey = new QPushButton(tr("Remove key"), keysBox);
    m_removeKey->setObjectName(QStringLiteral("removeKeyButton"));
    m_removeKey->setAutoDefault(false);
    auto *keyHint = new QLabel(tr("Keys cannot be shown again after entry. A key answering 429 "
                                  "or 5xx sits out for the rest period below."),
                               keysBox);
    keyHint->setWordWrap(true);
    auto *entryRow = new QHBoxLayout;
    entryRow->addWidget(m_newKey, 1);
    entryRow->addWidget(m_addKey);
    auto *listRow = new QHBoxLayout;
    listRow->addWidget(m_keyList, 1);
    listRow->addWidget(m_removeKey, 0, Qt::AlignTop);
    auto *keysLayout = new QVBoxLayout(keysBox);
    keysLayout->addLayout(listRow);
    keysLayout->addLayout(entryRow);
    keysLayout->addWidget(keyHint);

    auto *timeoutsBox = new QGroupBox(tr("Timeouts"), this);
    m_connect =
        msSpin("connectTimeoutSpin", initial.connectTimeoutMs,
               tr("Longest wait for the TCP/TLS connection."), tr("system default"), timeoutsBox);
    m_firstByte = msSpin("firstByteTimeoutSpin", initial.firstByteTimeoutMs,
                         tr("Longest wait for the response head (0: only the total limit)."),
                         tr("none (the total applies)"), timeoutsBox);
    m_idle = msSpin("idleTimeoutSpin", initial.idleTimeoutMs,
                    tr("Longest silence inside a body or stream."), tr("no limit"), timeoutsBox);
    m_total =
        msSpin("totalTimeoutSpin", initial.totalTimeoutMs,
               tr("Whole call, except on the messages endpoint."), tr("no limit"), timeoutsBox);
    m_messages = msSpin("messagesTimeoutSpin", initial.messagesTimeoutMs,
                        tr("Whole call on the messages endpoint."), tr("no limit"), timeoutsBox);
    m_rest = msSpin("keyRestSpin", initial.restMs,
                    tr("How long a key answering 429 or 5xx is left out of the rotation."),
                    tr("no rest"), timeoutsBox);
    m_refresh = new QSpinBox(timeoutsBox);
    m_refresh->setObjectName(QStringLiteral("refreshMinutesSpin"));
    m_refresh->setRange(0, 7 * 24 * 60);
    m_refresh->setSuffix(tr(" min"));
    m_refresh->setSpecialValueText(tr("only on demand"));
    m_refresh->setValue(initial.refreshMinutes);
    m_refresh->setToolTip(tr("How often a catalog provider's model list is fetched again."));
    auto *timeouts = new QFormLayout(timeoutsBox);
    timeouts->addRow(tr("&Connect:"), m_connect);
    timeouts->addRow(tr("&First byte:"), m_firstByte);
    timeouts->addRow(tr("&Idle:"), m_idle);
    timeouts->addRow(tr("T&otal:"), m_total);
    timeouts->addRow(tr("&Messages total:"), m_messages);
    timeouts->addRow(tr("Key &rest:"), m_rest);
    timeouts->addRow(tr("Catalog re&fresh:"), m_refresh);

    m_problem = new QLabel(this);
    m_problem->setObjectName(QStringLiteral("validationLabel"));
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: #b3261e;"));

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->setObjectName(QStringLiteral("buttons"));
    m_ok = buttons->button(QDialogButtonBox::Ok);
    m_ok->setText(adding ? tr("Add") : tr("OK"));
    connect(buttons, &QDialogButtonBox::accepted, this, &ProviderDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    connect(m_name, &QLineEdit::textChanged, this, &ProviderDialog::validate);
    connect(m_baseUrl, &QLineEdit::textChanged, this, &ProviderDialog::validate);
    connect(m_type, &QComboBox::currentIndexChanged, this, &ProviderDialog::validate);
    connect(m_newKey, &QLineEdit::textChanged, this, [this] {
        m_keyProblem.clear();
        validate();
    });
    connect(m_addKey, &QPushButton::clicked, this, &ProviderDialog::addTypedKey);
    connect(m_removeKey, &QPushButton::clicked, this, &ProviderDialog::removeSelectedKey);
    connect(m_keyList, &QListWidget::currentRowChanged, this, &ProviderDialog::validate);

    auto *form = new QFormLayout;
    form->addRow(tr("&Name:"), m_name);
    form->addRow(tr("&Type:"), m_type);
    form->addRow(tr("&Base URL:"), m_baseUrl);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(keysBox);
    layout->addWidget(timeoutsBox);
    layout->addWidget(m_problem);
    layout->addWidget(buttons);
    refreshKeys();
    validate();
    setMinimumWidth(460);
}

ProviderConfig ProviderDialog::provider() const
{
    ProviderConfig p = m_initial;
    p.name = m_name->text().trimmed();
    p.type = ProviderType(m_type->currentData().toInt());
    p.baseUrl = trimmedUrl(m_baseUrl->text());
    p.keys = m_keys;
    p.connectTimeoutMs = m_connect->value();
    p.firstByteTimeoutMs = m_firstByte->value();
    p.idleTimeoutMs = m_idle->value();
    p.totalTimeoutMs = m_total->value();
    p.messagesTimeoutMs = m_messages->value();
    p.restMs = m_rest->value();
    p.refreshMinutes = m_refresh->value();
    return p;
}

QString ProviderDialog::nameProblem(const QString &name, const QStringList &takenNames)
{
    const QString n = name.trimmed();
    if (n.isEmpty())
        return tr("Enter a name for the provider.");
    if (n.contains(u'/'))
        return tr("A provider name cannot contain '/' (catalog models are reached as "
                  "gateway/NAME/MODEL).");
    for (const QChar c : n)
        if (c.isSpace() || !c.isPrint())
            return tr("A provider name cannot contain spaces or control characters.");
    if (takenNames.contains(n))
        return tr("A provider named '%1' already exists; choose another name.").arg(n);
    return {};
}

QString ProviderDialog::baseUrlProblem(const QString &text)
{
    const QString trimmed = trimmedUrl(text);
    if (trimmed.isEmpty())
        return tr("Enter the base URL, e.g. https://api.openai.com/v1.");
    const QUrl url(trimmed, QUrl::StrictMode);
    if (!url.isValid() || (url.scheme() != u"http" && url.scheme() != u"https") ||
        url.host().isEmpty())
        return tr("The base URL must be an http:// or https:// URL with a host, e.g. "
                  "https://api.openai.com/v1.");
    if (!url.userInfo().isEmpty())
        return tr("The base URL cannot carry a user name or password; add credentials as "
                  "upstream keys.");
    if (url.hasQuery() || url.hasFragment())
        return tr("The base URL cannot have a query (?...) or a fragment (#...).");
    return {};
}

QString ProviderDialog::keyProblem(const QString &key, const QStringList &existing)
{
    if (key.isEmpty())
        return tr("Enter a key.");
    for (const QChar c : key)
        if (c.isSpace() || !c.isPrint())
            return tr("An upstream key cannot contain spaces or control characters.");
    if (existing.contains(key))
        return tr("This key is already in the list.");
    return {};
}

QString ProviderDialog::problem() const
{
    if (QString p = nameProblem(m_name->text(), m_taken); !p.isEmpty())
        return p;
    if (QString p = baseUrlProblem(m_baseUrl->text()); !p.isEmpty())
        return p;
    return m_keyProblem;
}

void ProviderDialog::validate()
{
    const QString p = problem();
    m_problem->setText(p);
    m_problem->setVisible(!p.isEmpty());
    m_ok->setEnabled(nameProblem(m_name->text(), m_taken).isEmpty() &&
                     baseUrlProblem(m_baseUrl->text()).isEmpty());
    m_addKey->setEnabled(!m_newKey->text().isEmpty());
    m_removeKey->setEnabled(m_keyList->currentRow() >= 0);
    const bool catalog = ProviderType(m_type->currentData().toInt()) == ProviderType::Catalog;
    m_refresh->setEnabled(catalog);
}

bool ProviderDialog::addTypedKey()
{
    const QString key = m_newKey->text().trimmed();
    const QString p = keyProblem(key, m_keys);
    if (!p.isEmpty()) {
        // Leave the typed text in place (masked) so it can be corrected.
        m_keyProblem = p;
        validate();
        return false;
    }
    m_keys.append(key);
    // A password field keeps no undo history, so the key cannot come back from it.
    m_newKey->setText(QString());
    m_keyProblem.clear();
    refreshKeys();
    m_keyList->setCurrentRow(int(m_keys.size()) - 1);
    validate();
    return true;
}

void ProviderDialog::removeSelectedKey()
{
    const int row = m_keyList->currentRow();
    if (row < 0 || row >= m_keys.size())
        return;
    m_keys.removeAt(row);
    refreshKeys();
    m_keyList->setCurrentRow(qMin(row, int(m_keys.size()) - 1));
    validate();
}

void ProviderDialog::refreshKeys()
{
    m_keyList->clear();
    for (int i = 0; i < m_keys.size(); ++i)
        m_keyList->addItem(tr("%1. %2").arg(i + 1).arg(ProviderConfig::maskKey(m_keys.at(i))));
    if (m_keys.isEmpty()) {
        auto *none = new QListWidgetItem(tr("No keys yet"));
        none->setFlags(Qt::NoItemFlags);
        m_keyList->addItem(none);
    }
}

void ProviderDialog::accept()
{
    if (!m_newKey->text().trimmed().isEmpty() && !addTypedKey())
        return; // the problem with the typed key is shown
    validate();
    if (!nameProblem(m_name->text(), m_taken).isEmpty() ||
        !baseUrlProblem(m_baseUrl->text()).isEmpty())
        return;
    QDialog::accept();
}

void ProviderDialog::done(int result)
{
    // Whatever happens, a typed key does not outlive the dialog in a widget.
    m_newKey->setText(QString());
    if (result != QDialog::Accepted)
        m_keys.clear();
    QDialog::done(result);
}

bool ProviderDialog::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_newKey && event->type() == QEvent::KeyPress) {
        const auto *key = static_cast<QKeyEvent *>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) &&
            !m_newKey->text().isEmpty()) {
            addTypedKey();
            return true;
        }
    }
    return QDialog::eventFilter(watched, event);
}
