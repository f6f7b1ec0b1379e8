#pragma once

#include "SpeechRecognizer.h"

#include <optional>
#include <QByteArray>
#include <QString>

// The transcription answer in its five formats (server/audio/README.md), matching OpenAI's
// shapes where the contract is silent. Pure functions: server/audio/README.md shows each shape.
namespace TranscriptFormat {

enum class Format
{
    Json,
    Text,
    VerboseJson,
    Srt,
    Vtt
};

std::optional<Format> parse(const QString &name); // json, text, verbose_json, srt, vtt
QString name(Format format);

struct Options
{
    QString language = QStringLiteral("english"); // verbose_json's `language` (OpenAI: a name)
    bool segments = true; // verbose_json: timestamp_granularities has segment (or is empty)
    bool words = false;   // verbose_json: timestamp_granularities has word
};

// "HH:MM:SS,mmm" (SRT, separator ',') or "HH:MM:SS.mmm" (VTT, '.'); milliseconds rounded to
// the nearest, hours unbounded.
QString timestamp(double seconds, QChar separator);

// The answer body; *contentType is application/json for json and verbose_json, text/plain;
// charset=utf-8 for the others.
QByteArray render(const Transcript &t, Format format, const Options &options,
                  QByteArray *contentType);

// Language names as OpenAI's verbose_json gives them ("en" -> "english"); ISO 639-1 codes.
QString languageName(const QString &code);
// Whether `code` is an ISO 639-1 code (two lower-case letters of the standard's list).
bool isIso639_1(const QString &code);

} // namespace TranscriptFormat
