#pragma once

#include "CreditGate.h"
#include "RateLimiter.h"
#include "Store.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <QElapsedTimer>
#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QTimer>

class DatabaseService;

// What instances on one PostgreSQL database share so that they behave as one: the rate limits'
// token buckets and the credit holds. Kept in that database (unlogged tables and functions,
// Migrations.cpp, core step 7), reached on a connection of its own (DatabaseService::shared):
// money stays where it is exact, and one engine serves it all (the choice and its figures:
// server/README.md, "Shared state"). A request's token and hold are one call, and the calls
// that arrive while one batch is at the database go together in the next (switchyard_admit,
// with the hand-backs waiting): one round trip per request at concurrency 1, one per batch
// under load, instead of three per request (tests/bench/instances-bench.sh: billed req/s on
// one instance went from 0.14 to about 0.47 of the in-memory limiter's; server/README.md).
//
//   rate limits  the token bucket of RateLimiter as a row (shared_rates), refilled on the
//                database's clock, the refill and the take one statement under the row's lock:
//                exact across instances.
//   holds        a hold is admitted when the balance, less the holds of every live instance
//                (shared_holds), covers the amount; holds on one account are taken in turn. A
//                settlement charges the ledger first and hands the hold back after (release,
//                with the next batch), so the two never both miss: for a moment both count,
//                which can refuse a request the balance would just cover, never admit one it
//                does not. Each instance keeps its own holds in memory too; they are what the
//                database holds for it, put back when it lost them (a crash of the database,
//                or this instance taken for gone). A key's budget is held the same way, first
//                and under its own lock (budgetSubject: the key's holds are rows under minus
//                its id), against the key's settled spending in the period plus the live
//                holds on it: both holds are taken or neither.
//   liveness     every heartbeatMs an instance notes itself alive; one not seen for aliveMs
//                is gone (SIGKILLed, cut off): its holds stop counting, and after four times
//                that they are deleted.
//
// When the database cannot be reached or does not answer within timeoutMs (policy, documented
// in server/README.md): money fails closed (admission answers Unavailable: 503
// shared_state_unavailable); rate limits fall back to this instance's own limiter with each
// limit divided by the instances last seen alive, with a warning and
// switchyard_rate_limit_fallback_total. The next call that succeeds recovers, without a
// restart; the holds are put back in step.
class SharedState : public QObject
{
    Q_OBJECT
public:
    struct Options
    {
        int timeoutMs = 2'000;
        int heartbeatMs = 1'000;
        int aliveMs = 10'000;
    };

    SharedState(DatabaseService &db, Options options, QObject *parent = nullptr);
    ~SharedState() override;

    // Notes this instance alive (before the first request, so that its holds count at once);
    // then every heartbeatMs.
    void start();
    bool isUp() const { return m_up; }

    struct Answer
    {
        RateLimiter::Decision rate; // allowed, limit 0, when no bucket was asked for
        // Admitted when no hold was asked for (or the rate limit refused first).
        CreditGate::Outcome outcome = CreditGate::Outcome::Admitted;
        qint64 balance = 0;
        qint64 held = 0; // every live instance's holds on the account, when a hold was asked
        // The key's budget, when the call named one: false when it refused (then outcome is
        // Insufficient and nothing is held), with what it had spent and what was held on it.
        bool withinBudget = true;
        qint64 keySpent = 0;
        qint64 keyHeld = 0;
    };
    using Done = std::function<void(const Answer &answer)>;
    // A token from call.bucket (empty: none) at call.perMinute and, when it allows, a hold of
    // call.amount (0: none) on the key's budget (call.keyId 0: none) and the account's credit,
    // both or neither. done runs on this object's thread. The calls that arrive while a batch
    // is at the database wait and go together in the next one: one round trip for all of them
    // (switchyard_admit), and one at a time at concurrency 1.
    void admit(const Store::SharedCall &call, Done done);
    // Hands a hold back: with the next batch, or alone after kReleaseDelayMs when none comes.
    // Another instance may see the hold that long after this one's settlement committed (and
    // refuse a request the balance would just cover), never the other way round. A hold on a
    // key's budget is handed back under budgetSubject(key).
    void release(qint64 accountId, qint64 amount);
    static constexpr int kReleaseDelayMs = 2;
    static constexpr qint64 budgetSubject(qint64 keyId) { return -keyId; }
    // Hands back what an admitted call holds: its account's and its key's budget's.
    void release(const Store::SharedCall &call);
    qint64 reserved(qint64 accountId) const; // this instance's holds on the account

    // For /healthz: {"engine", "state": "up" | "down", "instances"}.
    QJsonObject health() const;
    // switchyard_shared_state_up, _instances, _failures_total,
    // switchyard_rate_limit_fallback_total.
    void collect(class Metrics &metrics) const;

private:
    struct Waiting
    {
        Store::SharedCall call;
        Done done;
    };
    void beat();
    // retry: the batch before failed, and a dropped connection is opened again for this one.
    void send(bool retry = false);
    // After a batch: the next one, or the hand-backs' timer.
    void next();
    Answer fallback(const Waiting &w);
    void succeeded();
    void failed(const QString &why);
    RateLimiter::Decision local(const QByteArray &bucket, int perMinute);

    DatabaseService &m_db;
    const Options m_options;
    const QString m_instance;
    QTimer m_heartbeat;
    QTimer m_releaseTimer;
    QList<Waiting> m_waiting;
    QHash<qint64, qint64> m_releases; // account -> units to hand back
    bool m_inFlight = false;
    bool m_up = true;
    int m_instances = 1; // alive at the last heartbeat, at least 1
    quint64 m_failures = 0;
    quint64 m_fallbacks = 0;
    qint64 m_lastSweepMs = -1;
    QElapsedTimer m_clock;
    RateLimiter m_local;

    // This instance's holds by account (and by key's budget, budgetSubject), as the database
    // should have them: changed by the jobs
    // on the shared connection (in the order they run there), read by heartbeats there and by
    // reserved() here. Shared with the jobs, which may run after this object is gone.
    struct Held
    {
        std::mutex mutex;
        QHash<qint64, qint64> byAccount;
        // A job failed after it may have changed the database: the next heartbeat writes
        // byAccount.
        std::atomic<bool> resync{false};
    };
    const std::shared_ptr<Held> m_held = std::make_shared<Held>();
};
