#pragma once

#include <functional>
#include <QElapsedTimer>
#include <QHash>
#include <QList>
#include <QObject>

class DatabaseService;
class SharedState;

// Admission by credits (pipeline step 4). A request is admitted when
//   balance - (reservations of this instance's requests in flight) >= its reservation,
// and holds that reservation until it settles. Settlement charges the actual cost, which may
// exceed the reservation; so the balance can go below zero by at most the overrun of requests
// admitted together, and no new request is admitted while the balance is not positive.
//
// Decided in memory on the server thread: the gate keeps each account's balance as last read
// from the database or reported by this instance's own settlements (noteBalance), ordered by
// the newest ledger entry id behind it. A request is admitted on a known balance up to
// freshMs old; a refusal is only ever decided on a balance read for it (a grant made a moment
// ago by the window or the command line admits at once), and an older or unknown balance is
// read first. Reads for one account are coalesced: requests arriving meanwhile wait for it.
// What another process charges shows here within freshMs; a grant made by another process is
// seen at once (DatabaseService::creditsChanged marks every balance stale).
//
// Instances on one PostgreSQL database decide together instead (setShared): the holds of all
// of them are in the database and every admission is decided there (SharedState.h), so the
// sum of what they admit never exceeds the balance.
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

    explicit CreditGate(DatabaseService &db, QObject *parent = nullptr, int freshMs = 1000);

    // done runs at once when the known balance decides, else after the read.
    void admit(qint64 accountId, qint64 amount, QObject *context, Done done);
    void release(qint64 accountId, qint64 amount);
    // This instance's holds on the account.
    qint64 reserved(qint64 accountId) const;
    // Admission by the state instances share from now on (nullptr: this instance's own).
    void setShared(SharedState *shared) { m_shared = shared; }
    // A balance this instance committed (the balance after its ledger entry ledgerId).
    void noteBalance(qint64 accountId, qint64 balance, qint64 ledgerId);

private:
    struct Account
    {
        qint64 reserved = 0;
        qint64 balance = 0;
        qint64 ledgerId = -1; // -1: never read
        qint64 knownAtMs = 0;
        bool reading = false;
        QList<std::function<void(bool read)>> waiting; // decided when the read ends
    };
    // Admits when the balance allows; refuses only when refuse is true.
    bool decide(Account &a, qint64 amount, bool refuse, const Done &done);
    void read(qint64 accountId);

    DatabaseService &m_db;
    SharedState *m_shared = nullptr;
    const int m_freshMs;
    QElapsedTimer m_clock;
    QHash<qint64, Account> m_accounts;
};
