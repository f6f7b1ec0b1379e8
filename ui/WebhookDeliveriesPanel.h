#pragma once

// Complete, so that a caller can pass services.family<ImagesFamily>().
#include "ImagesFamily.h"

#include <QTimer>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableView;
class WebhookAttemptModel;
class WebhookDeliveryModel;

// Activity > Webhook deliveries: the image-task family's webhook outbox as it happens. The
// deliveries of every account, newest first (the latest 500 matching the filters), with a
// status filter and a text filter on task id or URL; the selected delivery's attempts and the
// selected attempt's answer excerpt; Resend, a manual attempt now (ImageStore::resend on the
// database writer, then the dispatcher woken); the number of pending deliveries in the header.
// Live: the family's deliveryChanged and taskEnded reload the models (coalesced), and a slow
// timer catches deliveries made by other instances sharing a PostgreSQL database. The selection
// is kept by delivery id across reloads and filter changes.
//
// Without the family (a build without it, or a family that has not started) a label says so
// and nothing else is shown.
//
// Widgets are named for tests: "unavailableLabel" (without the family only); "pendingLabel",
// "statusFilterCombo" (item data: "", pending, delivered, failed), "textFilterEdit",
// "refreshButton", "resendButton", "deliveriesTable", "attemptsLabel", "attemptsTable",
// "excerptView", "messageLabel".
class WebhookDeliveriesPanel : public QWidget
{
    Q_OBJECT
public:
    // family: the services' image-task family (must outlive the panel), or null.
    explicit WebhookDeliveriesPanel(ImagesFamily *family, QWidget *parent = nullptr,
                                    int refreshMs = 5000);

    bool isAvailable() const { return m_deliveries != nullptr; }
    // Null without the family.
    WebhookDeliveryModel *deliveryModel() const { return m_deliveries; }
    WebhookAttemptModel *attemptModel() const { return m_attempts; }
    QTableView *deliveryView() const { return m_deliveryView; }
    QTableView *attemptView() const { return m_attemptView; }

    // The selected delivery's id, or 0.
    qint64 selectedDelivery() const;
    // Selects the delivery with this id (now when it is shown, else when a reload brings it).
    void selectDelivery(qint64 id);

public slots:
    // Reads the deliveries and the selected delivery's attempts again.
    void refresh();
    // A manual attempt of the selected delivery now.
    void resendSelected();

signals:
    void resendFinished(bool ok);

private:
    void applyFilter();
    void onDeliverySelection();
    void onAttemptSelection();
    void restoreSelection();
    void updatePending();
    void updateActions();
    void showMessage(const QString &text);

    ImagesFamily *m_family;
    WebhookDeliveryModel *m_deliveries = nullptr;
    WebhookAttemptModel *m_attempts = nullptr;
    QTableView *m_deliveryView = nullptr;
    QTableView *m_attemptView = nullptr;
    QLabel *m_pending = nullptr;
    QComboBox *m_status = nullptr;
    QLineEdit *m_text = nullptr;
    QPushButton *m_resend = nullptr;
    QLabel *m_attemptsLabel = nullptr;
    QPlainTextEdit *m_excerpt = nullptr;
    QLabel *m_message = nullptr;
    QTimer m_refresh;
    qint64 m_wanted = 0; // the delivery to keep selected
    bool m_resending = false;
    bool m_loadFailed = false; // the message shown is a failed read, hidden by the next good one
    bool m_columnsFitted = false;
};
