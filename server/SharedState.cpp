#include "SharedState.h"

#include "DatabaseService.h"
#include "Metrics.h"

#include <QUuid>

SharedState::SharedState(DatabaseService &db, Options options, QObject *parent)
    : QObject(parent), m_db(db), m_options(options),
      m_instance(QUuid::createUuid().toString(QUuid::WithoutBraces))
{
    m_clock.start();
    m_heartbeat.setInterval(m_options.heartbeatMs);
    connect(&m_heartbeat, &QTimer::timeout, this, &SharedState::beat);
    m_releaseTimer.setSingleShot(true);
    m_releaseTimer.setInterval(kReleaseDelayMs);
    m_releaseTimer.setTimerType(Qt::PreciseTimer);
    connect(&m_releaseTimer, &QTimer::timeout, this, [this] {
        if (!m_inFlight)
            send();
    });
}

SharedState::~SharedState()
{
    // Leaves at once instead of waiting to be taken for gone: its holds were all handed back
    // (the server drains first). With no context, nothing comes back here.
    m_db.shared<bool>(
        nullptr,
        [instance = m_instance](Store &s) {
            s.sharedLeave(instance);
            return true;
        },
        [](const DbResult<bool> &) {});
}

void SharedState::start()
{
    beat();
    m_db.flush(); // the first heartbeat is in before any request is admitted
    m_heartbeat.start();
}

void SharedState::beat()
{
    const qint64 now = m_clock.elapsed();
    const bool sweep = m_lastSweepMs < 0 || now - m_lastSweepMs >= 4 * m_options.aliveMs;
    if (sweep)
        m_lastSweepMs = now;
    m_db.shared<int>(
        this,
        [held = m_held, instance = m_instance, aliveMs = qint64(m_options.aliveMs),
         sweep](Store &s) {
            // On the shared connection, after every job posted before it: byAccount is exactly
            // what those jobs left.
            try {
                if (s.sharedHeartbeat(instance) || held->resync.exchange(false)) {
                    QHash<qint64, qint64> now;
                    {
                        std::lock_guard lock(held->mutex);
                        now = held->byAccount;
                    }
                    s.sharedSetHolds(instance, now);
                }
                if (sweep)
                    s.sharedSweep(4 * aliveMs);
                return s.sharedInstances(aliveMs);
            } catch (...) {
                held->resync = true;
                throw;
            }
        },
        [this](const DbResult<int> &r) {
            if (!r.ok())
                return failed(r.error);
            m_instances = qMax(1, r.value);
            succeeded();
        });
}

void SharedState::succeeded()
{
    if (!m_up)
        qInfo("shared state: PostgreSQL answers again; rate limits and credit holds are "
              "shared by the instances again");
    m_up = true;
}

void SharedState::failed(const QString &why)
{
    ++m_failures;
    if (m_up)
        qWarning("shared state: PostgreSQL cannot be reached (%s); billed requests are refused "
                 "(503 shared_state_unavailable) and rate limits are this instance's share "
                 "(each divided by %d instances) until it answers",
                 qPrintable(why), m_instances);
    m_up = false;
}

RateLimiter::Decision SharedState::local(const QByteArray &bucket, int perMinute)
{
    ++m_fallbacks;
    return m_local.take(bucket, qMax(1, perMinute / m_instances), m_clock.elapsed());
}

SharedState::Answer SharedState::fallback(const Waiting &w)
{
    Answer a;
    if (!w.call.bucket.isEmpty())
        a.rate = local(w.call.bucket.toLatin1(), w.call.perMinute);
    if (w.call.amount > 0)
        a.outcome = CreditGate::Outcome::Unavailable; // money fails closed
    return a;
}

void SharedState::admit(const Store::SharedCall &call, Done done)
{
    Waiting w;
    w.call = call;
    w.done = std::move(done);
    m_waiting.append(std::move(w));
    if (!m_inFlight)
        send();
}

void SharedState::release(qint64 accountId, qint64 amount)
{
    if (amount <= 0)
        return;
    m_releases[accountId] += amount;
    if (!m_inFlight && !m_releaseTimer.isActive())
        m_releaseTimer.start();
}

void SharedState::next()
{
    if (!m_waiting.isEmpty())
        send();
    else if (!m_releases.isEmpty() && !m_releaseTimer.isActive())
        m_releaseTimer.start();
}

void SharedState::send(bool retry)
{
    m_releaseTimer.stop();
    m_inFlight = true;
    auto batch = std::make_shared<QList<Waiting>>(std::exchange(m_waiting, {}));
    QList<Store::SharedCall> calls;
    calls.reserve(batch->size());
    for (const Waiting &w : *batch)
        calls.append(w.call);
    auto answered = std::make_shared<bool>(false);
    auto releases = std::make_shared<const QHash<qint64, qint64>>(std::exchange(m_releases, {}));
    // Set once the job ran: a job the worker failed without running it (no connection) has
    // handed nothing back, and its hand-backs go with the next batch.
    auto ran = std::make_shared<std::atomic<bool>>(false);
    m_db.shared<QList<Store::SharedAnswer>>(
        this,
        [held = m_held, instance = m_instance, aliveMs = qint64(m_options.aliveMs), releases, calls,
         ran](Store &s) {
            // On the shared connection: byAccount follows what each batch does there.
            ran->store(true);
            {
                std::lock_guard lock(held->mutex);
                for (auto it = releases->cbegin(); it != releases->cend(); ++it) {
                    auto at = held->byAccount.find(it.key());
                    if (at != held->byAccount.end() && (*at -= it.value()) <= 0)
                        held->byAccount.erase(at);
                }
            }
            try {
                QList<Store::SharedAnswer> answers =
                    s.sharedAdmit(instance, aliveMs, *releases, calls);
                std::lock_guard lock(held->mutex);
                for (qsizetype i = 0; i < answers.size(); ++i) {
                    if (!answers[i].admitted)
                        continue;
                    held->byAccount[calls[i].accountId] += calls[i].amount;
                    if (calls[i].keyId > 0)
                        held->byAccount[budgetSubject(calls[i].keyId)] += calls[i].amount;
                }
                return answers;
            } catch (...) {
                // It may have committed before the answer was lost: the next heartbeat that
                // gets through writes byAccount.
                held->resync = true;
                throw;
            }
        },
        [this, batch, answered, releases, ran,
         retry](const DbResult<QList<Store::SharedAnswer>> &r) {
            if (!r.ok() && !ran->load())
                for (auto it = releases->cbegin(); it != releases->cend(); ++it)
                    m_releases[it.key()] += it.value();
            if (std::exchange(*answered, true)) {
                // Answered by the deadline already: holds taken meanwhile go back.
                if (r.ok())
                    for (qsizetype i = 0; i < r.value.size(); ++i)
                        if (r.value[i].admitted)
                            release(batch->at(i).call);
                return;
            }
            m_inFlight = false;
            if (!r.ok() && !retry) {
                // Once more, at once: a connection PostgreSQL dropped (a restart, a failover)
                // fails the batch on it, and the worker opens a new one for the next. A batch
                // that failed midway may have taken what the heartbeat puts right (resync).
                m_waiting = *batch + m_waiting;
                send(true);
                return;
            }
            if (!r.ok()) {
                failed(r.error);
                for (const Waiting &w : *batch)
                    w.done(fallback(w));
            } else {
                succeeded();
                for (qsizetype i = 0; i < batch->size(); ++i) {
                    const Waiting &w = batch->at(i);
                    const Store::SharedAnswer &x = r.value[i];
                    Answer a;
                    if (!w.call.bucket.isEmpty())
                        a.rate = RateLimiter::decision(x.allowed, x.tokens, w.call.perMinute);
                    if (w.call.amount > 0 && x.allowed) {
                        a.outcome = x.admitted ? CreditGate::Outcome::Admitted
                                               : CreditGate::Outcome::Insufficient;
                        a.balance = x.balance;
                        a.held = x.held;
                        a.withinBudget = x.withinBudget;
                        a.keySpent = x.keySpent;
                        a.keyHeld = x.keyHeld;
                    }
                    w.done(a);
                }
            }
            next();
        });
    QTimer::singleShot(m_options.timeoutMs, this, [this, batch, answered] {
        if (std::exchange(*answered, true))
            return;
        m_inFlight = false;
        failed(QStringLiteral("no answer within %1 ms").arg(m_options.timeoutMs));
        for (const Waiting &w : *batch)
            w.done(fallback(w));
        next();
    });
}

void SharedState::release(const Store::SharedCall &call)
{
    release(call.accountId, call.amount);
    if (call.keyId > 0)
        release(budgetSubject(call.keyId), call.amount);
}

qint64 SharedState::reserved(qint64 accountId) const
{
    std::lock_guard lock(m_held->mutex);
    return m_held->byAccount.value(accountId);
}

QJsonObject SharedState::health() const
{
    return QJsonObject{
        {"engine", "postgresql"}, {"state", m_up ? "up" : "down"}, {"instances", m_instances}};
}

void SharedState::collect(Metrics &metrics) const
{
    metrics.setGauge(QStringLiteral("switchyard_shared_state_up"), m_up ? 1 : 0);
    metrics.setGauge(QStringLiteral("switchyard_shared_state_instances"), m_instances);
    metrics.setCounter(QStringLiteral("switchyard_shared_state_failures_total"),
                       double(m_failures));
    metrics.setCounter(QStringLiteral("switchyard_rate_limit_fallback_total"), double(m_fallbacks));
}
