#include "WebhookDeliveriesPanel.h"

#include "DatabaseService.h"
#include "images/WebhookDeliveryModel.h"
#include "RecordTable.h"

#include <QComboBox>
#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace {

// Two panes, the first taking 3/5 of the room.
QSplitter *makeSplit(Qt::Orientation orientation, QWidget *first, QWidget *second, QWidget *parent)
{
    auto *split = new QSplitter(orientation, parent);
    split->addWidget(first);
    split->addWidget(second);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    return split;
}

} // namespace

WebhookDeliveriesPanel::WebhookDeliveriesPanel(ImagesFamily *family, QWidget *parent, int refreshMs)
    : QWidget(parent), m_family(family)
{
    setObjectName(QStringLiteral("webhookDeliveriesPanel"));
    auto *layout = new QVBoxLayout(this);
    auto *header = new QHBoxLayout;
    header->addWidget(new QLabel(tr("<h2>Webhook deliveries</h2>"), this));
    header->addStretch(1);
    layout->addLayout(header);

    DatabaseService *db = family ? family->database() : nullptr;
    if (!db) {
        auto *label =
            new QLabel(family ? tr("The image-task family has not started, so there is no "
                                   "webhook delivery log to show.")
                              : tr("This build has no image-task family, so there are no "
                                   "webhook deliveries to show."),
                       this);
        label->setObjectName(QStringLiteral("unavailableLabel"));
        label->setWordWrap(true);
        layout->addWidget(label);
        layout->addStretch(1);
        return;
    }

    m_deliveries = new WebhookDeliveryModel(*db, this);
    m_attempts = new WebhookAttemptModel(*db, this);

    m_pending = new QLabel(this);
    m_pending->setObjectName(QStringLiteral("pendingLabel"));
    header->addWidget(m_pending);

    m_status = new QComboBox(this);
    m_status->setObjectName(QStringLiteral("statusFilterCombo"));
    m_status->addItem(tr("All"), QString());
    m_status->addItem(tr("Pending"), QStringLiteral("pending"));
    m_status->addItem(tr("Delivered"), QStringLiteral("delivered"));
    m_status->addItem(tr("Failed"), QStringLiteral("failed"));
    m_text = new QLineEdit(this);
    m_text->setObjectName(QStringLiteral("textFilterEdit"));
    m_text->setPlaceholderText(tr("Task ID or URL contains..."));
    m_text->setClearButtonEnabled(true);
    auto *refreshButton = new QPushButton(tr("Refresh"), this);
    refreshButton->setObjectName(QStringLiteral("refreshButton"));
    m_resend = new QPushButton(tr("Resend"), this);
    m_resend->setObjectName(QStringLiteral("resendButton"));
    m_resend->setToolTip(tr("Make one manual attempt of the selected delivery now; it does not "
                            "count against the retry schedule"));

    auto *filters = new QHBoxLayout;
    filters->addWidget(new QLabel(tr("Status:"), this));
    filters->addWidget(m_status);
    filters->addWidget(m_text, 1);
    filters->addWidget(refreshButton);
    filters->addWidget(m_resend);

    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("messageLabel"));
    m_message->setWordWrap(true);
    m_message->hide();

    m_deliveryView = makeRecordTable(m_deliveries, QStringLiteral("deliveriesTable"), this);
    // The status changes while it is watched (pending, then delivered): always wide enough.
    m_deliveryView->horizontalHeader()->setSectionResizeMode(WebhookDeliveryModel::StatusColumn,
                                                             QHeaderView::ResizeToContents);
    m_attemptView = makeRecordTable(m_attempts, QStringLiteral("attemptsTable"), this);
    m_attemptsLabel = new QLabel(this);
    m_attemptsLabel->setObjectName(QStringLiteral("attemptsLabel"));
    m_attemptsLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_excerpt = new QPlainTextEdit(this);
    m_excerpt->setObjectName(QStringLiteral("excerptView"));
    m_excerpt->setReadOnly(true);
    m_excerpt->setPlaceholderText(tr("The selected attempt's answer: the first 2 KiB of a 2xx "
                                     "answer's body."));

    auto *detail = new QWidget(this);
    auto *detailLayout = new QVBoxLayout(detail);
    detailLayout->setContentsMargins(0, 0, 0, 0);
    detailLayout->addWidget(m_attemptsLabel);
    detailLayout->addWidget(makeSplit(Qt::Horizontal, m_attemptView, m_excerpt, detail), 1);

    layout->addLayout(filters);
    layout->addWidget(m_message);
    layout->addWidget(makeSplit(Qt::Vertical, m_deliveryView, detail, this), 1);

    connect(m_status, &QComboBox::currentIndexChanged, this, &WebhookDeliveriesPanel::applyFilter);
    connect(m_text, &QLineEdit::textChanged, this, &WebhookDeliveriesPanel::applyFilter);
    connect(refreshButton, &QPushButton::clicked, this, &WebhookDeliveriesPanel::refresh);
    connect(m_resend, &QPushButton::clicked, this, &WebhookDeliveriesPanel::resendSelected);
    connect(m_deliveryView->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &WebhookDeliveriesPanel::onDeliverySelection);
    connect(m_attemptView->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &WebhookDeliveriesPanel::onAttemptSelection);
    connect(m_deliveries, &WebhookDeliveryModel::pendingCountChanged, this,
            &WebhookDeliveriesPanel::updatePending);
    connect(m_deliveries, &WebhookDeliveryModel::loaded, this, [this] {
        if (m_loadFailed) {
            m_loadFailed = false;
            m_message->hide();
        }
        restoreSelection();
        if (!m_columnsFitted && m_deliveries->rowCount() > 0) {
            m_columnsFitted = true;
            m_deliveryView->resizeColumnsToContents();
        }
    });
    // A changed delivery row (its attempts count) means new attempts to show.
    connect(m_deliveries, &QAbstractItemModel::dataChanged, this, [this] { m_attempts->reload(); });
    connect(m_deliveries, &WebhookDeliveryModel::loadFailed, this, [this](const QString &error) {
        showMessage(tr("Could not load the deliveries: %1").arg(error));
        m_loadFailed = true;
    });
    connect(m_attempts, &WebhookAttemptModel::loadFailed, this, [this](const QString &error) {
        showMessage(tr("Could not load the attempts: %1").arg(error));
    });
    connect(m_attempts, &QAbstractItemModel::rowsInserted, this,
            [this] { m_attemptView->resizeColumnsToContents(); });

    // The family announces from its thread; these connections are queued.
    connect(family->events(), &ImagesEvents::deliveryChanged, this,
            &WebhookDeliveriesPanel::refresh);
    connect(family->events(), &ImagesEvents::taskEnded, m_deliveries,
            &WebhookDeliveryModel::reload);
    // Deliveries made by other instances on a shared database are announced to them only.
    m_refresh.setInterval(refreshMs);
    connect(&m_refresh, &QTimer::timeout, this, &WebhookDeliveriesPanel::refresh);
    m_refresh.start();

    updatePending();
    onDeliverySelection();
}

qint64 WebhookDeliveriesPanel::selectedDelivery() const
{
    if (!m_deliveryView)
        return 0;
    const QModelIndexList rows = m_deliveryView->selectionModel()->selectedRows();
    return rows.isEmpty() ? 0 : m_deliveries->recordAt(rows.first().row()).id;
}

void WebhookDeliveriesPanel::selectDelivery(qint64 id)
{
    m_wanted = id;
    restoreSelection();
}

void WebhookDeliveriesPanel::refresh()
{
    if (!m_deliveries)
        return;
    m_deliveries->reload();
    m_attempts->reload();
}

void WebhookDeliveriesPanel::applyFilter()
{
    WebhookDeliveryFilter filter;
    filter.status = m_status->currentData().toString();
    filter.text = m_text->text().trimmed();
    m_deliveries->setFilter(filter);
}

void WebhookDeliveriesPanel::restoreSelection()
{
    if (!m_wanted || selectedDelivery() == m_wanted)
        return;
    const int row = m_deliveries->rowOfId(m_wanted);
    if (row < 0)
        return;
    m_deliveryView->selectionModel()->select(m_deliveries->index(row, 0),
                                             QItemSelectionModel::ClearAndSelect |
                                                 QItemSelectionModel::Rows);
    m_deliveryView->scrollTo(m_deliveries->index(row, 0));
}

void WebhookDeliveriesPanel::onDeliverySelection()
{
    const qint64 id = selectedDelivery();
    m_attempts->setDelivery(id);
    if (id) {
        m_wanted = id;
        const ImageStore::Delivery &d = m_deliveries->recordAt(m_deliveries->rowOfId(id));
        m_attemptsLabel->setText(tr("Attempts of delivery %1 (task %2, %3)")
                                     .arg(QString::number(d.id), d.taskId, d.url));
    } else {
        m_attemptsLabel->setText(tr("Select a delivery to see its attempts."));
        // Emptied by a reload or a filter, the row is gone and comes back selected when it
        // returns; emptied by the operator, the row is still there and stays unselected.
        QMetaObject::invokeMethod(
            this,
            [this] {
                if (!selectedDelivery() && m_deliveries->rowOfId(m_wanted) >= 0)
                    m_wanted = 0;
            },
            Qt::QueuedConnection);
    }
    onAttemptSelection();
    updateActions();
}

void WebhookDeliveriesPanel::onAttemptSelection()
{
    const QModelIndexList rows = m_attemptView->selectionModel()->selectedRows();
    m_excerpt->setPlainText(rows.isEmpty()
                                ? QString()
                                : rows.first().data(WebhookAttemptModel::ExcerptRole).toString());
}

void WebhookDeliveriesPanel::updatePending()
{
    const qint64 count = m_deliveries->pendingCount();
    m_pending->setText(count < 0 ? tr("Pending: ...") : tr("Pending: %1").arg(count));
}

void WebhookDeliveriesPanel::updateActions()
{
    m_resend->setEnabled(selectedDelivery() != 0 && !m_resending);
}

void WebhookDeliveriesPanel::showMessage(const QString &text)
{
    m_message->setText(text);
    m_message->show();
}

void WebhookDeliveriesPanel::resendSelected()
{
    const qint64 id = selectedDelivery();
    if (!id || m_resending)
        return;
    m_resending = true;
    updateActions();
    m_family->database()->write<std::optional<ImageStore::Delivery>>(
        this,
        [id](Store &s) {
            return ImageStore::resend(s, id, 0, QDateTime::currentMSecsSinceEpoch());
        },
        [this, id](const DbResult<std::optional<ImageStore::Delivery>> &r) {
            m_resending = false;
            updateActions();
            const bool ok = r.ok() && r.value.has_value();
            if (ok) {
                m_family->wakeDispatcher();
                // Every listener (this panel's models too) learns of the manual attempt due.
                emit m_family->events()->deliveryChanged(id);
                showMessage(tr("Delivery %1 will be sent again now.").arg(id));
            } else {
                showMessage(r.ok() ? tr("Delivery %1 no longer exists.").arg(id)
                                   : tr("Could not resend delivery %1: %2").arg(id).arg(r.error));
            }
            emit resendFinished(ok);
        });
}
