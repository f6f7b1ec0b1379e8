#include "Migrations.h"
#include "Store.h"
#include "TestSupport.h"

#include <csignal>
#include <QProcess>
#include <QSet>
#include <QTest>

// SIGKILL in the middle of a burst of charges: every charge reported committed must be in the
// ledger afterwards, and the balance must equal the ledger's sum.
class TestSigkill : public QObject
{
    Q_OBJECT
private slots:
    void killDuringBurst_data() { addBackendRows(); }
    void killDuringBurst()
    {
        SY_OPEN_DB(t);
        const QString target = t.url().isEmpty()
                                   ? QStringLiteral("sqlite:") + t.dataDir() + "/switchyard.db"
                                   : t.url();
        {
            QSqlDatabase db = t.config().open(QStringLiteral("seed"));
            Migrations::apply(db, t.config().kind());
            Store s(db, t.config().kind());
            s.transaction(
                [&] { s.applyLedger(s.defaultAccountId(), "grant", 1'000'000, "seed", "", 0); });
        }
        QProcess child;
        child.setProcessChannelMode(QProcess::SeparateChannels);
        child.start(QStringLiteral(CHARGE_BURST_PATH), {target, "8", "5000"});
        QVERIFY(child.waitForStarted());
        QSet<QString> posted, reported;
        QByteArray pending;
        auto drain = [&] {
            pending += child.readAllStandardOutput();
            qsizetype nl;
            while ((nl = pending.indexOf('\n')) >= 0) {
                const QByteArray line = pending.left(nl);
                pending.remove(0, nl + 1);
                if (line.startsWith("ok "))
                    reported.insert(QString::fromLatin1(line.mid(3)));
                else if (line.startsWith("post "))
                    posted.insert(QString::fromLatin1(line.mid(5)));
            }
        };
        // Kill once a good number of charges are committed and many more are in flight.
        QElapsedTimer timer;
        timer.start();
        while (reported.size() < 1500 && timer.elapsed() < 60'000 &&
               child.state() == QProcess::Running) {
            child.waitForReadyRead(100);
            drain();
        }
        QVERIFY2(child.state() == QProcess::Running, "the burst ended before it could be killed");
        ::kill(pid_t(child.processId()), SIGKILL);
        QVERIFY(child.waitForFinished(10'000));
        drain(); // lines written before the kill are still in the pipe
        QCOMPARE(child.exitStatus(), QProcess::CrashExit);

        QSqlDatabase db = t.config().open(QStringLiteral("verify"));
        Store s(db, t.config().kind());
        const qint64 account = s.defaultAccountId();
        QSet<QString> inLedger;
        for (const LedgerEntry &e : s.ledger(account, 1'000'000))
            if (e.kind == u"charge")
                inLedger.insert(e.requestId);
        for (const QString &id : reported)
            QVERIFY2(inLedger.contains(id), qPrintable(id + " was reported committed but is lost"));
        const qint64 balance = s.balance(account);
        QCOMPARE(balance, s.ledgerSum(account));
        QCOMPARE(balance, 1'000'000 - 3 * qint64(inLedger.size()));
        QVERIFY(inLedger.size() < posted.size()); // the kill really interrupted work
        qInfo("%s: charges attempted %lld, reported committed %lld, found in ledger %lld "
              "(committed but not yet reported: %lld), balance %lld = 1000000 - 3 x %lld",
              qPrintable(QString(QTest::currentDataTag())), qint64(posted.size()),
              qint64(reported.size()), qint64(inLedger.size()),
              qint64(inLedger.size() - reported.size()), balance, qint64(inLedger.size()));
    }
};

QTEST_GUILESS_MAIN(TestSigkill)
#include "tst_sigkill.moc"
