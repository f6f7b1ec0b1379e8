// SpeechRecognizer: flite speech back to text, long inputs, reuse, a Debian test recording.
#include "AudioTestUtil.h"
#include "SpeechRecognizer.h"

#include <QElapsedTimer>
#include <QFile>
#include <QtTest>

using namespace AudioTest;

namespace {
QStringList readSentences()
{
    QFile f(QStringLiteral(SENTENCES_FILE));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

// Speech only: the samples between the first and last above a low level.
std::vector<int16_t> trimmed(const std::vector<int16_t> &s)
{
    size_t a = 0, b = s.size();
    while (a < b && std::abs(s[a]) < 300)
        ++a;
    while (b > a && std::abs(s[b - 1]) < 300)
        --b;
    return {s.begin() + long(a), s.begin() + long(b)};
}

void append(std::vector<int16_t> &to, const std::vector<int16_t> &what, double silenceAfter)
{
    to.insert(to.end(), what.begin(), what.end());
    to.insert(to.end(), size_t(silenceAfter * 16000), 0);
}

Transcript recognize(SpeechRecognizer &r, const std::vector<int16_t> &audio, qsizetype chunk = 1234)
{
    r.begin();
    for (size_t at = 0; at < audio.size(); at += size_t(chunk))
        r.feed(audio.data() + at, std::min<qsizetype>(chunk, qsizetype(audio.size() - at)));
    return r.finish();
}

void checkShape(const Transcript &t)
{
    double previousEnd = 0;
    QStringList texts;
    for (const RecognizedSegment &s : t.segments) {
        QVERIFY(s.start < s.end);
        QVERIFY(s.start >= previousEnd - 1e-9);
        QVERIFY2(s.end <= t.duration + 1e-9,
                 qPrintable(QStringLiteral("%1 > %2").arg(s.end).arg(t.duration)));
        QVERIFY(!s.words.isEmpty());
        QVERIFY(s.avgLogprob <= 0);
        QStringList words;
        for (const RecognizedWord &w : s.words) {
            QVERIFY(w.start >= s.start - 1e-9 && w.end <= s.end + 1e-9 && w.start < w.end);
            QVERIFY(w.probability >= 0 && w.probability <= 1);
            QVERIFY(!w.word.contains('(') && !w.word.startsWith('<') && !w.word.startsWith('['));
            words.append(w.word);
        }
        QCOMPARE(s.text, words.join(' '));
        texts.append(s.text);
        previousEnd = s.end;
    }
    QCOMPARE(t.text, texts.join(' '));
}
} // namespace

class TestRecognizer : public QObject
{
    Q_OBJECT

    std::unique_ptr<SpeechRecognizer> m_recognizer;
    QStringList m_sentences;
    std::vector<int16_t> m_roundTrip;
    QStringList m_roundTripWords;

private slots:
    void initTestCase()
    {
        QString error;
        m_recognizer = SpeechRecognizer::create(QString(), &error);
        QVERIFY2(m_recognizer, qPrintable(error));
        m_sentences = readSentences();
        QVERIFY(m_sentences.size() >= 100);
        // Eight sentences with pauses between them, as a client would record them.
        for (int i = 0; i < 8; ++i) {
            const QString s = m_sentences.at(i * 13);
            append(m_roundTrip, trimmed(pcm48ToMono16k(synthesize("alloy", s))), 0.6);
            m_roundTripWords += words(s);
        }
    }

    void missingModelIsAnError()
    {
        QString error;
        QVERIFY(!SpeechRecognizer::create(QStringLiteral("/nonexistent"), &error));
        QVERIFY(error.contains("nonexistent"));
    }

    void roundTrip()
    {
        QElapsedTimer timer;
        timer.start();
        const Transcript t = recognize(*m_recognizer, m_roundTrip);
        const double wall = timer.elapsed() / 1000.0;
        checkShape(t);
        QCOMPARE(t.duration, m_roundTrip.size() / 16000.0);
        const int errors = editDistance(m_roundTripWords, words(t.text));
        const double wer = double(errors) / m_roundTripWords.size();
        qInfo("WER %.3f (%d of %lld words), %lld segments, %.1f s of audio in %.2f s", wer, errors,
              qsizetype(m_roundTripWords.size()), t.segments.size(), t.duration, wall);
        qInfo("heard: %s", qPrintable(t.text));
        QVERIFY(wer < 0.25);
        // Pauses of 600 ms split it into (about) the sentences.
        QVERIFY(t.segments.size() >= 6 && t.segments.size() <= 12);
    }

    void reusable()
    {
        // Same audio, same answer, also after an abandoned and a cancelled transcription.
        const std::vector<int16_t> audio(m_roundTrip.begin(), m_roundTrip.begin() + 16000 * 8);
        const Transcript first = recognize(*m_recognizer, audio, 16000);
        m_recognizer->begin();
        m_recognizer->feed(m_roundTrip.data(), 40000); // abandoned mid-utterance
        std::atomic_bool cancel = false;
        m_recognizer->begin(&cancel);
        QVERIFY(m_recognizer->feed(m_roundTrip.data(), 8000));
        cancel = true;
        QVERIFY(!m_recognizer->feed(m_roundTrip.data() + 8000, 8000));
        m_recognizer->finish();
        const Transcript again = recognize(*m_recognizer, audio, 333);
        QVERIFY(!first.text.isEmpty());
        QCOMPARE(again.text, first.text);
        QCOMPARE(again.segments.size(), first.segments.size());
    }

    void silenceGivesNothing()
    {
        const std::vector<int16_t> silence(16000 * 3, 0);
        const Transcript t = recognize(*m_recognizer, silence);
        QVERIFY(t.segments.isEmpty());
        QVERIFY(t.text.isEmpty());
        QCOMPARE(t.duration, 3.0);
    }

    void debianRecording()
    {
        QFile f(QStringLiteral("/usr/share/pocketsphinx/test/data/goforward.raw"));
        if (!f.open(QIODevice::ReadOnly))
            QSKIP("pocketsphinx-testdata is not installed");
        const QByteArray raw = f.readAll();
        const std::vector<int16_t> audio(reinterpret_cast<const int16_t *>(raw.constData()),
                                         reinterpret_cast<const int16_t *>(raw.constData()) +
                                             raw.size() / 2);
        const Transcript t = recognize(*m_recognizer, audio);
        qInfo("goforward.raw: \"%s\"", qPrintable(t.text));
        checkShape(t);
        QCOMPARE(t.text, QStringLiteral("go forward ten meters"));
    }

    // Speech with pauses: many segments. Speech without pauses of 300 ms: cut at 20 s at the
    // latest, so one utterance's memory is bounded whatever the input.
    void longInput_data()
    {
        QTest::addColumn<double>("gap");
        QTest::addColumn<int>("minSegments");
        QTest::newRow("pauses") << 0.5 << 8;
        QTest::newRow("no pauses") << 0.12 << 2;
    }
    void longInput()
    {
        QFETCH(double, gap);
        QFETCH(int, minSegments);
        std::vector<int16_t> audio;
        for (int i = 0; audio.size() < size_t(16000 * LONG_SECONDS); ++i)
            append(audio,
                   trimmed(pcm48ToMono16k(synthesize(i % 2 ? "echo" : "alloy",
                                                     m_sentences.at(i % m_sentences.size())))),
                   gap);
        QElapsedTimer timer;
        timer.start();
        const Transcript t = recognize(*m_recognizer, audio, 4096);
        double longest = 0;
        for (const RecognizedSegment &s : t.segments)
            longest = std::max(longest, s.end - s.start);
        qInfo("%.0f s of audio, gaps %.2f s: %lld segments, longest %.1f s, %.1f s wall",
              t.duration, gap, t.segments.size(), longest, timer.elapsed() / 1000.0);
        checkShape(t);
        QVERIFY(t.segments.size() >= minSegments);
        QVERIFY(longest <= 20.0);
    }
};

QTEST_GUILESS_MAIN(TestRecognizer)
#include "tst_recognizer.moc"
