#pragma once

#include <QList>
#include <QString>

// Phone numbers in free Chinese text, for the offline address engine (POST
// /v1/address/extract-phone: {phone_extract: [{start, end, word}]}). A plain
// library: no HTTP, no I/O, no regular expressions; one linear scan per call, stateless and
// thread-safe.
//
// Offsets count Unicode characters (code points): a surrogate pair (e.g. U+20BB7 𠮷) is ONE
// character, so `start`/`end` differ from QString (UTF-16) indexes after such a character.
// `end` is exclusive; `word` is the exact substring of the input (full-width digits and
// separators kept as written).
//
// Recognised (full-width digits ０-９ and full-width '＋', '－', '（', '）', '．', the dashes
// '—' '–' '‐' and the ideographic space are read as their ASCII forms):
//   - Mainland mobiles: 1[3-9] + 9 digits, contiguous or split into at most three groups of at
//     least three digits (138 1234 5678, 138-1234-5678, 138.1234.5678).
//   - The same with a country prefix: +86, (+86), 0086, or a bare 86 (+86 138..., 8613812345678).
//   - Landlines with an area code: 010 / 02x + 8 digits, 0[3-9]xx + 7 or 8 digits, written
//     contiguously (057188886666), with a separator, or with the area code in parentheses
//     ((0571)8888-6666); the local number may be split once (8888 6666) and starts with 2-9
//     (also 1 when the area code is separated: 010-12345678; never in a contiguous run). With
//     +86/0086 the area code may drop its 0 (+86 571 8888 6666, +86-10-12345678). An extension is
//     part of the match: 转123, 分机123, 转分机123, ext123, ext.123, or -123 (1-6 digits; '-' form
//     1-5 digits).
//   - 400/800 service numbers: 10 digits starting 400 or 800 in at most three groups of >= 3
//     (400-820-8820, 4008208820, 800 810 8888).
//   - Landlines WITHOUT an area code (7 or 8 digits starting 2-9) only when directly labelled:
//     电话, 座机, 固话, 传真, 号码, 热线, tel, phone, fax (case-insensitive), optionally followed
//     by ':', '：', '.', '为', '是' or spaces. Unlabelled 7-8 digit runs are never matched (they
//     are as often zip-like codes, amounts or dates).
//
// Never matched: any part of a longer digit run (ID card numbers, order numbers, 10/12-digit
// runs), digits glued to ASCII letters (except the labels tel/phone/mobile/mob/fax/cell right
// before the number), and a number joined to other digits by '-' or '.' (dates such as
// 2023-05-12, prices such as 13800.50, 138-1234-5678-9). Numbers separated only by spaces are
// split into separate matches when each part is a whole number (13812345678 13987654321).
class PhoneExtractor
{
public:
    enum class Kind
    {
        Mobile,
        Landline,
        Service
    };

    struct Match
    {
        qsizetype start = 0; // in code points
        qsizetype end = 0;   // exclusive, in code points
        QString word;
        Kind kind = Kind::Mobile;
    };

    static QList<Match> extract(const QString &text);
};
