#pragma once

#include <optional>
#include <QByteArray>
#include <QJsonArray>
#include <QList>
#include <QString>

// One voice name of the contract (alloy ... demo-29) and what makes it: an engine, the engine's
// voice and its settings. Read from resources/audio/voices.json (built in) or an operator's
// file of the same shape.
struct VoiceSpec
{
    QString name;        // the contract's name: "alloy", "zh-welcome", "demo-7"
    QString language;    // BCP 47-ish: "en-US", "cmn", "ja", ...
    QString engine;      // "flite" or "espeak-ng"
    QString engineVoice; // flite: cmu_us_slt, cmu_us_rms, cmu_us_awb, cmu_us_kal16;
                         // espeak-ng: a voice name such as "cmn", "en-us", "ja", "fr"
    QString description; // shown by GET /v1/audio/voices and the playground
    double rate = 1.0;   // speaking-rate factor on top of the request's speed (1: engine default)
    double pitch = 1.0;  // pitch factor (1: the voice's own)
    QString variant;     // espeak-ng only: a variant such as "f2" (empty: none)
};

class VoiceCatalog
{
public:
    // Throws std::runtime_error naming the bad entry and field.
    static VoiceCatalog fromJson(const QByteArray &json);
    static VoiceCatalog builtin(); // resources/audio/voices.json

    const QList<VoiceSpec> &voices() const { return m_voices; }
    std::optional<VoiceSpec> find(const QString &name) const;
    // The GET /v1/audio/voices list: [{id, language, engine, engine_voice, description}].
    QJsonArray toJson() const;

private:
    QList<VoiceSpec> m_voices;
};
