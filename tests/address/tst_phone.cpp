#include "PhoneExtractor.h"

#include <QFile>
#include <QTest>

#include <algorithm>

namespace {

QStringList words(const QList<PhoneExtractor::Match> &ms)
{
    QStringList out;
    for (const auto &m : ms)
        out.append(m.word);
    return out;
}

struct Case
{
    int line;
    QString text;
    QStringList expected;
};

QList<Case> loadSet()
{
    const QString path = QFINDTESTDATA("data/phones.tsv");
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    QList<Case> cases;
    int line = 0;
    while (!f.atEnd()) {
        ++line;
        QString l = QString::fromUtf8(f.readLine());
        if (l.endsWith(u'\n'))
            l.chop(1);
        if (l.isEmpty() || l.startsWith(u'#'))
            continue;
        const qsizetype tab = l.indexOf(u'\t');
        Case c{line, tab < 0 ? l : l.left(tab), {}};
        if (tab >= 0 && tab + 1 < l.size())
            c.expected = l.mid(tab + 1).split(u'|');
        cases.append(c);
    }
    return cases;
}

} // namespace

class TestPhone : public QObject
{
    Q_OBJECT
private slots:
    void offsets()
    {
        const auto ms = PhoneExtractor::extract(u"手机13812345678"_qs);
        QCOMPARE(ms.size(), 1);
        QCOMPARE(ms[0].start, 2);
        QCOMPARE(ms[0].end, 13);
        QCOMPARE(ms[0].word, u"13812345678"_qs);
        QCOMPARE(ms[0].kind, PhoneExtractor::Kind::Mobile);
    }

    // U+20BB7 (𠮷) is two UTF-16 units but one character: offsets count it once.
    void surrogatePairCountsOnce()
    {
        const QString text = u"𠮷野家，电话0571-88886666转12，手机+86 138 1234 5678"_qs;
        const auto ms = PhoneExtractor::extract(text);
        QCOMPARE(ms.size(), 2);
        QCOMPARE(ms[0].word, u"0571-88886666转12"_qs);
        QCOMPARE(ms[0].start, 6);
        QCOMPARE(ms[0].end, 6 + 16);
        QCOMPARE(text.mid(ms[0].start + 1, ms[0].end - ms[0].start), ms[0].word); // UTF-16 +1
        QCOMPARE(ms[0].kind, PhoneExtractor::Kind::Landline);
        QCOMPARE(ms[1].word, u"+86 138 1234 5678"_qs);
        QCOMPARE(ms[1].start, 25);
        QCOMPARE(ms[1].end, 25 + 17);
        QCOMPARE(ms[1].end, text.size() - 1); // ends the text; one surrogate pair before
    }

    void fullWidthKeptVerbatim()
    {
        const auto ms = PhoneExtractor::extract(u"（０５７１）８８８８－６６６６"_qs);
        QCOMPARE(ms.size(), 1);
        QCOMPARE(ms[0].start, 0);
        QCOMPARE(ms[0].end, 15);
        QCOMPARE(ms[0].word, u"（０５７１）８８８８－６６６６"_qs);
    }

    void kinds()
    {
        QCOMPARE(PhoneExtractor::extract(u"400-820-8820"_qs).value(0).kind,
                 PhoneExtractor::Kind::Service);
        QCOMPARE(PhoneExtractor::extract(u"电话：88886666"_qs).value(0).kind,
                 PhoneExtractor::Kind::Landline);
        QCOMPARE(words(PhoneExtractor::extract(u"88886666"_qs)), QStringList{});
    }

    void robustOnOddInput()
    {
        QCOMPARE(PhoneExtractor::extract(QString()).size(), 0);
        QCOMPARE(PhoneExtractor::extract(u"+"_qs).size(), 0);
        QCOMPARE(PhoneExtractor::extract(u"(+"_qs).size(), 0);
        QCOMPARE(PhoneExtractor::extract(u"138-"_qs).size(), 0);
        QString lone;
        lone.append(QChar(0xD842)); // unpaired high surrogate
        lone.append(u"13812345678"_qs);
        const auto ms = PhoneExtractor::extract(lone);
        QCOMPARE(ms.size(), 1);
        QCOMPARE(ms[0].start, 1);
        QCOMPARE(PhoneExtractor::extract(QString(30000, u'9')).size(), 0);
        QCOMPARE(PhoneExtractor::extract(QString(3000, u'-') + u"1"_qs).size(), 0);
    }

    // Every case of the labelled set, offsets checked against the word, then micro-averaged
    // precision and recall over the multiset of words.
    void labelledSet()
    {
        const auto cases = loadSet();
        QVERIFY2(cases.size() >= 200, qPrintable(QString::number(cases.size())));
        int predicted = 0, expected = 0, correct = 0;
        QStringList failures;
        for (const auto &c : cases) {
            const auto ms = PhoneExtractor::extract(c.text);
            for (const auto &m : ms) {
                // offsets in code points must select exactly the word
                const QList<uint> cps = c.text.toUcs4();
                const QList<uint> sub = cps.mid(m.start, m.end - m.start);
                QCOMPARE(QString::fromUcs4(reinterpret_cast<const char32_t *>(sub.constData()),
                                           sub.size()),
                         m.word);
            }
            QStringList got = words(ms);
            QStringList want = c.expected;
            predicted += int(got.size());
            expected += int(want.size());
            QStringList left = want;
            int ok = 0;
            for (const auto &w : got)
                if (left.removeOne(w))
                    ++ok;
            correct += ok;
            if (ok != got.size() || ok != want.size())
                failures.append(QStringLiteral("line %1: %2 -> got [%3] want [%4]")
                                    .arg(c.line)
                                    .arg(c.text, got.join(u'|'), want.join(u'|')));
        }
        for (const auto &f : failures)
            qInfo().noquote() << "miss:" << f;
        const double precision = predicted ? double(correct) / predicted : 1.0;
        const double recall = expected ? double(correct) / expected : 1.0;
        qInfo().noquote() << QStringLiteral("phones.tsv: %1 cases, %2 expected, %3 predicted, "
                                            "%4 correct; precision %5, recall %6")
                                 .arg(cases.size())
                                 .arg(expected)
                                 .arg(predicted)
                                 .arg(correct)
                                 .arg(precision, 0, 'f', 4)
                                 .arg(recall, 0, 'f', 4);
        QVERIFY2(precision >= 0.98, qPrintable(QString::number(precision)));
        QVERIFY2(recall >= 0.95, qPrintable(QString::number(recall)));
    }
};

QTEST_GUILESS_MAIN(TestPhone)
#include "tst_phone.moc"
