#include "AudioFakes.h"

#include "Json.h"

#include <QtEndian>

#include <cmath>
#include <numbers>

namespace AudioFakes {

namespace {

QByteArray number(double v, int decimals)
{
    return QByteArray::number(v, 'f', decimals);
}

QString stamp(double seconds, char separator)
{
    const qint64 ms = qint64(std::llround(seconds * 1000));
    return QStringLiteral("%1:%2:%3%4%5")
        .arg(ms / 3'600'000, 2, 10, QLatin1Char('0'))
        .arg(ms / 60'000 % 60, 2, 10, QLatin1Char('0'))
        .arg(ms / 1000 % 60, 2, 10, QLatin1Char('0'))
        .arg(QLatin1Char(separator))
        .arg(ms % 1000, 3, 10, QLatin1Char('0'));
}

struct Cue
{
    double start;
    double end;
    QString text;
};

// Words spread evenly over the audio; segments of up to eight words.
QList<Cue> cues(const QString &text, double seconds, bool words)
{
    const QStringList w = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    QList<Cue> out;
    if (w.isEmpty())
        return out;
    const double step = seconds / w.size();
    const int per = words ? 1 : 8;
    for (qsizetype i = 0; i < w.size(); i += per) {
        const qsizetype n = qMin<qsizetype>(per, w.size() - i);
        out.append({i * step, (i + n) * step, w.mid(i, n).join(QLatin1Char(' '))});
    }
    return out;
}

} // namespace

qint64 speechFrames(const QString &text, int rate, double speed)
{
    const double seconds = (0.3 + 0.06 * double(text.toUcs4().size())) / speed;
    return qint64(std::llround(seconds * rate));
}

QByteArray speechPcm(const QString &text, int rate, double speed)
{
    const qint64 frames = speechFrames(text, rate, speed);
    const QList<uint> points = text.toUcs4();
    QByteArray pcm(frames * 2, Qt::Uninitialized);
    auto *out = reinterpret_cast<qint16 *>(pcm.data());
    const double perPoint = 0.06 / speed * rate; // frames per code point
    const double lead = 0.15 / speed * rate;     // silence-ish margins at both ends
    double phase = 0;
    for (qint64 i = 0; i < frames; ++i) {
        const double t = double(i) / rate;
        const double inText = (double(i) - lead) / perPoint;
        double amplitude = 0;
        if (inText >= 0 && inText < points.size()) {
            const qsizetype k = qsizetype(inText);
            const bool pause = QChar::isSpace(points.at(k)) || QChar::isPunct(points.at(k));
            // A syllable every three code points: sin^2 envelope over it.
            const double syllable = std::fmod(inText / 3.0, 1.0);
            amplitude = pause ? 0.0 : std::pow(std::sin(std::numbers::pi * syllable), 2);
        }
        // The fundamental glides 110 -> 190 Hz and back over each second.
        const double f0 = 150 + 40 * std::sin(2 * std::numbers::pi * 0.5 * t);
        phase += 2 * std::numbers::pi * f0 / rate;
        const double voice =
            std::sin(phase) + 0.5 * std::sin(2 * phase) + 0.25 * std::sin(3 * phase);
        out[i] = qint16(std::lround(9000 * amplitude * voice));
    }
    return pcm;
}

QByteArray wav(int rate, int channels, const QByteArray &pcm, bool streamed)
{
    QByteArray h(44, '\0');
    auto *p = reinterpret_cast<uchar *>(h.data());
    const quint32 data = streamed ? 0xFFFFFFFFu : quint32(pcm.size());
    const quint32 riff = streamed ? 0xFFFFFFFFu : data + 36;
    memcpy(p, "RIFF", 4);
    qToLittleEndian<quint32>(riff, p + 4);
    memcpy(p + 8, "WAVEfmt ", 8);
    qToLittleEndian<quint32>(16, p + 16);
    qToLittleEndian<quint16>(1, p + 20); // PCM
    qToLittleEndian<quint16>(quint16(channels), p + 22);
    qToLittleEndian<quint32>(quint32(rate), p + 24);
    qToLittleEndian<quint32>(quint32(rate * channels * 2), p + 28);
    qToLittleEndian<quint16>(quint16(channels * 2), p + 32);
    qToLittleEndian<quint16>(16, p + 34);
    memcpy(p + 36, "data", 4);
    qToLittleEndian<quint32>(data, p + 40);
    return h + pcm;
}

QString transcriptText(const Heard &heard)
{
    QString text = QStringLiteral("Fake transcript of %1 seconds of %2 audio in %3 bytes.")
                       .arg(heard.seconds, 0, 'f', 2)
                       .arg(heard.extension.isEmpty() ? QStringLiteral("unnamed") : heard.extension)
                       .arg(heard.bytes);
    if (!heard.language.isEmpty())
        text += QStringLiteral(" Language: %1.").arg(heard.language);
    if (!heard.prompt.isEmpty())
        text += QStringLiteral(" Prompt: %1.").arg(heard.prompt);
    if (!heard.temperature.isEmpty())
        text += QStringLiteral(" Temperature: %1.").arg(heard.temperature);
    return text;
}

QString languageName(const QString &code)
{
    static const QHash<QString, QString> names{
        {QStringLiteral("en"), QStringLiteral("english")},
        {QStringLiteral("zh"), QStringLiteral("chinese")},
        {QStringLiteral("fr"), QStringLiteral("french")},
        {QStringLiteral("de"), QStringLiteral("german")},
        {QStringLiteral("es"), QStringLiteral("spanish")},
        {QStringLiteral("ja"), QStringLiteral("japanese")},
        {QStringLiteral("ko"), QStringLiteral("korean")},
        {QStringLiteral("it"), QStringLiteral("italian")},
        {QStringLiteral("ru"), QStringLiteral("russian")},
    };
    return names.value(code, code.isEmpty() ? QStringLiteral("english") : code);
}

const QStringList &openAiVoices()
{
    static const QStringList voices{"alloy", "ash",  "ballad",  "coral", "echo", "fable",
                                    "onyx",  "nova", "shimmer", "sage",  "verse"};
    return voices;
}

QByteArray transcription(const QString &format, const QString &text, double seconds,
                         const QString &language, bool words, bool segments,
                         QByteArray *contentType)
{
    *contentType = "text/plain; charset=utf-8";
    const Json usage =
        Json::object().add("type", "duration").add("seconds", qint64(std::ceil(seconds)));
    if (format == QLatin1String("text"))
        return text.toUtf8() + '\n';
    if (format == QLatin1String("srt") || format == QLatin1String("vtt")) {
        const bool srt = format == QLatin1String("srt");
        QString out = srt ? QString() : QStringLiteral("WEBVTT\n\n");
        int index = 0;
        for (const Cue &c : cues(text, seconds, false)) {
            if (srt)
                out += QString::number(++index) + QLatin1Char('\n');
            out += stamp(c.start, srt ? ',' : '.') + QStringLiteral(" --> ") +
                   stamp(c.end, srt ? ',' : '.') + QLatin1Char('\n') + c.text +
                   QStringLiteral("\n\n");
        }
        return out.toUtf8();
    }
    *contentType = "application/json";
    if (format == QLatin1String("verbose_json")) {
        Json o = Json::object()
                     .add("task", "transcribe")
                     .add("language", languageName(language))
                     .add("duration", Json::raw(number(seconds, 2)))
                     .add("text", text);
        if (words) {
            Json w = Json::array();
            for (const Cue &c : cues(text, seconds, true))
                w.push(Json::object()
                           .add("word", c.text)
                           .add("start", Json::raw(number(c.start, 2)))
                           .add("end", Json::raw(number(c.end, 2))));
            o.add("words", std::move(w));
        }
        if (segments) {
            Json s = Json::array();
            int id = 0;
            for (const Cue &c : cues(text, seconds, false)) {
                Json tokens = Json::array();
                for (int i = 0; i < c.text.count(QLatin1Char(' ')) + 1; ++i)
                    tokens.push(50364 + id * 16 + i);
                s.push(Json::object()
                           .add("id", id)
                           .add("seek", 0)
                           .add("start", Json::raw(number(c.start, 2)))
                           .add("end", Json::raw(number(c.end, 2)))
                           .add("text", QLatin1Char(' ') + c.text)
                           .add("tokens", std::move(tokens))
                           .add("temperature", Json::raw("0.0"))
                           .add("avg_logprob", Json::raw("-0.25"))
                           .add("compression_ratio", Json::raw("1.2"))
                           .add("no_speech_prob", Json::raw("0.01")));
                ++id;
            }
            o.add("segments", std::move(s));
        }
        o.add("usage", usage);
        return o.toJson();
    }
    return Json::object().add("text", text).add("usage", usage).toJson();
}

} // namespace AudioFakes
