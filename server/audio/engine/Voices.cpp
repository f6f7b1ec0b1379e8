#include "Voices.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <stdexcept>

namespace {
[[noreturn]] void bad(const QString &entry, const QString &why)
{
    throw std::runtime_error(QStringLiteral("voices: %1: %2").arg(entry, why).toStdString());
}

QString requiredString(const QJsonObject &o, const QString &entry, const char *field)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (!v.isString() || v.toString().trimmed().isEmpty())
        bad(entry, QStringLiteral("\"%1\" must be a non-empty string").arg(QLatin1String(field)));
    return v.toString().trimmed();
}

double factor(const QJsonObject &o, const QString &entry, const char *field)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (v.isUndefined() || v.isNull())
        return 1.0;
    // Factors outside this range make the engines clamp or fail; a typo such as 12 for 1.2
    // should be caught when the file is loaded, not heard later.
    if (!v.isDouble() || v.toDouble() < 0.25 || v.toDouble() > 4.0)
        bad(entry,
            QStringLiteral("\"%1\" must be a number from 0.25 to 4").arg(QLatin1String(field)));
    return v.toDouble();
}
} // namespace

VoiceCatalog VoiceCatalog::fromJson(const QByteArray &json)
{
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    if (error.error != QJsonParseError::NoError)
        bad(QStringLiteral("file"), QStringLiteral("not JSON (%1 at offset %2)")
                                        .arg(error.errorString())
                                        .arg(error.offset));
    // Either a bare array of voices or {"voices": [...]}, so the file can carry a comment.
    QJsonArray array;
    if (doc.isArray())
        array = doc.array();
    else if (doc.isObject() && doc.object().value(QStringLiteral("voices")).isArray())
        array = doc.object().value(QStringLiteral("voices")).toArray();
    else
        bad(QStringLiteral("file"),
            QStringLiteral("expected an array of voices or {\"voices\": [...]}"));

    VoiceCatalog catalog;
    for (qsizetype i = 0; i < array.size(); ++i) {
        QString entry = QStringLiteral("entry %1").arg(i);
        if (!array.at(i).isObject())
            bad(entry, QStringLiteral("not an object"));
        const QJsonObject o = array.at(i).toObject();
        VoiceSpec v;
        v.name = requiredString(o, entry, "name");
        entry = QStringLiteral("entry %1 (%2)").arg(i).arg(v.name);
        if (catalog.find(v.name))
            bad(entry, QStringLiteral("\"name\" is used twice"));
        v.language = requiredString(o, entry, "language");
        v.engine = requiredString(o, entry, "engine");
        if (v.engine != QLatin1String("flite") && v.engine != QLatin1String("espeak-ng"))
            bad(entry, QStringLiteral("\"engine\" must be \"flite\" or \"espeak-ng\""));
        v.engineVoice = requiredString(o, entry, "engine_voice");
        const QJsonValue description = o.value(QStringLiteral("description"));
        if (!description.isUndefined() && !description.isString())
            bad(entry, QStringLiteral("\"description\" must be a string"));
        v.description = description.toString();
        v.rate = factor(o, entry, "rate");
        v.pitch = factor(o, entry, "pitch");
        const QJsonValue variant = o.value(QStringLiteral("variant"));
        if (!variant.isUndefined() && !variant.isNull()) {
            if (!variant.isString())
                bad(entry, QStringLiteral("\"variant\" must be a string"));
            if (v.engine != QLatin1String("espeak-ng") && !variant.toString().isEmpty())
                bad(entry, QStringLiteral("\"variant\" applies to espeak-ng voices only"));
            v.variant = variant.toString();
        }
        catalog.m_voices.append(v);
    }
    return catalog;
}

VoiceCatalog VoiceCatalog::builtin()
{
    QFile f(QStringLiteral(":/switchyard/audio/voices.json"));
    if (!f.open(QIODevice::ReadOnly))
        bad(QStringLiteral("builtin"),
            QStringLiteral("resource :/switchyard/audio/voices.json missing"));
    return fromJson(f.readAll());
}

std::optional<VoiceSpec> VoiceCatalog::find(const QString &name) const
{
    for (const VoiceSpec &v : m_voices) {
        if (v.name == name)
            return v;
    }
    return std::nullopt;
}

QJsonArray VoiceCatalog::toJson() const
{
    QJsonArray out;
    for (const VoiceSpec &v : m_voices) {
        out.append(QJsonObject{{QStringLiteral("id"), v.name},
                               {QStringLiteral("language"), v.language},
                               {QStringLiteral("engine"), v.engine},
                               {QStringLiteral("engine_voice"), v.engineVoice},
                               {QStringLiteral("description"), v.description}});
    }
    return out;
}
