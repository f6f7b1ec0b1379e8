#pragma once

#include "LocationExtractor.h"
#include "NameExtractor.h"

#include <QString>
#include <QStringView>

// A shipping label (收件人 张三 138... 浙江省杭州市余杭区文一西路969号 阿里巴巴西溪园区) read into
// the fields of POST /v1/address/extract-express: person, phone, province, city, district,
// road, road number, POI. The parts may come in any order, with or without labels, with noise
// around them (快递单号, 备注, emoji, punctuation).
//
// How the fields are chosen:
//   - person: a name from NameExtractor; one introduced by a receiver label (收件人, 收货人,
//     联系人, 姓名...) wins over one introduced by a sender label (寄件人, 发件人), then the
//     highest score, then the first. 王先生 stays 王先生 (see NameExtractor).
//   - phone: the number as written (PhoneExtractor), the first after the chosen person, else the
//     first in the text; a mobile wins over a landline.
//   - address: the longest address fragment (LocationExtractor) that no sender label introduces.
//     prov/city/district: the names as written when the label has them (杭州 stays 杭州); the
//     levels above the most specific one written are filled in from the division resolution
//     (DivisionMatcher) with their full names, since a courier needs them (余杭区 alone gives
//     浙江省, 杭州市, 余杭区). For a municipality the city is the municipality (北京市 北京市).
//     A level below the most specific one written is never invented, and nothing is filled in
//     when the division is ambiguous (朝阳区 alone is in Beijing and in Changchun). The divisions
//     are resolved over the fragment's division pieces only (588号宁波文化广场 does not make
//     宁波 the city); a label between the divisions and the street (所在地区: ... 详细地址: ...)
//     does not split the address.
//   - road, road number, POI: the fragment's first road (文一西路), the number after it (969号),
//     the first named place after them (阿里巴巴西溪园区); building, unit and room are not part
//     of the POI.
// Every field is "" when absent. Immutable; thread-safe.
class ExpressExtractor
{
public:
    struct Result
    {
        QString person;
        QString phone;
        QString province;
        QString city;
        QString district;
        QString road;
        QString roadNo;
        QString poi;
    };

    ExpressExtractor(const NameExtractor &names, const LocationExtractor &locations);

    Result extract(QStringView text) const;

private:
    const NameExtractor &m_names;
    const LocationExtractor &m_locations;
};
