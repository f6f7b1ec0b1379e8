#include "PhoneExtractor.h"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace {

// One code point of the input, folded to the ASCII form the scanner works on.
char32_t fold(char32_t c)
{
    if (c >= 0xFF10 && c <= 0xFF19) // full-width digits
        return U'0' + (c - 0xFF10);
    if ((c >= 0xFF21 && c <= 0xFF3A) || (c >= 0xFF41 && c <= 0xFF5A)) // full-width letters
        return c - 0xFF21 + U'A';
    switch (c) {
    case 0xFF0B:
        return U'+';
    case 0xFF0D: // －
    case 0x2010: // ‐
    case 0x2011:
    case 0x2012:
    case 0x2013: // –
    case 0x2014: // —
    case 0x2015: // ―
    case 0x2212: // −
        return U'-';
    case 0xFF08:
        return U'(';
    case 0xFF09:
        return U')';
    case 0xFF0E:
        return U'.';
    case 0xFF1A:
        return U':';
    case 0x3000:
    case 0x00A0:
    case U'\t':
        return U' ';
    default:
        return c;
    }
}

bool isDigit(char32_t c)
{
    return c >= U'0' && c <= U'9';
}
bool isLetter(char32_t c)
{
    return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z');
}
char32_t lower(char32_t c)
{
    return (c >= U'A' && c <= U'Z') ? c + 32 : c;
}

struct Group
{
    qsizetype sepStart; // first index of the separator (or chunk prefix) before the digits
    qsizetype begin;    // first digit
    qsizetype end;      // one past the last digit
    bool space = false, dashDot = false, open = false, close = false, plus = false;
    qsizetype openAt = -1, plusAt = -1;
};

using Kind = PhoneExtractor::Kind;

struct Text
{
    std::vector<char32_t> cp;   // folded code points
    std::vector<qsizetype> u16; // UTF-16 index of each code point, plus the end

    // Does the folded text ending just before `pos` (after skipping label punctuation) end
    // with one of the labels?
    bool labelledAt(qsizetype pos) const
    {
        qsizetype k = pos;
        int skipped = 0;
        while (k > 0 && skipped < 4) {
            const char32_t c = cp[k - 1];
            if (c == U' ' || c == U':' || c == U'.' || c == U'为' || c == U'是' || c == U'(') {
                --k;
                ++skipped;
            } else {
                break;
            }
        }
        static const std::array<std::u32string_view, 10> labels = {
            U"电话", U"座机", U"固话",  U"传真", U"号码",
            U"热线", U"tel",  U"phone", U"fax",  U"总机"};
        for (const auto &label : labels) {
            const auto len = qsizetype(label.size());
            if (k < len)
                continue;
            bool eq = true;
            for (qsizetype x = 0; x < len && eq; ++x)
                eq = lower(cp[k - len + x]) == label[x];
            if (eq)
                return true;
        }
        return false;
    }

    // An ASCII letter run ending at `pos` that is a phone label (Tel13812345678) is allowed.
    bool letterLabelBefore(qsizetype pos) const
    {
        qsizetype k = pos;
        std::u32string word;
        while (k > 0 && isLetter(cp[k - 1]))
            word.insert(word.begin(), lower(cp[--k]));
        static const std::array<std::u32string_view, 6> ok = {U"tel", U"phone", U"mobile",
                                                              U"mob", U"fax",   U"cell"};
        for (const auto &w : ok)
            if (word == w)
                return true;
        return false;
    }

    bool startsWith(qsizetype pos, std::u32string_view s) const
    {
        if (pos + qsizetype(s.size()) > qsizetype(cp.size()))
            return false;
        for (size_t x = 0; x < s.size(); ++x)
            if (lower(cp[pos + qsizetype(x)]) != s[x])
                return false;
        return true;
    }
};

bool groupsOk(const std::vector<int> &sizes, size_t maxCount)
{
    if (sizes.empty() || sizes.size() > maxCount)
        return false;
    for (int s : sizes)
        if (s < 3)
            return false;
    return true;
}

bool mobile(std::string_view d, const std::vector<int> &sizes)
{
    return d.size() == 11 && d[0] == '1' && d[1] >= '3' && d[1] <= '9' && groupsOk(sizes, 3);
}

// Area code (with its leading 0, 3 or 4 digits by its second digit) + local number.
bool landline(std::string_view d, const std::vector<int> &sizes)
{
    if (d.size() < 10 || d[0] != '0')
        return false;
    int area = 0;
    if (d[1] == '1' && d[2] == '0')
        area = 3;
    else if (d[1] == '2')
        area = 3;
    else if (d[1] >= '3' && d[1] <= '9')
        area = 4;
    else
        return false;
    const size_t local = d.size() - size_t(area);
    if (area == 3 ? local != 8 : (local != 7 && local != 8))
        return false;
    // Local numbers start with 2-9; a separated area code also admits 1 (placeholder-style
    // numbers such as 010-12345678 are common in real text), a contiguous run does not.
    const char first = sizes.size() == 1 ? '2' : '1';
    if (d[size_t(area)] < first || d[size_t(area)] > '9')
        return false;
    if (sizes.size() == 1)
        return true; // contiguous
    if (sizes[0] != area)
        return false;
    return groupsOk(std::vector<int>(sizes.begin() + 1, sizes.end()), 2);
}

// After +86 / 0086 the area code may lose its 0: 10 / 2x + 8 digits, [3-9]xx + 7-8 digits.
bool intlLandline(std::string_view d, const std::vector<int> &sizes)
{
    if (d.empty())
        return false;
    if (d[0] == '0')
        return landline(d, sizes);
    int area = 0;
    if (d.size() >= 2 && d[0] == '1' && d[1] == '0')
        area = 2;
    else if (d[0] == '2')
        area = 2;
    else if (d[0] >= '3' && d[0] <= '9')
        area = 3;
    else
        return false;
    if (d.size() <= size_t(area))
        return false;
    const size_t local = d.size() - size_t(area);
    if (area == 2 ? local != 8 : (local != 7 && local != 8))
        return false;
    const char first = sizes.size() == 1 ? '2' : '1'; // as in landline()
    if (d[size_t(area)] < first || d[size_t(area)] > '9')
        return false;
    if (sizes.size() == 1)
        return true;
    if (sizes[0] != area)
        return false;
    return groupsOk(std::vector<int>(sizes.begin() + 1, sizes.end()), 2);
}

bool service(std::string_view d, const std::vector<int> &sizes)
{
    return d.size() == 10 && (d.substr(0, 3) == "400" || d.substr(0, 3) == "800") &&
           groupsOk(sizes, 3);
}

bool localOnly(std::string_view d, const std::vector<int> &sizes)
{
    return (d.size() == 7 || d.size() == 8) && d[0] >= '2' && d[0] <= '9' && groupsOk(sizes, 2);
}

// Removes a prefix of `n` digits from the digits and the group sizes.
std::vector<int> dropPrefix(std::vector<int> sizes, int n)
{
    while (n > 0 && !sizes.empty()) {
        if (sizes[0] <= n) {
            n -= sizes[0];
            sizes.erase(sizes.begin());
        } else {
            sizes[0] -= n;
            n = 0;
        }
    }
    return sizes;
}

struct Verdict
{
    bool ok = false;
    Kind kind = Kind::Mobile;
};

} // namespace

QList<PhoneExtractor::Match> PhoneExtractor::extract(const QString &text)
{
    Text t;
    t.cp.reserve(size_t(text.size()));
    t.u16.reserve(size_t(text.size()) + 1);
    for (qsizetype i = 0; i < text.size();) {
        const QChar c = text.at(i);
        t.u16.push_back(i);
        if (c.isHighSurrogate() && i + 1 < text.size() && text.at(i + 1).isLowSurrogate()) {
            t.cp.push_back(QChar::surrogateToUcs4(c, text.at(i + 1)));
            i += 2;
        } else {
            t.cp.push_back(fold(c.unicode()));
            ++i;
        }
    }
    t.u16.push_back(text.size());
    const auto n = qsizetype(t.cp.size());
    const auto &cp = t.cp;
    auto at = [&](qsizetype k) -> char32_t { return k >= 0 && k < n ? cp[k] : U'\0'; };

    QList<Match> out;
    auto push = [&](qsizetype s, qsizetype e, Kind kind) {
        out.append({s, e, text.mid(t.u16[s], t.u16[e] - t.u16[s]), kind});
    };

    qsizetype p = 0;
    while (p < n) {
        const char32_t c = cp[p];
        const bool starts =
            isDigit(c) || (c == U'+' && isDigit(at(p + 1))) ||
            (c == U'(' && (isDigit(at(p + 1)) || (at(p + 1) == U'+' && isDigit(at(p + 2)))));
        if (!starts) {
            ++p;
            continue;
        }

        // 1. The chunk: digit groups joined by short separator runs.
        std::vector<Group> groups;
        Group g{p, p, p};
        qsizetype q = p;
        if (cp[q] == U'(') {
            g.open = true;
            g.openAt = q++;
        }
        if (cp[q] == U'+') {
            g.plus = true;
            g.plusAt = q++;
        }
        while (true) {
            g.begin = q;
            while (q < n && isDigit(cp[q]))
                ++q;
            g.end = q;
            groups.push_back(g);
            // separator run
            qsizetype r = q;
            Group next{q, q, q};
            int dashDot = 0;
            while (r < n && r - q < 4) {
                const char32_t s = cp[r];
                if (s == U' ')
                    next.space = true;
                else if (s == U'-' || s == U'.')
                    ++dashDot;
                else if (s == U'(') {
                    next.open = true;
                    next.openAt = r;
                } else if (s == U')')
                    next.close = true;
                else if (s == U'+') {
                    next.plus = true;
                    next.plusAt = r;
                } else
                    break;
                ++r;
            }
            if (r == q || r >= n || !isDigit(cp[r]) || dashDot > 1)
                break;
            next.dashDot = dashDot == 1;
            g = next;
            q = r;
        }
        qsizetype resume = groups.back().end;

        // 2. Whole numbers out of consecutive groups, longest first.
        const auto ng = qsizetype(groups.size());
        auto spaceSplit = [&](qsizetype k) { // may a number end before group k / start at k?
            return k <= 0 || k >= ng || (groups[size_t(k)].space && !groups[size_t(k)].dashDot);
        };
        qsizetype i = 0;
        while (i < ng) {
            bool found = false;
            if (spaceSplit(i)) {
                for (qsizetype j = std::min(ng - 1, i + 4); j >= i && !found; --j) {
                    const Group &gi = groups[size_t(i)];
                    bool bad = false;
                    for (qsizetype k = i + 1; k <= j; ++k) {
                        const Group &gk = groups[size_t(k)];
                        if (gk.plus || gk.open || (gk.close && !(k == i + 1 && gi.open)))
                            bad = true;
                    }
                    if (bad)
                        continue;
                    std::string d;
                    std::vector<int> sizes;
                    for (qsizetype k = i; k <= j; ++k) {
                        const Group &gk = groups[size_t(k)];
                        for (qsizetype x = gk.begin; x < gk.end; ++x)
                            d.push_back(char(cp[x]));
                        sizes.push_back(int(gk.end - gk.begin));
                    }
                    const std::string_view dv(d);
                    // Where the match starts: '(' around a first group that is not the whole
                    // number, else '+', else the first digit.
                    const bool withParen = gi.open && j > i && groups[size_t(i + 1)].close;
                    qsizetype start = gi.begin;
                    if (gi.plus)
                        start = gi.plusAt;
                    if (withParen)
                        start = std::min(start, gi.openAt);
                    if (isLetter(at(start - 1)) && !t.letterLabelBefore(start))
                        continue;

                    Verdict v;
                    if (gi.plus || dv.substr(0, 4) == "0086") {
                        const int pre = gi.plus ? 2 : 4;
                        if (gi.plus && dv.substr(0, 2) != "86")
                            continue;
                        const auto rest = dv.substr(size_t(pre));
                        const auto rs = dropPrefix(sizes, pre);
                        if (mobile(rest, rs))
                            v = {true, Kind::Mobile};
                        else if (intlLandline(rest, rs))
                            v = {true, Kind::Landline};
                    } else if (dv.substr(0, 2) == "86" &&
                               mobile(dv.substr(2), dropPrefix(sizes, 2))) {
                        v = {true, Kind::Mobile};
                    }
                    if (!v.ok && !gi.plus) {
                        if (mobile(dv, sizes))
                            v = {true, Kind::Mobile};
                        else if (landline(dv, sizes))
                            v = {true, Kind::Landline};
                        else if (service(dv, sizes))
                            v = {true, Kind::Service};
                        else if (localOnly(dv, sizes) && t.labelledAt(start))
                            v = {true, Kind::Landline};
                    }
                    if (!v.ok)
                        continue;

                    // Extension (landlines and service numbers only).
                    qsizetype end = groups[size_t(j)].end;
                    qsizetype nextGroup = j + 1;
                    if (v.kind != Kind::Mobile) {
                        if (j + 1 < ng &&
                            groups[size_t(j + 1)].sepStart + 1 == groups[size_t(j + 1)].begin &&
                            cp[size_t(groups[size_t(j + 1)].sepStart)] == U'-') {
                            const Group &ge = groups[size_t(j + 1)];
                            if (ge.end - ge.begin <= 5 && spaceSplit(j + 2)) {
                                end = ge.end;
                                nextGroup = j + 2;
                            }
                        } else if (j + 1 == ng) {
                            qsizetype r = end;
                            if (at(r) == U' ')
                                ++r;
                            qsizetype m = -1;
                            for (std::u32string_view mk :
                                 {std::u32string_view(U"转分机"), std::u32string_view(U"分机"),
                                  std::u32string_view(U"转"), std::u32string_view(U"ext."),
                                  std::u32string_view(U"ext")}) {
                                if (t.startsWith(r, mk)) {
                                    m = r + qsizetype(mk.size());
                                    break;
                                }
                            }
                            if (m >= 0) {
                                if (at(m) == U' ' || at(m) == U':')
                                    ++m;
                                qsizetype e = m;
                                while (isDigit(at(e)) && e - m < 7)
                                    ++e;
                                if (e > m && e - m <= 6 && !isDigit(at(e)) && !isLetter(at(e))) {
                                    end = e;
                                    resume = std::max(resume, e);
                                }
                            }
                        }
                    }
                    if (!spaceSplit(nextGroup))
                        continue;
                    if (nextGroup >= ng && isLetter(at(end)))
                        continue;
                    push(start, end, v.kind);
                    found = true;
                    i = nextGroup;
                }
            }
            if (!found)
                ++i;
        }
        p = resume;
    }
    return out;
}
