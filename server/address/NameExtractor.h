#pragma once

#include "DivisionMatcher.h"

#include <QList>
#include <QString>
#include <QStringView>

// Chinese person names in free text and shipping labels: the engine behind POST
// /v1/address/extract-name ({person_extract: [{start, end, word}]}) and the person of
// extract-express. Rules, no dictionary of names: a surname table written from public knowledge
// (the common single surnames and the compound ones: 欧阳, 司马, 诸葛, 上官...), a given name of
// one or two characters, and context that raises or lowers confidence.
//
// A candidate is a surname followed by a one- or two-character given name (or by nothing but an
// honorific). Its score adds up:
//   + a label before it: 收件人, 收货人, 联系人, 姓名, 寄件人, 我叫... (with ':', '：', '是',
//   '为');
//   + an honorific right after the surname: 王先生, 李女士, 陈小姐, 刘老师, 赵师傅;
//   + a phone number right after it (separators and phone labels such as 手机/电话 allowed);
//   + clean edges: punctuation, space, digits, the start of a division name (张三浙江省...);
//   - a Han character glued on the left that is not a label or connective (和, 与, 给...);
//   - overlap with a division name (黄山, 金华) or a common word that starts with a surname
//     character (高新, 周边, 方便, 王府井...); surnames that are everyday words (高, 金, 方, 文...)
//     need a label, an honorific or a phone to count.
// Never a name: a candidate followed by an address suffix (张江路, 李村, 王家镇), or whose given
// name holds characters names do not use (省, 市, 路, 号, 的, 收...).
//
// The word: the name as written. A surname with only an honorific keeps the honorific (王先生:
// the surname alone names nobody); a full name followed by an honorific does not (王小明先生 ->
// 王小明).
//
// Offsets are QString UTF-16 indexes, `end` exclusive. Immutable; thread-safe.
class NameExtractor
{
public:
    struct Match
    {
        qsizetype start = 0;
        qsizetype end = 0;
        QString word;
        int score = 0;         // higher is more certain; accepted matches score >= kThreshold
        bool labelled = false; // a label (收件人, 姓名...) came right before it
    };
    static constexpr int kThreshold = 3;

    explicit NameExtractor(const DivisionMatcher &matcher);

    // Accepted names, in text order, non-overlapping.
    QList<Match> extract(QStringView text) const;

    // True for a surname (single or compound) at text[pos]; *length gets its length.
    static bool surnameAt(QStringView text, qsizetype pos, qsizetype *length);

private:
    const DivisionMatcher &m_matcher;
};
