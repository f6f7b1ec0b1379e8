#pragma once

#include "StructureParser.h"

#include <QList>
#include <QString>
#include <QStringList>
#include <QStringView>

// Completes a parsed address with the divisions it leaves out: the engine behind POST
// /v1/address/complete and the completion half of standardize. A plain library (Qt Core only).
//
// The text is parsed by StructureParser; the division chain it resolved (DivisionMatcher) gives
// every level above the most specific one named, so a district or a town alone fills in its
// city and province (余杭区 -> 浙江省 杭州市 余杭区). The town is filled when it is the only one
// the text can mean: DivisionMatcher found it (its full name, or its short form after its
// district: 余杭区五常 -> 五常街道). The gazetteer stops at towns, so a town is never guessed
// from a road or a POI; and a town's short form that ends like a road and is followed by a road
// number (上海黄浦区南京东路200号, 南京东路 also naming 南京东路街道) is read as the road, the
// town then left unknown. Division values are rewritten to their full official names (余杭 ->
// 余杭区); the city of a municipality or of a county-level city directly under a province is
// shown as the province's name, as division-code does. Other segments are kept as parsed, except
// `redundant` (noise by definition). Segments come out in the canonical key order
// (StructureParser::keys()), text order within a key.
//
// Immutable after construction; one instance may serve any number of threads.
class AddressCompleter
{
public:
    using Segment = StructureParser::Segment;

    struct Result
    {
        QList<Segment> segments;           // filled levels have start = end = -1
        DivisionMatcher::Result divisions; // the chain used
        QStringList filled;                // keys added, canonical order
    };

    explicit AddressCompleter(const StructureParser &parser);

    Result complete(QStringView text) const;

    // The standard one-line address: the values in order, without the keys that are not part of
    // an address (isNoise) and without a city that repeats the province (北京市北京市).
    static QString standardText(const QList<Segment> &segments);
    // country, assist, direction, person, redundant, otherInfo.
    static bool isNoise(QStringView key);

private:
    const StructureParser &m_parser;
};
