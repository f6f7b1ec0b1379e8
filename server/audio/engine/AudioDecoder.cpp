#include "AudioDecoder.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <QFile>
#include <QtEndian>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libswresample/swresample.h>
}

namespace {
constexpr int kIoBufferSize = 32 * 1024;
// Probe scores of 5 and below are what the mp3 probe gives to random bytes that happen to
// hold a frame sync or two; real files score 25 and up (a short mp3 without tags: 25).
constexpr int kMinProbeScore = 10;
// Packets that may fail before the first frame decodes (junk before the first mp3 frame).
constexpr int kMaxHeadErrors = 16;
// The demuxers the contract's formats need (and raw ADTS, which m4a uploads sometimes are).
// Anything else, including playlist demuxers that would open other URLs, is refused.
constexpr const char *kFormatWhitelist = "mp3,mov,mp4,m4a,mpeg,wav,matroska,webm,ogg,flac,aac";

void silenceFfmpeg()
{
    static std::once_flag once;
    std::call_once(once, [] { av_log_set_level(AV_LOG_QUIET); });
}

QString avError(int code)
{
    char buf[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(code, buf, sizeof buf);
    return QString::fromUtf8(buf);
}

// Nested opens (a demuxer following a reference to another file or URL) are never allowed.
int denyIoOpen(AVFormatContext *, AVIOContext **, const char *, int, AVDictionary **)
{
    return AVERROR(EPERM);
}
} // namespace

struct AudioDecoder::Private
{
    // Implicitly shared with the caller's array: no copy of the data.
    QByteArray bytes;
    qint64 pos = 0;
    QFile file;
    bool isFile = false;

    AVIOContext *io = nullptr;
    AVFormatContext *fmt = nullptr;
    AVCodecContext *codec = nullptr;
    int stream = -1;
    bool fresh = false; // the contexts sit at the start of the stream, nothing read yet

    Error error = Error::None;
    QString message;
    bool truncated = false;
    bool opened = false;

    QString container, codecName;
    int rate = 0, channels = 0;
    double stated = -1;

    ~Private() { close(); }

    void close()
    {
        avcodec_free_context(&codec);
        if (fmt)
            avformat_close_input(&fmt);
        if (io) {
            av_freep(&io->buffer);
            avio_context_free(&io);
        }
        stream = -1;
    }

    bool fail(Error e, const QString &why)
    {
        error = e;
        message = why;
        return false;
    }

    static int read(void *opaque, uint8_t *buf, int size)
    {
        auto *d = static_cast<Private *>(opaque);
        if (d->isFile) {
            const qint64 n = d->file.read(reinterpret_cast<char *>(buf), size);
            if (n < 0)
                return AVERROR(EIO);
            return n == 0 ? AVERROR_EOF : int(n);
        }
        const qint64 left = d->bytes.size() - d->pos;
        if (left <= 0)
            return AVERROR_EOF;
        const int n = int(std::min<qint64>(size, left));
        memcpy(buf, d->bytes.constData() + d->pos, size_t(n));
        d->pos += n;
        return n;
    }

    static int64_t seek(void *opaque, int64_t offset, int whence)
    {
        auto *d = static_cast<Private *>(opaque);
        const qint64 size = d->isFile ? d->file.size() : d->bytes.size();
        const qint64 cur = d->isFile ? d->file.pos() : d->pos;
        whence &= ~AVSEEK_FORCE;
        qint64 target;
        switch (whence) {
        case AVSEEK_SIZE:
            return size;
        case SEEK_SET:
            target = offset;
            break;
        case SEEK_CUR:
            target = cur + offset;
            break;
        case SEEK_END:
            target = size + offset;
            break;
        default:
            return AVERROR(EINVAL);
        }
        if (target < 0 || target > size)
            return AVERROR(EINVAL);
        if (d->isFile)
            return d->file.seek(target) ? target : AVERROR(EIO);
        d->pos = target;
        return target;
    }

    // FFmpeg's WAV demuxer shrinks a data chunk size that runs past the end of the file to
    // what is there, so a cut WAV looks whole; the header's own size tells.
    bool wavDataCut()
    {
        QByteArray head;
        qint64 total = 0;
        if (isFile) {
            total = file.size();
            if (file.seek(0))
                head = file.read(4096);
        } else {
            total = bytes.size();
            head = bytes.left(4096);
        }
        if (head.size() < 12 || !head.startsWith("RIFF") || head.mid(8, 4) != "WAVE")
            return false;
        for (qsizetype at = 12; at + 8 <= head.size();) {
            const quint32 size = qFromLittleEndian<quint32>(head.constData() + at + 4);
            if (head.mid(at, 4) == "data") // unknown (streamed) and zero sizes promise nothing
                return size != 0 && size != 0xFFFFFFFFu && at + 8 + qint64(size) > total;
            at += 8 + qsizetype(size) + (size & 1);
        }
        return false;
    }

    // (Re)opens the demuxer and the decoder at the start of the stream.
    bool openContexts()
    {
        close();
        fresh = true;
        if (isFile)
            file.seek(0);
        else
            pos = 0;

        auto *buffer = static_cast<unsigned char *>(av_malloc(kIoBufferSize));
        io = avio_alloc_context(buffer, kIoBufferSize, 0, this, &Private::read, nullptr,
                                &Private::seek);
        if (!io) {
            av_free(buffer);
            return fail(Error::Undecodable, QStringLiteral("out of memory"));
        }

        // Content only: an empty URL gives the probe no file name extension to lean on.
        const AVInputFormat *detected = nullptr;
        const int score = av_probe_input_buffer2(io, &detected, "", nullptr, 0, 0);
        if (score < kMinProbeScore || !detected)
            return fail(Error::NotAudio,
                        QStringLiteral("not a recognised audio container (accepted: %1)")
                            .arg(supportedFormats().join(QStringLiteral(", "))));

        fmt = avformat_alloc_context();
        fmt->pb = io;
        fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
        fmt->io_open = denyIoOpen;
        AVDictionary *options = nullptr;
        av_dict_set(&options, "format_whitelist", kFormatWhitelist, 0);
        const QString name = QString::fromUtf8(detected->name);
        int r = avformat_open_input(&fmt, "", detected, &options);
        av_dict_free(&options);
        if (r < 0) // fmt is freed by avformat_open_input on failure
            return fail(Error::NotAudio,
                        QStringLiteral("the %1 container is not accepted or "
                                       "could not be read: %2 (accepted: %3)")
                            .arg(name, avError(r), supportedFormats().join(QStringLiteral(", "))));
        r = avformat_find_stream_info(fmt, nullptr);
        if (r < 0)
            return fail(
                Error::Undecodable,
                QStringLiteral("the %1 container could not be read: %2").arg(name, avError(r)));

        for (unsigned i = 0; i < fmt->nb_streams; ++i) {
            if (stream < 0 && fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO)
                stream = int(i);
            else
                fmt->streams[i]->discard = AVDISCARD_ALL;
        }
        if (stream < 0)
            return fail(Error::NotAudio,
                        QStringLiteral("no audio stream in the %1 container").arg(name));

        AVStream *st = fmt->streams[stream];
        container = name;
        codecName = QString::fromUtf8(avcodec_get_name(st->codecpar->codec_id));
        rate = st->codecpar->sample_rate;
        channels = st->codecpar->ch_layout.nb_channels;
        stated = -1;
        // Only a duration the container carries counts: FFmpeg's guesses from the bitrate and
        // byte count, or from the first and last timestamps (MPEG program streams, off by
        // 70 ms on a 4.4 s test file), are left to measureDuration().
        if (fmt->duration_estimation_method == AVFMT_DURATION_FROM_STREAM) {
            if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
                stated = double(st->duration) * av_q2d(st->time_base);
            else if (fmt->duration != AV_NOPTS_VALUE && fmt->duration > 0)
                stated = double(fmt->duration) / AV_TIME_BASE;
        }

        const AVCodec *decoder = avcodec_find_decoder(st->codecpar->codec_id);
        if (!decoder)
            return fail(Error::Undecodable,
                        QStringLiteral("no decoder for the %1 codec").arg(codecName));
        codec = avcodec_alloc_context3(decoder);
        avcodec_parameters_to_context(codec, st->codecpar);
        codec->pkt_timebase = st->time_base;
        r = avcodec_open2(codec, decoder, nullptr);
        if (r < 0)
            return fail(
                Error::Undecodable,
                QStringLiteral("the %1 decoder failed to start: %2").arg(codecName, avError(r)));
        return true;
    }

    enum class Mode
    {
        FirstFrame, // open(): does anything decode at all?
        Measure,    // count samples, no conversion
        Convert,    // resample and hand to the sink
    };

    struct Output
    {
        int rate = 0;
        int channels = 0;
        const std::function<bool(const int16_t *, qsizetype)> *sink = nullptr;
        SwrContext *swr = nullptr;
        int inRate = 0, inFormat = -1;
        AVChannelLayout inLayout{};
        std::vector<int16_t> buffer;
        qint64 frames = 0;
        ~Output()
        {
            swr_free(&swr);
            av_channel_layout_uninit(&inLayout);
        }
    };

    // Hands `n` converted frames in the buffer to the sink in pieces of at most 100 ms.
    bool deliver(Output &out, int n)
    {
        const int piece = std::max(1, out.rate / 10);
        for (int at = 0; at < n; at += piece) {
            const int count = std::min(piece, n - at);
            if (!(*out.sink)(out.buffer.data() + qsizetype(at) * out.channels, count))
                return false;
            out.frames += count;
        }
        return true;
    }

    bool convert(Output &out, const AVFrame *frame)
    {
        AVChannelLayout layout{};
        if (frame->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || frame->ch_layout.nb_channels == 0)
            av_channel_layout_default(&layout, frame->ch_layout.nb_channels > 0
                                                   ? frame->ch_layout.nb_channels
                                                   : std::max(1, channels));
        else
            av_channel_layout_copy(&layout, &frame->ch_layout);
        if (!out.swr || out.inRate != frame->sample_rate || out.inFormat != frame->format ||
            av_channel_layout_compare(&out.inLayout, &layout) != 0) {
            swr_free(&out.swr);
            AVChannelLayout outLayout{};
            av_channel_layout_default(&outLayout, out.channels);
            const int r =
                swr_alloc_set_opts2(&out.swr, &outLayout, AV_SAMPLE_FMT_S16, out.rate, &layout,
                                    AVSampleFormat(frame->format), frame->sample_rate, 0, nullptr);
            av_channel_layout_uninit(&outLayout);
            if (r < 0 || swr_init(out.swr) < 0) {
                av_channel_layout_uninit(&layout);
                return fail(Error::Undecodable,
                            QStringLiteral("cannot resample the %1 stream").arg(codecName));
            }
            av_channel_layout_uninit(&out.inLayout);
            av_channel_layout_copy(&out.inLayout, &layout);
            out.inRate = frame->sample_rate;
            out.inFormat = frame->format;
        }
        av_channel_layout_uninit(&layout);
        const int capacity = swr_get_out_samples(out.swr, frame->nb_samples);
        out.buffer.resize(size_t(std::max(capacity, 1)) * size_t(out.channels));
        uint8_t *dst = reinterpret_cast<uint8_t *>(out.buffer.data());
        const int n =
            swr_convert(out.swr, &dst, capacity, const_cast<const uint8_t **>(frame->extended_data),
                        frame->nb_samples);
        if (n < 0)
            return fail(Error::Undecodable,
                        QStringLiteral("resampling failed: %1").arg(avError(n)));
        if (!deliver(out, n))
            return fail(Error::Cancelled, QStringLiteral("cancelled"));
        return true;
    }

    bool flushResampler(Output &out)
    {
        if (!out.swr)
            return true;
        for (;;) {
            const int capacity = std::max(swr_get_out_samples(out.swr, 0), out.rate / 10);
            out.buffer.resize(size_t(capacity) * size_t(out.channels));
            uint8_t *dst = reinterpret_cast<uint8_t *>(out.buffer.data());
            const int n = swr_convert(out.swr, &dst, capacity, nullptr, 0);
            if (n <= 0)
                return true;
            if (!deliver(out, n))
                return fail(Error::Cancelled, QStringLiteral("cancelled"));
        }
    }

    // The one loop behind open(), measureDuration() and decode(). Returns false on error.
    bool run(Mode mode, Output *out, double *seconds, const std::atomic_bool *cancel)
    {
        if (!fresh && !openContexts())
            return false;
        fresh = false;
        truncated = false;
        error = Error::None;
        message.clear();
        AVPacket *pkt = av_packet_alloc();
        AVFrame *frame = av_frame_alloc();
        bool gotFrame = false;
        int headErrors = 0;
        bool draining = false;
        bool ok = true;
        double decoded = 0;

        auto damaged = [&](int code) {
            if (gotFrame) {
                truncated = true; // a broken packet after good ones: the stream was cut
                return true;
            }
            if (++headErrors > kMaxHeadErrors) {
                ok = fail(Error::Undecodable, QStringLiteral("the %1 stream could not be "
                                                             "decoded: %2")
                                                  .arg(codecName, avError(code)));
                return false;
            }
            return true;
        };

        while (ok) {
            if (cancel && cancel->load(std::memory_order_relaxed)) {
                ok = fail(Error::Cancelled, QStringLiteral("cancelled"));
                break;
            }
            if (!draining) {
                const int r = av_read_frame(fmt, pkt);
                if (r < 0) {
                    if (r != AVERROR_EOF)
                        truncated = true; // a read error or a container cut mid-structure
                    draining = true;
                    avcodec_send_packet(codec, nullptr);
                } else if (pkt->stream_index != stream) {
                    av_packet_unref(pkt);
                    continue;
                } else {
                    const int s = avcodec_send_packet(codec, pkt);
                    av_packet_unref(pkt);
                    if (s < 0 && s != AVERROR(EAGAIN) && !damaged(s))
                        break;
                }
            }
            bool ended = false;
            for (;;) {
                const int r = avcodec_receive_frame(codec, frame);
                if (r == AVERROR(EAGAIN))
                    break;
                if (r == AVERROR_EOF) {
                    ended = true;
                    break;
                }
                if (r < 0) {
                    if (!damaged(r))
                        break;
                    if (draining) {
                        ended = true;
                        break;
                    }
                    continue;
                }
                gotFrame = true;
                if (frame->sample_rate > 0)
                    decoded += double(frame->nb_samples) / frame->sample_rate;
                if (mode == Mode::Convert && !convert(*out, frame))
                    ok = false;
                av_frame_unref(frame);
                if (!ok || mode == Mode::FirstFrame)
                    break;
            }
            if (!ok || ended || (mode == Mode::FirstFrame && gotFrame))
                break;
        }
        av_frame_free(&frame);
        av_packet_free(&pkt);
        if (!ok)
            return false;
        if (!gotFrame)
            return fail(
                Error::Undecodable,
                QStringLiteral("no audio could be decoded from the %1 stream").arg(codecName));
        if (mode == Mode::FirstFrame)
            return true;
        if (mode == Mode::Convert && !flushResampler(*out))
            return false;
        // The container promised more than there was: the file was cut short.
        if (stated > 0 && decoded < stated - std::max(0.1, stated * 0.02))
            truncated = true;
        if (container == QLatin1String("wav") && wavDataCut())
            truncated = true;
        if (seconds)
            *seconds = decoded;
        return true;
    }
};

AudioDecoder::AudioDecoder() : d(std::make_unique<Private>())
{
    silenceFfmpeg();
}

AudioDecoder::~AudioDecoder() = default;

std::unique_ptr<AudioDecoder> AudioDecoder::fromBytes(const QByteArray &bytes)
{
    std::unique_ptr<AudioDecoder> decoder(new AudioDecoder);
    decoder->d->bytes = bytes;
    return decoder;
}

std::unique_ptr<AudioDecoder> AudioDecoder::fromFile(const QString &path)
{
    std::unique_ptr<AudioDecoder> decoder(new AudioDecoder);
    decoder->d->isFile = true;
    decoder->d->file.setFileName(path);
    return decoder;
}

bool AudioDecoder::open()
{
    d->error = Error::None;
    d->message.clear();
    if (d->isFile) {
        if (!d->file.isOpen() && !d->file.open(QIODevice::ReadOnly))
            return d->fail(Error::NotAudio, QStringLiteral("cannot read %1: %2")
                                                .arg(d->file.fileName(), d->file.errorString()));
        if (d->file.size() == 0)
            return d->fail(Error::Empty, QStringLiteral("the file is empty"));
    } else if (d->bytes.isEmpty()) {
        return d->fail(Error::Empty, QStringLiteral("no audio bytes"));
    }
    if (!d->openContexts() || !d->run(Private::Mode::FirstFrame, nullptr, nullptr, nullptr))
        return false;
    d->opened = true;
    return true;
}

AudioDecoder::Error AudioDecoder::error() const
{
    return d->error;
}

QString AudioDecoder::message() const
{
    return d->message;
}

QString AudioDecoder::container() const
{
    return d->container;
}

QString AudioDecoder::codec() const
{
    return d->codecName;
}

int AudioDecoder::sourceRate() const
{
    return d->rate;
}

int AudioDecoder::sourceChannels() const
{
    return d->channels;
}

double AudioDecoder::statedDuration() const
{
    return d->stated;
}

double AudioDecoder::measureDuration(const std::atomic_bool *cancel)
{
    if (!d->opened && !open())
        return -1;
    double seconds = 0;
    if (!d->run(Private::Mode::Measure, nullptr, &seconds, cancel))
        return -1;
    return seconds;
}

qint64 AudioDecoder::decode(int rate, int channels,
                            const std::function<bool(const int16_t *, qsizetype)> &sink,
                            const std::atomic_bool *cancel)
{
    if (!d->opened && !open())
        return -1;
    if (rate <= 0 || channels < 1 || channels > 2) {
        d->fail(Error::Undecodable,
                QStringLiteral("unsupported output %1 Hz, %2 channels").arg(rate).arg(channels));
        return -1;
    }
    Private::Output out;
    out.rate = rate;
    out.channels = channels;
    out.sink = &sink;
    if (!d->run(Private::Mode::Convert, &out, nullptr, cancel))
        return -1;
    return out.frames;
}

bool AudioDecoder::truncated() const
{
    return d->truncated;
}

QStringList AudioDecoder::supportedFormats()
{
    return {QStringLiteral("mp3"),  QStringLiteral("mp4"),  QStringLiteral("mpeg"),
            QStringLiteral("mpga"), QStringLiteral("m4a"),  QStringLiteral("wav"),
            QStringLiteral("webm"), QStringLiteral("opus"), QStringLiteral("flac"),
            QStringLiteral("ogg")};
}
