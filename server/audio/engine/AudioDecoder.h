#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <QByteArray>
#include <QString>
#include <QStringList>

// Audio decoding with FFmpeg's libraries (libavformat, libavcodec, libswresample). The
// container is detected from the content (never from a file name or a declared type), then the
// first audio stream is decoded and resampled to the rate and channel count the caller asks for,
// as signed 16-bit interleaved samples, chunk by chunk, so memory stays bounded whatever the
// length. Safe to use from any thread; one object per thread at a time.
class AudioDecoder
{
public:
    enum class Error
    {
        None,
        Empty,       // no bytes at all
        NotAudio,    // no container recognised, or no audio stream in it
        Undecodable, // the codec failed on the stream's first packets (corrupt, truncated head)
        Cancelled,   // the sink or the cancel flag stopped it
    };

    // The bytes stay owned by the caller and must outlive the decoder (no copy is made).
    static std::unique_ptr<AudioDecoder> fromBytes(const QByteArray &bytes);
    static std::unique_ptr<AudioDecoder> fromFile(const QString &path);
    ~AudioDecoder();

    // Opens and probes; false with error()/message() set when nothing can be decoded.
    bool open();
    Error error() const;
    QString message() const; // human-readable, names the problem

    // After open(): the container's short name as FFmpeg knows it ("wav", "mp3", "ogg",
    // "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "flac"), the codec ("mp3", "opus", "aac",
    // "pcm_s16le", ...), the source rate and channels.
    QString container() const;
    QString codec() const;
    int sourceRate() const;
    int sourceChannels() const;
    // The duration in seconds as the container states it, or -1 when it states none (then
    // measureDuration() decodes to find out).
    double statedDuration() const;
    // The exact duration of the decoded audio in seconds: decodes the whole stream (no
    // resampling). Use before billing when statedDuration() is -1.
    double measureDuration(const std::atomic_bool *cancel = nullptr);

    // Decodes from the start, resampled to `rate` Hz and `channels` (1 or 2), handing the sink
    // chunks of interleaved s16 samples (`frames` frames each, at most about 100 ms). The sink
    // returns false to stop (Error::Cancelled). Returns the number of frames produced, or -1 on
    // error (error()/message()). A stream cut short (truncated file) ends at the last packet
    // that decoded: what was decodable is delivered, and truncated() tells.
    qint64 decode(int rate, int channels,
                  const std::function<bool(const int16_t *samples, qsizetype frames)> &sink,
                  const std::atomic_bool *cancel = nullptr);
    bool truncated() const;

    // The containers the contract accepts, for error messages: mp3, mp4, mpeg, mpga, m4a, wav,
    // webm, opus, flac, ogg.
    static QStringList supportedFormats();

private:
    AudioDecoder();
    struct Private;
    std::unique_ptr<Private> d;
};
