#include "DatabaseService.h"

#include "Migrations.h"

#include <QDateTime>

DatabaseService::DatabaseService(DatabaseConfig config, int readers, QObject *parent)
    : QObject(parent), m_config(std::move(config)), m_readerCount(qMax(1, readers))
{
    qRegisterMetaType<LedgerEntry>();
    qRegisterMetaType<UsageRecord>();
    qRegisterMetaType<ApiKeyRecord>();
    qRegisterMetaType<ControlTokenRecord>();
}

DatabaseService::~DatabaseService()
{
    stop();
}

void DatabaseService::start(const QList<Migrations::Component> &families)
{
    {
        QSqlDatabase db = m_config.open(QStringLiteral("migrate"));
        const QString name = db.connectionName();
        Migrations::apply(db, m_config.kind(), families);
        m_defaultAccount = Store(db, m_config.kind()).defaultAccountId();
        db = QSqlDatabase();
        DatabaseConfig::close(name);
    }
    m_writer =
        std::make_unique<DbWorker>(m_config, DbWorker::Mode::Writer, QStringLiteral("writer"),
                                   // PostgreSQL: each savepoint in a batch adds an account row
                                   // version to step over; 64 keeps group commit cheap there.
                                   m_config.isPostgres() ? 64 : 1024);
    m_writer->start();
    if (!m_config.isPostgres()) {
        m_checkpointer = std::make_unique<Checkpointer>(
            m_config, [writer = m_writer.get()] { writer->requestCheckpoint(); });
        m_checkpointer->start();
    }
    for (int i = 0; i < m_readerCount; ++i) {
        m_readers.push_back(std::make_unique<DbWorker>(m_config, DbWorker::Mode::Reader,
                                                       QStringLiteral("reader%1").arg(i)));
        m_readers.back()->start();
    }
    if (m_config.isPostgres()) {
        m_shared =
            std::make_unique<DbWorker>(m_config, DbWorker::Mode::Reader, QStringLiteral("shared"));
        m_shared->start();
    }
    m_feed = std::make_unique<ChangeFeed>(m_config);
    connect(m_feed.get(), &ChangeFeed::changed, this, [this](const QStringList &topics) {
        if (topics.contains(QLatin1String("keys")))
            emit apiKeysChanged();
        if (topics.contains(QLatin1String("tokens")))
            emit controlTokensChanged();
        if (topics.contains(QLatin1String("credits")))
            emit creditsChanged();
        emit changed(topics);
    });
    m_feed->start();
}

void DatabaseService::stop()
{
    if (m_writer)
        m_writer->shutdown();
    for (auto &r : m_readers)
        r->shutdown();
    if (m_shared)
        m_shared->shutdown();
    if (m_checkpointer)
        m_checkpointer->shutdown();
    if (m_feed)
        m_feed->stop();
}

void DatabaseService::flush()
{
    if (m_writer)
        m_writer->flush();
    for (auto &r : m_readers)
        r->flush();
    if (m_shared)
        m_shared->flush();
}

ChargeResult MoneyJournal::applyLedger(qint64 accountId, const QString &kind, qint64 amount,
                                       const QString &reason, const QString &requestId,
                                       qint64 floor)
{
    ChargeResult r = m_store.applyLedger(accountId, kind, amount, reason, requestId, floor);
    if (r.status == ChargeResult::Status::Committed)
        m_entries.append(r.entry);
    return r;
}

qint64 MoneyJournal::insertUsage(UsageRecord record)
{
    if (!record.time.isValid()) // the announced record carries the stored time
        record.time = QDateTime::currentDateTimeUtc();
    record.id = m_store.insertUsage(record);
    m_records.append(record);
    return record.id;
}

const char *MoneyCounters::kindName(int kind)
{
    static constexpr const char *kNames[KindCount] = {"charge", "refund", "grant"};
    return kind >= 0 && kind < KindCount ? kNames[kind] : "";
}

QByteArray MoneyCounters::render() const
{
    QByteArray out;
    const auto family = [&](const char *name, const char *help,
                            const std::array<quint64, KindCount> &values) {
        out += QByteArray("# HELP ") + name + ' ' + help + "\n# TYPE " + name + " counter\n";
        for (int k = 0; k < KindCount; ++k)
            out += QByteArray(name) + "{kind=\"" + kindName(k) + "\"} " +
                   QByteArray::number(values[size_t(k)]) + '\n';
    };
    family("switchyard_ledger_entries_total",
           "Ledger entries committed by this process (settlements, grants, holds), by kind.",
           entries);
    family("switchyard_credits_units_total",
           "Credit units moved by those entries, without sign (1 credit = 10^9 units), by kind.",
           units);
    out += "# HELP switchyard_usage_records_total Usage records committed by this process.\n"
           "# TYPE switchyard_usage_records_total counter\n"
           "switchyard_usage_records_total " +
           QByteArray::number(usageRecords) + '\n';
    return out;
}

MoneyCounters DatabaseService::moneyCounters() const
{
    MoneyCounters c;
    for (size_t k = 0; k < c.entries.size(); ++k) {
        c.entries[k] = m_entryCounts[k].load(std::memory_order_relaxed);
        c.units[k] = m_unitCounts[k].load(std::memory_order_relaxed);
    }
    c.usageRecords = m_usageCount.load(std::memory_order_relaxed);
    return c;
}

void DatabaseService::announceEntry(const LedgerEntry &entry)
{
    // The ledger's CHECK allows these three kinds only.
    const QChar first = entry.kind.isEmpty() ? QChar() : entry.kind.front();
    const size_t kind = first == u'c'   ? MoneyCounters::Charge
                        : first == u'r' ? MoneyCounters::Refund
                                        : MoneyCounters::Grant;
    m_entryCounts[kind].fetch_add(1, std::memory_order_relaxed);
    const quint64 units = entry.amount < 0 ? 0 - quint64(entry.amount) : quint64(entry.amount);
    m_unitCounts[kind].fetch_add(units, std::memory_order_relaxed);
    emit ledgerAppended(entry);
}

void DatabaseService::announceUsage(const UsageRecord &record)
{
    m_usageCount.fetch_add(1, std::memory_order_relaxed);
    emit usageRecorded(record);
}

void DatabaseService::announce(const MoneyJournal &journal)
{
    for (const LedgerEntry &e : journal.entries())
        announceEntry(e);
    for (const UsageRecord &u : journal.records())
        announceUsage(u);
}

void DatabaseService::applyLedger(QObject *context, qint64 accountId, const QString &kind,
                                  qint64 amount, const QString &reason, const QString &requestId,
                                  qint64 floor, std::function<void(DbResult<ChargeResult>)> done)
{
    writeMoney<ChargeResult>(
        context,
        [=](MoneyJournal &j) {
            return j.applyLedger(accountId, kind, amount, reason, requestId, floor);
        },
        [done = std::move(done)](const DbResult<ChargeResult> &r) {
            if (done)
                done(r);
        });
}

SettlementTicket DatabaseService::expectSettlement()
{
    return SettlementTicket(m_expected);
}

void DatabaseService::settle(QObject *context, UsageRecord record,
                             std::function<void(DbResult<ChargeResult>)> done,
                             SettlementTicket ticket)
{
    if (!record.time.isValid()) // the announced record carries the stored time
        record.time = QDateTime::currentDateTimeUtc();
    bool post = false;
    bool wake = false;
    {
        std::lock_guard lock(m_settleMutex);
        m_settlements.push_back(
            PendingSettlement{std::move(record), context, context != nullptr, std::move(done)});
        ticket.release(); // under the lock: the writer sees it queued or expected, never neither
        post = !std::exchange(m_settleQueued, true);
        wake = m_gathering;
    }
    if (wake)
        m_gathered.notify_one();
    if (post)
        postSettlements();
}

void DatabaseService::postSettlements()
{
    // One writer job takes every settlement queued when it runs (at most kMaxSettleBatch).
    auto taken = std::make_shared<std::vector<PendingSettlement>>();
    auto results = std::make_shared<QList<Store::Settlement>>();
    m_writer->post(
        [this, taken, results](Store &store) {
            bool more = false;
            {
                std::unique_lock lock(m_settleMutex);
                gather(lock);
                more = takeSettlements(*taken);
            }
            if (more) // more than one batch waited: the rest in the next
                postSettlements();
            results->clear();
            results->reserve(qsizetype(taken->size()));
            for (const PendingSettlement &p : *taken)
                results->append(Store::Settlement{p.record, {}, {}});
            store.settleBatch(*results);
        },
        [this, taken, results](const QString &error) {
            if (!error.isEmpty() && taken->empty()) {
                // The job did not run (no connection to the database): the settlements it
                // would have taken fail now. Left queued, they would wait for good, as no job
                // is posted for them while one is thought to be on its way.
                bool more = false;
                {
                    std::lock_guard lock(m_settleMutex);
                    more = takeSettlements(*taken);
                }
                if (more)
                    postSettlements();
                finishSettlements(*taken, *results, error);
                return;
            }
            if (!error.isEmpty()) {
                // One of them failed the batch, or the connection was lost under it (the
                // writer opens a new one for the next job): each on its own, so that only a
                // failing one fails. What the lost connection committed after all is found,
                // not stored twice (settleOne).
                for (PendingSettlement &p : *taken)
                    settleOne(std::move(p));
                return;
            }
            finishSettlements(*taken, *results, error);
        },
        DbWorker::Commit::Alone); // one statement on PostgreSQL
}

bool DatabaseService::takeSettlements(std::vector<PendingSettlement> &taken)
{
    // Under m_settleMutex; the caller posts for the rest after letting it go (a post may run a
    // completion at once, which takes the lock again).
    const size_t n = std::min(m_settlements.size(), kMaxSettleBatch);
    taken.assign(std::make_move_iterator(m_settlements.begin()),
                 std::make_move_iterator(m_settlements.begin() + n));
    m_settlements.erase(m_settlements.begin(), m_settlements.begin() + n);
    return m_settleQueued = !m_settlements.empty();
}

void DatabaseService::gather(std::unique_lock<std::mutex> &lock)
{
    // On the writer thread. Settlements still expected join this batch if they come within
    // the gather time; the wait ends when one comes and none is expected any more (a ticket
    // dropped without one wakes nobody: the wait then runs its course).
    const auto waitFor = [this] {
        return m_settlements.size() < kGatherBelow &&
               m_expected->load(std::memory_order_relaxed) > 0;
    };
    if (m_gatherTime.count() <= 0 || !waitFor())
        return;
    const auto until = std::chrono::steady_clock::now() + m_gatherTime;
    m_gathering = true;
    m_gathered.wait_until(lock, until, [&] { return !waitFor(); });
    m_gathering = false;
}

void DatabaseService::settleOne(PendingSettlement pending)
{
    auto taken = std::make_shared<std::vector<PendingSettlement>>();
    taken->push_back(std::move(pending));
    auto results = std::make_shared<QList<Store::Settlement>>();
    m_writer->post(
        [taken, results](Store &store) {
            // The statements one by one (Store::applyLedger, insertUsage), as before batching.
            Store::Settlement out{taken->front().record, {}, {}};
            UsageRecord &record = out.usage;
            if (record.cost > 0) {
                out.charge = store.applyLedger(record.accountId, QStringLiteral("charge"),
                                               -record.cost, record.endpoint, record.requestId,
                                               std::numeric_limits<qint64>::min() / 2);
                if (out.charge.status == ChargeResult::Status::UnknownAccount)
                    throw StoreError("unknown account");
                // The floor, half the range below zero, refuses only a balance near the end of
                // its range (on SQLite the floor test's sum may then be no integer): the charge
                // fails, as in a batch, rather than leave a usage record without its entry.
                if (out.charge.status == ChargeResult::Status::Insufficient)
                    throw StoreError("the charge would take the balance beyond its range");
            }
            // A retry after a lost connection, which may have committed this settlement after
            // all: its usage record is looked for before it is stored (the account, time and
            // request id name it). A charge found stored (Duplicate) with its usage record is
            // this settlement's own, and is reported as committed.
            record.id = store.storedUsageId(record);
            if (out.charge.status == ChargeResult::Status::Duplicate) {
                if (record.id)
                    out.charge.status = ChargeResult::Status::Committed;
            } else if (!record.id) {
                record.id = store.insertUsage(record);
            }
            results->append(out);
        },
        [this, taken, results](const QString &error) {
            finishSettlements(*taken, *results, error);
        });
}

void DatabaseService::finishSettlements(std::vector<PendingSettlement> &taken,
                                        const QList<Store::Settlement> &results,
                                        const QString &error)
{
    // On the writer thread, after COMMIT. Each context gets one call back with its results, in
    // order, not one event per settlement.
    QHash<QObject *, QList<std::function<void()>>> byContext;
    QHash<QObject *, QPointer<QObject>> guards;
    for (size_t i = 0; i < taken.size(); ++i) {
        PendingSettlement &p = taken[i];
        DbResult<ChargeResult> r;
        if (!error.isEmpty() || qsizetype(i) >= results.size()) {
            r.error = error.isEmpty() ? QStringLiteral("not settled") : error;
        } else {
            const Store::Settlement &s = results[qsizetype(i)];
            r.value = s.charge;
            r.error = s.error;
            if (s.error.isEmpty()) {
                if (s.charge.status == ChargeResult::Status::Committed && s.charge.entry.id)
                    announceEntry(s.charge.entry);
                if (s.usage.id)
                    announceUsage(s.usage);
            }
        }
        if (!p.done)
            continue;
        if (!p.hasContext) {
            p.done(r);
            continue;
        }
        QObject *key = p.context.data();
        if (!key)
            continue; // the context is gone: nobody to tell
        guards.insert(key, p.context);
        byContext[key].append([done = std::move(p.done), r] { done(r); });
    }
    for (auto it = byContext.begin(); it != byContext.end(); ++it) {
        QObject *context = guards.value(it.key()).data();
        if (!context)
            continue;
        QMetaObject::invokeMethod(
            context,
            [calls = std::move(it.value())] {
                for (const auto &call : calls)
                    call();
            },
            Qt::QueuedConnection);
    }
}

void DatabaseService::recordUsage(UsageRecord record, SettlementTicket ticket)
{
    settle(nullptr, std::move(record), nullptr, std::move(ticket));
}

void DatabaseService::touchApiKey(qint64 id)
{
    const QDateTime now = QDateTime::currentDateTimeUtc();
    write<bool>(
        nullptr,
        [=](Store &s) {
            s.touchApiKey(id, now);
            return true;
        },
        [](const DbResult<bool> &) {});
}

void DatabaseService::touchControlToken(qint64 id)
{
    const QDateTime now = QDateTime::currentDateTimeUtc();
    write<bool>(
        nullptr,
        [=](Store &s) {
            s.touchControlToken(id, now);
            return true;
        },
        [](const DbResult<bool> &) {});
}
