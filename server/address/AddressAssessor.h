#pragma once

#include "AddressCompleter.h"
#include "AddressCorrector.h"

#include <QByteArrayView>
#include <QHash>
#include <QList>
#include <QString>
#include <QStringView>

// Checks whether a text is a usable address and says what is wrong with it: the engine behind
// POST /v1/address/assessment. A plain library (Qt Core only, no HTTP).
//
// Findings (code: when), messages in English, each naming the text at fault:
//   NOT_ADDRESS          no division, road, place, community or number found at all
//   REGION_INCONSISTENT  a province, city or district named off the resolved chain (杭州市海淀区)
//   AREA_CODE_MISMATCH   a landline's area code belongs to another city than the address
//   PHONE_DIGITS         a 1[3-9]... digit run of 10 or 12 digits (a mobile has 11)
//   ZIP_DIGITS           邮编/邮政编码 followed by a digit run that is not 6 digits long
//   REGION_MISSPELLED    a division name AddressCorrector corrects (杭洲 -> 杭州)
//   MISSING_REGION       a road or place but no division to place it
//   MISSING_DISTRICT     the divisions stop above the district (杭州市文一西路)
//   MISSING_ROAD         no road, street, community, village, POI or development zone
//   MISSING_ROAD_NUMBER  a road without a number (and no POI or building to stand for it)
// The assessment code sums them up, the most serious first: NOT_ADDRESS, INCONSISTENT
// (REGION_INCONSISTENT, AREA_CODE_MISMATCH), INVALID_NUMBER (PHONE_DIGITS, ZIP_DIGITS),
// MISSPELLED, INCOMPLETE (MISSING_*), OK (no findings).
//
// The structure checks run on the corrected text (a misspelled city still places the address);
// corrections never change the length, so offsets hold in the input. Offsets are QString UTF-16
// indexes, -1 when a finding has no span. Immutable once built; thread-safe.
class AddressAssessor
{
public:
    static constexpr const char *kAreaCodesPath = ":/switchyard/address/area-codes.tsv";

    struct Finding
    {
        QString code;
        QString message;
        qsizetype start = -1; // UTF-16 index into the text, -1 for the address as a whole
        qsizetype end = -1;   // exclusive
    };
    struct Assessment
    {
        QString code;
        QList<Finding> findings;
    };
    struct AreaCode
    {
        qint64 division = 0; // city, county-level city or province the code serves
        QString name;        // the division's name as the table writes it
        QString areaCode;    // with its leading 0: 0571
    };

    AddressAssessor(const AddressCorrector &corrector, const AddressCompleter &completer);

    // Reads resources/address/area-codes.tsv (division code, name, area code; '#' comments);
    // false with a message in *error on a malformed line.
    bool loadAreaCodes(QByteArrayView tsv, QString *error = nullptr);
    const QList<AreaCode> &areaCodes() const { return m_areaCodes; }

    Assessment assess(QStringView text) const;

    // The area code of a landline as PhoneExtractor matches it (0571-88886666, +86 571 8888
    // 6666, (010)12345678); empty for mobiles, service numbers and numbers without one.
    static QString areaCodeOf(QStringView phone);
    // The summary code for a finding code.
    static QString category(QStringView findingCode);

private:
    const AddressCorrector &m_corrector;
    const AddressCompleter &m_completer;
    QList<AreaCode> m_areaCodes;
    QHash<QString, QList<qint64>> m_byAreaCode;
};
