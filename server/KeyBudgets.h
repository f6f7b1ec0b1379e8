#pragma once

#include "KeyRules.h"

#include <functional>
#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QObject>
#include <QTimeZone>

class DatabaseService;
class SharedState;

// Admission by a key's budget (KeyRules::Budget), next to the credit gate: a request of a key
// with a budget is admitted when
//   spent in the current period + (holds of this instance's requests of the key) + its hold
//     <= the budget,
// and holds that amount until it settles; its charge then counts as spent. Periods start at
// 00:00 in the configured zone (server.budget_time_zone, UTC by default); a request settled
// after its period ended counts in the new one only if its record's time falls there.
//
// Decided in memory on the server thread, like CreditGate: a key's settled spending is read
// from its usage records (Store::keySpent) and then kept up by this instance's own charges
// (charged()); a request is admitted on spending known up to freshMs old, and a refusal is
// only decided on a read made for it. A charge this instance settles while a read is in
// flight counts after the read too: it may count twice until the next read, which refuses
// too early, never too late. What another instance or process spends shows here within
// freshMs. Instances sharing a PostgreSQL database decide in it instead (setShared), exactly.
class KeyBudgets : public QObject
{
    Q_OBJECT
public:
    enum class Outcome
    {
        Admitted,
        Exceeded,
        Unavailable
    };
    struct State
    {
        qint64 spent = 0; // settled in the period
        qint64 held = 0;  // this instance's holds
        QDateTime start;  // the period's bounds; an invalid end for "total"
        QDateTime end;
    };
    using Done = std::function<void(Outcome outcome, const State &state)>;
    using Clock = std::function<QDateTime()>;

    KeyBudgets(DatabaseService &db, const QTimeZone &zone, int freshMs, QObject *parent = nullptr);

    // For tests: the time budget periods are reckoned by (default: the system's clock).
    void setClock(Clock clock) { m_now = std::move(clock); }
    QDateTime now() const { return m_now(); }
    const QTimeZone &zone() const { return m_zone; }

    // done runs at once when what is known decides, else after a read (on this thread).
    void admit(qint64 keyId, const KeyRules::Budget &budget, qint64 amount, QObject *context,
               Done done);
    void release(qint64 keyId, qint64 amount);
    // Instances on one PostgreSQL database hold on keys' budgets there, with the credit
    // (Pipeline::holdShared, SharedState); this gate then only hands those holds back.
    void setShared(SharedState *shared) { m_shared = shared; }
    // A charge of the key this instance committed, made at `when`.
    void charged(qint64 keyId, qint64 cost, const QDateTime &when);
    // What is known of a key now (spent as last read and charged since; 0 when never read).
    State state(qint64 keyId, KeyRules::Period period) const;

private:
    struct Key
    {
        KeyRules::Period period = KeyRules::Period::Total;
        QDateTime start, end;
        bool known = false;
        qint64 spent = 0;
        qint64 held = 0;
        qint64 knownAtMs = 0;
        bool reading = false;
        qint64 chargedWhileReading = 0;
        QList<std::function<void(bool read)>> waiting;
    };
    Key &keyFor(qint64 keyId, KeyRules::Period period);
    bool decide(qint64 keyId, const KeyRules::Budget &budget, qint64 amount, bool refuse,
                const Done &done);
    void read(qint64 keyId);

    DatabaseService &m_db;
    SharedState *m_shared = nullptr;
    const QTimeZone m_zone;
    const int m_freshMs;
    Clock m_now = [] { return QDateTime::currentDateTimeUtc(); };
    QElapsedTimer m_clock;
    QHash<qint64, Key> m_keys;
};
