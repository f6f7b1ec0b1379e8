#pragma once

#include "DatabaseService.h"
#include "images/ImageStore.h"
#include "RecordTableModel.h"

#include <functional>
#include <QTimer>

// Coalesces reload requests for a model that reads through DatabaseService: a burst of
// request() calls within the delay becomes one read, at most one read is in flight, and a
// request made while one is in flight gives exactly one more read when it is back.
class CoalescedReload
{
public:
    // start: begins the read; it must call finished() when its answer is in (or dropped).
    CoalescedReload(int delayMs, std::function<void()> start);

    void request();  // a read after the delay (or after the read in flight)
    void now();      // a read at once (or right after the read in flight)
    void finished(); // the read in flight is back
    bool busy() const { return m_inFlight; }
    quint64 reads() const { return m_reads; }

private:
    void fire();

    QTimer m_timer;
    std::function<void()> m_start;
    bool m_inFlight = false;
    bool m_again = false;
    quint64 m_reads = 0;
};

// Which deliveries the window's log shows. The status is applied by the store's query; the
// text (a part of the task id or of the URL, any case) to the newest deliveries, up to a bound
// (see WebhookDeliveryModel).
struct WebhookDeliveryFilter
{
    QString status; // pending, delivered, failed; empty: all
    QString text;

    bool operator==(const WebhookDeliveryFilter &other) const = default;
};

// The webhook outbox of every account (ImageStore::deliveries with accountId 0), newest first:
// the latest pageSize deliveries that match the filter, read on DatabaseService's reader
// threads. reload() is coalesced (many deliveryChanged signals in a burst give one read) and
// merges the answer into the rows with precise signals, so a view keeps its selection. The
// owner connects what announces changes (ImagesEvents::deliveryChanged, taskEnded) to reload().
// pendingCount() is every pending delivery in the database, whatever the filter.
class WebhookDeliveryModel : public RecordTableModel<ImageStore::Delivery>
{
    Q_OBJECT
public:
    enum Column
    {
        IdColumn,
        TaskColumn,
        UrlColumn,
        StatusColumn,
        AttemptsColumn,
        LastStatusColumn,
        LastErrorColumn,
        NextAttemptColumn,
        UpdatedColumn,
        ColumnCount
    };

    // The newest pageSize deliveries that match the filter; reloads within coalesceMs are one.
    explicit WebhookDeliveryModel(DatabaseService &db, QObject *parent = nullptr,
                                  int pageSize = 500, int coalesceMs = 100);

    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    const WebhookDeliveryFilter &filter() const { return m_filter; }
    void setFilter(const WebhookDeliveryFilter &filter);
    // Reads the rows again, coalesced with other requests.
    void reload();
    bool isLoaded() const { return m_loaded; }
    // Pending deliveries in the database (-1 until the first read is back).
    qint64 pendingCount() const { return m_pending; }
    // Reads made so far (for tests of the coalescing).
    quint64 reads() const { return m_reload.reads(); }

signals:
    void loaded();
    void loadFailed(const QString &error);
    void pendingCountChanged(qint64 count);

protected:
    QVariant cellData(const ImageStore::Delivery &d, int column, int role) const override;

private:
    void read();

    DatabaseService &m_db;
    int m_pageSize;
    WebhookDeliveryFilter m_filter;
    CoalescedReload m_reload;
    qint64 m_pending = -1;
    bool m_loaded = false;
};

// The attempts of one delivery (ImageStore::attempts), oldest first, read on the reader
// threads; reload() is coalesced like WebhookDeliveryModel's. Attempts are only ever added, so
// a reload inserts the new ones and a view keeps its selection.
class WebhookAttemptModel : public RecordTableModel<ImageStore::Attempt>
{
    Q_OBJECT
public:
    enum Column
    {
        AttemptColumn,
        TriggerColumn,
        StartedColumn,
        AddressColumn,
        StatusColumn,
        DurationColumn,
        ErrorColumn,
        ExcerptColumn,
        ColumnCount
    };
    // The whole response excerpt (the excerpt column shows its first line).
    static constexpr int ExcerptRole = IdRole + 1;

    explicit WebhookAttemptModel(DatabaseService &db, QObject *parent = nullptr,
                                 int coalesceMs = 100);

    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    qint64 deliveryId() const { return m_delivery; }
    // Shows the attempts of this delivery (0: none); the rows are cleared at once.
    void setDelivery(qint64 deliveryId);
    void reload();
    bool isLoaded() const { return m_loaded; }

signals:
    void loaded();
    void loadFailed(const QString &error);

protected:
    QVariant cellData(const ImageStore::Attempt &a, int column, int role) const override;

private:
    void read();

    DatabaseService &m_db;
    qint64 m_delivery = 0;
    CoalescedReload m_reload;
    bool m_loaded = false;
};
