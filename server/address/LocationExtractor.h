#pragma once

#include "DivisionMatcher.h"

#include <QList>
#include <QString>
#include <QStringView>

// Address fragments in free text: the engine behind POST /v1/address/extract
// ({location_extract: [{start, end, type: "LOC", word}]}), and the address part of
// extract-express. Rules over the gazetteer, no machine learning.
//
// The text is cut into pieces, each starting where the one before ended or at an anchor (the
// start of the text, after punctuation, a space, a digit run, a function word such as 在/到/住
// or a label such as 地址：):
//   - divisions: province, city, district names and short forms, towns by full name of three
//     characters or more (the DivisionMatcher's mentions, longest first). A district's short
//     form alone needs a neighbour piece or a non-Han character after it (和平年代 is no place);
//     a short form that begins a road is the road (南京东路, 朝阳北大街); after a road, a number or
//     a place, a division name is part of a name (588号宁波文化广场); names that overlap
//     (青岛市南区) continue each other;
//   - named pieces ending in a suffix: towns and villages (街道, 镇, 乡, 村, 社区, 工业园区...),
//     roads (路, 街, 大道, 巷, 胡同, 道...; the earliest suffix), places (小区, 大厦, 广场, 园区,
//     医院...; the longest). A name never starts with a unit (号, 栋...) and stops before a
//     division written in full, a Chinese numeral with a unit (一座) and Latin letters after Han
//     (大厦B座; SOHO现代城 keeps its prefix);
//   - numbers: 969号, 88弄, 3号楼, 2单元, 501室, 12层, A座, 八幢, 3-2-501, and a bare room
//     number glued to a building or a road number (52幢413, 73号1641);
//   - after a road or its number, a name without a suffix up to the end of the run (969号阿里巴巴;
//     three characters or more after a space, where two may be a person), and a stretch of a road
//     (临园路东段).
// Pieces that touch, or are separated by spaces only (dashes too between divisions: 安徽-芜湖),
// form one fragment; a fragment is kept when it has a division, a town, a road, or a place name of
// four characters or more. Phone numbers, person names (NameExtractor) and label words (手机,
// 收件人, 备注...) always end a fragment.
//
// Offsets are QString UTF-16 indexes, `end` exclusive. Immutable; thread-safe.
class LocationExtractor
{
public:
    enum class Kind
    {
        Province,
        City,
        District,
        Town, // a town, street office, village or development zone
        Road,
        RoadNo,
        Poi,
        Detail // building, unit, floor, room
    };

    struct Piece
    {
        Kind kind = Kind::Poi;
        qsizetype start = 0;
        qsizetype end = 0;
        const Gazetteer::Division *division = nullptr; // for Province, City, District, Town
    };

    struct Location
    {
        qsizetype start = 0;
        qsizetype end = 0;
        QString word;
        QList<Piece> pieces;
        // The first piece of `kind`, or null.
        const Piece *first(Kind kind) const;
    };

    // Spans (UTF-16, end exclusive) that end any fragment: phone numbers and person names the
    // caller already found. extract() finds them itself when not given.
    struct Barriers
    {
        QList<std::pair<qsizetype, qsizetype>> spans;
    };

    explicit LocationExtractor(const DivisionMatcher &matcher);

    QList<Location> extract(QStringView text) const;
    QList<Location> extract(QStringView text, const Barriers &barriers) const;

    const DivisionMatcher &matcher() const { return m_matcher; }

private:
    const DivisionMatcher &m_matcher;
};
