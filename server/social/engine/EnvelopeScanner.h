#pragma once

#include <optional>
#include <QByteArrayView>
#include <QtGlobal>

// Finds the envelope's top-level "code" in a JSON answer that streams past in pieces, without
// holding the answer: the social pass-through bills only when the upstream's envelope says
// success (code 200 or 0), and relays the bytes as they come. Untrusted input: any
// bytes, any split, never reads outside the piece it is given (tests/social/fuzz_social_engine).
//
// The scanner checks the whole answer as JSON while following strings (escapes included),
// nesting depth and the current key at depth 1. It is Found once the top-level member "code"
// (compared after decoding escapes) has an integer value (a JSON number without a fraction or
// exponent, fitting in 64 bits) and the "," or "}" after it arrived; NotFound when the
// top-level object ended without one, or when the top-level value is not an object, or the
// first "code" holds anything else (string, fraction, object, ...), or when any byte is not
// valid JSON: a Found answer still becomes NotFound if malformed bytes follow, so
// {"code":200,"data":[1,]} is not a success. A later duplicate "code" does not change the
// answer. Until then Pending (an answer that stops early keeps what it had: the relay sees a
// cut connection itself). A UTF-8 BOM as the very first bytes and whitespace are skipped.
class EnvelopeScanner
{
public:
    enum class State
    {
        Pending,
        Found,
        NotFound
    };

    void feed(QByteArrayView piece);
    State state() const { return m_state; }
    // The code, when Found.
    std::optional<qint64> code() const;
    // True when the answer is a success envelope: Found with code 200 or 0.
    bool success() const;

private:
    // A validating JSON scanner (RFC 8259, UTF-8 checked as QJsonDocument checks it): bytes that
    // are not JSON turn any answer into NotFound for good, a Found one included, so a malformed
    // answer is never taken for success. Found is thus final only once the document has ended.
    // The state is bounded: nesting deeper than kMaxDepth (QJsonDocument's limit) is NotFound.
    static constexpr int kMaxDepth = 1024;

    void fail();
    bool push(bool array);
    bool close(bool array);
    void commitCode();

    State m_state = State::Pending;
    quint8 m_mode = 0;    // the lexical mode (enum Mode in EnvelopeScanner.cpp)
    quint8 m_sub = 0;     // progress in a BOM, literal, \u escape or UTF-8 sequence
    quint8 m_literal = 0; // which of true, false, null
    quint8 m_lo = 0x80;   // UTF-8: the range of the next continuation byte
    quint8 m_hi = 0xBF;
    quint8 m_keyPos = 0xFF;     // characters of "code" matched in a top-level key, 0xFF: no match
    bool m_inKey = false;       // the string being read is a member name
    bool m_keyIsCode = false;   // the member name just read is the first top-level "code"
    bool m_valueIsCode = false; // the value being read is that member's
    bool m_codePending = false; // its integer is complete, waiting for ',' or '}'
    bool m_negative = false;
    quint16 m_hex = 0; // the \u escape read so far
    int m_depth = 0;
    quint64 m_magnitude = 0; // the code's digits so far
    qint64 m_code = 0;
    quint64 m_arrays[kMaxDepth / 64] = {}; // bit d: the container at depth d + 1 is an array
};
