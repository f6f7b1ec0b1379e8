#pragma once

#include <functional>
#include <QHash>
#include <QObject>

class DatabaseService;

// Admission by credits (pipeline step 4). A request is admitted when
//   balance - (reservations of this instance's requests in flight) >= its reservation,
// and holds that reservation until it settles. Settlement charges the actual cost, which may
// exceed the reservation; so the balance can go below zero by at most the overrun of requests
// admitted together, and no new request is admitted while the balance is not positive.
class CreditGate : public QObject
{
    Q_OBJECT
public:
    enum class Outcome
    {
        Admitted,
        Insufficient,
        Unavailable
    };
    using Done = std::function<void(Outcome outcome, qint64 balance, qint64 reserved)>;

    explicit CreditGate(DatabaseService &db, QObject *parent = nullptr);

    void admit(qint64 accountId, qint64 amount, QObject *context, Done done);
    void release(qint64 accountId, qint64 amount);
    qint64 reserved(qint64 accountId) const { return m_reserved.value(accountId, 0); }

private:
    DatabaseService &m_db;
    QHash<qint64, qint64> m_reserved;
};
