// analyzeReference(): the measurements behind the approximate voice cloning.
#include "SpeechSynthesizer.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {
constexpr double kMinF0 = 60;
constexpr double kMaxF0 = 400;
// Below this normalised autocorrelation a frame is taken as unvoiced.
constexpr double kVoicedCorrelation = 0.6;
} // namespace

ReferenceVoice analyzeReference(const int16_t *samples, qsizetype count, int rate)
{
    ReferenceVoice result;
    if (!samples || count <= 0 || rate <= 0)
        return result;
    result.seconds = double(count) / rate;

    // Pitch needs no more than ~16 kHz: average groups of samples to keep the cost low.
    const int step = std::max(1, rate / 16000);
    const int fs = rate / step;
    std::vector<float> x(size_t(count / step));
    for (size_t i = 0; i < x.size(); ++i) {
        float sum = 0;
        for (int k = 0; k < step; ++k)
            sum += samples[i * size_t(step) + size_t(k)];
        x[i] = sum / step / 32768.0f;
    }
    const int hop = fs / 100;          // 10 ms frames
    const int window = fs * 40 / 1000; // 40 ms analysis window
    const int minLag = int(fs / kMaxF0);
    const int maxLag = int(fs / kMinF0);
    if (hop <= 0 || x.size() < size_t(window + maxLag))
        return result;
    const size_t frames = (x.size() - size_t(window + maxLag)) / size_t(hop);

    std::vector<double> db(frames);
    for (size_t f = 0; f < frames; ++f) {
        double e = 0;
        for (int i = 0; i < window; ++i) {
            const double v = x[f * size_t(hop) + size_t(i)];
            e += v * v;
        }
        db[f] = 10 * std::log10(e / window + 1e-12);
    }
    const double loudest = *std::max_element(db.begin(), db.end());
    // Speech: within 35 dB of the loudest frame, and above a floor that digital silence and
    // quiet room noise stay under.
    const double threshold = std::max(loudest - 35, -55.0);

    std::vector<double> f0(frames, 0);
    std::vector<double> r(size_t(maxLag + 2));
    for (size_t f = 0; f < frames; ++f) {
        if (db[f] < threshold)
            continue;
        const float *a = x.data() + f * size_t(hop);
        double e0 = 0;
        for (int i = 0; i < window; ++i)
            e0 += double(a[i]) * a[i];
        double best = 0;
        for (int lag = minLag - 1; lag <= maxLag + 1; ++lag) {
            double num = 0, e1 = 0;
            for (int i = 0; i < window; ++i) {
                num += double(a[i]) * a[i + lag];
                e1 += double(a[i + lag]) * a[i + lag];
            }
            r[size_t(lag)] = num / std::sqrt(e0 * e1 + 1e-12);
            if (lag >= minLag && lag <= maxLag)
                best = std::max(best, r[size_t(lag)]);
        }
        if (best < kVoicedCorrelation)
            continue;
        // The shortest period close to the best: a multiple of the period scores as well, and
        // taking it would halve the pitch.
        for (int lag = minLag; lag <= maxLag; ++lag) {
            const double c = r[size_t(lag)];
            if (c >= 0.9 * best && c >= r[size_t(lag - 1)] && c >= r[size_t(lag + 1)]) {
                const double prev = r[size_t(lag - 1)], next = r[size_t(lag + 1)];
                const double denom = prev - 2 * c + next;
                const double shift = denom != 0 ? 0.5 * (prev - next) / denom : 0;
                f0[f] = fs / (lag + std::clamp(shift, -0.5, 0.5));
                break;
            }
        }
    }

    // Mean over voiced frames near the median, so a few octave slips do not drag it.
    std::vector<double> voiced;
    for (double v : f0) {
        if (v > 0)
            voiced.push_back(v);
    }
    if (!voiced.empty()) {
        std::vector<double> sorted = voiced;
        std::nth_element(sorted.begin(), sorted.begin() + long(sorted.size() / 2), sorted.end());
        const double median = sorted[sorted.size() / 2];
        double sum = 0;
        int n = 0;
        for (double v : voiced) {
            if (v > median / 1.5 && v < median * 1.5) {
                sum += v;
                ++n;
            }
        }
        result.meanPitchHz = n ? sum / n : median;
    }

    // Syllables: peaks of the smoothed energy envelope on voiced frames, each separated from
    // the previous one by a dip of at least 3 dB (vowel nuclei).
    std::vector<double> env(frames);
    for (size_t f = 0; f < frames; ++f) {
        double sum = 0;
        int n = 0;
        for (size_t k = f >= 2 ? f - 2 : 0; k <= std::min(frames - 1, f + 2); ++k, ++n)
            sum += db[k];
        env[f] = sum / n;
    }
    size_t speechFrames = 0;
    for (size_t f = 0; f < frames; ++f)
        speechFrames += db[f] >= threshold ? 1 : 0;
    auto isVoiced = [&](size_t f) {
        for (size_t k = f >= 3 ? f - 3 : 0; k <= std::min(frames - 1, f + 3); ++k) {
            if (f0[k] > 0)
                return true;
        }
        return false;
    };
    std::vector<size_t> peaks;
    for (size_t f = 1; f + 1 < frames; ++f) {
        if (!(env[f] > env[f - 1] && env[f] >= env[f + 1]) || env[f] < threshold || !isVoiced(f))
            continue;
        if (peaks.empty()) {
            peaks.push_back(f);
            continue;
        }
        const size_t last = peaks.back();
        const double dip = *std::min_element(env.begin() + long(last), env.begin() + long(f));
        if (env[last] - dip >= 3 && env[f] - dip >= 3)
            peaks.push_back(f);
        else if (env[f] > env[last])
            peaks.back() = f; // the same nucleus, a higher top
    }
    if (speechFrames > 0)
        result.syllablesPerSecond = double(peaks.size()) / (speechFrames * 0.01);
    return result;
}
