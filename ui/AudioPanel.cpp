#include "AudioPanel.h"

#include "AudioFamily.h"
#include "AudioRequests.h"
#include "AudioWorkers.h"
#include "Money.h"
#include "TranscriptFormat.h"
#include "Wav.h"

#include <QApplication>
#include <QAudioDevice>
#include <QAudioFormat>
#include <QAudioSink>
#include <QAudioSource>
#include <QBuffer>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QMediaDevices>
#include <QMetaObject>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QTabWidget>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <utility>

namespace {

constexpr int kSpeechRate = SpeechSynthesizer::kRate;
constexpr int kSpeechChannels = SpeechSynthesizer::kChannels;
constexpr int kRecordSeconds = 300; // a recording stops itself after five minutes
const QString kErrorStyle = QStringLiteral("color: #c0392b;");

QString seconds(double s)
{
    return QString::number(s, 'f', 2);
}

// A heading for a language code of the voice table: "English (en-US)", or the code alone.
QString languageHeading(const QString &code)
{
    const QLocale locale(code);
    if (locale.language() == QLocale::C || locale.language() == QLocale::AnyLanguage)
        return code;
    return QStringLiteral("%1 (%2)").arg(QLocale::languageToString(locale.language()), code);
}

QTableWidgetItem *readOnlyItem(const QString &text)
{
    auto *item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    return item;
}

// Recorded samples as s16 whatever the device gave (Qt may only offer float or 32-bit).
QByteArray toInt16(const QByteArray &raw, QAudioFormat::SampleFormat format)
{
    if (format == QAudioFormat::Int16)
        return raw;
    const int inBytes = format == QAudioFormat::UInt8 ? 1 : 4;
    const qsizetype n = raw.size() / inBytes;
    QByteArray out(n * 2, Qt::Uninitialized);
    auto *d = reinterpret_cast<int16_t *>(out.data());
    const char *s = raw.constData();
    for (qsizetype i = 0; i < n; ++i) {
        double v = 0;
        if (format == QAudioFormat::UInt8) {
            v = (quint8(s[i]) - 128) / 128.0;
        } else if (format == QAudioFormat::Int32) {
            qint32 x;
            std::memcpy(&x, s + i * 4, 4);
            v = x / 2147483648.0;
        } else {
            float x;
            std::memcpy(&x, s + i * 4, 4);
            v = x;
        }
        d[i] = int16_t(std::clamp(v, -1.0, 1.0) * 32767);
    }
    return out;
}

} // namespace

AudioPanel::AudioPanel(AudioFamily &family, QWidget *parent)
    : QWidget(parent), m_family(&family), m_devices(new QMediaDevices(this))
{
    setObjectName(QStringLiteral("audioPanel"));
    setAcceptDrops(true);

    m_deviceLabel = new QLabel(this);
    m_deviceLabel->setObjectName(QStringLiteral("audioDeviceLabel"));
    m_deviceLabel->setWordWrap(true);
    m_deviceLabel->setStyleSheet(QStringLiteral("color: #8a6d3b;"));

    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("audioTabs"));
    m_tabs->addTab(buildSpeechTab(), tr("Speech"));
    m_tabs->addTab(buildTranscriptionTab(), tr("Transcription"));
    m_tabs->addTab(buildRoundTripTab(), tr("Round trip"));

    // The player strip, shared by speech and segments.
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setObjectName(QStringLiteral("stopButton"));
    m_stop->setEnabled(false);
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("playbackProgress"));
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    m_playbackLabel = new QLabel(tr("Nothing playing"), this);
    m_playbackLabel->setObjectName(QStringLiteral("playbackLabel"));
    m_playbackLabel->setMinimumWidth(220);
    connect(m_stop, &QPushButton::clicked, this, &AudioPanel::stopPlayback);
    m_progressTimer = new QTimer(this);
    m_progressTimer->setInterval(50);
    connect(m_progressTimer, &QTimer::timeout, this, &AudioPanel::updateProgress);
    m_recordTimer = new QTimer(this);
    m_recordTimer->setInterval(250);
    connect(m_recordTimer, &QTimer::timeout, this, [this] {
        if (!m_recorder)
            return;
        const double s = m_recorder->processedUSecs() / 1e6;
        m_source->setText(tr("Recording… %1 s").arg(seconds(s)));
        if (s >= kRecordSeconds)
            toggleRecording();
    });

    auto *player = new QHBoxLayout;
    player->addWidget(new QLabel(tr("Player:"), this));
    player->addWidget(m_stop);
    player->addWidget(m_progress, 1);
    player->addWidget(m_playbackLabel);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_deviceLabel);
    layout->addWidget(m_tabs, 1);
    layout->addLayout(player);

    connect(m_devices, &QMediaDevices::audioOutputsChanged, this, &AudioPanel::updateDevices);
    connect(m_devices, &QMediaDevices::audioInputsChanged, this, &AudioPanel::updateDevices);
    updateDevices();
    updateCharCount();
    updateModelNote();
}

AudioPanel::~AudioPanel()
{
    // Jobs on the pool hold only the flags and a QPointer: they stop early and post nowhere.
    for (const auto &flag : {m_speechCancel, m_transcriptionCancel, m_roundTripCancel})
        if (flag)
            flag->store(true);
    if (m_sink)
        m_sink->stop();
    if (m_recorder)
        m_recorder->stop();
}

QWidget *AudioPanel::buildSpeechTab()
{
    auto *page = new QWidget(this);
    m_text = new QPlainTextEdit(page);
    m_text->setObjectName(QStringLiteral("speechTextEdit"));
    m_text->setPlaceholderText(
        tr("Text to speak (up to %1 characters)").arg(AudioRequests::kMaxInputCharacters));
    m_text->setPlainText(tr("The quick brown fox jumps over the lazy dog."));
    connect(m_text, &QPlainTextEdit::textChanged, this, &AudioPanel::updateCharCount);

    m_charCount = new QLabel(page);
    m_charCount->setObjectName(QStringLiteral("charCountLabel"));

    // Voices grouped under a disabled heading per language, in the catalog's order.
    m_voice = new QComboBox(page);
    m_voice->setObjectName(QStringLiteral("voiceCombo"));
    auto *voices = new QStandardItemModel(m_voice);
    QStringList languages;
    for (const VoiceSpec &v : m_family->voices().voices())
        if (!languages.contains(v.language))
            languages << v.language;
    for (const QString &language : languages) {
        auto *heading = new QStandardItem(languageHeading(language));
        heading->setFlags(Qt::NoItemFlags);
        QFont bold = m_voice->font();
        bold.setBold(true);
        heading->setFont(bold);
        voices->appendRow(heading);
        for (const VoiceSpec &v : m_family->voices().voices()) {
            if (v.language != language)
                continue;
            auto *item =
                new QStandardItem(QStringLiteral("    %1 — %2").arg(v.name, v.description));
            item->setData(v.name, Qt::UserRole);
            item->setToolTip(tr("%1: %2 voice %3").arg(v.name, v.engine, v.engineVoice));
            voices->appendRow(item);
        }
    }
    m_voice->setModel(voices);
    const int alloy = m_voice->findData(QStringLiteral("alloy"));
    m_voice->setCurrentIndex(alloy >= 0 ? alloy : 1); // row 0 is a heading

    m_speechFormat = new QComboBox(page);
    m_speechFormat->setObjectName(QStringLiteral("speechFormatCombo"));
    m_speechFormat->addItem(tr("wav (48 kHz stereo, 16-bit)"), QStringLiteral("wav"));
    m_speechFormat->addItem(tr("pcm (raw s16le, 48 kHz stereo)"), QStringLiteral("pcm"));

    m_speed = new QDoubleSpinBox(page);
    m_speed->setObjectName(QStringLiteral("speedSpin"));
    m_speed->setRange(0.25, 4.0);
    m_speed->setSingleStep(0.05);
    m_speed->setValue(1.0);
    m_speed->setSuffix(QStringLiteral("×"));

    m_speak = new QPushButton(tr("Speak"), page);
    m_speak->setObjectName(QStringLiteral("speakButton"));
    m_speak->setDefault(true);
    m_playSpeech = new QPushButton(tr("Play"), page);
    m_playSpeech->setObjectName(QStringLiteral("playButton"));
    m_playSpeech->setEnabled(false);
    m_saveSpeech = new QPushButton(tr("Save…"), page);
    m_saveSpeech->setObjectName(QStringLiteral("saveSpeechButton"));
    m_saveSpeech->setEnabled(false);
    m_speechStatus = new QLabel(page);
    m_speechStatus->setObjectName(QStringLiteral("speechStatusLabel"));
    m_speechStatus->setWordWrap(true);
    m_speechStatus->setTextInteractionFlags(Qt::TextSelectableByMouse);
    connect(m_speak, &QPushButton::clicked, this, &AudioPanel::speak);
    connect(m_playSpeech, &QPushButton::clicked, this, &AudioPanel::playSpeech);
    connect(m_saveSpeech, &QPushButton::clicked, this, &AudioPanel::chooseSpeechFile);

    auto *form = new QFormLayout;
    form->addRow(tr("Voice:"), m_voice);
    auto *formatRow = new QHBoxLayout;
    formatRow->addWidget(m_speechFormat);
    formatRow->addSpacing(16);
    formatRow->addWidget(new QLabel(tr("Speed:"), page));
    formatRow->addWidget(m_speed);
    formatRow->addStretch(1);
    form->addRow(tr("Format:"), formatRow);

    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_speak);
    buttons->addWidget(m_playSpeech);
    buttons->addWidget(m_saveSpeech);
    buttons->addWidget(m_speechStatus, 1);

    auto *layout = new QVBoxLayout(page);
    layout->addWidget(m_text, 1);
    layout->addWidget(m_charCount);
    layout->addLayout(form);
    layout->addLayout(buttons);
    return page;
}

QWidget *AudioPanel::buildTranscriptionTab()
{
    auto *page = new QWidget(this);
    m_openFile = new QPushButton(tr("Open file…"), page);
    m_openFile->setObjectName(QStringLiteral("openFileButton"));
    m_record = new QPushButton(tr("Record"), page);
    m_record->setObjectName(QStringLiteral("recordButton"));
    m_source =
        new QLabel(tr("No audio yet: open a file, drop one on this panel, or record."), page);
    m_source->setObjectName(QStringLiteral("sourceLabel"));
    m_source->setTextInteractionFlags(Qt::TextSelectableByMouse);
    connect(m_openFile, &QPushButton::clicked, this, &AudioPanel::chooseFile);
    connect(m_record, &QPushButton::clicked, this, &AudioPanel::toggleRecording);

    // Upstream models are listed for completeness but disabled: the playground runs the
    // local engines only.
    m_model = new QComboBox(page);
    m_model->setObjectName(QStringLiteral("modelCombo"));
    auto *models = new QStandardItemModel(m_model);
    const AudioConfig &config = m_family->config();
    for (const AudioModel *m : AudioPlayground::transcriptionModels(config)) {
        const bool local = AudioPlayground::runsLocally(config, *m);
        auto *item = new QStandardItem(
            local ? tr("%1 (local: pocketsphinx, English)").arg(m->id)
                  : tr("%1 (upstream %2: through the API only)").arg(m->id, m->provider));
        item->setData(m->id, Qt::UserRole);
        if (!local) {
            item->setFlags(item->flags() & ~(Qt::ItemIsEnabled | Qt::ItemIsSelectable));
            item->setToolTip(tr("Served by the provider '%1'; the playground runs the local "
                                "engines only.")
                                 .arg(m->provider));
        }
        models->appendRow(item);
    }
    m_model->setModel(models);
    // The default model when it is local, else the first (local ones come first).
    const AudioModel *preferred = config.model(config.defaultTranscription);
    if (preferred && AudioPlayground::runsLocally(config, *preferred))
        m_model->setCurrentIndex(m_model->findData(preferred->id));
    m_modelNote = new QLabel(page);
    m_modelNote->setObjectName(QStringLiteral("modelNoteLabel"));
    m_modelNote->setWordWrap(true);

    m_transcriptFormat = new QComboBox(page);
    m_transcriptFormat->setObjectName(QStringLiteral("transcriptFormatCombo"));
    for (auto f : {TranscriptFormat::Format::Srt, TranscriptFormat::Format::Vtt,
                   TranscriptFormat::Format::VerboseJson, TranscriptFormat::Format::Json,
                   TranscriptFormat::Format::Text})
        m_transcriptFormat->addItem(TranscriptFormat::name(f), TranscriptFormat::name(f));
    connect(m_transcriptFormat, &QComboBox::currentIndexChanged, this, &AudioPanel::renderOutput);

    // The language only names the audio in verbose_json; the local recognizer hears English.
    m_language = new QComboBox(page);
    m_language->setObjectName(QStringLiteral("languageCombo"));
    m_language->setEditable(true);
    for (const char *code : {"en", "de", "es", "fr", "it", "ja", "ko", "pt", "ru", "zh"})
        m_language->addItem(QLatin1String(code), QLatin1String(code));
    connect(m_language, &QComboBox::currentTextChanged, this, [this] {
        updateModelNote();
        renderOutput();
    });

    m_transcribe = new QPushButton(tr("Transcribe"), page);
    m_transcribe->setObjectName(QStringLiteral("transcribeButton"));
    m_transcribe->setEnabled(false);
    m_cancel = new QPushButton(tr("Cancel"), page);
    m_cancel->setObjectName(QStringLiteral("cancelButton"));
    m_cancel->setEnabled(false);
    connect(m_transcribe, &QPushButton::clicked, this, &AudioPanel::transcribe);
    connect(m_cancel, &QPushButton::clicked, this, &AudioPanel::cancelTranscription);
    m_transcriptionStatus = new QLabel(page);
    m_transcriptionStatus->setObjectName(QStringLiteral("transcriptionStatusLabel"));
    m_transcriptionStatus->setWordWrap(true);
    m_transcriptionStatus->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_transcriptText = new QPlainTextEdit(page);
    m_transcriptText->setObjectName(QStringLiteral("transcriptTextView"));
    m_transcriptText->setReadOnly(true);
    m_transcriptText->setMaximumHeight(70);
    m_transcriptText->setPlaceholderText(tr("The transcript"));

    m_segments = new QTableWidget(0, 3, page);
    m_segments->setObjectName(QStringLiteral("segmentTable"));
    m_segments->setHorizontalHeaderLabels({tr("Start"), tr("End"), tr("Text")});
    m_segments->horizontalHeader()->setStretchLastSection(true);
    m_segments->verticalHeader()->hide();
    m_segments->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_segments->setSelectionMode(QAbstractItemView::SingleSelection);
    m_segments->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_segments->setToolTip(tr("Click a segment to play that part"));
    connect(m_segments, &QTableWidget::cellClicked, this, [this](int row) { playSegment(row); });

    m_outputView = new QPlainTextEdit(page);
    m_outputView->setObjectName(QStringLiteral("transcriptOutputView"));
    m_outputView->setReadOnly(true);
    m_outputView->setFont(QFont(QStringLiteral("monospace")));
    m_outputView->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_saveTranscript = new QPushButton(tr("Save output…"), page);
    m_saveTranscript->setObjectName(QStringLiteral("saveTranscriptButton"));
    m_saveTranscript->setEnabled(false);
    connect(m_saveTranscript, &QPushButton::clicked, this, &AudioPanel::chooseTranscriptFile);

    auto *sourceRow = new QHBoxLayout;
    sourceRow->addWidget(m_openFile);
    sourceRow->addWidget(m_record);
    sourceRow->addWidget(m_source, 1);

    auto *optionsRow = new QHBoxLayout;
    optionsRow->addWidget(new QLabel(tr("Model:"), page));
    optionsRow->addWidget(m_model, 1);
    optionsRow->addWidget(new QLabel(tr("Format:"), page));
    optionsRow->addWidget(m_transcriptFormat);
    optionsRow->addWidget(new QLabel(tr("Language:"), page));
    optionsRow->addWidget(m_language);
    optionsRow->addWidget(m_transcribe);
    optionsRow->addWidget(m_cancel);

    auto *outputBox = new QWidget(page);
    auto *outputLayout = new QVBoxLayout(outputBox);
    outputLayout->setContentsMargins(0, 0, 0, 0);
    outputLayout->addWidget(m_outputView, 1);
    auto *saveRow = new QHBoxLayout;
    saveRow->addStretch(1);
    saveRow->addWidget(m_saveTranscript);
    outputLayout->addLayout(saveRow);

    auto *split = new QSplitter(page);
    split->addWidget(m_segments);
    split->addWidget(outputBox);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);

    auto *layout = new QVBoxLayout(page);
    layout->addLayout(sourceRow);
    layout->addLayout(optionsRow);
    layout->addWidget(m_modelNote);
    layout->addWidget(m_transcriptionStatus);
    layout->addWidget(m_transcriptText);
    layout->addWidget(split, 1);
    return page;
}

QWidget *AudioPanel::buildRoundTripTab()
{
    auto *page = new QWidget(this);
    auto *intro = new QLabel(tr("Speaks the Speech tab's text with its voice and speed, then "
                                "transcribes the audio with the local recognizer (English) and "
                                "compares the two."),
                             page);
    intro->setWordWrap(true);
    m_roundTripButton = new QPushButton(tr("Speak and transcribe"), page);
    m_roundTripButton->setObjectName(QStringLiteral("roundTripButton"));
    connect(m_roundTripButton, &QPushButton::clicked, this, &AudioPanel::runRoundTrip);
    m_roundTripStatus = new QLabel(page);
    m_roundTripStatus->setObjectName(QStringLiteral("roundTripStatusLabel"));
    m_roundTripStatus->setWordWrap(true);
    m_spoken = new QPlainTextEdit(page);
    m_spoken->setObjectName(QStringLiteral("spokenTextView"));
    m_spoken->setReadOnly(true);
    m_heard = new QPlainTextEdit(page);
    m_heard->setObjectName(QStringLiteral("heardTextView"));
    m_heard->setReadOnly(true);
    m_wer = new QLabel(page);
    m_wer->setObjectName(QStringLiteral("werLabel"));
    QFont big = m_wer->font();
    big.setBold(true);
    m_wer->setFont(big);

    auto *spokenBox = new QGroupBox(tr("Spoken"), page);
    (new QVBoxLayout(spokenBox))->addWidget(m_spoken);
    auto *heardBox = new QGroupBox(tr("Heard"), page);
    (new QVBoxLayout(heardBox))->addWidget(m_heard);
    auto *texts = new QHBoxLayout;
    texts->addWidget(spokenBox);
    texts->addWidget(heardBox);

    auto *row = new QHBoxLayout;
    row->addWidget(m_roundTripButton);
    row->addWidget(m_roundTripStatus, 1);

    auto *layout = new QVBoxLayout(page);
    layout->addWidget(intro);
    layout->addLayout(row);
    layout->addLayout(texts, 1);
    layout->addWidget(m_wer);
    return page;
}

bool AudioPanel::isPlaying() const
{
    return m_sink && m_sink->state() == QAudio::ActiveState;
}

bool AudioPanel::isRecording() const
{
    return m_recorder != nullptr;
}

void AudioPanel::updateDevices()
{
    m_hasOutput = !QMediaDevices::audioOutputs().isEmpty();
    m_hasInput = !QMediaDevices::audioInputs().isEmpty();
    QStringList missing;
    if (!m_hasOutput)
        missing << tr("No audio output device: playing is off.");
    if (!m_hasInput)
        missing << tr("No audio input device: recording is off.");
    if (!missing.isEmpty())
        missing << tr("Synthesis, saving and transcription still work.");
    m_deviceLabel->setText(missing.join(QLatin1Char(' ')));
    m_deviceLabel->setVisible(!missing.isEmpty());

    const QString noOutput = tr("There is no audio output device.");
    m_playSpeech->setEnabled(m_hasOutput && !m_speech.pcm.isEmpty());
    m_playSpeech->setToolTip(m_hasOutput ? tr("Play the last speech") : noOutput);
    m_speak->setText(m_hasOutput ? tr("Speak") : tr("Synthesize"));
    m_speak->setToolTip(m_hasOutput ? tr("Synthesize the text and play it")
                                    : tr("Synthesize the text (%1)").arg(noOutput));
    m_segments->setToolTip(m_hasOutput ? tr("Click a segment to play that part") : noOutput);
    if (!isRecording()) {
        m_record->setEnabled(m_hasInput);
        m_record->setToolTip(m_hasInput ? tr("Record from the default microphone")
                                        : tr("There is no audio input device."));
    }
    if (!m_hasOutput)
        stopPlayback();
}

void AudioPanel::updateCharCount()
{
    const qint64 characters = m_text->toPlainText().toUcs4().size();
    const AudioModel *model = AudioPlayground::speechModel(m_family->config());
    const qint64 cost = AudioPlayground::speechCost(m_family->config(), characters);
    // Spelled out rather than %n: no translator is installed to pick the plural.
    QString text = characters == 1 ? tr("1 character") : tr("%1 characters").arg(characters);
    if (model)
        text += tr(" · %1 credits at %2's price (the playground bills nothing)")
                    .arg(Money::formatCredits(cost), model->id);
    if (characters > AudioRequests::kMaxInputCharacters)
        text += tr(" · over the limit of %1").arg(AudioRequests::kMaxInputCharacters);
    m_charCount->setText(text);
    m_charCount->setStyleSheet(characters > AudioRequests::kMaxInputCharacters ? kErrorStyle
                                                                               : QString());
}

void AudioPanel::updateModelNote()
{
    QString note = tr("The playground runs the local engines only (pocketsphinx, English); "
                      "upstream models are served through the API.");
    const QString language = m_language->currentText().trimmed();
    if (!language.isEmpty() && language != u"en")
        note += tr(" The local recognizer hears English only: '%1' only names the language in "
                   "verbose_json.")
                    .arg(language);
    m_modelNote->setText(note);
}

SpeechParams AudioPanel::speechParams() const
{
    SpeechParams p;
    p.speed = m_speed->value();
    return p;
}

bool AudioPanel::startJob(QLabel *status, std::function<void()> job)
{
    if (m_family->workers().tryRun(std::move(job)))
        return true;
    status->setStyleSheet(kErrorStyle);
    status->setText(tr("The audio engines are busy (%1 jobs running or waiting); try again in a "
                       "moment.")
                        .arg(m_family->workers().pending()));
    return false;
}

// ---- Speech ------------------------------------------------------------------------------------

void AudioPanel::speak()
{
    const QString voice = m_voice->currentData().toString();
    const QString text = m_text->toPlainText();
    const auto format = AudioPlayground::parseFormat(m_speechFormat->currentData().toString());
    const SpeechParams params = speechParams();
    if (m_speechCancel)
        m_speechCancel->store(true);
    auto cancel = m_speechCancel = std::make_shared<std::atomic_bool>(false);
    const int generation = ++m_speechGeneration;
    const bool play = m_hasOutput;
    QPointer<AudioPanel> self(this);
    const AudioFamily *family = m_family;
    m_speechStatus->setStyleSheet(QString());
    m_speechStatus->setText(tr("Synthesizing…"));
    m_speak->setEnabled(false);
    const bool started = startJob(m_speechStatus, [=] {
        auto speech = std::make_shared<AudioPlayground::Speech>(AudioPlayground::synthesize(
            *family, voice, text, params, format.value_or(AudioPlayground::SpeechFormat::Wav),
            cancel.get()));
        QMetaObject::invokeMethod(
            qApp,
            [self, generation, speech, play] {
                if (self)
                    self->showSpeech(generation, speech, play);
            },
            Qt::QueuedConnection);
    });
    if (!started) {
        m_speak->setEnabled(true);
        emit speechFinished(false);
    }
}

void AudioPanel::showSpeech(int generation, std::shared_ptr<AudioPlayground::Speech> speech,
                            bool play)
{
    if (generation != m_speechGeneration)
        return;
    m_speak->setEnabled(true);
    if (!speech->ok()) {
        m_speechStatus->setStyleSheet(kErrorStyle);
        m_speechStatus->setText(tr("Synthesis failed: %1").arg(speech->error));
        emit speechFinished(false);
        return;
    }
    m_speech = std::move(*speech);
    m_speechStatus->setStyleSheet(QString());
    m_speechStatus->setText(tr("%1 s of audio, %2 bytes of %3 (48 kHz, stereo, 16-bit)")
                                .arg(seconds(m_speech.seconds))
                                .arg(QLocale().toString(m_speech.file.size()))
                                .arg(AudioPlayground::formatName(m_speech.format)));
    m_saveSpeech->setEnabled(true);
    m_playSpeech->setEnabled(m_hasOutput);
    if (play && m_hasOutput)
        playSpeech();
    emit speechFinished(true);
}

void AudioPanel::playSpeech()
{
    if (m_speech.pcm.isEmpty())
        return;
    play(m_speech.pcm, kSpeechRate, kSpeechChannels,
         tr("speech, %1 s").arg(seconds(m_speech.seconds)));
}

bool AudioPanel::saveSpeech(const QString &path)
{
    if (m_speech.file.isEmpty())
        return false;
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(m_speech.file) != m_speech.file.size() ||
        !f.commit()) {
        m_speechStatus->setStyleSheet(kErrorStyle);
        m_speechStatus->setText(tr("Could not save %1: %2").arg(path, f.errorString()));
        return false;
    }
    m_speechStatus->setStyleSheet(QString());
    m_speechStatus->setText(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

void AudioPanel::chooseSpeechFile()
{
    const bool wav = m_speech.format == AudioPlayground::SpeechFormat::Wav;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Save speech"), wav ? QStringLiteral("speech.wav") : QStringLiteral("speech.pcm"),
        wav ? tr("WAV files (*.wav)") : tr("Raw PCM, s16le 48 kHz stereo (*.pcm *.raw)"));
    if (!path.isEmpty())
        saveSpeech(path);
}

// ---- Transcription -----------------------------------------------------------------------------

bool AudioPanel::loadFile(const QString &path)
{
    const QFileInfo info(path);
    QString problem;
    if (!info.isFile() || !info.isReadable())
        problem = tr("%1 is not a readable file.").arg(QDir::toNativeSeparators(path));
    else if (info.size() > AudioRequests::kMaxFileBytes)
        problem = tr("%1 is %2 bytes; the API takes up to 25 MiB.")
                      .arg(info.fileName(), QLocale().toString(info.size()));
    if (!problem.isEmpty()) {
        m_transcriptionStatus->setStyleSheet(kErrorStyle);
        m_transcriptionStatus->setText(problem);
        return false;
    }
    m_sourcePath = info.absoluteFilePath();
    m_sourceBytes.clear();
    m_source->setText(tr("%1 (%2 bytes)").arg(info.fileName(), QLocale().toString(info.size())));
    m_source->setToolTip(QDir::toNativeSeparators(m_sourcePath));
    m_transcriptionStatus->setStyleSheet(QString());
    m_transcriptionStatus->setText(tr("Ready to transcribe."));
    m_transcribe->setEnabled(true);
    return true;
}

void AudioPanel::chooseFile()
{
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Audio to transcribe"), QString(),
        tr("Audio (*.wav *.mp3 *.m4a *.mp4 *.mpeg *.mpga *.webm *.ogg *.opus *.flac);;"
           "All files (*)"));
    if (!path.isEmpty() && loadFile(path))
        transcribe();
}

void AudioPanel::dragEnterEvent(QDragEnterEvent *event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.first().isLocalFile())
        event->acceptProposedAction();
}

void AudioPanel::dropEvent(QDropEvent *event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.isEmpty() || !urls.first().isLocalFile())
        return;
    event->acceptProposedAction();
    m_tabs->setCurrentIndex(1);
    if (loadFile(urls.first().toLocalFile()))
        transcribe();
}

void AudioPanel::setTranscribing(bool on)
{
    m_transcribe->setEnabled(!on && (!m_sourcePath.isEmpty() || !m_sourceBytes.isEmpty()));
    m_cancel->setEnabled(on);
    m_openFile->setEnabled(!on);
}

void AudioPanel::transcribe()
{
    if (m_sourcePath.isEmpty() && m_sourceBytes.isEmpty())
        return;
    if (m_transcriptionCancel)
        m_transcriptionCancel->store(true);
    auto cancel = m_transcriptionCancel = std::make_shared<std::atomic_bool>(false);
    const int generation = ++m_transcriptionGeneration;
    QPointer<AudioPanel> self(this);
    const AudioFamily *family = m_family;
    const QString path = m_sourcePath;
    const QByteArray bytes = m_sourceBytes;
    m_transcriptionStatus->setStyleSheet(QString());
    m_transcriptionStatus->setText(tr("Transcribing…"));
    setTranscribing(true);
    const bool started = startJob(m_transcriptionStatus, [=] {
        auto t = std::make_shared<AudioPlayground::Transcription>(
            path.isEmpty() ? AudioPlayground::transcribe(*family, bytes, cancel.get())
                           : AudioPlayground::transcribeFile(*family, path, cancel.get()));
        QMetaObject::invokeMethod(
            qApp,
            [self, generation, t] {
                if (self)
                    self->showTranscription(generation, t);
            },
            Qt::QueuedConnection);
    });
    if (!started) {
        setTranscribing(false);
        emit transcriptionFinished(false);
    }
}

void AudioPanel::cancelTranscription()
{
    if (m_transcriptionCancel)
        m_transcriptionCancel->store(true);
}

void AudioPanel::showTranscription(int generation,
                                   std::shared_ptr<AudioPlayground::Transcription> t)
{
    if (generation != m_transcriptionGeneration)
        return;
    setTranscribing(false);
    if (!t->ok()) {
        m_transcriptionStatus->setStyleSheet(kErrorStyle);
        m_transcriptionStatus->setText(t->error == u"cancelled"
                                           ? tr("Cancelled.")
                                           : tr("Transcription failed: %1").arg(t->error));
        emit transcriptionFinished(false);
        return;
    }
    m_transcription = std::move(*t);
    const Transcript &transcript = m_transcription.transcript;
    m_transcriptText->setPlainText(transcript.text);
    m_segments->setRowCount(int(transcript.segments.size()));
    for (int row = 0; row < transcript.segments.size(); ++row) {
        const RecognizedSegment &s = transcript.segments.at(row);
        m_segments->setItem(row, 0, readOnlyItem(seconds(s.start)));
        m_segments->setItem(row, 1, readOnlyItem(seconds(s.end)));
        m_segments->setItem(row, 2, readOnlyItem(s.text));
    }
    m_segments->resizeColumnsToContents();
    m_segments->horizontalHeader()->setStretchLastSection(true);

    const double audioSeconds = double(m_transcription.frames) / SpeechRecognizer::kRate;
    QString status = tr("%1 s of audio, %n segment(s).", nullptr, int(transcript.segments.size()))
                         .arg(seconds(audioSeconds));
    const AudioModel *model = m_family->config().model(m_model->currentData().toString());
    if (model)
        status += tr(" Through the API this would cost %1 credits at %2's price (not billed "
                     "here).")
                      .arg(Money::formatCredits(AudioConfig::transcriptionCost(
                               m_transcription.frames, SpeechRecognizer::kRate, model->price)),
                           model->id);
    m_transcriptionStatus->setStyleSheet(QString());
    m_transcriptionStatus->setText(status);
    renderOutput();
    emit transcriptionFinished(true);
}

void AudioPanel::renderOutput()
{
    if (m_transcription.frames <= 0) {
        m_output.clear();
        m_outputView->clear();
        m_saveTranscript->setEnabled(false);
        return;
    }
    const auto format = TranscriptFormat::parse(m_transcriptFormat->currentData().toString());
    TranscriptFormat::Options options;
    const QString language = m_language->currentText().trimmed();
    options.language =
        TranscriptFormat::languageName(language.isEmpty() ? QStringLiteral("en") : language);
    QByteArray type;
    m_output = TranscriptFormat::render(
        m_transcription.transcript, format.value_or(TranscriptFormat::Format::Srt), options, &type);
    m_outputView->setPlainText(QString::fromUtf8(m_output));
    m_saveTranscript->setEnabled(true);
}

bool AudioPanel::saveTranscript(const QString &path)
{
    if (m_output.isEmpty())
        return false;
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(m_output) != m_output.size() || !f.commit()) {
        m_transcriptionStatus->setStyleSheet(kErrorStyle);
        m_transcriptionStatus->setText(tr("Could not save %1: %2").arg(path, f.errorString()));
        return false;
    }
    m_transcriptionStatus->setStyleSheet(QString());
    m_transcriptionStatus->setText(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

void AudioPanel::chooseTranscriptFile()
{
    const QString format = m_transcriptFormat->currentData().toString();
    const QString suffix = format == u"srt"    ? QStringLiteral("srt")
                           : format == u"vtt"  ? QStringLiteral("vtt")
                           : format == u"text" ? QStringLiteral("txt")
                                               : QStringLiteral("json");
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Save transcript"), QStringLiteral("transcript.") + suffix,
        tr("%1 files (*.%2);;All files (*)").arg(format.toUpper(), suffix));
    if (!path.isEmpty())
        saveTranscript(path);
}

bool AudioPanel::playSegment(int row)
{
    const auto &segments = m_transcription.transcript.segments;
    if (row < 0 || row >= segments.size() || m_transcription.pcm.isEmpty())
        return false;
    if (!m_hasOutput) {
        m_playbackLabel->setText(tr("No audio output device"));
        return false;
    }
    const RecognizedSegment &s = segments.at(row);
    play(AudioPlayground::slice(m_transcription.pcm, SpeechRecognizer::kRate, 1, s.start, s.end),
         SpeechRecognizer::kRate, 1,
         tr("segment %1, %2–%3 s").arg(row + 1).arg(seconds(s.start), seconds(s.end)));
    return true;
}

// ---- Round trip --------------------------------------------------------------------------------

void AudioPanel::runRoundTrip()
{
    const QString voice = m_voice->currentData().toString();
    const QString text = m_text->toPlainText();
    const SpeechParams params = speechParams();
    if (m_roundTripCancel)
        m_roundTripCancel->store(true);
    auto cancel = m_roundTripCancel = std::make_shared<std::atomic_bool>(false);
    const int generation = ++m_roundTripGeneration;
    QPointer<AudioPanel> self(this);
    const AudioFamily *family = m_family;
    m_spoken->setPlainText(text);
    m_heard->clear();
    m_wer->clear();
    m_roundTripStatus->setStyleSheet(QString());
    m_roundTripStatus->setText(tr("Speaking with %1, then transcribing…").arg(voice));
    m_roundTripButton->setEnabled(false);
    const bool started = startJob(m_roundTripStatus, [=] {
        auto r = std::make_shared<AudioPlayground::RoundTrip>(
            AudioPlayground::roundTrip(*family, voice, text, params, cancel.get()));
        QMetaObject::invokeMethod(
            qApp,
            [self, generation, r] {
                if (self)
                    self->showRoundTrip(generation, r);
            },
            Qt::QueuedConnection);
    });
    if (!started) {
        m_roundTripButton->setEnabled(true);
        emit roundTripFinished(false);
    }
}

void AudioPanel::showRoundTrip(int generation, std::shared_ptr<AudioPlayground::RoundTrip> r)
{
    if (generation != m_roundTripGeneration)
        return;
    m_roundTripButton->setEnabled(true);
    if (!r->ok()) {
        m_roundTripStatus->setStyleSheet(kErrorStyle);
        m_roundTripStatus->setText(tr("Round trip failed: %1").arg(r->error));
        emit roundTripFinished(false);
        return;
    }
    m_roundTrip = std::move(*r);
    m_heard->setPlainText(m_roundTrip.transcription.transcript.text);
    const qsizetype words = AudioPlayground::words(m_spoken->toPlainText()).size();
    const int errors = int(std::lround(m_roundTrip.wer * double(words)));
    m_wer->setText(tr("Word error rate: %1% (%2 of %3 words wrong, missing or extra)")
                       .arg(QString::number(m_roundTrip.wer * 100, 'f', 1))
                       .arg(errors)
                       .arg(words));
    m_roundTripStatus->setText(tr("%1 s of speech, %2 segment(s).")
                                   .arg(seconds(m_roundTrip.speech.seconds))
                                   .arg(m_roundTrip.transcription.transcript.segments.size()));
    emit roundTripFinished(true);
}

// ---- Playing and recording ---------------------------------------------------------------------

void AudioPanel::play(const QByteArray &pcm, int rate, int channels, const QString &what)
{
    stopPlayback();
    if (!m_hasOutput || pcm.isEmpty())
        return;
    QAudioFormat format;
    format.setSampleRate(rate);
    format.setChannelCount(channels);
    format.setSampleFormat(QAudioFormat::Int16);
    const QAudioDevice device = QMediaDevices::defaultAudioOutput();
    if (!device.isFormatSupported(format)) {
        m_playbackLabel->setText(tr("%1 cannot play %2 Hz, %3 channel(s)")
                                     .arg(device.description())
                                     .arg(rate)
                                     .arg(channels));
        return;
    }
    m_playBuffer = new QBuffer(this);
    m_playBuffer->setData(pcm);
    m_playBuffer->open(QIODevice::ReadOnly);
    m_sink = new QAudioSink(device, format, this);
    m_playTotalUs = format.durationForBytes(qint32(std::min<qsizetype>(pcm.size(), INT_MAX)));
    connect(m_sink, &QAudioSink::stateChanged, this, [this](QAudio::State state) {
        // Idle: the buffer ran dry, the sound is over.
        if (state == QAudio::IdleState || state == QAudio::StoppedState)
            stopPlayback();
    });
    m_sink->start(m_playBuffer);
    m_stop->setEnabled(true);
    m_progress->setValue(0);
    m_playbackLabel->setText(tr("Playing %1").arg(what));
    m_progressTimer->start();
}

void AudioPanel::updateProgress()
{
    if (!m_sink || m_playTotalUs <= 0)
        return;
    m_progress->setValue(
        int(std::min<qint64>(1000, m_sink->processedUSecs() * 1000 / m_playTotalUs)));
}

void AudioPanel::stopPlayback()
{
    m_progressTimer->stop();
    if (m_sink) {
        QAudioSink *sink = std::exchange(m_sink, nullptr);
        sink->disconnect(this);
        sink->stop();
        sink->deleteLater();
        m_progress->setValue(m_progress->maximum());
        m_playbackLabel->setText(tr("Stopped"));
    }
    if (m_playBuffer)
        std::exchange(m_playBuffer, nullptr)->deleteLater();
    m_stop->setEnabled(false);
}

void AudioPanel::toggleRecording()
{
    if (m_recorder) {
        finishRecording();
        return;
    }
    if (!m_hasInput)
        return;
    const QAudioDevice device = QMediaDevices::defaultAudioInput();
    QAudioFormat format;
    format.setSampleRate(SpeechRecognizer::kRate);
    format.setChannelCount(1);
    format.setSampleFormat(QAudioFormat::Int16);
    // The decoder resamples whatever the device gives; only the sample type is converted here.
    if (!device.isFormatSupported(format))
        format = device.preferredFormat();
    m_recordBuffer = new QBuffer(this);
    m_recordBuffer->open(QIODevice::WriteOnly);
    m_recorder = new QAudioSource(device, format, this);
    m_recorder->start(m_recordBuffer);
    m_record->setText(tr("Stop recording"));
    m_record->setToolTip(tr("Stop and transcribe the recording"));
    m_openFile->setEnabled(false);
    m_source->setText(tr("Recording from %1…").arg(device.description()));
    m_recordTimer->start();
}

void AudioPanel::finishRecording()
{
    m_recordTimer->stop();
    QAudioSource *recorder = std::exchange(m_recorder, nullptr);
    recorder->stop();
    const QAudioFormat format = recorder->format();
    recorder->deleteLater();
    QBuffer *buffer = std::exchange(m_recordBuffer, nullptr);
    const QByteArray pcm = toInt16(buffer->data(), format.sampleFormat());
    buffer->deleteLater();
    m_record->setText(tr("Record"));
    m_openFile->setEnabled(true);
    updateDevices();

    m_sourcePath.clear();
    m_sourceBytes = Wav::file(format.sampleRate(), format.channelCount(), pcm);
    const double s = double(pcm.size()) / (2.0 * format.channelCount() * format.sampleRate());
    m_source->setText(tr("Recording, %1 s").arg(seconds(s)));
    m_source->setToolTip(QString());
    transcribe();
}
