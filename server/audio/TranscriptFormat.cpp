#include "TranscriptFormat.h"

#include <cmath>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace TranscriptFormat {

namespace {

// ISO 639-1 codes with the English names Whisper-style APIs report.
const QHash<QString, QString> &languages()
{
    static const QHash<QString, QString> table = [] {
        const char *pairs[][2] = {
            {"aa", "afar"},
            {"ab", "abkhazian"},
            {"af", "afrikaans"},
            {"ak", "akan"},
            {"am", "amharic"},
            {"an", "aragonese"},
            {"ar", "arabic"},
            {"as", "assamese"},
            {"av", "avaric"},
            {"ay", "aymara"},
            {"az", "azerbaijani"},
            {"ba", "bashkir"},
            {"be", "belarusian"},
            {"bg", "bulgarian"},
            {"bi", "bislama"},
            {"bm", "bambara"},
            {"bn", "bengali"},
            {"bo", "tibetan"},
            {"br", "breton"},
            {"bs", "bosnian"},
            {"ca", "catalan"},
            {"ce", "chechen"},
            {"ch", "chamorro"},
            {"co", "corsican"},
            {"cr", "cree"},
            {"cs", "czech"},
            {"cu", "church slavic"},
            {"cv", "chuvash"},
            {"cy", "welsh"},
            {"da", "danish"},
            {"de", "german"},
            {"dv", "divehi"},
            {"dz", "dzongkha"},
            {"ee", "ewe"},
            {"el", "greek"},
            {"en", "english"},
            {"eo", "esperanto"},
            {"es", "spanish"},
            {"et", "estonian"},
            {"eu", "basque"},
            {"fa", "persian"},
            {"ff", "fulah"},
            {"fi", "finnish"},
            {"fj", "fijian"},
            {"fo", "faroese"},
            {"fr", "french"},
            {"fy", "western frisian"},
            {"ga", "irish"},
            {"gd", "gaelic"},
            {"gl", "galician"},
            {"gn", "guarani"},
            {"gu", "gujarati"},
            {"gv", "manx"},
            {"ha", "hausa"},
            {"he", "hebrew"},
            {"hi", "hindi"},
            {"ho", "hiri motu"},
            {"hr", "croatian"},
            {"ht", "haitian"},
            {"hu", "hungarian"},
            {"hy", "armenian"},
            {"hz", "herero"},
            {"ia", "interlingua"},
            {"id", "indonesian"},
            {"ie", "interlingue"},
            {"ig", "igbo"},
            {"ii", "sichuan yi"},
            {"ik", "inupiaq"},
            {"io", "ido"},
            {"is", "icelandic"},
            {"it", "italian"},
            {"iu", "inuktitut"},
            {"ja", "japanese"},
            {"jv", "javanese"},
            {"ka", "georgian"},
            {"kg", "kongo"},
            {"ki", "kikuyu"},
            {"kj", "kuanyama"},
            {"kk", "kazakh"},
            {"kl", "kalaallisut"},
            {"km", "khmer"},
            {"kn", "kannada"},
            {"ko", "korean"},
            {"kr", "kanuri"},
            {"ks", "kashmiri"},
            {"ku", "kurdish"},
            {"kv", "komi"},
            {"kw", "cornish"},
            {"ky", "kirghiz"},
            {"la", "latin"},
            {"lb", "luxembourgish"},
            {"lg", "ganda"},
            {"li", "limburgan"},
            {"ln", "lingala"},
            {"lo", "lao"},
            {"lt", "lithuanian"},
            {"lu", "luba-katanga"},
            {"lv", "latvian"},
            {"mg", "malagasy"},
            {"mh", "marshallese"},
            {"mi", "maori"},
            {"mk", "macedonian"},
            {"ml", "malayalam"},
            {"mn", "mongolian"},
            {"mr", "marathi"},
            {"ms", "malay"},
            {"mt", "maltese"},
            {"my", "burmese"},
            {"na", "nauru"},
            {"nb", "norwegian bokmal"},
            {"nd", "north ndebele"},
            {"ne", "nepali"},
            {"ng", "ndonga"},
            {"nl", "dutch"},
            {"nn", "norwegian nynorsk"},
            {"no", "norwegian"},
            {"nr", "south ndebele"},
            {"nv", "navajo"},
            {"ny", "chichewa"},
            {"oc", "occitan"},
            {"oj", "ojibwa"},
            {"om", "oromo"},
            {"or", "oriya"},
            {"os", "ossetian"},
            {"pa", "punjabi"},
            {"pi", "pali"},
            {"pl", "polish"},
            {"ps", "pashto"},
            {"pt", "portuguese"},
            {"qu", "quechua"},
            {"rm", "romansh"},
            {"rn", "rundi"},
            {"ro", "romanian"},
            {"ru", "russian"},
            {"rw", "kinyarwanda"},
            {"sa", "sanskrit"},
            {"sc", "sardinian"},
            {"sd", "sindhi"},
            {"se", "northern sami"},
            {"sg", "sango"},
            {"si", "sinhala"},
            {"sk", "slovak"},
            {"sl", "slovenian"},
            {"sm", "samoan"},
            {"sn", "shona"},
            {"so", "somali"},
            {"sq", "albanian"},
            {"sr", "serbian"},
            {"ss", "swati"},
            {"st", "southern sotho"},
            {"su", "sundanese"},
            {"sv", "swedish"},
            {"sw", "swahili"},
            {"ta", "tamil"},
            {"te", "telugu"},
            {"tg", "tajik"},
            {"th", "thai"},
            {"ti", "tigrinya"},
            {"tk", "turkmen"},
            {"tl", "tagalog"},
            {"tn", "tswana"},
            {"to", "tonga"},
            {"tr", "turkish"},
            {"ts", "tsonga"},
            {"tt", "tatar"},
            {"tw", "twi"},
            {"ty", "tahitian"},
            {"ug", "uighur"},
            {"uk", "ukrainian"},
            {"ur", "urdu"},
            {"uz", "uzbek"},
            {"ve", "venda"},
            {"vi", "vietnamese"},
            {"vo", "volapuk"},
            {"wa", "walloon"},
            {"wo", "wolof"},
            {"xh", "xhosa"},
            {"yi", "yiddish"},
            {"yo", "yoruba"},
            {"za", "zhuang"},
            {"zh", "chinese"},
            {"zu", "zulu"},
        };
        QHash<QString, QString> t;
        for (const auto &p : pairs)
            t.insert(QLatin1String(p[0]), QLatin1String(p[1]));
        return t;
    }();
    return table;
}

// Cue text on one line; SRT has no escapes, so "-->" (which would end a cue's timing line in
// lenient readers) becomes "->"; WebVTT escapes &, < and > as its spec says.
QString cueText(const QString &text, bool vtt)
{
    QString t = text.simplified();
    if (vtt) {
        t.replace(u'&', QStringLiteral("&amp;"));
        t.replace(u'<', QStringLiteral("&lt;"));
        t.replace(u'>', QStringLiteral("&gt;"));
    } else {
        t.replace(QStringLiteral("-->"), QStringLiteral("->"));
    }
    return t;
}

double round3(double v)
{
    return std::round(v * 1000.0) / 1000.0;
}

// zlib's ratio of the text, as Whisper reports it (its hallucination signal).
double compressionRatio(const QString &text)
{
    const QByteArray utf8 = text.toUtf8();
    if (utf8.isEmpty())
        return 0;
    const qsizetype packed = qCompress(utf8, 9).size() - 4; // qCompress prepends the length
    return packed > 0 ? round3(double(utf8.size()) / double(packed)) : 0;
}

} // namespace

std::optional<Format> parse(const QString &name)
{
    if (name == u"json")
        return Format::Json;
    if (name == u"text")
        return Format::Text;
    if (name == u"verbose_json")
        return Format::VerboseJson;
    if (name == u"srt")
        return Format::Srt;
    if (name == u"vtt")
        return Format::Vtt;
    return std::nullopt;
}

QString name(Format format)
{
    switch (format) {
    case Format::Json:
        return QStringLiteral("json");
    case Format::Text:
        return QStringLiteral("text");
    case Format::VerboseJson:
        return QStringLiteral("verbose_json");
    case Format::Srt:
        return QStringLiteral("srt");
    case Format::Vtt:
        return QStringLiteral("vtt");
    }
    return {};
}

QString timestamp(double seconds, QChar separator)
{
    const qint64 ms = std::max<qint64>(0, std::llround(seconds * 1000.0));
    return QStringLiteral("%1:%2:%3%4%5")
        .arg(ms / 3'600'000, 2, 10, QLatin1Char('0'))
        .arg(ms / 60'000 % 60, 2, 10, QLatin1Char('0'))
        .arg(ms / 1000 % 60, 2, 10, QLatin1Char('0'))
        .arg(separator)
        .arg(ms % 1000, 3, 10, QLatin1Char('0'));
}

QString languageName(const QString &code)
{
    return languages().value(code, code);
}

bool isIso639_1(const QString &code)
{
    return languages().contains(code);
}

QByteArray render(const Transcript &t, Format format, const Options &options,
                  QByteArray *contentType)
{
    *contentType = "text/plain; charset=utf-8";
    switch (format) {
    case Format::Text:
        return (t.text + u'\n').toUtf8();
    case Format::Json:
        *contentType = "application/json";
        return QJsonDocument(QJsonObject{{"text", t.text}}).toJson(QJsonDocument::Compact);
    case Format::VerboseJson: {
        *contentType = "application/json";
        QJsonObject o{{"task", "transcribe"},
                      {"language", options.language},
                      {"duration", round3(t.duration)},
                      {"text", t.text}};
        if (options.segments) {
            QJsonArray segments;
            for (int i = 0; i < t.segments.size(); ++i) {
                const RecognizedSegment &s = t.segments.at(i);
                // Fields the engine has no value for carry documented constants: seek is the
                // segment's start in 10 ms frames, tokens is empty (no BPE tokenizer), and
                // temperature is 0 (a single deterministic pass).
                segments.append(QJsonObject{{"id", i},
                                            {"seek", qint64(std::llround(s.start * 100.0))},
                                            {"start", round3(s.start)},
                                            {"end", round3(s.end)},
                                            {"text", s.text},
                                            {"tokens", QJsonArray{}},
                                            {"temperature", 0.0},
                                            {"avg_logprob", round3(s.avgLogprob)},
                                            {"compression_ratio", compressionRatio(s.text)},
                                            {"no_speech_prob", round3(s.noSpeechProb)}});
            }
            o.insert("segments", segments);
        }
        if (options.words) {
            QJsonArray words;
            for (const RecognizedSegment &s : t.segments)
                for (const RecognizedWord &w : s.words)
                    words.append(QJsonObject{
                        {"word", w.word}, {"start", round3(w.start)}, {"end", round3(w.end)}});
            o.insert("words", words);
        }
        return QJsonDocument(o).toJson(QJsonDocument::Compact);
    }
    case Format::Srt:
    case Format::Vtt: {
        const bool vtt = format == Format::Vtt;
        const QChar sep = vtt ? u'.' : u',';
        QString out = vtt ? QStringLiteral("WEBVTT\n\n") : QString();
        int cue = 1;
        for (const RecognizedSegment &s : t.segments) {
            const QString text = cueText(s.text, vtt);
            if (text.isEmpty())
                continue;
            if (!vtt)
                out += QString::number(cue++) + u'\n';
            out += timestamp(s.start, sep) + QStringLiteral(" --> ") + timestamp(s.end, sep) +
                   u'\n' + text + QStringLiteral("\n\n");
        }
        return out.toUtf8();
    }
    }
    return {};
}

} // namespace TranscriptFormat
