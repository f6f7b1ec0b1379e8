#pragma once

#include <deque>
#include <QtGlobal>

// What a streamed speech answer has delivered, for billing a client that leaves before its end
// (or is dropped for not reading). The route records each chunk it writes to the exchange and
// samples the exchange's unacknowledged bytes (written but not yet acknowledged by the client's
// TCP: HttpExchange::unackedBytes()) while the connection is open; the audio taken is the audio
// written minus the audio inside that tail. Chunks go out with HTTP/1.1 chunked framing (the size
// in hex, CRLF, the bytes, CRLF), which the count takes into account, so the figure is exact at
// each sample; between samples the connection may take what was unsent at the last one.
//
// The characters billed for the audio taken follow one of two rules:
//   sentences     (the local engines, which speak sentence by sentence): every sentence of
//                 which at least one byte of audio was taken is billed whole, so the figure is
//                 the characters up to and including the sentence being heard;
//   proportional  (upstream audio, converted whole): ceil(characters x audio taken / audio
//                 expected), where the expected audio is what the upstream's answer decodes to.
// No audio taken bills nothing; all of it bills every character.
class SpeechMeter
{
public:
    // Sentences: one of `characters` whose audio starts at byte `audioOffset` of the answer's
    // audio (written or still to be written).
    void sentence(qint64 audioOffset, qint64 characters);
    // Proportional: the whole answer will hold this many bytes of audio.
    void expect(qint64 audioBytes);
    // A chunk given to the exchange: `audio` false for bytes that are not audio (WAV header).
    void wrote(qint64 bytes, bool audio);
    // The exchange's unacknowledged bytes now; only while the connection is open (once it
    // closed, the count is gone and would read as everything taken).
    void observe(qint64 unsent);

    qint64 audioWritten() const { return m_audioWritten; }
    qint64 audioTaken() const { return m_audioTaken; }
    // The characters billed, of `total`, for the audio taken so far.
    qint64 billedCharacters(qint64 total) const;

private:
    struct Chunk
    {
        qint64 wire = 0; // framing included
        qint64 bytes = 0;
        bool audio = false;
    };
    struct Sentence
    {
        qint64 start = 0; // audio offset
        qint64 characters = 0;
    };
    std::deque<Chunk> m_chunks; // those not yet known to be taken whole
    std::deque<Sentence> m_sentences;
    qint64 m_audioWritten = 0;
    qint64 m_audioTaken = 0;
    qint64 m_expected = 0;
};
