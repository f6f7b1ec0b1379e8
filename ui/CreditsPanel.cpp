#include "CreditsPanel.h"

#include "CsvExport.h"
#include "CsvFileExport.h"
#include "LedgerModel.h"
#include "ModelFormat.h"
#include "Money.h"

#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

CreditsPanel::CreditsPanel(LedgerModel *model, QWidget *parent) : QWidget(parent), m_model(model)
{
    setObjectName(QStringLiteral("creditsPanel"));

    auto *title = new QLabel(tr("<h2>Credits</h2>"), this);
    m_balance = new QLabel(this);
    m_balance->setObjectName(QStringLiteral("balanceLabel"));
    m_balance->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont big = m_balance->font();
    big.setPointSizeF(big.pointSizeF() * 1.6);
    big.setBold(true);
    m_balance->setFont(big);

    auto *form = new QGroupBox(tr("Grant credits"), this);
    m_amount = new QLineEdit(form);
    m_amount->setObjectName(QStringLiteral("grantAmountEdit"));
    m_amount->setPlaceholderText(tr("Credits, e.g. 25 or 0.5 (up to 9 decimals)"));
    m_note = new QLineEdit(form);
    m_note->setObjectName(QStringLiteral("grantNoteEdit"));
    m_note->setMaxLength(200);
    m_note->setPlaceholderText(tr("Shown as the ledger entry's reason"));
    m_grant = new QPushButton(tr("Grant"), form);
    m_grant->setObjectName(QStringLiteral("grantButton"));
    m_message = new QLabel(form);
    m_message->setObjectName(QStringLiteral("grantMessageLabel"));
    m_message->setWordWrap(true);
    auto *formLayout = new QFormLayout(form);
    formLayout->addRow(tr("&Amount:"), m_amount);
    formLayout->addRow(tr("&Note:"), m_note);
    formLayout->addRow(QString(), m_grant);
    formLayout->addRow(QString(), m_message);

    m_view = new QTableView(this);
    m_view->setObjectName(QStringLiteral("ledgerTable"));
    m_view->setModel(model);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setWordWrap(false);
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 8);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

    connect(m_amount, &QLineEdit::textChanged, this, &CreditsPanel::validate);
    connect(m_amount, &QLineEdit::returnPressed, this, &CreditsPanel::grant);
    connect(m_grant, &QPushButton::clicked, this, &CreditsPanel::grant);
    connect(model, &LedgerModel::balanceChanged, this, &CreditsPanel::showBalance);
    connect(model, &LedgerModel::loadFailed, this, [this](const QString &error) {
        m_message->setText(tr("Could not load the ledger: %1").arg(error));
    });

    auto *exportButton = new QPushButton(tr("Export CSV..."), this);
    exportButton->setObjectName(QStringLiteral("exportCsvButton"));
    connect(exportButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Export the ledger"), QStringLiteral("ledger.csv"), tr("CSV files (*.csv)"));
        if (!path.isEmpty())
            exportCsv(path);
    });
    auto *ledgerHeader = new QHBoxLayout;
    ledgerHeader->addWidget(new QLabel(tr("Ledger"), this));
    ledgerHeader->addStretch(1);
    ledgerHeader->addWidget(exportButton);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(title);
    layout->addWidget(m_balance);
    layout->addWidget(form);
    layout->addLayout(ledgerHeader);
    layout->addWidget(m_view, 1);
    showBalance();
    validate();
}

std::optional<qint64> CreditsPanel::enteredAmount() const
{
    const auto units = Money::parseCredits(m_amount->text());
    if (!units || *units <= 0)
        return std::nullopt;
    return units;
}

void CreditsPanel::validate()
{
    const bool valid = enteredAmount().has_value();
    m_grant->setEnabled(valid && !m_granting);
    if (!valid && !m_amount->text().trimmed().isEmpty())
        m_message->setText(tr("Enter a positive number of credits with at most 9 decimals."));
    else if (valid)
        m_message->clear();
}

void CreditsPanel::grant()
{
    const auto units = enteredAmount();
    if (!units || m_granting)
        return;
    m_granting = true;
    m_grant->setEnabled(false);
    m_message->clear();
    m_model->grantCredits(
        *units, m_note->text().trimmed(), this, [this, units](const DbResult<ChargeResult> &r) {
            m_granting = false;
            if (!r.ok()) {
                m_message->setText(tr("The grant failed: %1").arg(r.error));
            } else if (r.value.status != ChargeResult::Status::Committed) {
                m_message->setText(tr("The grant was not applied (unknown account)."));
            } else {
                m_amount->clear();
                m_note->clear();
                m_message->setText(tr("Granted %1 credits.").arg(ModelFormat::credits(*units)));
            }
            validate();
        });
}

void CreditsPanel::showBalance()
{
    m_balance->setText(m_model->isLoaded()
                           ? tr("Balance: %1 credits").arg(ModelFormat::credits(m_model->balance()))
                           : tr("Balance: loading..."));
    m_balance->setToolTip(Money::formatCredits(m_model->balance()));
}

void CreditsPanel::exportCsv(const QString &path)
{
    m_message->setText(tr("Exporting the ledger to %1...").arg(path));
    m_message->show();
    auto *job = CsvFileExport::start(
        m_model->database(), path, CsvExport::ledgerHeader(),
        [account = m_model->account()](Store &s, qint64 cursor) {
            return CsvExport::ledgerPage(s, account, cursor);
        },
        this);
    connect(job, &CsvFileExport::finished, this,
            [this, path](bool ok, qint64 rows, const QString &error) {
                m_message->setText(ok ? tr("Exported %1 ledger entries to %2.").arg(rows).arg(path)
                                      : tr("The export failed: %1").arg(error));
                emit exported(ok);
            });
}
