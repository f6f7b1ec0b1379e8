#include "KeyRules.h"

#include "Money.h"

#include <cmath>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

namespace {

constexpr int kMaxEntries = 100; // globs or CIDRs per key
constexpr int kMaxEntryLength = 200;

bool globMatches(QStringView glob, QStringView text)
{
    // Iterative '*' matching with one backtrack point: linear in practice, no recursion.
    qsizetype g = 0, t = 0, star = -1, mark = 0;
    while (t < text.size()) {
        if (g < glob.size() && glob[g] == u'*') {
            star = g++;
            mark = t;
        } else if (g < glob.size() && glob[g] == text[t]) {
            ++g;
            ++t;
        } else if (star >= 0) {
            g = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (g < glob.size() && glob[g] == u'*')
        ++g;
    return g == glob.size();
}

std::optional<QPair<QHostAddress, int>> parseCidr(const QString &text)
{
    const qsizetype slash = text.indexOf(u'/');
    const QString host = slash < 0 ? text : text.left(slash);
    // Dotted quads only (QHostAddress also takes "10.0.0" and "10.1"), no scope IDs.
    if (host.contains(u'%') || (!host.contains(u':') && host.count(u'.') != 3))
        return std::nullopt;
    QHostAddress address(host);
    if (address.isNull())
        return std::nullopt;
    const int max = address.protocol() == QAbstractSocket::IPv4Protocol ? 32 : 128;
    int prefix = max;
    if (slash >= 0) {
        bool ok = false;
        const QString bits = text.mid(slash + 1);
        prefix = bits.toInt(&ok);
        if (!ok || bits.isEmpty() || !bits.front().isDigit() || prefix < 0 || prefix > max)
            return std::nullopt;
    }
    return QPair<QHostAddress, int>(address, prefix);
}

QJsonArray arrayOf(const QStringList &list)
{
    return QJsonArray::fromStringList(list);
}

// A list rule from the API: an array of 1..kMaxEntries valid strings (an empty array removes
// the rule, as null does).
std::optional<QStringList> listFrom(const QJsonValue &v, bool (*valid)(const QString &),
                                    const QString &what, QString *error)
{
    if (!v.isArray()) {
        *error = QStringLiteral("must be an array of %1, or null").arg(what);
        return std::nullopt;
    }
    const QJsonArray a = v.toArray();
    if (a.size() > kMaxEntries) {
        *error = QStringLiteral("may hold at most %1 entries").arg(kMaxEntries);
        return std::nullopt;
    }
    QStringList out;
    for (const QJsonValue &e : a) {
        if (!e.isString() || !valid(e.toString())) {
            *error = QStringLiteral("must be an array of %1; '%2' is not one")
                         .arg(what, e.isString() ? e.toString() : QStringLiteral("(not a string)"));
            return std::nullopt;
        }
        if (!out.contains(e.toString()))
            out.append(e.toString());
    }
    return out;
}

} // namespace

bool KeyRules::allowsModel(const QString &model) const
{
    if (models.isEmpty())
        return true;
    for (const QString &glob : models)
        if (globMatches(glob, model))
            return true;
    return false;
}

bool KeyRules::inAny(const QStringList &cidrs, const QHostAddress &address)
{
    // An IPv4 peer on a dual-stack socket arrives as ::ffff:a.b.c.d.
    QHostAddress peer = address;
    bool mapped = false;
    const quint32 v4 = address.toIPv4Address(&mapped);
    if (mapped)
        peer = QHostAddress(v4);
    for (const QString &cidr : cidrs)
        if (const auto net = parseCidr(cidr); net && peer.isInSubnet(net->first, net->second))
            return true;
    return false;
}

QPair<QDateTime, QDateTime> KeyRules::periodAt(Period period, const QDateTime &now,
                                               const QTimeZone &zone)
{
    if (period == Period::Total)
        return {QDateTime::fromMSecsSinceEpoch(0, Qt::UTC), QDateTime()};
    const QDate today = now.toTimeZone(zone).date();
    QDate first = today;
    QDate next;
    switch (period) {
    case Period::Day:
        next = today.addDays(1);
        break;
    case Period::Week:
        first = today.addDays(1 - today.dayOfWeek());
        next = first.addDays(7);
        break;
    case Period::Month:
        first = QDate(today.year(), today.month(), 1);
        next = first.addMonths(1);
        break;
    case Period::Total:
        break;
    }
    return {QDateTime(first, QTime(0, 0), zone).toUTC(),
            QDateTime(next, QTime(0, 0), zone).toUTC()};
}

QString KeyRules::periodName(Period period)
{
    switch (period) {
    case Period::Day:
        return QStringLiteral("day");
    case Period::Week:
        return QStringLiteral("week");
    case Period::Month:
        return QStringLiteral("month");
    case Period::Total:
        break;
    }
    return QStringLiteral("total");
}

std::optional<KeyRules::Period> KeyRules::periodFrom(const QString &name)
{
    for (Period p : {Period::Day, Period::Week, Period::Month, Period::Total})
        if (periodName(p) == name)
            return p;
    return std::nullopt;
}

QByteArray KeyRules::toStored() const
{
    if (isEmpty())
        return {};
    QJsonObject o;
    if (budget)
        o.insert("budget", QJsonObject{{"units", QString::number(budget->amount)},
                                       {"period", periodName(budget->period)}});
    if (!models.isEmpty())
        o.insert("models", arrayOf(models));
    if (!allowedIps.isEmpty())
        o.insert("allowed_ips", arrayOf(allowedIps));
    if (expires.isValid())
        o.insert("expires_ms", QString::number(expires.toMSecsSinceEpoch()));
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

KeyRules KeyRules::fromStored(const QByteArray &json)
{
    KeyRules r;
    if (json.isEmpty())
        return r;
    const QJsonObject o = QJsonDocument::fromJson(json).object();
    const QJsonObject b = o.value("budget").toObject();
    bool ok = false;
    const qint64 units = b.value("units").toString().toLongLong(&ok);
    const auto period = periodFrom(b.value("period").toString());
    if (ok && units > 0 && period)
        r.budget = Budget{units, *period};
    for (const QJsonValue &v : o.value("models").toArray())
        r.models.append(v.toString());
    for (const QJsonValue &v : o.value("allowed_ips").toArray())
        r.allowedIps.append(v.toString());
    const qint64 ms = o.value("expires_ms").toString().toLongLong(&ok);
    if (ok)
        r.expires = QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC);
    return r;
}

QJsonObject KeyRules::toApi() const
{
    QJsonObject o;
    o.insert("budget",
             budget ? QJsonValue(QJsonObject{{"amount", Money::formatCredits(budget->amount)},
                                             {"period", periodName(budget->period)}})
                    : QJsonValue());
    o.insert("models", arrayOf(models));
    o.insert("allowed_ips", arrayOf(allowedIps));
    o.insert("expires_at", expires.isValid()
                               ? QJsonValue(expires.toUTC().toString(Qt::ISODateWithMs))
                               : QJsonValue());
    return o;
}

std::optional<KeyRules> KeyRules::fromApi(const QJsonObject &body, KeyRules base, QString *field,
                                          QString *error)
{
    const auto fail = [&](const char *name, const QString &why) -> std::optional<KeyRules> {
        *field = QString::fromLatin1(name);
        *error = QStringLiteral("'%1' %2.").arg(*field, why);
        return std::nullopt;
    };
    if (body.contains("budget")) {
        const QJsonValue v = body.value("budget");
        if (v.isNull()) {
            base.budget.reset();
        } else {
            const QJsonObject b = v.toObject();
            const QJsonValue amount = b.value("amount");
            const qint64 units =
                amount.isString() ? Money::parseCredits(amount.toString()).value_or(0) : 0;
            const auto period = periodFrom(b.value("period").toString());
            if (!v.isObject() || units <= 0 || !period)
                return fail("budget", QStringLiteral("must be {\"amount\": \"5\", \"period\": "
                                                     "\"day\" | \"week\" | \"month\" | "
                                                     "\"total\"} with a positive decimal "
                                                     "amount in credits, or null"));
            base.budget = Budget{units, *period};
        }
    }
    // A list rule: absent keeps, null (or []) removes, else every entry valid.
    const auto list = [&](const char *name, QStringList *target, bool (*valid)(const QString &),
                          const QString &what) {
        const QJsonValue v = body.value(QLatin1String(name));
        if (v.isUndefined() || v.isNull()) {
            if (v.isNull())
                target->clear();
            return true;
        }
        QString why;
        const auto entries = listFrom(v, valid, what, &why);
        if (!entries)
            fail(name, why);
        else
            *target = *entries;
        return entries.has_value();
    };
    if (!list("models", &base.models, validGlob, QStringLiteral("model IDs or globs")) ||
        !list("allowed_ips", &base.allowedIps, validCidr, QStringLiteral("addresses or CIDRs")))
        return std::nullopt;
    if (body.contains("expires_at")) {
        const QJsonValue v = body.value("expires_at");
        if (v.isNull()) {
            base.expires = {};
        } else {
            QDateTime t;
            if (v.isDouble() && v.toDouble() == std::floor(v.toDouble()) && v.toDouble() > 0 &&
                v.toDouble() < 253402300800.0) // before year 10000
                t = QDateTime::fromSecsSinceEpoch(qint64(v.toDouble()), Qt::UTC);
            else if (v.isString())
                t = QDateTime::fromString(v.toString(), Qt::ISODateWithMs);
            if (!t.isValid() || (v.isString() && !v.toString().contains(u'T')))
                return fail("expires_at", QStringLiteral("must be an RFC 3339 time "
                                                         "(\"2027-01-31T00:00:00Z\"), Unix "
                                                         "seconds, or null"));
            base.expires = t.toUTC();
        }
    }
    return base;
}

std::optional<KeyRules::Budget> KeyRules::budgetFromText(const QString &text, QString *error)
{
    const qsizetype slash = text.indexOf(u'/');
    const auto units = Money::parseCredits(slash < 0 ? text : text.left(slash));
    const auto period = slash < 0 ? std::optional<Period>(Period::Total)
                                  : periodFrom(text.mid(slash + 1).trimmed().toLower());
    if (!units || *units <= 0 || !period) {
        *error = QStringLiteral("a budget is an amount in credits and a period: 5/day, 20/week, "
                                "100/month or 50/total");
        return std::nullopt;
    }
    return Budget{*units, *period};
}

std::optional<QDateTime> KeyRules::expiryFromText(const QString &text, const QDateTime &now,
                                                  QString *error)
{
    static const QRegularExpression relative(QStringLiteral("^(\\d{1,5})([dh])$"));
    if (const auto m = relative.match(text); m.hasMatch()) {
        const qint64 n = m.captured(1).toLongLong();
        if (n > 0)
            return m.captured(2) == u"d" ? now.addDays(n) : now.addSecs(n * 3600);
    }
    QDateTime t = QDateTime::fromString(text, Qt::ISODateWithMs);
    if (!t.isValid()) {
        const QDate d = QDate::fromString(text, Qt::ISODate);
        if (d.isValid())
            t = QDateTime(d, QTime(0, 0), Qt::UTC);
    }
    if (!t.isValid()) {
        *error = QStringLiteral("an expiry is a number of days or hours from now (30d, 12h), a "
                                "date (2027-01-31, midnight UTC) or an RFC 3339 time");
        return std::nullopt;
    }
    return t.toUTC();
}

bool KeyRules::validGlob(const QString &glob)
{
    if (glob.isEmpty() || glob.size() > kMaxEntryLength)
        return false;
    for (const QChar c : glob)
        if (c.isSpace() || !c.isPrint())
            return false;
    return true;
}

bool KeyRules::validCidr(const QString &cidr)
{
    return cidr.size() <= kMaxEntryLength && parseCidr(cidr).has_value();
}
