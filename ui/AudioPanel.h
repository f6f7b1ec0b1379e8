#pragma once

#include "AudioPlayground.h"

#include <atomic>
#include <functional>
#include <memory>
#include <QByteArray>
#include <QString>
#include <QWidget>

class AudioFamily;
class QAudioSink;
class QAudioSource;
class QBuffer;
class QComboBox;
class QDragEnterEvent;
class QDropEvent;
class QDoubleSpinBox;
class QLabel;
class QMediaDevices;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTabWidget;
class QTimer;

// Tools > Speech & transcription: the TTS and transcription playground. It calls the audio
// family's own engines (its voices, config and bounded pool) through AudioPlayground, on the
// family's workers and never on the GUI thread; nothing is metered or billed. Three tabs:
//   Speech         text (live character count and what it would cost at the default speech
//                  model's price), a voice picker grouped by language, format (wav/pcm), speed;
//                  Speak synthesizes and plays, Save writes the file;
//   Transcription  a file (Open, or dropped on the panel) or the microphone, a model (local
//                  engines only; upstream models are listed, disabled), format and language; the
//                  segments in a table (a click plays that part) and the rendered output, saved;
//   Round trip     speaks the Speech tab's text, transcribes it, shows both and the word error
//                  rate.
// Playing and recording use Qt Multimedia (QAudioSink, QAudioSource on raw PCM, so no media
// backend plugin is needed to decode). Without an output or input device a label says so and the
// play or record buttons are disabled with a tooltip; everything else works.
//
// Widgets are named for tests: "audioDeviceLabel", "audioTabs", "speechTextEdit",
// "charCountLabel", "voiceCombo" (item data: voice name; language headings have none and are
// disabled), "speechFormatCombo" (data: wav, pcm), "speedSpin", "speakButton", "playButton",
// "saveSpeechButton", "speechStatusLabel"; "openFileButton", "recordButton", "sourceLabel",
// "modelCombo" (data: model id), "transcriptFormatCombo" (data: json, text, verbose_json, srt,
// vtt), "languageCombo", "transcribeButton", "cancelButton", "transcriptionStatusLabel",
// "transcriptTextView", "segmentTable" (start, end, text), "transcriptOutputView",
// "saveTranscriptButton"; "roundTripButton", "spokenTextView", "heardTextView", "werLabel",
// "roundTripStatusLabel"; the player strip "stopButton", "playbackProgress", "playbackLabel".
class AudioPanel : public QWidget
{
    Q_OBJECT
public:
    // family: the services' audio family (must outlive the panel).
    explicit AudioPanel(AudioFamily &family, QWidget *parent = nullptr);
    ~AudioPanel() override;

    AudioFamily &family() const { return *m_family; }
    bool hasOutputDevice() const { return m_hasOutput; }
    bool hasInputDevice() const { return m_hasInput; }
    bool isPlaying() const;
    bool isRecording() const;

    // The last finished results.
    const AudioPlayground::Speech &lastSpeech() const { return m_speech; }
    const AudioPlayground::Transcription &lastTranscription() const { return m_transcription; }
    const AudioPlayground::RoundTrip &lastRoundTrip() const { return m_roundTrip; }
    // The transcript in the chosen format, as shown and as saved.
    QByteArray transcriptOutput() const { return m_output; }
    // The transcription input: a file's path, or empty for recorded audio.
    QString sourcePath() const { return m_sourcePath; }

public slots:
    // Synthesizes the Speech tab's text; plays it when there is an output device.
    void speak();
    // Plays the last speech again.
    void playSpeech();
    bool saveSpeech(const QString &path);

    // Makes path the transcription input (checked, not yet decoded); false with the reason
    // shown when it cannot be read or is over the API's 25 MiB.
    bool loadFile(const QString &path);
    void transcribe();
    void cancelTranscription();
    bool saveTranscript(const QString &path);
    // Plays segment row of the last transcript; false without a device or audio.
    bool playSegment(int row);

    void runRoundTrip();

    void toggleRecording();
    void stopPlayback();

signals:
    void speechFinished(bool ok);
    void transcriptionFinished(bool ok);
    void roundTripFinished(bool ok);

protected:
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    QWidget *buildSpeechTab();
    QWidget *buildTranscriptionTab();
    QWidget *buildRoundTripTab();
    void updateDevices();
    void updateCharCount();
    void updateModelNote();
    void renderOutput();
    SpeechParams speechParams() const;
    // Runs job on the family's pool; shows "busy" in status and returns false when refused.
    bool startJob(QLabel *status, std::function<void()> job);
    void showSpeech(int generation, std::shared_ptr<AudioPlayground::Speech> speech, bool play);
    void showTranscription(int generation, std::shared_ptr<AudioPlayground::Transcription> t);
    void showRoundTrip(int generation, std::shared_ptr<AudioPlayground::RoundTrip> r);
    void setTranscribing(bool on);
    void play(const QByteArray &pcm, int rate, int channels, const QString &what);
    void updateProgress();
    void finishRecording();
    void chooseFile();
    void chooseSpeechFile();
    void chooseTranscriptFile();

    AudioFamily *m_family;
    QMediaDevices *m_devices;
    bool m_hasOutput = false;
    bool m_hasInput = false;

    QLabel *m_deviceLabel;
    QTabWidget *m_tabs;

    QPlainTextEdit *m_text;
    QLabel *m_charCount;
    QComboBox *m_voice;
    QComboBox *m_speechFormat;
    QDoubleSpinBox *m_speed;
    QPushButton *m_speak;
    QPushButton *m_playSpeech;
    QPushButton *m_saveSpeech;
    QLabel *m_speechStatus;

    QPushButton *m_openFile;
    QPushButton *m_record;
    QLabel *m_source;
    QComboBox *m_model;
    QLabel *m_modelNote;
    QComboBox *m_transcriptFormat;
    QComboBox *m_language;
    QPushButton *m_transcribe;
    QPushButton *m_cancel;
    QLabel *m_transcriptionStatus;
    QPlainTextEdit *m_transcriptText;
    QTableWidget *m_segments;
    QPlainTextEdit *m_outputView;
    QPushButton *m_saveTranscript;

    QPushButton *m_roundTripButton;
    QPlainTextEdit *m_spoken;
    QPlainTextEdit *m_heard;
    QLabel *m_wer;
    QLabel *m_roundTripStatus;

    QPushButton *m_stop;
    QProgressBar *m_progress;
    QLabel *m_playbackLabel;

    // One generation and cancel flag per kind of job: a new run supersedes the old one.
    int m_speechGeneration = 0;
    int m_transcriptionGeneration = 0;
    int m_roundTripGeneration = 0;
    std::shared_ptr<std::atomic_bool> m_speechCancel;
    std::shared_ptr<std::atomic_bool> m_transcriptionCancel;
    std::shared_ptr<std::atomic_bool> m_roundTripCancel;

    AudioPlayground::Speech m_speech;
    AudioPlayground::Transcription m_transcription;
    AudioPlayground::RoundTrip m_roundTrip;
    QByteArray m_output;
    QString m_sourcePath;
    QByteArray m_sourceBytes; // recorded audio as a WAV file

    QAudioSink *m_sink = nullptr;
    QBuffer *m_playBuffer = nullptr;
    qint64 m_playTotalUs = 0;
    QTimer *m_progressTimer;
    QAudioSource *m_recorder = nullptr;
    QBuffer *m_recordBuffer = nullptr;
    QTimer *m_recordTimer;
};
