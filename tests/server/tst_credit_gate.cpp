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

// The service the gate reads through, and a Store of the test's own on the same database
// for changes made behind the gate's back.
struct Fixture
{
    explicit Fixture(TestDatabase &t) : db(t.config())
    {
        db.start(); // migrates: the outside Store needs the tables
        conn = t.config().open(QStringLiteral("outside"));
        outside.emplace(conn, t.config().kind());
        account = outside->defaultAccountId();
    }
    ~Fixture() { db.stop(); }

    DatabaseService db;
    QSqlDatabase conn;
    std::optional<Store> outside;
    qint64 account = 0;
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
        Fixture f(t);
        QSignalSpy announced(&f.db, &DatabaseService::creditsChanged);
        f.outside->applyLedger(f.account, "grant", 100, "seed", "", 0);
        // Another connection's grant is announced (the change feed) and makes a gate read the
        // balance again: seen before the gate is made, so that it plays no part below.
        QVERIFY(announced.wait(5000));
        QObject context;
        CreditGate gate(f.db, nullptr, kFreshMs);

        // The first request reads the balance; the next ones are decided in memory.
        Decision d;
        QVERIFY(!admitNow(gate, f.account, 30, &context, &d));
        QTRY_VERIFY(d.done);
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        QCOMPARE(d.balance, qint64(100));
        QCOMPARE(gate.reserved(f.account), qint64(30));
        QVERIFY(admitNow(gate, f.account, 30, &context, &d));
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        QCOMPARE(gate.reserved(f.account), qint64(60));

        // Not enough headroom in memory: a fresh read decides, and refuses.
        QVERIFY(!admitNow(gate, f.account, 50, &context, &d));
        QTRY_VERIFY(d.done);
        QCOMPARE(d.outcome, CreditGate::Outcome::Insufficient);
        QCOMPARE(d.reserved, qint64(60));

        // A grant made a moment ago outside this instance admits at once (the announcement
        // that follows it only makes the gate read again).
        announced.clear();
        f.outside->applyLedger(f.account, "grant", 100, "more", "", 0);
        QVERIFY(announced.wait(5000));
        d = admit(gate, f.account, 50, &context);
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        QCOMPARE(d.balance, qint64(200));
        gate.release(f.account, 110);
        QCOMPARE(gate.reserved(f.account), qint64(0));

        // A charge made elsewhere shows once the balance is older than freshMs: until then the
        // gate admits on what it knew (the bounded overdraw the header describes).
        f.outside->applyLedger(f.account, "charge", -195, "elsewhere", "x-1", 0);
        QVERIFY(admitNow(gate, f.account, 20, &context, &d));
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        gate.release(f.account, 20);
        QTest::qWait(kFreshMs + 50);
        d = admit(gate, f.account, 20, &context);
        QCOMPARE(d.outcome, CreditGate::Outcome::Insufficient);
        QCOMPARE(d.balance, qint64(5));
        QVERIFY(admitNow(gate, f.account, 5, &context, &d)); // fresh again: in memory
        QCOMPARE(d.outcome, CreditGate::Outcome::Admitted);
        gate.release(f.account, 5);

        // A balance that is not positive admits nothing, whatever the amount.
        f.outside->applyLedger(f.account, "charge", -5, "zero", "x-2", -1000);
        QTest::qWait(kFreshMs + 50);
        d = admit(gate, f.account, 0, &context);
        QCOMPARE(d.outcome, CreditGate::Outcome::Insufficient);
    }

    void settlementsAreTakenOverInLedgerOrder_data() { addBackendRows(); }
    void settlementsAreTakenOverInLedgerOrder()
    {
        SY_OPEN_DB(t);
        Fixture f(t);
        QSignalSpy announced(&f.db, &DatabaseService::creditsChanged);
        const ChargeResult seed = f.outside->applyLedger(f.account, "grant", 100, "seed", "", 0);
        // The grant's announcement marks the balance stale: let it land before the gate exists,
        // or a late one (PostgreSQL's feed under a slow build) forces a read below.
        QVERIFY(announced.wait(5000));
        QObject context;
        CreditGate gate(f.db, nullptr, 60'000);
        QCOMPARE(admit(gate, f.account, 10, &context).outcome, CreditGate::Outcome::Admitted);
        gate.release(f.account, 10);
        // This instance's settlement: newer than what was read.
        gate.noteBalance(f.account, 40, seed.entry.id + 5);
        Decision d;
        QVERIFY(admitNow(gate, f.account, 40, &context, &d));
        QCOMPARE(d.balance, qint64(40));
        gate.release(f.account, 40);
        // An older one (reported late) changes nothing.
        gate.noteBalance(f.account, 90, seed.entry.id + 3);
        QVERIFY(!admitNow(gate, f.account, 41, &context, &d)); // needs a read to refuse
        QTRY_VERIFY(d.done);
        // The read saw the database (100 at ledger id seed), older than the noted 40: kept.
        QCOMPARE(d.outcome, CreditGate::Outcome::Insufficient);
        QCOMPARE(d.balance, qint64(40));
    }

    // Requests waiting for one f.account's read are answered together by that one read; a
    // context gone meanwhile is skipped.
    void readsAreCoalesced_data() { addBackendRows(); }
    void readsAreCoalesced()
    {
        SY_OPEN_DB(t);
        Fixture f(t);
        QSignalSpy announced(&f.db, &DatabaseService::creditsChanged);
        f.outside->applyLedger(f.account, "grant", 100, "seed", "", 0);
        QVERIFY(announced.wait(5000)); // as above: no late announcement during the test
        CreditGate gate(f.db, nullptr, kFreshMs);
        QObject context;
        auto gone = std::make_unique<QObject>();
        int admitted = 0, refused = 0, called = 0;
        for (int i = 0; i < 5; ++i)
            gate.admit(f.account, 30, i == 2 ? gone.get() : &context,
                       [&](CreditGate::Outcome o, qint64, qint64) {
                           ++called;
                           (o == CreditGate::Outcome::Admitted ? admitted : refused)++;
                       });
        QCOMPARE(called, 0);
        gone.reset();
        QTRY_COMPARE(called, 4);
        QCOMPARE(admitted, 3); // 3 x 30 of 100
        QCOMPARE(refused, 1);
        QCOMPARE(gate.reserved(f.account), qint64(90));
    }
};

QTEST_GUILESS_MAIN(TestCreditGate)
#include "tst_credit_gate.moc"
