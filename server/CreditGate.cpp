#include "CreditGate.h"

#include "DatabaseService.h"
#include "SharedState.h"

#include <QPointer>

CreditGate::CreditGate(DatabaseService &db, QObject *parent, int freshMs)
    : QObject(parent), m_db(db), m_freshMs(freshMs)
{
    m_clock.start();
    connect(&db, &DatabaseService::creditsChanged, this, [this] {
        for (Account &a : m_accounts)
            a.knownAtMs = -qint64(m_freshMs) - 1; // read again before the next admission
    });
}

qint64 CreditGate::reserved(qint64 accountId) const
{
    if (m_shared)
        return m_shared->reserved(accountId);
    const auto it = m_accounts.constFind(accountId);
    return it == m_accounts.cend() ? 0 : it->reserved;
}

bool CreditGate::decide(Account &a, qint64 amount, bool refuse, const Done &done)
{
    // Checked and taken in one step on this thread: no two requests can both see the same
    // headroom.
    if (a.balance > 0 && a.balance - a.reserved >= amount) {
        a.reserved += amount;
        done(Outcome::Admitted, a.balance, a.reserved);
        return true;
    }
    if (refuse)
        done(Outcome::Insufficient, a.balance, a.reserved);
    return refuse;
}

void CreditGate::admit(qint64 accountId, qint64 amount, QObject *context, Done done)
{
    if (m_shared) {
        m_shared->admit({{}, 0, accountId, amount},
                        [guard = QPointer<QObject>(context),
                         done = std::move(done)](const SharedState::Answer &a) {
                            if (guard)
                                done(a.outcome, a.balance, a.held);
                        });
        return;
    }
    Account &a = m_accounts[accountId];
    if (a.ledgerId >= 0 && m_clock.elapsed() - a.knownAtMs <= m_freshMs &&
        decide(a, amount, false, done))
        return;
    QPointer<QObject> guard(context);
    a.waiting.append([this, accountId, amount, guard, done = std::move(done)](bool read) {
        if (!guard)
            return;
        Account &acc = m_accounts[accountId];
        if (!read)
            done(Outcome::Unavailable, 0, acc.reserved);
        else
            decide(acc, amount, true, done);
    });
    if (!a.reading)
        read(accountId);
}

void CreditGate::read(qint64 accountId)
{
    m_accounts[accountId].reading = true;
    const qint64 startedMs = m_clock.elapsed();
    m_db.read<Store::BalanceMark>(
        this, [accountId](Store &s) { return s.balanceMark(accountId); },
        [this, accountId, startedMs](const DbResult<Store::BalanceMark> &r) {
            Account &a = m_accounts[accountId];
            a.reading = false;
            if (r.ok()) {
                // A settlement reported meanwhile may be newer than what the read saw.
                if (r.value.ledgerId >= a.ledgerId) {
                    a.balance = r.value.balance;
                    a.ledgerId = r.value.ledgerId;
                }
                a.knownAtMs = startedMs;
            }
            // The waiters may admit for other accounts (and grow the hash): `a` is not used
            // after this point.
            const QList<std::function<void(bool)>> waiting = std::exchange(a.waiting, {});
            for (const auto &w : waiting)
                w(r.ok());
        });
}

void CreditGate::release(qint64 accountId, qint64 amount)
{
    if (m_shared)
        return m_shared->release(accountId, amount);
    auto it = m_accounts.find(accountId);
    if (it == m_accounts.end())
        return;
    it->reserved = qMax<qint64>(0, it->reserved - amount);
}

void CreditGate::noteBalance(qint64 accountId, qint64 balance, qint64 ledgerId)
{
    if (m_shared) // every admission reads the balance there
        return;
    Account &a = m_accounts[accountId];
    if (ledgerId > a.ledgerId) {
        // Only a balance read from the database restarts the freshness clock: what this
        // instance committed says nothing of other processes' charges.
        if (a.ledgerId < 0)
            a.knownAtMs = -m_freshMs - 1;
        a.balance = balance;
        a.ledgerId = ledgerId;
    }
}
