#include "Money.h"
#include "Secrets.h"

#include <limits>
#include <QCryptographicHash>
#include <QTest>

class TestMoney : public QObject
{
    Q_OBJECT
private slots:
    void parse_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<qint64>("units");
        QTest::newRow("whole") << "12" << true << qint64(12'000'000'000);
        QTest::newRow("half") << "0.5" << true << qint64(500'000'000);
        QTest::newRow("nine decimals") << "0.000000001" << true << qint64(1);
        QTest::newRow("leading dot") << ".25" << true << qint64(250'000'000);
        QTest::newRow("negative") << "-3.25" << true << qint64(-3'250'000'000);
        QTest::newRow("spaces") << "  7 " << true << qint64(7'000'000'000);
        QTest::newRow("ten decimals") << "0.0000000001" << false << qint64(0);
        QTest::newRow("empty") << "" << false << qint64(0);
        QTest::newRow("dot only") << "." << false << qint64(0);
        QTest::newRow("trailing dot") << "5." << false << qint64(0);
        QTest::newRow("exponent") << "1e3" << false << qint64(0);
        QTest::newRow("comma") << "1,5" << false << qint64(0);
        QTest::newRow("letters") << "ten" << false << qint64(0);
        QTest::newRow("overflow") << "99999999999" << false << qint64(0);
        QTest::newRow("largest") << "9223372036.854775807" << true
                                 << std::numeric_limits<qint64>::max();
        QTest::newRow("one past largest") << "9223372036.854775808" << false << qint64(0);
    }
    void parse()
    {
        QFETCH(QString, text);
        QFETCH(bool, ok);
        QFETCH(qint64, units);
        const auto r = Money::parseCredits(text);
        QCOMPARE(r.has_value(), ok);
        if (ok)
            QCOMPARE(*r, units);
    }
    void formatRoundTrips()
    {
        for (qint64 v :
             {qint64(0), qint64(1), qint64(-1), qint64(1'500'000'000),
              std::numeric_limits<qint64>::max(), std::numeric_limits<qint64>::min() + 1}) {
            const QString text = Money::formatCredits(v);
            QCOMPARE(Money::parseCredits(text).value(), v);
        }
        QCOMPARE(Money::formatCredits(12'500'000'000), QStringLiteral("12.500000000"));
        QCOMPARE(Money::formatCredits(-1), QStringLiteral("-0.000000001"));
        QCOMPARE(Money::formatCredits(std::numeric_limits<qint64>::min()),
                 QStringLiteral("-9223372036.854775808"));
    }
    void costRoundsUpOnce()
    {
        // 3 tokens at 0.40 credits per 1M = 1.2e-6 credits = 1200 units exactly.
        QCOMPARE(Money::costPerMillion(3, 400'000'000), qint64(1200));
        // 1 token at 1 unit per 1M: 1e-6 units, billed as 1 (never below the exact cost).
        QCOMPARE(Money::costPerMillion(1, 1), qint64(1));
        QCOMPARE(Money::costPerMillion(1'000'000, 1), qint64(1));
        QCOMPARE(Money::costPerMillion(1'000'001, 1), qint64(2));
        QCOMPARE(Money::costPerMillion(0, 400'000'000), qint64(0));
        QCOMPARE(Money::costPerMillion(-5, 400'000'000), qint64(0));
        // No overflow for products beyond 64 bits.
        QCOMPARE(Money::costPerMillion(4'000'000'000'000, 75'000'000'000),
                 qint64(300'000'000'000'000'000));
        QCOMPARE(Money::costPerMillion(std::numeric_limits<qint64>::max(),
                                       std::numeric_limits<qint64>::max()),
                 std::numeric_limits<qint64>::max());
    }
    void secrets()
    {
        const QString a = Secrets::generate(Secrets::kApiKeyPrefix);
        const QString b = Secrets::generate(Secrets::kApiKeyPrefix);
        QVERIFY(a.startsWith(u"sk-"));
        QCOMPARE(a.size(), 3 + 43);
        QVERIFY(a != b);
        QVERIFY(Secrets::looksValid(a, Secrets::kApiKeyPrefix));
        QVERIFY(!Secrets::looksValid(a, Secrets::kControlTokenPrefix));
        QVERIFY(!Secrets::looksValid(u"sk-short", Secrets::kApiKeyPrefix));
        QVERIFY(!Secrets::looksValid(a + QStringLiteral("!"), Secrets::kApiKeyPrefix));
        const QString t = Secrets::generate(Secrets::kControlTokenPrefix);
        QVERIFY(t.startsWith(u"lpc_"));
        QCOMPARE(Secrets::displayPrefix(t), t.left(10) + QStringLiteral("..."));
        QCOMPARE(Secrets::displayPrefix(a), a.left(9) + QStringLiteral("..."));
        QCOMPARE(Secrets::hash(a).size(), 64);
        QVERIFY(Secrets::hash(a) != Secrets::hash(b));
        // Stored hashes must keep matching: SHA-256 of the UTF-8, in lower-case hex (FIPS
        // 180-2's "abc"), for an ASCII secret, a non-ASCII one and one past 256 characters.
        QCOMPARE(Secrets::hash(u"abc"),
                 QByteArray("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        for (const QString &s : {QStringLiteral("sk-\u00e9\U0001F600x"), QString(300, u'k'), a})
            QCOMPARE(Secrets::hash(s),
                     QCryptographicHash::hash(s.toUtf8(), QCryptographicHash::Sha256).toHex());
        QVERIFY(Secrets::constantTimeEquals("abc", "abc"));
        QVERIFY(!Secrets::constantTimeEquals("abc", "abd"));
        QVERIFY(!Secrets::constantTimeEquals("abc", "abcd"));
    }
};

QTEST_GUILESS_MAIN(TestMoney)
#include "tst_money.moc"
