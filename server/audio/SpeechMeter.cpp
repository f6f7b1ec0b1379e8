#include "SpeechMeter.h"

#include <algorithm>
#include <bit>

namespace {

// "<size in hex>\r\n" before a chunk's bytes, "\r\n" after them.
qint64 framing(qint64 bytes)
{
    return std::max(1, (int(std::bit_width(quint64(bytes))) + 3) / 4) + 4;
}

} // namespace

void SpeechMeter::sentence(qint64 audioOffset, qint64 characters)
{
    m_sentences.push_back({audioOffset, characters});
}

void SpeechMeter::expect(qint64 audioBytes)
{
    m_expected = audioBytes;
}

void SpeechMeter::wrote(qint64 bytes, bool audio)
{
    if (bytes <= 0) // the exchange writes no chunk for no bytes
        return;
    m_chunks.push_back({bytes + framing(bytes), bytes, audio});
    if (audio)
        m_audioWritten += bytes;
}

void SpeechMeter::observe(qint64 unsent)
{
    // The unsent bytes are the newest ones: walk back from the last chunk. What lies before
    // the chunk the walk ends in was taken whole and is dropped from the list.
    qint64 rest = unsent;
    qint64 audioUnsent = 0;
    qsizetype first = qsizetype(m_chunks.size());
    while (first > 0 && rest > 0) {
        const Chunk &c = m_chunks[size_t(first - 1)];
        const qint64 inside = std::min(rest, c.wire);
        // The tail of a chunk is its CRLF, then its bytes from the end.
        const qint64 bytes = std::clamp<qint64>(inside - 2, 0, c.bytes);
        if (c.audio)
            audioUnsent += bytes;
        rest -= inside;
        --first;
        if (inside < c.wire)
            break;
    }
    if (rest > 0) // the answer's head is still unsent: none of these chunks was taken
        return;
    m_chunks.erase(m_chunks.begin(), m_chunks.begin() + first);
    m_audioTaken = std::max(m_audioTaken, m_audioWritten - audioUnsent);
}

qint64 SpeechMeter::billedCharacters(qint64 total) const
{
    if (m_audioTaken <= 0)
        return 0;
    if (!m_sentences.empty()) {
        qint64 billed = 0;
        for (const Sentence &s : m_sentences) {
            if (s.start >= m_audioTaken)
                break;
            billed += s.characters;
        }
        return std::min(billed, total);
    }
    if (m_expected > 0 && m_audioTaken < m_expected) {
        // total is at most 4,096 and the audio well under 2^40 bytes: no overflow.
        return std::min(total, (total * m_audioTaken + m_expected - 1) / m_expected);
    }
    return total;
}
