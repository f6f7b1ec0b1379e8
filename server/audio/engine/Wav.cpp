#include "Wav.h"

#include <QtEndian>

namespace {
void putU32(char *p, quint32 v)
{
    qToLittleEndian(v, p);
}
void putU16(char *p, quint16 v)
{
    qToLittleEndian(v, p);
}
} // namespace

namespace Wav {
QByteArray header(int rate, int channels, quint32 dataBytes)
{
    QByteArray h(44, '\0');
    char *p = h.data();
    const quint16 blockAlign = quint16(channels * 2);
    memcpy(p, "RIFF", 4);
    // RIFF size is the file size minus 8; a streamed header keeps the "unknown" marker.
    putU32(p + 4, dataBytes == kUnknownSize ? kUnknownSize : dataBytes + 36);
    memcpy(p + 8, "WAVE", 4);
    memcpy(p + 12, "fmt ", 4);
    putU32(p + 16, 16);
    putU16(p + 20, 1); // PCM
    putU16(p + 22, quint16(channels));
    putU32(p + 24, quint32(rate));
    putU32(p + 28, quint32(rate) * blockAlign);
    putU16(p + 32, blockAlign);
    putU16(p + 34, 16);
    memcpy(p + 36, "data", 4);
    putU32(p + 40, dataBytes);
    return h;
}

QByteArray file(int rate, int channels, const QByteArray &samples)
{
    return header(rate, channels, quint32(samples.size())) + samples;
}
} // namespace Wav
