#pragma once

#include "DivisionMatcher.h"

#include <QHash>
#include <QList>
#include <QString>
#include <QStringView>

class Pinyin;

// Corrects misspelled or wrong-character division names in an address (杭洲 -> 杭州, 余航区 ->
// 余杭区): the engine behind POST /v1/address/correct, also used by standardize and assessment.
// A plain library (Qt Core only, no HTTP).
//
// A correction replaces exactly one character of a span that is not itself the name of any
// division with the character that makes it a division's full name or short form, and only when:
//  - the two characters share a pinyin reading (toneless, any reading: 杭/航/行 hang, 州/洲/舟
//    zhou); the wrong-character errors of typed Chinese are homophones, and requiring one keeps
//    ordinary words that happen to differ from a name by one character alone;
//  - the suffix of a full name is written as it is (余杭县 is not "corrected" to 余杭区: a
//    suffix change is a renamed division, not a typo);
//  - the division fits the chain the rest of the text resolves to: directly below a level that
//    is named (浙江省杭洲市), or above the level that is named (杭洲余杭区); a short form must
//    touch that named level (only spaces or punctuation between), since two characters inside
//    a longer word (银河商务) are not a name; a division off the chain is never proposed. When
//    no other division is named, only a full name (up to district level) is corrected, and only
//    when exactly one division is that close (余航区 -> 余杭区; a lone 杭洲 is left alone: two
//    characters with nothing to confirm them are as often part of a word);
//  - towns are looked for only among the children of the resolved district (or of a city
//    without districts), so a town is corrected only with its parent named;
//  - a short form directly followed by a road suffix (路, 街, 巷...) is a street name, left alone.
// Corrections are found in rounds (a corrected city lets its misspelled district be found next),
// and each one is kept only if DivisionMatcher, run over the corrected text, puts the division
// in its chain. A division the chain already names may be corrected again elsewhere (an address
// pasted twice has its misspelling twice).
//
// Offsets are QString UTF-16 indexes; a correction never changes the length of the text, so they
// hold in the input and in the corrected text alike. Immutable after construction; one instance
// may serve any number of threads.
class AddressCorrector
{
public:
    using Division = Gazetteer::Division;
    using Level = Gazetteer::Level;

    struct Correction
    {
        qsizetype start = 0; // UTF-16 index, in the input and the corrected text alike
        qsizetype end = 0;   // exclusive
        QString from;        // as written
        QString to;          // the division's full name or short form, as the text used it
        const Division *division = nullptr;
        bool shortForm = false;
    };

    struct Reading
    {
        QString text;                      // the corrected text, same length as the input
        QList<Correction> corrections;     // in text order; empty: nothing to correct
        DivisionMatcher::Result divisions; // DivisionMatcher over `text`
    };

    AddressCorrector(const DivisionMatcher &matcher, const Pinyin &pinyin);

    // The readings of `text`, best first, at most `maxReadings` (>= 1): the first applies every
    // correction found; the others each swap one correction for an equally good alternative
    // (another division as close to what is written). Always one reading at least: the text
    // unchanged when there is nothing to correct.
    QList<Reading> correct(QStringView text, int maxReadings = 3) const;

    // True when the two characters share a toneless pinyin reading.
    bool homophones(QChar a, QChar b) const;

    // The structure key of a level: prov, city, district, town.
    static QString levelKey(Level level);

    const DivisionMatcher &matcher() const { return m_matcher; }

private:
    struct Entry
    {
        const Division *division;
        bool shortForm;
    };
    struct Candidate
    {
        qsizetype start = 0;
        qsizetype length = 0;
        const Division *division = nullptr;
        bool shortForm = false;
        int score = 0;
    };

    QList<Candidate> candidates(QStringView text, const DivisionMatcher::Result &chain) const;
    void addCandidate(QList<Candidate> &out, QStringView text, qsizetype start, qsizetype length,
                      const Division *d, bool shortForm, const DivisionMatcher::Result &chain,
                      int alternatives) const;
    // Applies `picked` to `text` and keeps those the matcher confirms; fills `reading`.
    void settle(Reading &reading, QList<Correction> picked) const;

    const DivisionMatcher &m_matcher;
    const Pinyin &m_pinyin;
    // Names of provinces, cities and districts (full and short) with one character position
    // blanked (kWildcard): a one-character substitution is a hash lookup.
    QHash<QString, QList<Entry>> m_oneOff;
    qsizetype m_maxLength = 0;
};
