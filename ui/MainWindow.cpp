#include "MainWindow.h"

#include "ApiKeyModel.h"
#include "ControlTokenModel.h"
#include "DatabaseService.h"
#include "LedgerModel.h"
#include "RequestMeter.h"
#include "ServerHost.h"
#include "Services.h"
#include "UsageBucketModel.h"
#include "UsageModel.h"

#include <algorithm>
#include <QDateTime>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QSystemTrayIcon>
#include <QVBoxLayout>

namespace {
constexpr int kPanelIndexRole = Qt::UserRole;
}

MainWindow::MainWindow(Services &services, const PanelRegistry &panels, QWidget *parent)
    : QMainWindow(parent), m_host(services.isServing() ? services.host() : nullptr),
      m_keys(new ApiKeyModel(services.database(), this)),
      m_tokens(new ControlTokenModel(services.database(), this)),
      m_ledger(new LedgerModel(services.database(), this)),
      m_usage(new UsageModel(services.database(), this)),
      m_buckets(new UsageBucketModel(services.database(), this)),
      m_meter(std::make_shared<RequestMeter>(QDateTime::currentMSecsSinceEpoch()))
{
    m_tokens->setKnownScopes(services.scopes());
    m_usage->setMeterSpecs(services.meters());
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(tr("Switchyard"));

    m_sidebar = new QListWidget(this);
    m_sidebar->setObjectName(QStringLiteral("sidebar"));
    m_sidebar->setSelectionMode(QAbstractItemView::SingleSelection);
    m_sidebar->setMaximumWidth(220);
    m_stack = new QStackedWidget(this);
    m_stack->setObjectName(QStringLiteral("panels"));
    connect(m_sidebar, &QListWidget::currentItemChanged, this, [this](QListWidgetItem *item) {
        if (item && item->data(kPanelIndexRole).isValid())
            m_stack->setCurrentIndex(item->data(kPanelIndexRole).toInt());
    });

    auto *split = new QSplitter(this);
    split->addWidget(m_sidebar);
    split->addWidget(m_stack);
    split->setStretchFactor(1, 1);

    // The alert banner: hidden until an alert fires, dismissed by its button.
    m_banner = new QFrame(this);
    m_banner->setObjectName(QStringLiteral("alertBanner"));
    m_banner->setStyleSheet(QStringLiteral("#alertBanner { background: #fff3cd; color: #664d03; "
                                           "border-bottom: 1px solid #e0c36c; }"));
    m_bannerText = new QLabel(m_banner);
    m_bannerText->setObjectName(QStringLiteral("alertText"));
    m_bannerText->setWordWrap(true);
    m_bannerText->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *dismiss = new QPushButton(tr("Dismiss"), m_banner);
    dismiss->setObjectName(QStringLiteral("alertDismiss"));
    connect(dismiss, &QPushButton::clicked, this, [this] {
        m_banner->hide();
        m_unseenAlerts = 0;
    });
    auto *bannerRow = new QHBoxLayout(m_banner);
    bannerRow->setContentsMargins(10, 6, 10, 6);
    bannerRow->addWidget(m_bannerText, 1);
    bannerRow->addWidget(dismiss);
    m_banner->hide();
    auto *central = new QWidget(this);
    auto *column = new QVBoxLayout(central);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(0);
    column->addWidget(m_banner);
    column->addWidget(split, 1);
    setCentralWidget(central);

    addFamilyPanels(services, panels);

    m_listening = new QLabel(this);
    m_listening->setObjectName(QStringLiteral("listenLabel"));
    m_listening->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_rate = new QLabel(this);
    m_rate->setObjectName(QStringLiteral("rateLabel"));
    m_errors = new QLabel(this);
    m_errors->setObjectName(QStringLiteral("errorsLabel"));
    statusBar()->addWidget(m_listening, 1);
    statusBar()->addPermanentWidget(m_rate);
    statusBar()->addPermanentWidget(m_errors);

    if (m_host) {
        // Direct: runs on the server thread and only bumps atomics (see RequestMeter), so the
        // GUI thread gets no event per request. The lambda owns a reference to the meter, so
        // a request finishing while this window closes is still counted safely.
        m_served = connect(
            m_host, &ServerHost::requestServed, m_host,
            [meter = m_meter](const QString &, int status, int) { meter->record(status); },
            Qt::DirectConnection);
        connect(m_host, &ServerHost::alertFired, this, &MainWindow::showAlert,
                Qt::QueuedConnection);
    }
    m_statusTick.setInterval(1000);
    connect(&m_statusTick, &QTimer::timeout, this, &MainWindow::updateStatus);
    m_statusTick.start();
    updateStatus();
    resize(1200, 760);
}

void MainWindow::showAlert(const QJsonObject &alert)
{
    const QString message = alert.value(QStringLiteral("message")).toString();
    const QString at = QDateTime::fromString(alert.value(QStringLiteral("created_at")).toString(),
                                             Qt::ISODateWithMs)
                           .toLocalTime()
                           .toString(QStringLiteral("HH:mm"));
    ++m_unseenAlerts;
    QString text = tr("Alert at %1: %2").arg(at, message);
    if (m_unseenAlerts > 1)
        text += tr(" (%n more since the banner was dismissed)", nullptr, m_unseenAlerts - 1);
    m_bannerText->setText(text);
    m_banner->show();
    if (!QSystemTrayIcon::isSystemTrayAvailable())
        return;
    if (!m_tray) {
        m_tray = new QSystemTrayIcon(windowIcon(), this);
        m_tray->setToolTip(tr("Switchyard"));
        m_tray->show();
    }
    m_tray->showMessage(tr("Switchyard alert"), message, QSystemTrayIcon::Warning);
}

void MainWindow::addFamilyPanels(Services &services, const PanelRegistry &panels)
{
    struct Offered
    {
        ServiceFamily *family;
        PanelSpec spec;
    };
    QList<Offered> offered;
    for (ServiceFamily *family : services.families())
        for (PanelSpec &spec : panels.panelsOf(family->name()))
            offered.append({family, std::move(spec)});
    std::stable_sort(offered.begin(), offered.end(), [](const Offered &a, const Offered &b) {
        return a.spec.order < b.spec.order;
    });
    for (const Offered &o : offered) {
        const PanelHost host{*o.family, services.database(), *m_keys, *m_tokens, *m_ledger,
                             *m_usage,  *m_buckets};
        addPanel(o.spec.group, o.spec.title, o.spec.make(host));
    }
    if (!offered.isEmpty())
        showPanel(offered.first().spec.title);
}

MainWindow::~MainWindow()
{
    disconnect(m_served);
}

int MainWindow::addPanel(const QString &section, const QString &title, QWidget *panel)
{
    // Section headings are inert rows; a section's panels follow its heading in order.
    int insertAt = -1;
    for (int row = 0; row < m_sidebar->count(); ++row) {
        QListWidgetItem *item = m_sidebar->item(row);
        const bool heading = !item->data(kPanelIndexRole).isValid();
        if (heading && insertAt >= 0)
            break;
        if (heading && item->text() == section)
            insertAt = row + 1;
        else if (!heading && insertAt >= 0)
            insertAt = row + 1;
    }
    if (insertAt < 0) {
        auto *heading = new QListWidgetItem(section);
        heading->setFlags(Qt::NoItemFlags);
        QFont bold = heading->font();
        bold.setBold(true);
        heading->setFont(bold);
        m_sidebar->addItem(heading);
        insertAt = m_sidebar->count();
    }
    const int index = m_stack->addWidget(panel);
    auto *item = new QListWidgetItem(QStringLiteral("  ") + title);
    item->setData(kPanelIndexRole, index);
    item->setData(Qt::AccessibleTextRole, title);
    item->setToolTip(tr("%1 > %2").arg(section, title));
    m_sidebar->insertItem(insertAt, item);
    return index;
}

bool MainWindow::showPanel(const QString &title)
{
    for (int row = 0; row < m_sidebar->count(); ++row) {
        QListWidgetItem *item = m_sidebar->item(row);
        if (item->data(kPanelIndexRole).isValid() && item->data(Qt::AccessibleTextRole) == title) {
            m_sidebar->setCurrentItem(item);
            return true;
        }
    }
    return false;
}

QWidget *MainWindow::currentPanel() const
{
    return m_stack->currentWidget();
}

void MainWindow::updateStatus()
{
    m_listening->setText(m_host && m_host->url().isValid()
                             ? tr("Listening on %1").arg(m_host->url().toString())
                             : tr("API server not running"));
    const quint64 perMinute = m_meter->sample(QDateTime::currentMSecsSinceEpoch());
    m_rate->setText(tr("%1 req/min").arg(perMinute));
    m_errors->setText(tr("Errors: %1 server (5xx), %2 client (4xx)")
                          .arg(m_meter->serverErrors())
                          .arg(m_meter->clientErrors()));
}
