#include "WebhookDeliveryModel.h"

#include "ModelFormat.h"

#include <algorithm>
#include <initializer_list>
#include <tuple>

namespace {

QDateTime fromMs(qint64 ms)
{
    return ms > 0 ? QDateTime::fromMSecsSinceEpoch(ms) : QDateTime();
}

// Right-aligned in these (numeric) columns, the default elsewhere.
QVariant alignRightIn(int column, std::initializer_list<int> columns)
{
    return std::find(columns.begin(), columns.end(), column) != columns.end()
               ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter))
               : QVariant();
}

// The horizontal header's text from a model's table of titles (marked with QT_TR_NOOP).
template <class Model, int N>
QVariant columnTitle(const Model *model, const char *const (&titles)[N], int section,
                     Qt::Orientation orientation, int role)
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= N)
        return model->QAbstractTableModel::headerData(section, orientation, role);
    return Model::tr(titles[section]);
}

bool sameDelivery(const ImageStore::Delivery &a, const ImageStore::Delivery &b)
{
    const auto fields = [](const ImageStore::Delivery &d) {
        return std::tie(d.taskId, d.url, d.status, d.attempts, d.scheduled, d.manual, d.nextMs,
                        d.leaseOwner, d.leaseUntil, d.lastStatus, d.lastError, d.updatedMs);
    };
    return fields(a) == fields(b);
}

struct DeliveryPage
{
    QList<ImageStore::Delivery> rows;
    qint64 pending = 0;
};

// The newest deliveries matching the filter (status and text both in the query).
DeliveryPage readDeliveries(Store &store, const WebhookDeliveryFilter &filter, int pageSize)
{
    DeliveryPage page;
    ImageStore::DeliveryQuery q;
    q.accountId = 0;
    q.status = filter.status;
    q.text = filter.text;
    q.limit = pageSize;
    page.rows = ImageStore::deliveries(store, q);
    page.pending = ImageStore::pendingCount(store);
    return page;
}

} // namespace

// ---- CoalescedReload ----

CoalescedReload::CoalescedReload(int delayMs, std::function<void()> start)
    : m_start(std::move(start))
{
    m_timer.setSingleShot(true);
    m_timer.setInterval(qMax(0, delayMs));
    m_timer.callOnTimeout([this] { fire(); });
}

void CoalescedReload::request()
{
    if (m_inFlight)
        m_again = true;
    else if (!m_timer.isActive())
        m_timer.start();
}

void CoalescedReload::now()
{
    m_timer.stop();
    fire();
}

void CoalescedReload::finished()
{
    m_inFlight = false;
    if (m_again) {
        m_again = false;
        fire();
    }
}

void CoalescedReload::fire()
{
    if (m_inFlight) {
        m_again = true;
        return;
    }
    m_inFlight = true;
    ++m_reads;
    m_start();
}

// ---- WebhookDeliveryModel ----

WebhookDeliveryModel::WebhookDeliveryModel(DatabaseService &db, QObject *parent, int pageSize,
                                           int coalesceMs)
    : RecordTableModel(Order::NewestFirst, parent), m_db(db), m_pageSize(qMax(1, pageSize)),
      m_reload(coalesceMs, [this] { read(); })
{
    m_reload.now();
}

int WebhookDeliveryModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant WebhookDeliveryModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    static const char *const titles[ColumnCount] = {
        QT_TR_NOOP("Delivery"),   QT_TR_NOOP("Task"),         QT_TR_NOOP("URL"),
        QT_TR_NOOP("Status"),     QT_TR_NOOP("Attempts"),     QT_TR_NOOP("Last HTTP status"),
        QT_TR_NOOP("Last error"), QT_TR_NOOP("Next attempt"), QT_TR_NOOP("Updated")};
    return columnTitle(this, titles, section, orientation, role);
}

QVariant WebhookDeliveryModel::cellData(const ImageStore::Delivery &d, int column, int role) const
{
    const bool pending = d.status == QLatin1String("pending");
    if (role == SortRole) {
        switch (column) {
        case LastStatusColumn:
            return d.lastStatus;
        case NextAttemptColumn:
            return pending ? d.nextMs : qint64(-1);
        case UpdatedColumn:
            return d.updatedMs;
        }
        role = Qt::DisplayRole; // the others sort by what they show
    }
    if (role == Qt::DisplayRole) {
        switch (column) {
        case IdColumn:
            return d.id;
        case TaskColumn:
            return d.taskId;
        case UrlColumn:
            return d.url;
        case StatusColumn:
            return d.status;
        case AttemptsColumn:
            return d.attempts;
        case LastStatusColumn:
            return d.lastStatus ? QString::number(d.lastStatus) : QString();
        case LastErrorColumn:
            return d.lastError;
        case NextAttemptColumn:
            if (!pending)
                return QString();
            return d.manual ? tr("now (resend)") : ModelFormat::time(fromMs(d.nextMs));
        case UpdatedColumn:
            return ModelFormat::time(fromMs(d.updatedMs));
        }
    } else if (role == Qt::TextAlignmentRole) {
        return alignRightIn(column, {IdColumn, AttemptsColumn, LastStatusColumn});
    } else if (role == Qt::ToolTipRole) {
        switch (column) {
        case UrlColumn:
            return d.url;
        case LastErrorColumn:
            return d.lastError;
        case AttemptsColumn:
            return tr("%1 on the schedule, %2 manual")
                .arg(d.scheduled)
                .arg(qMax(0, d.attempts - d.scheduled));
        case LastStatusColumn:
            return d.attempts > 0 && d.lastStatus == 0 ? tr("no HTTP answer") : QVariant();
        case NextAttemptColumn:
            return pending && d.nextMs > 0
                       ? QVariant(fromMs(d.nextMs).toUTC().toString(Qt::ISODateWithMs))
                       : QVariant();
        case UpdatedColumn:
            return fromMs(d.updatedMs).toUTC().toString(Qt::ISODateWithMs);
        }
    }
    return {};
}

void WebhookDeliveryModel::setFilter(const WebhookDeliveryFilter &filter)
{
    if (filter == m_filter)
        return;
    m_filter = filter;
    m_reload.request();
}

void WebhookDeliveryModel::reload()
{
    m_reload.request();
}

void WebhookDeliveryModel::read()
{
    const WebhookDeliveryFilter filter = m_filter;
    const int pageSize = m_pageSize;
    m_db.read<DeliveryPage>(
        this, [filter, pageSize](Store &s) { return readDeliveries(s, filter, pageSize); },
        [this, filter](const DbResult<DeliveryPage> &r) {
            m_reload.finished();
            if (filter != m_filter) // a read for the new filter is on its way
                return;
            if (!r.ok()) {
                emit loadFailed(r.error);
                return;
            }
            mergeRows(r.value.rows, sameDelivery);
            m_loaded = true;
            if (r.value.pending != m_pending) {
                m_pending = r.value.pending;
                emit pendingCountChanged(m_pending);
            }
            emit loaded();
        });
}

// ---- WebhookAttemptModel ----

WebhookAttemptModel::WebhookAttemptModel(DatabaseService &db, QObject *parent, int coalesceMs)
    : RecordTableModel(Order::Ascending, parent), m_db(db), m_reload(coalesceMs, [this] { read(); })
{
}

int WebhookAttemptModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant WebhookAttemptModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    static const char *const titles[ColumnCount] = {
        QT_TR_NOOP("Attempt"), QT_TR_NOOP("Trigger"),     QT_TR_NOOP("Started"),
        QT_TR_NOOP("Address"), QT_TR_NOOP("HTTP status"), QT_TR_NOOP("Duration (ms)"),
        QT_TR_NOOP("Error"),   QT_TR_NOOP("Answer")};
    return columnTitle(this, titles, section, orientation, role);
}

QVariant WebhookAttemptModel::cellData(const ImageStore::Attempt &a, int column, int role) const
{
    if (role == ExcerptRole)
        return a.excerpt;
    if (role == SortRole) {
        switch (column) {
        case StartedColumn:
            return a.startedMs;
        case StatusColumn:
            return a.status;
        case ExcerptColumn:
            return a.excerpt;
        }
        role = Qt::DisplayRole; // the others sort by what they show
    }
    if (role == Qt::DisplayRole) {
        switch (column) {
        case AttemptColumn:
            return a.attempt;
        case TriggerColumn:
            return a.manual ? tr("manual") : tr("scheduled");
        case StartedColumn:
            return ModelFormat::time(fromMs(a.startedMs));
        case AddressColumn:
            return a.address;
        case StatusColumn:
            return a.status ? QString::number(a.status) : tr("no answer");
        case DurationColumn:
            return a.durationMs;
        case ErrorColumn:
            return a.error;
        case ExcerptColumn:
            return a.excerpt.section(u'\n', 0, 0).left(200);
        }
    } else if (role == Qt::TextAlignmentRole) {
        return alignRightIn(column, {AttemptColumn, StatusColumn, DurationColumn});
    } else if (role == Qt::ToolTipRole) {
        switch (column) {
        case StartedColumn:
            return fromMs(a.startedMs).toUTC().toString(Qt::ISODateWithMs);
        case AddressColumn:
            return a.instance.isEmpty() ? QVariant() : tr("made by %1").arg(a.instance);
        case ErrorColumn:
            return a.error;
        }
    }
    return {};
}

void WebhookAttemptModel::setDelivery(qint64 deliveryId)
{
    if (deliveryId == m_delivery)
        return;
    m_delivery = deliveryId;
    m_loaded = false;
    resetRows({});
    m_reload.now();
}

void WebhookAttemptModel::reload()
{
    if (m_delivery)
        m_reload.request();
}

void WebhookAttemptModel::read()
{
    const qint64 id = m_delivery;
    if (!id) {
        m_reload.finished();
        return;
    }
    m_db.read<QList<ImageStore::Attempt>>(
        this, [id](Store &s) { return ImageStore::attempts(s, id); },
        [this, id](const DbResult<QList<ImageStore::Attempt>> &r) {
            m_reload.finished();
            if (id != m_delivery)
                return;
            if (!r.ok()) {
                emit loadFailed(r.error);
                return;
            }
            // Attempts are never changed once recorded: a kept row needs no update.
            mergeRows(r.value, [](const ImageStore::Attempt &, const ImageStore::Attempt &) {
                return true;
            });
            m_loaded = true;
            emit loaded();
        });
}
