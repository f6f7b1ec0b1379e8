#include "KeyBudgets.h"

#include "DatabaseService.h"
#include "SharedState.h"

#include <QPointer>

KeyBudgets::KeyBudgets(DatabaseService &db, const QTimeZone &zone, int freshMs, QObject *parent)
    : QObject(parent), m_db(db), m_zone(zone), m_freshMs(freshMs)
{
    m_clock.start();
}

KeyBudgets::Key &KeyBudgets::keyFor(qint64 keyId, KeyRules::Period period)
{
    Key &k = m_keys[keyId];
    const auto [start, end] = KeyRules::periodAt(period, m_now(), m_zone);
    if (k.period != period || k.start != start) {
        // A new period (or a changed rule): what was spent is read again; holds stay, they
        // settle in whichever period they end in.
        k.period = period;
        k.start = start;
        k.end = end;
        k.known = false;
        k.spent = 0;
    }
    return k;
}

bool KeyBudgets::decide(qint64 keyId, const KeyRules::Budget &budget, qint64 amount, bool refuse,
                        const Done &done)
{
    Key &k = m_keys[keyId];
    const State state{k.spent, k.held, k.start, k.end};
    if (k.known && k.spent + k.held + amount <= budget.amount) {
        k.held += amount;
        done(Outcome::Admitted, State{k.spent, k.held, k.start, k.end});
        return true;
    }
    if (refuse)
        done(Outcome::Exceeded, state);
    return refuse;
}

void KeyBudgets::admit(qint64 keyId, const KeyRules::Budget &budget, qint64 amount,
                       QObject *context, Done done)
{
    Key &k = keyFor(keyId, budget.period);
    if (k.known && m_clock.elapsed() - k.knownAtMs <= m_freshMs &&
        decide(keyId, budget, amount, false, done))
        return;
    QPointer<QObject> guard(context);
    k.waiting.append([this, keyId, budget, amount, guard, done = std::move(done)](bool read) {
        if (!guard)
            return;
        if (!read) {
            const Key &key = m_keys[keyId];
            done(Outcome::Unavailable, State{key.spent, key.held, key.start, key.end});
            return;
        }
        keyFor(keyId, budget.period); // a period may have ended while it read
        decide(keyId, budget, amount, true, done);
    });
    if (!k.reading)
        read(keyId);
}

void KeyBudgets::read(qint64 keyId)
{
    Key &k = m_keys[keyId];
    k.reading = true;
    k.chargedWhileReading = 0;
    const qint64 startedMs = m_clock.elapsed();
    const qint64 fromMs = k.start.toMSecsSinceEpoch();
    const qint64 toMs = k.end.isValid() ? k.end.toMSecsSinceEpoch() : 0;
    const QDateTime start = k.start;
    m_db.read<qint64>(
        this, [keyId, fromMs, toMs](Store &s) { return s.keySpent(keyId, fromMs, toMs); },
        [this, keyId, startedMs, start](const DbResult<qint64> &r) {
            Key &key = m_keys[keyId];
            key.reading = false;
            if (r.ok() && key.start == start) {
                key.spent = r.value + key.chargedWhileReading;
                key.known = true;
                key.knownAtMs = startedMs;
            }
            // The waiters may admit for other keys (and grow the hash): `key` is not used
            // after this point.
            const auto waiting = std::exchange(key.waiting, {});
            for (const auto &w : waiting)
                w(r.ok());
        });
}

void KeyBudgets::release(qint64 keyId, qint64 amount)
{
    if (m_shared)
        return m_shared->release(SharedState::budgetSubject(keyId), amount);
    auto it = m_keys.find(keyId);
    if (it != m_keys.end())
        it->held = qMax<qint64>(0, it->held - amount);
}

void KeyBudgets::charged(qint64 keyId, qint64 cost, const QDateTime &when)
{
    auto it = m_keys.find(keyId);
    if (it == m_keys.end() || cost <= 0)
        return;
    if (when < it->start || (it->end.isValid() && when >= it->end))
        return; // another period's: the next read of that one sees it
    if (it->reading)
        it->chargedWhileReading += cost;
    it->spent += cost;
}

KeyBudgets::State KeyBudgets::state(qint64 keyId, KeyRules::Period period) const
{
    const auto [start, end] = KeyRules::periodAt(period, m_now(), m_zone);
    const auto it = m_keys.constFind(keyId);
    if (it == m_keys.cend() || it->period != period || it->start != start)
        return State{0, it == m_keys.cend() ? 0 : it->held, start, end};
    return State{it->spent, it->held, start, end};
}
