#include "NameExtractor.h"

#include "PhoneExtractor.h"

#include <QSet>

namespace {

// Single surnames that are rarely anything else in an address or a label.
constexpr char16_t kSurnames[] =
    u"王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏"
    u"魏吕丁任沈姚卢姜崔钟谭陆汪范廖韦贾夏付傅邹熊孟秦邱侯尹薛闫阎段雷黎史陶贺毛郝顾龚邵覃"
    u"武钱戴严莫孔汤康乔赖施洪辛柯庄詹牛颜鲁葛俞倪欧殷裴柳翟聂耿焦甘祝涂舒岳申邢伍童骆艾"
    u"霍饶季祁卜滕卫冉阮巫仇麦迟穆鲍郎符凌苗曲芦池丛晏伏褚卞闵闻寇隋庞鞠蒙甄栗荣柴湛於习"
    u"刁喻尉苟尤郁桂栾薄卓仲芮禹嵇钮虞冀岑竺茅蔺厉蒲缪郜兰幸冷荆匡鄢粟揭慕邬邝蓝游靳温裘戚"
    u"祖阚邸佘佟";
// Surnames that are also everyday words or address words (高新, 金额, 方便, 文化, 江边...):
// they count only with a label, an honorific or a phone number.
constexpr char16_t kWeakSurnames[] =
    u"高金方文江石龙白万向常易成宁齐纪宫管关包左单华强项车谷练盛房梅明平安全和于时路花"
    u"商应原连井党阳解计费占班沙吉席宿危官司封乐尚谈边秋景查晋宗丰云水海山东南北衣麻";
constexpr const char16_t *kCompoundSurnames[] = {
    u"欧阳", u"司马", u"诸葛", u"上官", u"东方", u"皇甫", u"尉迟", u"公孙", u"慕容", u"长孙",
    u"宇文", u"司徒", u"夏侯", u"令狐", u"端木", u"独孤", u"南宫", u"西门", u"轩辕", u"呼延",
    u"申屠", u"太史", u"澹台", u"公羊", u"东郭", u"百里", u"万俟", u"闻人", u"钟离", u"赫连"};

// Labels that introduce a name, longest first so 收件人 wins over 收件.
constexpr const char16_t *kLabels[] = {
    u"收件人姓名", u"收货人姓名", u"联系人姓名", u"寄件人姓名", u"收件人", u"收货人",
    u"联系人",     u"寄件人",     u"发件人",     u"收信人",     u"签收人", u"取件人",
    u"提货人",     u"客户姓名",   u"姓名",       u"名字",       u"收件",   u"收货",
    u"寄件",       u"联系",       u"户名",       u"买家",       u"客户",   u"我叫",
    u"叫做",       u"本人",       u"收方",       u"寄方",       u"找"};
// Honorifics after a surname (王先生) or a full name (王小明先生).
constexpr const char16_t *kHonorifics[] = {u"先生", u"女士", u"小姐", u"老师", u"师傅"};
// Words that end a name on its right: phone labels, labels, verbs of a label.
constexpr const char16_t *kRightWords[] = {
    u"手机", u"电话", u"联系", u"地址", u"收货", u"收件", u"寄件", u"邮编", u"座机",
    u"固话", u"电",   u"手",   u"tel",  u"Tel",  u"TEL",  u"收",   u"寄",   u"的",
    u"在",   u"住",   u"和",   u"与",   u"跟",   u"及",   u"或",   u"说",   u"是",
    u"家",   u"送",   u"转",   u"等",   u"已",   u"将",   u"会",   u"到"};
// Characters that link a name to the word before it (张三和李四, 交给王五, 请联系).
constexpr char16_t kLeftConnectives[] = u"和与跟同及给叫找是为由请向让被或、";
// Characters given names do not use: address words, function words, label words.
constexpr char16_t kNotInGivenName[] =
    u"的了是在不有这那个们省市区县路街道号楼室层单元村镇乡巷弄栋幢座院场店馆司厂站电话机手址"
    u"邮编件货收寄送快递和与跟及或说住家转等已将会到从往去来给请谢吗呢吧啊"
    u"我你他她它您人姓名字客户联系方式备注地点位置附近对面旁边";
// An address suffix right after a candidate makes it a place: 张江路, 李村, 王家镇, 高新区.
constexpr char16_t kPlaceSuffixes[] =
    u"路街道巷弄村镇乡区县市省里庄屯寨湾桥园苑府城坊堡营港口井山河湖岛洲塘坝沟桥寺宫门楼厦";
// Common words that start with a surname character (checked on the candidate's first two or
// three characters).
constexpr const char16_t *kCommonWords[] = {
    u"高新", u"高速", u"高级", u"高铁",   u"高中", u"高校", u"高层", u"高价", u"高兴", u"高度",
    u"周边", u"周末", u"周一", u"周二",   u"周三", u"周四", u"周五", u"周六", u"周日", u"周年",
    u"周转", u"周到", u"方便", u"方向",   u"方法", u"方式", u"方面", u"方案", u"王府", u"王国",
    u"黄色", u"黄金", u"金额", u"金融",   u"金色", u"李子", u"张贴", u"陈列", u"林业", u"马路",
    u"马上", u"白天", u"白色", u"安全",   u"安装", u"常用", u"于是", u"万一", u"余额", u"钱包",
    u"江边", u"海边", u"胡同", u"石头",   u"连锁", u"东西", u"中心", u"平安", u"和平", u"时间",
    u"任何", u"任务", u"明天", u"明白",   u"关于", u"关注", u"文化", u"文件", u"路口", u"路线",
    u"包裹", u"包装", u"花园", u"商场",   u"商城", u"商务", u"商品", u"温度", u"温馨", u"易碎",
    u"毛巾", u"毛衣", u"成功", u"成本",   u"全部", u"全国", u"程序", u"车站", u"宋体", u"童装",
    u"叶子", u"朱红", u"史上", u"何时",   u"何地", u"谢谢", u"许多", u"许可", u"武器", u"杜绝",
    u"苏醒", u"曾经", u"沈阳", u"孙子",   u"杨树", u"田地", u"董事", u"潘多", u"秦岭", u"龙头",
    u"季度", u"雷达", u"邮政", u"顾客",   u"顾问", u"管理", u"罗马", u"欧洲", u"欧元", u"单位",
    u"单元", u"华为", u"强烈", u"向东",   u"向西", u"向南", u"向北", u"戴着", u"严格", u"严重",
    u"孔子", u"汤圆", u"康复", u"康乐",   u"乔迁", u"施工", u"洪水", u"柯南", u"庄园", u"牛奶",
    u"牛肉", u"颜色", u"葛根", u"倪家",   u"殷切", u"柳树", u"焦点", u"甘肃", u"祝福", u"舒适",
    u"岳父", u"岳母", u"童年", u"艾滋",   u"霍乱", u"卫生", u"卫视", u"麦当", u"迟到", u"穆斯",
    u"符合", u"凌晨", u"苗木", u"曲线",   u"池塘", u"伏特", u"闻到", u"庞大", u"蒙古", u"荣誉",
    u"柴油", u"冷藏", u"冷冻", u"兰州",   u"幸福", u"匡威", u"揭阳", u"慕尼", u"游戏", u"游泳",
    u"蓝色", u"邱比", u"钟表", u"钟楼",   u"陆地", u"陆续", u"范围", u"廖廓", u"韦伯", u"贾汪",
    u"夏天", u"夏季", u"付款", u"付费",   u"傅里", u"邹城", u"熊猫", u"孟加", u"秦皇", u"侯马",
    u"尹湛", u"段落", u"黎明", u"史诗",   u"陶瓷", u"贺卡", u"龚滩", u"邵阳", u"武汉", u"武昌",
    u"钱塘", u"莫干", u"莫斯", u"梁山",   u"唐山", u"唐装", u"宋城", u"彭水", u"曾都", u"邓州",
    u"蔡甸", u"叶县", u"程度", u"魏县",   u"吕梁", u"丁香", u"任丘", u"沈家", u"姚安", u"卢湾",
    u"姜堰", u"崔家", u"汪清", u"徐汇",   u"徐州", u"孙家", u"朱家", u"胡椒", u"郭家", u"何处",
    u"林场", u"罗湖", u"郑州", u"黄埔",   u"黄浦", u"黄岛", u"黄山", u"赵县", u"吴中", u"吴江",
    u"周口", u"张家", u"李家", u"王府井", u"王家", u"刘家", u"陈家", u"杨家", u"马家", u"高家",
    u"余杭", u"萧山", u"谢家"};

bool isHan(QChar c)
{
    const char16_t u = c.unicode();
    return (u >= 0x4E00 && u <= 0x9FFF) || (u >= 0x3400 && u <= 0x4DBF);
}

bool contains(const char16_t *set, QChar c)
{
    for (const char16_t *p = set; *p; ++p) {
        if (*p == c.unicode())
            return true;
    }
    return false;
}

bool startsWithAt(QStringView text, qsizetype pos, QStringView word)
{
    return pos >= 0 && pos + word.size() <= text.size() && text.mid(pos, word.size()) == word;
}

const QSet<QStringView> &commonWords()
{
    static const QSet<QStringView> words = [] {
        QSet<QStringView> s;
        for (const char16_t *w : kCommonWords)
            s.insert(QStringView(w));
        return s;
    }();
    return words;
}

// Separators allowed between a name and what follows or precedes it.
bool isSoftSeparator(QChar c)
{
    return c.isSpace() || c == u':' || c == u'：' || c == u',' || c == u'，' || c == u'/' ||
           c == u'(' || c == u')' || c == u'（' || c == u')' || c == u'-' || c == u'|' ||
           c == u'、' || c == u';' || c == u'；' || c == u'【' || c == u'】' || c == u'[' ||
           c == u']';
}

// The UTF-16 ranges of the phone numbers (PhoneExtractor answers in code points).
QList<std::pair<qsizetype, qsizetype>> phoneRanges(QStringView text)
{
    QList<std::pair<qsizetype, qsizetype>> out;
    const QString copy = text.toString();
    qsizetype from = 0;
    for (const PhoneExtractor::Match &m : PhoneExtractor::extract(copy)) {
        const qsizetype at = copy.indexOf(m.word, from);
        if (at < 0)
            continue;
        out.append({at, at + m.word.size()});
        from = at + m.word.size();
    }
    return out;
}

} // namespace

NameExtractor::NameExtractor(const DivisionMatcher &matcher) : m_matcher(matcher) {}

bool NameExtractor::surnameAt(QStringView text, qsizetype pos, qsizetype *length)
{
    if (pos < 0 || pos >= text.size())
        return false;
    for (const char16_t *c : kCompoundSurnames) {
        if (startsWithAt(text, pos, QStringView(c))) {
            *length = 2;
            return true;
        }
    }
    if (contains(kSurnames, text[pos]) || contains(kWeakSurnames, text[pos])) {
        *length = 1;
        return true;
    }
    return false;
}

QList<NameExtractor::Match> NameExtractor::extract(QStringView text) const
{
    QList<Match> out;
    if (text.isEmpty())
        return out;
    const auto phones = phoneRanges(text);
    // Divisions that guard (黄山, 金华) or end (张三浙江省) a name: provinces, cities, districts
    // and towns by full name.
    struct Place
    {
        qsizetype first;
        qsizetype second;
        bool strong; // a full name, or a province's or city's short form
    };
    QList<Place> places;
    for (const DivisionMatcher::Mention &m : m_matcher.mentions(text)) {
        if (m.division->level == Gazetteer::Level::Town && m.shortForm)
            continue;
        places.append(
            {m.start, m.end, !m.shortForm || m.division->level <= Gazetteer::Level::City});
    }
    const auto placeStartsAt = [&](qsizetype pos) {
        for (const auto &p : places) {
            if (p.first == pos)
                return true;
        }
        return false;
    };
    // -4 when a division starts at the surname (黄山, 金华), -1 when one starts inside the given
    // name (李秀英 holds 秀英, a district's short form), 0 otherwise.
    const auto placePenalty = [&](qsizetype s, qsizetype e) {
        int penalty = 0;
        for (const auto &p : places) {
            if (p.first == s || (p.first < s && p.second > s))
                return p.strong ? -4 : -2; // 邵东 is a county and a name
            if (p.first < e && s < p.second)
                penalty = -1;
        }
        return penalty;
    };
    const auto insidePhone = [&](qsizetype pos) {
        for (const auto &p : phones) {
            if (pos >= p.first && pos < p.second)
                return true;
        }
        return false;
    };
    // A phone starts after `pos`, past separators and a phone label.
    const auto phoneAfter = [&](qsizetype pos) {
        qsizetype i = pos;
        for (int guard = 0; guard < 6 && i < text.size(); ++guard) {
            while (i < text.size() && (isSoftSeparator(text[i]) || (i == pos && text[i] == u'收')))
                ++i;
            for (const auto &p : phones) {
                if (p.first == i)
                    return true;
            }
            bool label = false;
            for (const char16_t *w :
                 {u"手机号码", u"手机号", u"手机", u"电话号码", u"电话", u"联系电话", u"联系方式",
                  u"座机", u"tel", u"Tel", u"TEL", u"电", u"号码"}) {
                const QStringView word(w);
                if (startsWithAt(text, i, word)) {
                    i += word.size();
                    label = true;
                    break;
                }
            }
            if (!label)
                return false;
        }
        return false;
    };
    const auto phoneBefore = [&](qsizetype pos) {
        qsizetype i = pos;
        while (i > 0 && isSoftSeparator(text[i - 1]))
            --i;
        for (const auto &p : phones) {
            if (p.second == i)
                return true;
        }
        return false;
    };
    // The label ending right before `pos` (after optional separators), or -1.
    const auto labelBefore = [&](qsizetype pos) {
        qsizetype i = pos;
        while (i > 0 &&
               (isSoftSeparator(text[i - 1]) || text[i - 1] == u'是' || text[i - 1] == u'为'))
            --i;
        for (const char16_t *l : kLabels) {
            const QStringView label(l);
            if (startsWithAt(text, i - label.size(), label))
                return true;
        }
        return false;
    };
    const auto rightWordAt = [&](qsizetype pos) {
        for (const char16_t *w : kRightWords) {
            if (startsWithAt(text, pos, QStringView(w)))
                return true;
        }
        return false;
    };
    const auto honorificAt = [&](qsizetype pos) -> qsizetype {
        for (const char16_t *h : kHonorifics) {
            if (startsWithAt(text, pos, QStringView(h)))
                return QStringView(h).size();
        }
        return 0;
    };

    qsizetype pos = 0;
    while (pos < text.size()) {
        qsizetype surname = 0;
        if (!isHan(text[pos]) || insidePhone(pos) || !surnameAt(text, pos, &surname)) {
            ++pos;
            continue;
        }
        const bool compound = surname == 2;
        const bool weak = !compound && !contains(kSurnames, text[pos]);
        const QChar left = pos > 0 ? text[pos - 1] : QChar(u' ');
        const bool labelled = labelBefore(pos);
        int leftScore = 0;
        if (labelled)
            leftScore = 4;
        else if (!isHan(left) || contains(kLeftConnectives, left))
            leftScore = 1;
        else
            leftScore = -2;

        Match best;
        best.score = -100;
        // Given-name lengths 0 (honorific only), 1, 2.
        for (qsizetype given = 0; given <= 2; ++given) {
            const qsizetype end = pos + surname + given;
            if (end > text.size())
                break;
            bool valid = true;
            for (qsizetype k = pos + surname; k < end; ++k) {
                if (!isHan(text[k]) || contains(kNotInGivenName, text[k]))
                    valid = false;
            }
            if (!valid)
                break; // a longer name would hold the same character
            if (given > 0 && honorificAt(pos + surname))
                break; // 王先生 is the surname and an honorific, not a given name
            int score = leftScore + (compound ? 2 : weak ? -1 : 1);
            qsizetype wordEnd = end;
            const qsizetype honorific = honorificAt(end);
            if (given == 0) {
                if (!honorific)
                    continue;
                wordEnd = end + honorific;
                score += 4;
            } else if (honorific) {
                score += 3;
            }
            const QChar right = wordEnd < text.size() ? text[wordEnd] : QChar(u' ');
            const bool rightClean = !isHan(right);
            if (given > 0 && !honorific) {
                if (contains(kPlaceSuffixes, right))
                    continue; // 张江路, 李村
                if (rightClean || placeStartsAt(end))
                    score += 1; // 张三 13..., 张三浙江省...
                else if (!rightWordAt(end))
                    continue; // glued to more Han text: not where the name ends
                if (startsWithAt(text, end, u"收"))
                    score += 2; // 张三收: the receiver's mark
            }
            if (phoneAfter(wordEnd))
                score += 3;
            else if (phoneBefore(pos))
                score += 1;
            // A label makes a place-like name likelier a person's (收件人：高明).
            const int place = placePenalty(pos, end) / (labelled ? 2 : 1);
            if (surname == 1 && given == 2 && commonWords().contains(text.mid(pos, 3)))
                score -= 4; // 王府井
            else if (surname == 1 && given >= 1 && commonWords().contains(text.mid(pos, 2)))
                score -= given == 1 ? 4 : 2; // 汤圆 is food, 汤圆圆 may be a person
            else
                score += place;
            if (given == 2 && surname == 1 && commonWords().contains(text.mid(pos + 1, 2)))
                score -= 2; // 王周边?
            const bool strongContext = labelled || honorific || phoneAfter(wordEnd);
            if (weak && !strongContext)
                continue;
            // Prefer the longer candidate when both fit (张三丰 over 张三).
            if (score >= best.score) {
                best.start = pos;
                best.end = wordEnd;
                best.score = score;
                best.labelled = labelled;
            }
        }
        if (best.score >= kThreshold) {
            best.word = text.mid(best.start, best.end - best.start).toString();
            out.append(best);
            pos = best.end;
        } else {
            ++pos;
        }
    }
    return out;
}
