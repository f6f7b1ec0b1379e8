// CreditGate (server/CreditGate.h): admission decided in memory on a balance at most freshMs
// old, refusals only on a balance read for them, reads coalesced per account, and balances
// this instance committed taken over by ledger order. The database is changed behind the
// gate's back through a Store of the test's own, as another process would.

#include "CreditGate.h"
#include "DatabaseService.h"
#include "TestSupport.h"

#include <QSignalSpy>
#include <QTest>

namespace {

constexpr int kFreshMs = 300;

struct Decision
{
    bool done = false;
    CreditGate::Outcome outcome = CreditGate::Outcome::Unavailable;
    qint64 balance = 0;
    qint64 reserved = 0;
};

} // namespace

class TestCreditGate : public QObject
{
    Q_OBJECT

    // Asks the gate and reports whether it decided at once (without a database read).
    static bool admitNow(CreditGate &gate, qint64 account, qint64 amount, QObject *context,
                         Decision *d)
    {
        *d = {};
        gate.admit(account, amount, context,
                   [d](CreditGate::Outcome o, qint64 balance, qint64 reserved) {
                       *d = Decision{true, o, balance, reserved};
                   });
        return d->done;
    }
    static Decision admit(CreditGate &gate, qint64 account, qint64 amount, QObject *context)
    {
        Decision d;
        if (!admitNow(gate, account, amount, context, &d))
            (void)QTest::qWaitFor([&d] { return d.done; }, 10'000); // callers check d.done
        return d;
    }

private slots:
    void decidesInMemoryAndRefusesOnlyOnAFreshRead_data() { addBackendRows(); }
    void decidesInMemoryAndRefusesOnlyOnAFreshRead()
    {
        SY_OPEN_DB(t);
        DatabaseService db(t.config());
        db.start();
        QSqlDatabase conn = t.config().open(QStringLiteral("outside"));
        Store outside(conn, t.config().kind());
        const qint64 account = outside.defaultAccountId();
        outside.applyLedger(account, "grant", 100, "seed", "", 0);
        QObject context;
        CreditGate gate(db, nullptr, kFreshMs);

        // The first request reads the balance; the next ones are decided in memory.
        Decision d;
        QVERIFY(!admitNow(gate, account, 30, &context, &d));
        QTRY_VERIFY(d.done);
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        QCOMPARE(d.balance, qint64(100));
        QCOMPARE(gate.reserved(account), qint64(30));
        QVERIFY(admitNow(gate, account, 30, &context, &d));
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        QCOMPARE(gate.reserved(account), qint64(60));

        // Not enough headroom in memory: a fresh read decides, and refuses.
        QVERIFY(!admitNow(gate, account, 50, &context, &d));
        QTRY_VERIFY(d.done);
        QCOMPARE(d.outcome, CreditGate::Outcome::Insufficient);
        QCOMPARE(d.reserved, qint64(60));

        // A grant made a moment ago outside this instance admits at once.
        outside.applyLedger(account, "grant", 100, "more", "", 0);
        d = admit(gate, account, 50, &context);
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        QCOMPARE(d.balance, qint64(200));
        gate.release(account, 110);
        QCOMPARE(gate.reserved(account), qint64(0));

        // A charge made elsewhere shows once the balance is older than freshMs: until then the
        // gate admits on what it knew (the bounded overdraw the header describes).
        outside.applyLedger(account, "charge", -195, "elsewhere", "x-1", 0);
        QVERIFY(admitNow(gate, account, 20, &context, &d));
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        gate.release(account, 20);
        QTest::qWait(kFreshMs + 50);
        d = admit(gate, account, 20, &context);
        QCOMPARE(d.outcome, CreditGate::Outcome::Insufficient);
        QCOMPARE(d.balance, qint64(5));
        QVERIFY(admitNow(gate, account, 5, &context, &d)); // fresh again: in memory
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        gate.release(account, 5);

        // A balance that is not positive admits nothing, whatever the amount.
        outside.applyLedger(account, "charge", -5, "zero", "x-2", -1000);
        QTest::qWait(kFreshMs + 50);
        d = admit(gate, account, 0, &context);
        QCOMPARE(d.outcome, CreditGate::Outcome::Insufficient);
        db.stop();
    }

    void settlementsAreTakenOverInLedgerOrder_data() { addBackendRows(); }
    void settlementsAreTakenOverInLedgerOrder()
    {
        SY_OPEN_DB(t);
        DatabaseService db(t.config());
        db.start();
        QSqlDatabase conn = t.config().open(QStringLiteral("outside"));
        Store outside(conn, t.config().kind());
        const qint64 account = outside.defaultAccountId();
        const ChargeResult seed = outside.applyLedger(account, "grant", 100, "seed", "", 0);
        QObject context;
        CreditGate gate(db, nullptr, 60'000);
        QCOMPARE(admit(gate, account, 10, &context).outcome, CreditGate::Outcome::Admitted);
        gate.release(account, 10);
        // This instance's settlement: newer than what was read.
        gate.noteBalance(account, 40, seed.entry.id + 5);
        Decision d;
        QVERIFY(admitNow(gate, account, 40, &context, &d));
        QCOMPARE(d.balance, qint64(40));
        gate.release(account, 40);
        // An older one (reported late) changes nothing.
        gate.noteBalance(account, 90, seed.entry.id + 3);
        QVERIFY(!admitNow(gate, account, 41, &context, &d)); // needs a read to refuse
        QTRY_VERIFY(d.done);
        // The read saw the database (100 at ledger id seed), older than the noted 40: kept.
        QCOMPARE(d.outcome, CreditGate::Outcome::Insufficient);
        QCOMPARE(d.balance, qint64(40));
        db.stop();
    }

    // Requests waiting for one account's read are answered together by that one read; a
    // context gone meanwhile is skipped.
    void readsAreCoalesced_data() { addBackendRows(); }
    void readsAreCoalesced()
    {
        SY_OPEN_DB(t);
        DatabaseService db(t.config());
        db.start();
        QSqlDatabase conn = t.config().open(QStringLiteral("outside"));
        Store outside(conn, t.config().kind());
        const qint64 account = outside.defaultAccountId();
        outside.applyLedger(account, "grant", 100, "seed", "", 0);
        CreditGate gate(db, nullptr, kFreshMs);
        QObject context;
        auto gone = std::make_unique<QObject>();
        int admitted = 0, refused = 0, called = 0;
        for (int i = 0; i < 5; ++i)
            gate.admit(account, 30, i == 2 ? gone.get() : &context,
                       [&](CreditGate::Outcome o, qint64, qint64) {
                           ++called;
                           (o == CreditGate::Outcome::Admitted ? admitted : refused)++;
                       });
        QCOMPARE(called, 0);
        gone.reset();
        QTRY_COMPARE(called, 4);
        QCOMPARE(admitted, 3); // 3 x 30 of 100
        QCOMPARE(refused, 1);
        QCOMPARE(gate.reserved(account), qint64(90));
        db.stop();
    }
};

QTEST_GUILESS_MAIN(TestCreditGate)
#include "tst_credit_gate.moc"
