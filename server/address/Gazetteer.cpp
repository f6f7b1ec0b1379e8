#include "Gazetteer.h"

#include <QElapsedTimer>
#include <QFile>

#include <algorithm>
#include <array>

namespace {

// Longest first: the first suffix that matches is removed.
constexpr QStringView kSuffixes[] = {
    u"维吾尔自治区", u"壮族自治区", u"回族自治区", u"特别行政区", u"自治区", u"自治州", u"自治县",
    u"自治旗",       u"民族乡",     u"地区",       u"街道",       u"林区",   u"新区",   u"省",
    u"市",           u"区",         u"县",         u"盟",         u"旗",     u"镇",     u"乡",
};

// Ethnic names that stand before 自治州/自治县/自治旗/民族乡 (黔东南苗族侗族自治州 -> 黔东南).
constexpr QStringView kEthnic[] = {
    u"蒙古族",   u"回族",     u"藏族",     u"维吾尔族", u"苗族",     u"彝族",   u"壮族",
    u"布依族",   u"朝鲜族",   u"满族",     u"侗族",     u"瑶族",     u"白族",   u"土家族",
    u"哈尼族",   u"哈萨克族", u"傣族",     u"黎族",     u"傈僳族",   u"佤族",   u"畲族",
    u"高山族",   u"拉祜族",   u"水族",     u"东乡族",   u"纳西族",   u"景颇族", u"柯尔克孜族",
    u"土族",     u"达斡尔族", u"仫佬族",   u"羌族",     u"布朗族",   u"撒拉族", u"毛南族",
    u"仡佬族",   u"锡伯族",   u"阿昌族",   u"普米族",   u"塔吉克族", u"怒族",   u"乌孜别克族",
    u"俄罗斯族", u"鄂温克族", u"德昂族",   u"保安族",   u"裕固族",   u"京族",   u"塔塔尔族",
    u"独龙族",   u"鄂伦春族", u"赫哲族",   u"门巴族",   u"珞巴族",   u"基诺族", u"各族",
    u"蒙古",     u"哈萨克",   u"柯尔克孜", u"锡伯",     u"塔吉克",   u"达斡尔", u"鄂温克",
    u"鄂伦春",
};

constexpr QStringView kPlaceholders[] = {u"市辖区", u"县", u"省直辖县级行政区划",
                                         u"自治区直辖县级行政区划"};

// All names are in the Basic Multilingual Plane, so UTF-16 units count characters.
qsizetype characters(QStringView s)
{
    return s.size();
}

bool parseLevel(QByteArrayView v, Gazetteer::Level *level)
{
    if (v == "province")
        *level = Gazetteer::Level::Province;
    else if (v == "city")
        *level = Gazetteer::Level::City;
    else if (v == "district")
        *level = Gazetteer::Level::District;
    else if (v == "town")
        *level = Gazetteer::Level::Town;
    else
        return false;
    return true;
}

bool parseCode(QByteArrayView v, qint64 *code)
{
    if (v.size() != 12)
        return false;
    qint64 c = 0;
    for (char ch : v) {
        if (ch < '0' || ch > '9')
            return false;
        c = c * 10 + (ch - '0');
    }
    *code = c;
    return true;
}

// Splits a line into exactly N tab-separated fields; false on any other count.
template <std::size_t N> bool splitFields(QByteArrayView line, std::array<QByteArrayView, N> *f)
{
    qsizetype n = 0;
    qsizetype start = 0;
    for (qsizetype i = 0; i <= line.size(); ++i) {
        if (i == line.size() || line[i] == '\t') {
            if (n == qsizetype(N))
                return false;
            (*f)[std::size_t(n++)] = line.sliced(start, i - start);
            start = i + 1;
        }
    }
    return n == qsizetype(N);
}

constexpr std::pair<const char *, Gazetteer::FormerKind> kFormerKinds[] = {
    {"renamed", Gazetteer::FormerKind::Renamed},
    {"merged", Gazetteer::FormerKind::Merged},
    {"split", Gazetteer::FormerKind::Split},
    {"county-to-district", Gazetteer::FormerKind::CountyToDistrict},
    {"city-to-district", Gazetteer::FormerKind::CityToDistrict},
    {"county-to-city", Gazetteer::FormerKind::CountyToCity},
    {"prefecture-to-city", Gazetteer::FormerKind::PrefectureToCity},
};

} // namespace

QString Gazetteer::shortForm(QStringView name)
{
    for (const QStringView sv : kSuffixes) {
        if (!name.endsWith(sv))
            continue;
        QStringView rest = name.chopped(sv.size());
        if (characters(rest) < 2)
            return {};
        for (bool changed = true; changed;) {
            changed = false;
            for (const QStringView ev : kEthnic) {
                if (rest.endsWith(ev) && characters(rest) - characters(ev) >= 2) {
                    rest.chop(ev.size());
                    changed = true;
                }
            }
        }
        return rest.toString();
    }
    return {};
}

bool Gazetteer::isPlaceholderName(QStringView name)
{
    return std::any_of(std::begin(kPlaceholders), std::end(kPlaceholders),
                       [&](QStringView p) { return name == p; });
}

QString Gazetteer::pathName(const Division &d)
{
    QString out;
    for (const Division *p = &d; p; p = p->parent) {
        if (!p->placeholder)
            out.prepend(p->name);
    }
    return out;
}

QString Gazetteer::levelName(Level level)
{
    switch (level) {
    case Level::Province:
        return QStringLiteral("province");
    case Level::City:
        return QStringLiteral("city");
    case Level::District:
        return QStringLiteral("district");
    case Level::Town:
        return QStringLiteral("town");
    }
    return {};
}

const Gazetteer &Gazetteer::builtin()
{
    static const Gazetteer *const instance = [] {
        auto *g = new Gazetteer; // lives for the whole process
        QString error;
        if (!g->load(QString::fromLatin1(kResourcePath), &error) ||
            !g->loadFormerNames(QString::fromLatin1(kFormerNamesPath), &error))
            qFatal("address gazetteer: %s", qPrintable(error));
        return g;
    }();
    return *instance;
}

bool Gazetteer::load(const QString &path, QString *error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        if (error)
            *error = QStringLiteral("cannot open %1: %2").arg(path, file.errorString());
        return false;
    }
    QElapsedTimer timer;
    timer.start();
    const QByteArray data = file.readAll(); // a resource is decompressed here
    const bool ok = loadFromData(data, error);
    m_loadMs = double(timer.nsecsElapsed()) / 1e6;
    return ok;
}

bool Gazetteer::loadFromData(QByteArrayView tsv, QString *error)
{
    QElapsedTimer timer;
    timer.start();
    m_formerIndex.clear();
    m_formerNames.clear();
    m_divisions.clear();
    m_divisions.reserve(std::size_t(tsv.count('\n')));
    const auto fail = [&](qsizetype lineNo, const QString &why) {
        if (error)
            *error = QStringLiteral("divisions line %1: %2").arg(lineNo).arg(why);
        m_divisions.clear();
        return false;
    };

    qsizetype lineNo = 0;
    qsizetype pos = 0;
    while (pos < tsv.size()) {
        qsizetype end = tsv.indexOf('\n', pos);
        if (end < 0)
            end = tsv.size();
        const QByteArrayView line = tsv.sliced(pos, end - pos);
        pos = end + 1;
        ++lineNo;
        if (line.isEmpty() || line.front() == '#')
            continue;

        std::array<QByteArrayView, 7> f;
        qsizetype n = 0;
        qsizetype start = 0;
        for (qsizetype i = 0; i <= line.size() && n < qsizetype(f.size()); ++i) {
            if (i == line.size() || line[i] == '\t') {
                f[std::size_t(n++)] = line.sliced(start, i - start);
                start = i + 1;
            }
        }
        if (n != 7 || start <= line.size())
            return fail(lineNo, QStringLiteral("expected 7 tab-separated fields"));

        Division d;
        if (!parseCode(f[0], &d.code))
            return fail(lineNo, QStringLiteral("bad code"));
        if (!parseLevel(f[1], &d.level))
            return fail(lineNo, QStringLiteral("bad level"));
        if (d.level == Level::Province ? !f[2].isEmpty() : !parseCode(f[2], &d.parentCode))
            return fail(lineNo, QStringLiteral("bad parent code"));
        d.name = QString::fromUtf8(f[3]);
        if (d.name.isEmpty())
            return fail(lineNo, QStringLiteral("empty name"));
        d.placeholder = isPlaceholderName(d.name);
        if (!d.placeholder)
            d.shortName = shortForm(d.name);
        if (!f[4].isEmpty() || !f[5].isEmpty()) {
            bool okLon = false;
            bool okLat = false;
            d.lon = f[4].toDouble(&okLon);
            d.lat = f[5].toDouble(&okLat);
            if (!okLon || !okLat)
                return fail(lineNo, QStringLiteral("bad centre point"));
            if (f[6] == "cp")
                d.centreSource = CentreSource::Point;
            else if (f[6] == "centroid")
                d.centreSource = CentreSource::Centroid;
            else
                return fail(lineNo, QStringLiteral("bad centre source"));
        }
        m_divisions.push_back(std::move(d));
    }

    std::sort(m_divisions.begin(), m_divisions.end(),
              [](const Division &a, const Division &b) { return a.code < b.code; });
    m_byCode.clear();
    m_byCode.reserve(qsizetype(m_divisions.size()));
    for (std::size_t i = 0; i < m_divisions.size(); ++i) {
        if (m_byCode.contains(m_divisions[i].code))
            return fail(0, QStringLiteral("duplicate code %1").arg(m_divisions[i].codeString()));
        m_byCode.insert(m_divisions[i].code, quint32(i));
    }
    for (Division &d : m_divisions) {
        if (d.level == Level::Province)
            continue;
        const Division *parent = byCode(d.parentCode);
        if (!parent || int(parent->level) >= int(d.level))
            return fail(0, QStringLiteral("division %1 has no valid parent").arg(d.codeString()));
        d.parent = parent;
    }
    buildIndexes();
    m_loadMs = double(timer.nsecsElapsed()) / 1e6;
    return true;
}

void Gazetteer::buildIndexes()
{
    // Children: one flat list, grouped by parent (compressed sparse rows), each group by code.
    m_root = Division{};
    std::vector<quint32> counts(m_divisions.size() + 1, 0); // the last slot is the root's
    const auto slot = [&](const Division &d) {
        return d.parent ? std::size_t(d.parent - m_divisions.data()) : m_divisions.size();
    };
    for (const Division &d : m_divisions)
        ++counts[slot(d)];
    quint32 begin = 0;
    for (std::size_t i = 0; i <= m_divisions.size(); ++i) {
        Division &p = i < m_divisions.size() ? m_divisions[i] : m_root;
        p.childBegin = begin;
        p.childCount = 0;
        begin += counts[i];
    }
    m_childList.assign(m_divisions.size(), nullptr);
    for (const Division &d : m_divisions) {
        const std::size_t s = slot(d);
        Division &p = s < m_divisions.size() ? m_divisions[s] : m_root;
        m_childList[p.childBegin + p.childCount++] = &d;
    }

    // Names: (key, division) pairs sorted by key, then one range per key.
    const auto index = [&](QHash<QStringView, Range> &hash, bool shortNames) {
        std::vector<std::pair<QStringView, const Division *>> pairs;
        pairs.reserve(m_divisions.size());
        for (const Division &d : m_divisions) {
            if (d.placeholder)
                continue;
            const QString &key = shortNames ? d.shortName : d.name;
            if (!key.isEmpty())
                pairs.emplace_back(QStringView(key), &d);
        }
        std::stable_sort(pairs.begin(), pairs.end(),
                         [](const auto &a, const auto &b) { return a.first < b.first; });
        hash.clear();
        hash.reserve(qsizetype(pairs.size()));
        for (std::size_t i = 0; i < pairs.size();) {
            Range r{quint32(m_nameHits.size()), 0};
            const QStringView key = pairs[i].first;
            for (; i < pairs.size() && pairs[i].first == key; ++i, ++r.count)
                m_nameHits.push_back(pairs[i].second);
            hash.insert(key, r);
        }
    };
    m_nameHits.clear();
    index(m_fullNames, false);
    index(m_shortNames, true);
    m_nameHits.shrink_to_fit();
}

qsizetype Gazetteer::count(Level level) const
{
    return std::count_if(m_divisions.begin(), m_divisions.end(),
                         [&](const Division &d) { return d.level == level; });
}

const Gazetteer::Division *Gazetteer::byCode(qint64 code) const
{
    const auto it = m_byCode.constFind(code);
    return it == m_byCode.cend() ? nullptr : &m_divisions[*it];
}

const Gazetteer::Division *Gazetteer::byCode(QStringView code) const
{
    if (code.isEmpty() || code.size() > 12)
        return nullptr;
    qint64 c = 0;
    for (QChar ch : code) {
        if (ch < u'0' || ch > u'9')
            return nullptr;
        c = c * 10 + (ch.unicode() - u'0');
    }
    for (qsizetype i = code.size(); i < 12; ++i)
        c *= 10;
    return byCode(c);
}

std::span<const Gazetteer::Division *const> Gazetteer::children(const Division &d) const
{
    if (d.childCount == 0)
        return {};
    return {m_childList.data() + d.childBegin, d.childCount};
}

QList<const Gazetteer::Division *> Gazetteer::path(const Division &d) const
{
    QList<const Division *> out;
    for (const Division *p = &d; p; p = p->parent)
        out.prepend(p);
    return out;
}

bool Gazetteer::isWithin(const Division &d, const Division *ancestor)
{
    if (!ancestor)
        return true;
    for (const Division *p = d.parent; p; p = p->parent) {
        if (p == ancestor)
            return true;
    }
    return false;
}

void Gazetteer::appendHits(QList<const Division *> &out, const QHash<QStringView, Range> &index,
                           QStringView name, const Division *within, int level) const
{
    const auto it = index.constFind(name);
    if (it == index.cend())
        return;
    for (quint32 i = it->begin; i < it->begin + it->count; ++i) {
        const Division *d = m_nameHits[i];
        if ((level == 0 || int(d->level) == level) && isWithin(*d, within) && !out.contains(d))
            out.append(d);
    }
}

QList<const Gazetteer::Division *> Gazetteer::findByName(QStringView name, const Division *within,
                                                         NameMatch match) const
{
    QList<const Division *> out;
    if (match != NameMatch::Short)
        appendHits(out, m_fullNames, name, within, 0);
    if (match == NameMatch::Short || (match == NameMatch::FullThenShort && out.isEmpty()))
        appendHits(out, m_shortNames, name, within, 0);
    std::sort(out.begin(), out.end(), [](auto *a, auto *b) { return a->code < b->code; });
    return out;
}

QList<const Gazetteer::Division *>
Gazetteer::findByName(QStringView name, Level level, const Division *within, NameMatch match) const
{
    QList<const Division *> out;
    if (match != NameMatch::Short)
        appendHits(out, m_fullNames, name, within, int(level));
    if (match == NameMatch::Short || (match == NameMatch::FullThenShort && out.isEmpty()))
        appendHits(out, m_shortNames, name, within, int(level));
    std::sort(out.begin(), out.end(), [](auto *a, auto *b) { return a->code < b->code; });
    return out;
}

QString Gazetteer::formerKindName(FormerKind kind)
{
    for (const auto &[name, k] : kFormerKinds)
        if (k == kind)
            return QString::fromLatin1(name);
    return {};
}

bool Gazetteer::loadFormerNames(const QString &path, QString *error)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        if (error)
            *error = QStringLiteral("cannot open %1: %2").arg(path, file.errorString());
        return false;
    }
    return loadFormerNamesFromData(file.readAll(), error);
}

// Columns: former name, province (full name), the city it belonged to then (may be empty), the
// current division's code, its current name (must match the code: guards against a typo in
// either), year, kind.
bool Gazetteer::loadFormerNamesFromData(QByteArrayView tsv, QString *error)
{
    m_formerIndex.clear();
    m_formerNames.clear();
    std::vector<FormerName> rows;
    const auto fail = [&](qsizetype lineNo, const QString &why) {
        if (error)
            *error = QStringLiteral("former names line %1: %2").arg(lineNo).arg(why);
        return false;
    };
    if (m_divisions.empty())
        return fail(0, QStringLiteral("load the divisions first"));

    std::vector<qsizetype> lineOf;
    qsizetype lineNo = 0;
    qsizetype pos = 0;
    while (pos < tsv.size()) {
        qsizetype end = tsv.indexOf('\n', pos);
        if (end < 0)
            end = tsv.size();
        QByteArrayView line = tsv.sliced(pos, end - pos);
        pos = end + 1;
        ++lineNo;
        if (line.endsWith('\r'))
            line.chop(1);
        if (line.isEmpty() || line.front() == '#')
            continue;
        std::array<QByteArrayView, 7> f;
        if (!splitFields(line, &f))
            return fail(lineNo, QStringLiteral("expected 7 tab-separated fields"));

        FormerName row;
        row.name = QString::fromUtf8(f[0]);
        if (characters(row.name) < 2 || isPlaceholderName(row.name))
            return fail(lineNo, QStringLiteral("bad former name"));
        const QString province = QString::fromUtf8(f[1]);
        for (const Division *p : provinces())
            if (p->name == province)
                row.province = p;
        if (!row.province)
            return fail(lineNo, QStringLiteral("unknown province %1").arg(province));
        row.formerParent = QString::fromUtf8(f[2]);
        qint64 code = 0;
        if (!parseCode(f[3], &code))
            return fail(lineNo, QStringLiteral("bad code"));
        row.division = byCode(code);
        if (!row.division || row.division->placeholder || row.division->level == Level::Town)
            return fail(lineNo, QStringLiteral("code %1 is not a current province, city or "
                                               "district")
                                    .arg(QString::fromLatin1(f[3])));
        if (row.division->name != QString::fromUtf8(f[4]))
            return fail(lineNo, QStringLiteral("code %1 is %2, not %3")
                                    .arg(row.division->codeString(), row.division->name,
                                         QString::fromUtf8(f[4])));
        if (row.division != row.province && !isWithin(*row.division, row.province))
            return fail(lineNo,
                        QStringLiteral("%1 is not in %2").arg(row.division->name, province));
        bool okYear = false;
        row.year = QString::fromLatin1(f[5]).toInt(&okYear);
        if (!okYear || row.year < 1949 || row.year > 2100)
            return fail(lineNo, QStringLiteral("bad year"));
        bool okKind = false;
        for (const auto &[name, kind] : kFormerKinds) {
            if (f[6] == name) {
                row.kind = kind;
                okKind = true;
            }
        }
        if (!okKind)
            return fail(lineNo, QStringLiteral("bad kind"));
        for (std::size_t i = 0; i < rows.size(); ++i)
            if (rows[i].name == row.name && rows[i].division == row.division)
                return fail(lineNo, QStringLiteral("duplicate of line %1").arg(lineOf[i]));
        rows.push_back(std::move(row));
        lineOf.push_back(lineNo);
    }

    // The city a former name belonged to is a current or former name in the same province.
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const FormerName &r = rows[i];
        if (r.formerParent.isEmpty())
            continue;
        const bool current = !findByName(r.formerParent, r.province, NameMatch::Full).isEmpty();
        const bool former = std::any_of(rows.begin(), rows.end(), [&](const FormerName &o) {
            return o.name == r.formerParent && o.province == r.province;
        });
        if (!current && !former)
            return fail(lineOf[i], QStringLiteral("unknown former parent %1").arg(r.formerParent));
    }

    // Short forms only where they name nothing else: no current division above the town level
    // and no former name of another division.
    for (FormerName &r : rows) {
        const QString s = shortForm(r.name);
        if (s.isEmpty())
            continue;
        const auto current =
            findByName(s, nullptr, NameMatch::Full) + findByName(s, nullptr, NameMatch::Short);
        const bool clashes = std::any_of(current.begin(), current.end(),
                                         [](const Division *d) { return d->level != Level::Town; });
        const bool shared = std::any_of(rows.begin(), rows.end(), [&](const FormerName &o) {
            return o.division != r.division && (o.name == s || shortForm(o.name) == s);
        });
        if (!clashes && !shared)
            r.shortName = s;
    }

    m_formerNames = std::move(rows);
    for (quint32 i = 0; i < m_formerNames.size(); ++i) {
        const FormerName &r = m_formerNames[i];
        m_formerIndex[QStringView(r.name)].append(i);
        if (!r.shortName.isEmpty())
            m_formerIndex[QStringView(r.shortName)].append(i);
    }
    return true;
}

QList<const Gazetteer::FormerName *> Gazetteer::findFormerName(QStringView name,
                                                               const Division *within) const
{
    QList<const FormerName *> out;
    const auto it = m_formerIndex.constFind(name);
    if (it == m_formerIndex.cend())
        return out;
    for (quint32 i : *it) {
        const FormerName &r = m_formerNames[i];
        if (!within || r.division == within || isWithin(*r.division, within))
            out.append(&r);
    }
    return out;
}

qsizetype Gazetteer::memoryBytes() const
{
    // Vectors by capacity; QString payloads by capacity plus their 16-byte header (QArrayData on
    // 64-bit), QHash by entries times (key + value + ~1 byte of span metadata) over a 0.5..1 load
    // factor, rounded up to 2x. An estimate of what the process holds, not malloc's overhead.
    qsizetype bytes = qsizetype(m_divisions.capacity() * sizeof(Division));
    for (const Division &d : m_divisions) {
        bytes += 16 + d.name.capacity() * 2;
        if (!d.shortName.isEmpty())
            bytes += 16 + d.shortName.capacity() * 2;
    }
    bytes += qsizetype(m_childList.capacity() * sizeof(void *));
    bytes += qsizetype(m_nameHits.capacity() * sizeof(void *));
    bytes += m_byCode.capacity() * qsizetype(sizeof(qint64) + sizeof(quint32) + 1) * 2;
    bytes += (m_fullNames.capacity() + m_shortNames.capacity()) *
             qsizetype(sizeof(QStringView) + sizeof(Range) + 1) * 2;
    bytes += qsizetype(m_formerNames.capacity() * sizeof(FormerName));
    for (const FormerName &r : m_formerNames)
        bytes += 48 + (r.name.capacity() + r.shortName.capacity() + r.formerParent.capacity()) * 2;
    bytes += m_formerIndex.capacity() *
             qsizetype(sizeof(QStringView) + sizeof(QList<quint32>) + 16 + 1) * 2;
    return bytes;
}
