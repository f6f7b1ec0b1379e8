#pragma once

#include <optional>
#include <QByteArrayView>
#include <QtGlobal>

// Finds the envelope's top-level "code" in a JSON answer that streams past in pieces, without
// holding the answer: the social pass-through bills only when the upstream's envelope says
// success (spec 2.6: code 200 or 0), and relays the bytes as they come. Untrusted input: any
// bytes, any split, never reads outside the piece it is given (fuzz_envelope_scanner).
//
// The scanner follows strings (escapes included), nesting depth and the current key at depth 1.
// It is Found once the top-level member "code" has an integer value (a JSON number without a
// fraction or exponent, fitting in 64 bits); NotFound when the top-level object ended without
// one, or when the top-level value is not an object, or "code" holds anything else (string,
// fraction, object, ...). A later duplicate "code" does not change a Found answer. Until then
// Pending. Whitespace before the document and a UTF-8 BOM are skipped.
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
    State m_state = State::Pending;
    // Implementation state (the helper that writes EnvelopeScanner.cpp owns these members).
    int m_depth = 0;
    int m_mode = 0;
    bool m_escape = false;
    bool m_keyIsCode = false;
    bool m_inKey = false;
    int m_keyPos = 0;
    qint64 m_value = 0;
    bool m_negative = false;
    int m_digits = 0;
    qint64 m_code = 0;
    int m_bom = 0;
};
