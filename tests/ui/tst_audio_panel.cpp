// Tools > Speech & transcription, driven like a user (offscreen). The panel calls the audio
// family's engines on the family's pool: no database, no server, nothing billed. Offscreen there
// is no audio device, so playing and recording are off and everything else must still work.
//
// SWITCHYARD_SCREENSHOT_DIR=dir saves a PNG of each tab there (for looking at the layout).
#include "AudioFamily.h"
#include "AudioPanel.h"
#include "AudioPlayground.h"
#include "AudioWorkers.h"
#include "Money.h"
#include "ServerSettings.h"

#include <QApplication>
#include <QAudioDevice>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDropEvent>
#include <QFile>
#include <QJsonObject>
#include <QLabel>
#include <QMediaDevices>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScopeGuard>
#include <QSemaphore>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtEndian>
#include <QTest>
#include <QUrl>

namespace {

const QString kSentence = QStringLiteral("The quick brown fox jumps over the lazy dog.");
// pocketsphinx on flite's voice gets most words of it; the server's suites use the same bound.
constexpr double kMaxWer = 0.5;

template <typename T> T *child(QWidget *parent, const char *name)
{
    T *w = parent->findChild<T *>(QLatin1String(name));
    if (!w)
        qFatal("no widget %s", name);
    return w;
}

// Waits for a finished(bool) signal that may already have been emitted; its argument.
bool waitFor(QSignalSpy &spy, int ms = 60000)
{
    if (spy.isEmpty() && !spy.wait(ms))
        return false;
    return spy.first().first().toBool();
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestAudioPanel : public QObject
{
    Q_OBJECT

    // One family for the suite: its recognizers (slow to load) are reused across tests.
    AudioFamily m_family;
    QTemporaryDir m_dir;
    QString m_wavPath; // kSentence spoken by alloy, written by the engines

    void screenshot(AudioPanel &panel, int tab, const QString &name)
    {
        const QString dir = qEnvironmentVariable("SWITCHYARD_SCREENSHOT_DIR");
        if (dir.isEmpty())
            return;
        child<QTabWidget>(&panel, "audioTabs")->setCurrentIndex(tab);
        QApplication::processEvents();
        panel.grab().save(dir + QStringLiteral("/audio-panel-%1.png").arg(name));
    }

    bool transcribeFile(AudioPanel &panel, const QString &path)
    {
        if (!panel.loadFile(path))
            return false;
        QSignalSpy done(&panel, &AudioPanel::transcriptionFinished);
        QTest::mouseClick(child<QPushButton>(&panel, "transcribeButton"), Qt::LeftButton);
        return waitFor(done);
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        const auto speech =
            AudioPlayground::synthesize(m_family, QStringLiteral("alloy"), kSentence,
                                        SpeechParams{}, AudioPlayground::SpeechFormat::Wav);
        QVERIFY2(speech.ok(), qPrintable(speech.error));
        m_wavPath = m_dir.filePath(QStringLiteral("sentence.wav"));
        QFile f(m_wavPath);
        QVERIFY(f.open(QIODevice::WriteOnly));
        QCOMPARE(f.write(speech.file), speech.file.size());
    }

    void voicesGroupedByLanguage()
    {
        AudioPanel panel(m_family);
        panel.show();
        auto *combo = child<QComboBox>(&panel, "voiceCombo");
        auto *model = qobject_cast<QStandardItemModel *>(combo->model());
        QVERIFY(model);
        QStringList voices;
        QString lastLanguage;
        int headings = 0;
        for (int row = 0; row < model->rowCount(); ++row) {
            const QStandardItem *item = model->item(row);
            const QString name = item->data(Qt::UserRole).toString();
            if (name.isEmpty()) { // a language heading: not selectable
                QCOMPARE(item->flags(), Qt::NoItemFlags);
                ++headings;
                continue;
            }
            QVERIFY(item->isEnabled());
            voices << name;
            // Every voice sits under its own language's heading.
            const QString language = m_family.voices().find(name)->language;
            if (language != lastLanguage) {
                QVERIFY2(model->item(row - 1)->data(Qt::UserRole).toString().isEmpty(),
                         qPrintable(name));
                lastLanguage = language;
            }
        }
        QCOMPARE(voices.size(), m_family.voices().voices().size());
        QVERIFY(headings >= 2);
        QCOMPARE(combo->currentData().toString(), QStringLiteral("alloy"));
    }

    void characterCountAndCost()
    {
        AudioPanel panel(m_family);
        panel.show();
        auto *text = child<QPlainTextEdit>(&panel, "speechTextEdit");
        auto *label = child<QLabel>(&panel, "charCountLabel");
        text->clear();
        QVERIFY(label->text().startsWith(QStringLiteral("0 characters")));
        text->setFocus();
        QTest::keyClicks(text, QStringLiteral("Hello"));
        QVERIFY2(label->text().startsWith(QStringLiteral("5 characters")),
                 qPrintable(label->text()));
        QVERIFY(label->text().contains(
            Money::formatCredits(AudioPlayground::speechCost(m_family.config(), 5))));
        QVERIFY(label->text().contains(QStringLiteral("vendorE-tts-nano")));
        // Code points, as the route counts: one emoji is one character, not two UTF-16 units.
        text->insertPlainText(QString::fromUcs4(U"\U0001F600")); // keyClicks takes Latin-1
        QVERIFY2(label->text().startsWith(QStringLiteral("6 characters")),
                 qPrintable(label->text()));
        text->setPlainText(QString(4097, u'a'));
        QVERIFY(label->text().contains(QStringLiteral("over the limit")));
    }

    void withoutAudioDevice()
    {
        if (!QMediaDevices::audioOutputs().isEmpty())
            QSKIP("this machine has an audio output device");
        AudioPanel panel(m_family);
        panel.show();
        QVERIFY(!panel.hasOutputDevice());
        auto *label = child<QLabel>(&panel, "audioDeviceLabel");
        QVERIFY(label->isVisible());
        QVERIFY2(label->text().contains(QStringLiteral("No audio output device")),
                 qPrintable(label->text()));
        QVERIFY(label->text().contains(QStringLiteral("still work")));
        auto *play = child<QPushButton>(&panel, "playButton");
        QVERIFY(!play->isEnabled());
        QVERIFY(play->toolTip().contains(QStringLiteral("no audio output device")));
        if (QMediaDevices::audioInputs().isEmpty()) {
            auto *record = child<QPushButton>(&panel, "recordButton");
            QVERIFY(!record->isEnabled());
            QVERIFY(record->toolTip().contains(QStringLiteral("no audio input device")));
        }

        // Synthesis still works and stays playable-off; a segment click plays nothing.
        QSignalSpy spoken(&panel, &AudioPanel::speechFinished);
        QTest::mouseClick(child<QPushButton>(&panel, "speakButton"), Qt::LeftButton);
        QVERIFY(waitFor(spoken));
        QVERIFY(!play->isEnabled());
        QVERIFY(!panel.isPlaying());
        QVERIFY(transcribeFile(panel, m_wavPath));
        QVERIFY(!panel.playSegment(0));
        QVERIFY(!panel.isPlaying());
    }

    void synthesizeAndSave()
    {
        AudioPanel panel(m_family);
        panel.show();
        child<QPlainTextEdit>(&panel, "speechTextEdit")->setPlainText(kSentence);
        auto *format = child<QComboBox>(&panel, "speechFormatCombo");
        format->setCurrentIndex(format->findData(QStringLiteral("wav")));
        QSignalSpy done(&panel, &AudioPanel::speechFinished);
        QTest::mouseClick(child<QPushButton>(&panel, "speakButton"), Qt::LeftButton);
        QVERIFY(waitFor(done));

        const AudioPlayground::Speech speech =
            panel.lastSpeech(); // a copy: speaking again replaces it
        QVERIFY(speech.ok());
        QVERIFY2(speech.seconds > 1.0 && speech.seconds < 6.0,
                 qPrintable(QString::number(speech.seconds)));
        const QString status = child<QLabel>(&panel, "speechStatusLabel")->text();
        QVERIFY2(status.contains(QString::number(speech.seconds, 'f', 2) + QStringLiteral(" s")),
                 qPrintable(status));
        auto *save = child<QPushButton>(&panel, "saveSpeechButton");
        QVERIFY(save->isEnabled());

        // A whole WAV file with the real sizes in its header.
        const QString wavPath = m_dir.filePath(QStringLiteral("saved.wav"));
        QVERIFY(panel.saveSpeech(wavPath));
        const QByteArray wav = readAll(wavPath);
        QCOMPARE(wav.size(), speech.pcm.size() + 44);
        QCOMPARE(wav.left(4), QByteArray("RIFF"));
        QCOMPARE(wav.mid(8, 8), QByteArray("WAVEfmt "));
        QCOMPARE(qFromLittleEndian<quint32>(wav.constData() + 4), quint32(wav.size() - 8));
        QCOMPARE(qFromLittleEndian<quint16>(wav.constData() + 22), quint16(2));
        QCOMPARE(qFromLittleEndian<quint32>(wav.constData() + 24), quint32(48000));
        QCOMPARE(wav.mid(36, 4), QByteArray("data"));
        QCOMPARE(qFromLittleEndian<quint32>(wav.constData() + 40), quint32(wav.size() - 44));
        // The saved file decodes back to the spoken sentence.
        const auto heard = AudioPlayground::transcribeFile(m_family, wavPath);
        QVERIFY2(heard.ok(), qPrintable(heard.error));
        QVERIFY2(AudioPlayground::wordErrorRate(kSentence, heard.transcript.text) < kMaxWer,
                 qPrintable(heard.transcript.text));

        // Raw PCM at twice the speed: about half as long, no header.
        format->setCurrentIndex(format->findData(QStringLiteral("pcm")));
        child<QDoubleSpinBox>(&panel, "speedSpin")->setValue(2.0);
        done.clear();
        QTest::mouseClick(child<QPushButton>(&panel, "speakButton"), Qt::LeftButton);
        QVERIFY(waitFor(done));
        QCOMPARE(panel.lastSpeech().format, AudioPlayground::SpeechFormat::Pcm);
        QVERIFY(panel.lastSpeech().seconds < speech.seconds * 0.75);
        const QString pcmPath = m_dir.filePath(QStringLiteral("saved.pcm"));
        QVERIFY(panel.saveSpeech(pcmPath));
        QCOMPARE(readAll(pcmPath), panel.lastSpeech().pcm);
        screenshot(panel, 0, QStringLiteral("speech"));
    }

    void synthesisErrorShown()
    {
        AudioPanel panel(m_family);
        panel.show();
        child<QPlainTextEdit>(&panel, "speechTextEdit")->setPlainText(QStringLiteral("   "));
        QSignalSpy done(&panel, &AudioPanel::speechFinished);
        QTest::mouseClick(child<QPushButton>(&panel, "speakButton"), Qt::LeftButton);
        QVERIFY(!waitFor(done));
        QVERIFY(
            child<QLabel>(&panel, "speechStatusLabel")->text().contains(QStringLiteral("no text")));
        QVERIFY(!child<QPushButton>(&panel, "saveSpeechButton")->isEnabled());
    }

    void transcribeAFile()
    {
        AudioPanel panel(m_family);
        panel.show();
        QVERIFY(!child<QPushButton>(&panel, "transcribeButton")->isEnabled()); // nothing loaded
        QVERIFY(transcribeFile(panel, m_wavPath));
        QCOMPARE(panel.sourcePath(), m_wavPath);
        QVERIFY(
            child<QLabel>(&panel, "sourceLabel")->text().contains(QStringLiteral("sentence.wav")));

        const Transcript &t = panel.lastTranscription().transcript;
        auto *table = child<QTableWidget>(&panel, "segmentTable");
        QVERIFY(table->rowCount() > 0);
        QCOMPARE(table->rowCount(), t.segments.size());
        QStringList texts;
        double previousEnd = 0;
        for (int row = 0; row < table->rowCount(); ++row) {
            const double start = table->item(row, 0)->text().toDouble();
            const double end = table->item(row, 1)->text().toDouble();
            QVERIFY(start >= previousEnd - 0.01 && end > start);
            previousEnd = end;
            texts << table->item(row, 2)->text();
        }
        QVERIFY2(AudioPlayground::wordErrorRate(kSentence, texts.join(u' ')) < kMaxWer,
                 qPrintable(texts.join(u' ')));
        const QString shown = child<QPlainTextEdit>(&panel, "transcriptTextView")->toPlainText();
        QCOMPARE(shown, t.text);
        QVERIFY2(AudioPlayground::wordErrorRate(kSentence, shown) < kMaxWer, qPrintable(shown));
        // What the API would charge, said but not billed.
        QVERIFY(child<QLabel>(&panel, "transcriptionStatusLabel")
                    ->text()
                    .contains(QStringLiteral("not billed")));
        screenshot(panel, 1, QStringLiteral("transcription"));
    }

    void srtAndVttOutput()
    {
        AudioPanel panel(m_family);
        panel.show();
        QVERIFY(transcribeFile(panel, m_wavPath));
        auto *format = child<QComboBox>(&panel, "transcriptFormatCombo");
        auto *view = child<QPlainTextEdit>(&panel, "transcriptOutputView");

        format->setCurrentIndex(format->findData(QStringLiteral("srt")));
        QString srt = view->toPlainText();
        QVERIFY2(srt.startsWith(QStringLiteral("1\n00:00:")), qPrintable(srt));
        QVERIFY(srt.contains(QStringLiteral(",")) && srt.contains(QStringLiteral(" --> ")));
        const QString srtPath = m_dir.filePath(QStringLiteral("out.srt"));
        QVERIFY(child<QPushButton>(&panel, "saveTranscriptButton")->isEnabled());
        QVERIFY(panel.saveTranscript(srtPath));
        QCOMPARE(QString::fromUtf8(readAll(srtPath)), srt);

        format->setCurrentIndex(format->findData(QStringLiteral("vtt")));
        const QString vtt = view->toPlainText();
        QVERIFY2(vtt.startsWith(QStringLiteral("WEBVTT\n\n00:00:")), qPrintable(vtt));
        QVERIFY(vtt.contains(QStringLiteral(" --> ")));
        const QString vttPath = m_dir.filePath(QStringLiteral("out.vtt"));
        QVERIFY(panel.saveTranscript(vttPath));
        QCOMPARE(readAll(vttPath), panel.transcriptOutput());

        // verbose_json names the chosen language.
        format->setCurrentIndex(format->findData(QStringLiteral("verbose_json")));
        child<QComboBox>(&panel, "languageCombo")->setCurrentText(QStringLiteral("en"));
        QVERIFY(view->toPlainText().contains(QStringLiteral("\"language\":\"english\"")));
    }

    void dropAFile()
    {
        AudioPanel panel(m_family);
        panel.show();
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(m_wavPath)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton,
                              Qt::NoModifier);
        QApplication::sendEvent(&panel, &enter);
        QVERIFY(enter.isAccepted());
        QSignalSpy done(&panel, &AudioPanel::transcriptionFinished);
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&panel, &drop);
        QCOMPARE(panel.sourcePath(), m_wavPath);
        QCOMPARE(child<QTabWidget>(&panel, "audioTabs")->currentIndex(), 1);
        QVERIFY(waitFor(done));
        QVERIFY(child<QTableWidget>(&panel, "segmentTable")->rowCount() > 0);

        // Not audio: loads (only decoding tells) and fails with the decoder's reason shown.
        const QString junk = m_dir.filePath(QStringLiteral("junk.wav"));
        QFile f(junk);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not audio");
        f.close();
        done.clear();
        QVERIFY(panel.loadFile(junk));
        panel.transcribe();
        QVERIFY(!waitFor(done));
        QVERIFY(child<QLabel>(&panel, "transcriptionStatusLabel")
                    ->text()
                    .startsWith(QStringLiteral("Transcription failed")));
        QVERIFY(!panel.loadFile(m_dir.filePath(QStringLiteral("missing.wav"))));
    }

    void localModelsOnly()
    {
        AudioPanel panel(m_family);
        panel.show();
        auto *combo = child<QComboBox>(&panel, "modelCombo");
        auto *model = qobject_cast<QStandardItemModel *>(combo->model());
        QVERIFY(model);
        QCOMPARE(combo->currentData().toString(), QStringLiteral("rapid"));
        const int upstream = combo->findData(QStringLiteral("vendorB-asr-1"));
        QVERIFY(upstream >= 0);
        QVERIFY(!model->item(upstream)->isEnabled());
        QVERIFY(child<QLabel>(&panel, "modelNoteLabel")
                    ->text()
                    .contains(QStringLiteral("local engines only")));
    }

    void roundTrip()
    {
        AudioPanel panel(m_family);
        panel.show();
        child<QPlainTextEdit>(&panel, "speechTextEdit")->setPlainText(kSentence);
        QSignalSpy done(&panel, &AudioPanel::roundTripFinished);
        QTest::mouseClick(child<QPushButton>(&panel, "roundTripButton"), Qt::LeftButton);
        QVERIFY(waitFor(done));
        QCOMPARE(child<QPlainTextEdit>(&panel, "spokenTextView")->toPlainText(), kSentence);
        const QString heard = child<QPlainTextEdit>(&panel, "heardTextView")->toPlainText();
        QVERIFY(!heard.isEmpty());
        const double wer = panel.lastRoundTrip().wer;
        QCOMPARE(wer, AudioPlayground::wordErrorRate(kSentence, heard));
        QVERIFY2(wer < kMaxWer, qPrintable(heard));
        const QString label = child<QLabel>(&panel, "werLabel")->text();
        QVERIFY2(
            label.startsWith(
                QStringLiteral("Word error rate: %1%").arg(QString::number(wer * 100, 'f', 1))),
            qPrintable(label));
        QVERIFY(label.contains(QStringLiteral("of 9 words")));
        screenshot(panel, 2, QStringLiteral("roundtrip"));
    }

    // A full pool refuses the playground as it refuses the routes: the panel says so.
    void enginesBusy()
    {
        QSemaphore release; // outlives the family, whose pool waits for the blocked job
        AudioFamily family;
        family.configure(QJsonObject{{"workers", 1}, {"queue", 0}}, ServerSettings{});
        // Unblocks the job however the test ends (a failed check returns early).
        const auto unblock = qScopeGuard([&] { release.release(); });
        AudioPanel panel(family);
        panel.show();
        QVERIFY(family.workers().tryRun([&] { release.acquire(); }));
        QSignalSpy done(&panel, &AudioPanel::speechFinished);
        QTest::mouseClick(child<QPushButton>(&panel, "speakButton"), Qt::LeftButton);
        QCOMPARE(done.size(), 1);
        QCOMPARE(done.first().first().toBool(), false);
        QVERIFY(
            child<QLabel>(&panel, "speechStatusLabel")->text().contains(QStringLiteral("busy")));
        QVERIFY(child<QPushButton>(&panel, "speakButton")->isEnabled());
    }

    // A panel closed while its job runs: the job finishes on the pool and posts nowhere.
    void closeWhileRunning()
    {
        auto *panel = new AudioPanel(m_family);
        panel->show();
        child<QPlainTextEdit>(panel, "speechTextEdit")->setPlainText(kSentence.repeated(5));
        QTest::mouseClick(child<QPushButton>(panel, "roundTripButton"), Qt::LeftButton);
        delete panel;
        QTest::qWait(200);
        QTRY_COMPARE_WITH_TIMEOUT(m_family.workers().pending(), 0, 30000);
    }
};

QTEST_MAIN(TestAudioPanel)
#include "tst_audio_panel.moc"
