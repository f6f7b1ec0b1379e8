#pragma once

#include <cstdint>
#include <QByteArray>

// RIFF/WAVE (PCM s16le) headers. A streamed answer does not know its length in advance: its
// header carries 0xFFFFFFFF as the RIFF and data sizes, which FFmpeg, browsers and Qt
// Multimedia read as "until the end of the stream".
namespace Wav {
constexpr quint32 kUnknownSize = 0xFFFFFFFFu;
// A 44-byte header for `dataBytes` of interleaved s16le samples (kUnknownSize: streamed).
QByteArray header(int rate, int channels, quint32 dataBytes = kUnknownSize);
// A whole file: header plus samples.
QByteArray file(int rate, int channels, const QByteArray &samples);
} // namespace Wav
