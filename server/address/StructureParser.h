#pragma once

#include "DivisionMatcher.h"

#include <QList>
#include <QString>
#include <QStringList>
#include <QStringView>

// Parses a Chinese address into its elements (province, city, district, town, road, road number,
// POI, building, unit, floor, room...): the engine behind POST /v1/address/structure, also used
// by the extraction, express, correction, completion, standardization and assessment endpoints.
// Rules over the gazetteer, no machine learning. A plain library (Qt Core only, no HTTP).
//
// Offsets are QString UTF-16 indexes into the input, `end` exclusive (AddressCommon::charOffset
// turns them into the Unicode character offsets the answers use). Immutable after construction;
// one instance may serve any number of threads.
class StructureParser
{
public:
    struct Segment
    {
        QString key; // one of keys()
        qsizetype start = 0;
        qsizetype end = 0;
        QString text;
    };

    // The 23 keys, in canonical order: country, prov, city, district, devZone, town, community,
    // village, road, subRoad, roadNo, subRoadNo, poi, subPoi, houseNo, cellNo, floorNo, roomNo,
    // assist, direction, person, redundant, otherInfo.
    static const QStringList &keys();
    // The canonical spelling of a key given in any case (roadno -> roadNo); empty if unknown.
    static QString canonicalKey(QStringView key);

    explicit StructureParser(const DivisionMatcher &matcher);

    // Non-overlapping segments, in text order. Empty when nothing address-like is found. No
    // segment boundary falls inside a surrogate pair. Linear in the text's length.
    QList<Segment> parse(QStringView text) const;
    // The same, also giving the division chain the parse used for prov/city/district/town.
    QList<Segment> parse(QStringView text, DivisionMatcher::Result *divisions) const;

    // "key=value\tkey=value", in the order given.
    static QString format(const QList<Segment> &segments);

    // The first segment with `key` (canonical spelling), or null.
    static const Segment *find(const QList<Segment> &segments, QStringView key);

    const DivisionMatcher &matcher() const { return m_matcher; }

private:
    const DivisionMatcher &m_matcher;
};
