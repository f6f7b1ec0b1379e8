#include "CreditGate.h"

#include "DatabaseService.h"

#include <QPointer>

CreditGate::CreditGate(DatabaseService &db, QObject *parent) : QObject(parent), m_db(db) {}

void CreditGate::admit(qint64 accountId, qint64 amount, QObject *context, Done done)
{
    QPointer<QObject> guard(context);
    m_db.read<qint64>(
        this, [accountId](Store &s) { return s.balance(accountId); },
        [this, accountId, amount, guard, done](const DbResult<qint64> &r) {
            if (!guard)
                return;
            if (!r.ok()) {
                done(Outcome::Unavailable, 0, reserved(accountId));
                return;
            }
            // Checked and taken in one step on this thread: no two requests
            // can both see the same headroom.
            const qint64 held = reserved(accountId);
            if (r.value <= 0 || r.value - held < amount) {
                done(Outcome::Insufficient, r.value, held);
                return;
            }
            m_reserved[accountId] = held + amount;
            done(Outcome::Admitted, r.value, held + amount);
        });
}

void CreditGate::release(qint64 accountId, qint64 amount)
{
    auto it = m_reserved.find(accountId);
    if (it == m_reserved.end())
        return;
    *it -= amount;
    if (*it <= 0)
        m_reserved.erase(it);
}
