#include "ConfigFields.h"

#include "Money.h"

#include <cmath>
#include <QJsonArray>
#include <QJsonDocument>
#include <QUrl>

namespace {

// The largest whole number a JSON number (a double) holds exactly.
constexpr qint64 kMaxExact = qint64(1) << 53;

// A value as the message shows it: a string as it is, anything else as JSON.
QString shown(const QJsonValue &v)
{
    if (v.isString())
        return v.toString();
    if (v.isObject())
        return QStringLiteral("an object");
    if (v.isArray())
        return QStringLiteral("an array");
    return QString::fromUtf8(
        QJsonDocument(QJsonArray{v}).toJson(QJsonDocument::Compact).chopped(1).mid(1));
}

// Credit units as the shortest decimal ("1000000", "0.5").
QString creditsText(qint64 units)
{
    QString s = Money::formatCredits(units);
    if (s.contains(u'.')) {
        while (s.endsWith(u'0'))
            s.chop(1);
        if (s.endsWith(u'.'))
            s.chop(1);
    }
    return s;
}

QString orJoined(const QStringList &names)
{
    if (names.size() < 2)
        return names.join(QString());
    return names.mid(0, names.size() - 1).join(QStringLiteral(", ")) + QStringLiteral(" or ") +
           names.last();
}

} // namespace

ConfigError::ConfigError(const QString &path, const QString &problem)
    : ConfigError(Text{}, path, path.isEmpty() ? problem : path + u' ' + problem)
{
}

ConfigError::ConfigError(Text, const QString &path, const QString &text)
    : std::runtime_error((QStringLiteral("config: ") + text).toStdString()), m_path(path)
{
}

ConfigError ConfigError::withText(const QString &path, const QString &text)
{
    return ConfigError(Text{}, path, text);
}

void configFail(const QString &path, const QString &problem)
{
    throw ConfigError(path, problem);
}

ConfigFields::ConfigFields(QJsonObject object, QString path, QString name)
    : m_object(std::move(object)), m_path(std::move(path)), m_name(std::move(name))
{
}

QString ConfigFields::pathOf(const QString &field) const
{
    if (m_path.isEmpty())
        return field;
    return field.startsWith(u'[') ? m_path + field : m_path + u'.' + field;
}

void ConfigFields::fail(const QString &field, const QString &problem) const
{
    throw ConfigError(pathOf(field), problem);
}

void ConfigFields::failHere(const QString &problem) const
{
    throw ConfigError(m_path, problem);
}

void ConfigFields::onlyKnown(const QStringList &known) const
{
    for (auto it = m_object.begin(); it != m_object.end(); ++it)
        if (!known.contains(it.key()))
            fail(it.key(), QStringLiteral("is not a setting (%1)").arg(known.join(u", ")));
}

ConfigFields ConfigFields::section(const QString &field, const QString &shape) const
{
    const QJsonValue v = value(field);
    if (!v.isUndefined() && !v.isObject())
        fail(field,
             QStringLiteral("must be ") + (shape.isEmpty() ? QStringLiteral("an object") : shape));
    return ConfigFields(v.toObject(), pathOf(field), field);
}

QList<ConfigFields> ConfigFields::list(const QString &field, const QString &shape) const
{
    const QJsonValue v = value(field);
    if (!v.isUndefined() && !v.isArray())
        fail(field, QStringLiteral("must be ") + shape);
    QList<ConfigFields> out;
    const QJsonArray items = v.toArray();
    for (qsizetype i = 0; i < items.size(); ++i) {
        const QString at = QStringLiteral("%1[%2]").arg(field).arg(i);
        if (!items.at(i).isObject())
            fail(at, QStringLiteral("must be an object"));
        out.append(ConfigFields(items.at(i).toObject(), pathOf(at), QString::number(i)));
    }
    return out;
}

QList<ConfigFields> ConfigFields::members(const QString &field, const QString &shape,
                                          const QString &memberShape) const
{
    const ConfigFields all = section(field, shape);
    QList<ConfigFields> out;
    for (auto it = all.m_object.begin(); it != all.m_object.end(); ++it)
        out.append(all.section(it.key(), memberShape));
    return out;
}

bool ConfigFields::flag(const QString &field, bool fallback) const
{
    const QJsonValue v = value(field);
    if (v.isUndefined())
        return fallback;
    if (!v.isBool())
        fail(field, QStringLiteral("must be true or false"));
    return v.toBool();
}

QString ConfigFields::string(const QString &field, const QString &fallback,
                             const QString &shape) const
{
    const QJsonValue v = value(field);
    if (v.isUndefined())
        return fallback;
    if (!v.isString())
        failShape(field, shape, QStringLiteral("a string"));
    return v.toString();
}

QStringList ConfigFields::strings(const QString &field, const QStringList &fallback,
                                  const QString &shape) const
{
    const QJsonValue v = value(field);
    if (v.isUndefined())
        return fallback;
    QStringList out;
    for (const QJsonValue &item : v.toArray()) {
        if (!item.isString())
            break;
        out.append(item.toString());
    }
    if (!v.isArray() || out.size() != v.toArray().size())
        failShape(field, shape, QStringLiteral("an array of strings"));
    return out;
}

qint64 ConfigFields::wholeWithin(const QString &field, qint64 fallback, const WholeRange &range,
                                 qint64 typeMin, qint64 typeMax) const
{
    const QJsonValue v = value(field);
    if (v.isUndefined())
        return fallback;
    const double d = v.toDouble();
    const double lo = double(qMax(range.lo, typeMin));
    const double hi = double(qMin(qMin(range.hi, typeMax), kMaxExact));
    if (!v.isDouble() || d != std::floor(d) || d < lo || d > hi)
        failWhole(field, range);
    return qint64(d);
}

void ConfigFields::failShape(const QString &field, const QString &shape,
                             const QString &otherwise) const
{
    fail(field, QStringLiteral("must be ") + (shape.isEmpty() ? otherwise : shape));
}

void ConfigFields::failWhole(const QString &field, const WholeRange &range) const
{
    const QString number = range.unit.isEmpty() ? QStringLiteral("whole number")
                                                : QStringLiteral("whole number of ") + range.unit;
    QString problem;
    if (range.hi != WholeRange::kNoLimit)
        problem =
            QStringLiteral("must be a %1 from %2 to %3").arg(number).arg(range.lo).arg(range.hi);
    else if (range.lo == 1)
        problem = QStringLiteral("must be a positive ") + number;
    else
        problem = QStringLiteral("must be a %1, %2 or more").arg(number).arg(range.lo);
    if (!range.note.isEmpty())
        problem += QStringLiteral(" (%1)").arg(range.note);
    fail(field, problem);
}

int ConfigFields::ms(const QString &field, int fallback) const
{
    return whole(field, fallback, {0, 24 * 3'600'000, QStringLiteral("milliseconds")});
}

double ConfigFields::number(const QString &field, double fallback, double lo, double hi,
                            const QString &note) const
{
    const QJsonValue v = value(field);
    if (v.isUndefined())
        return fallback;
    const double d = v.toDouble();
    if (!v.isDouble() || !(d >= lo && d <= hi)) {
        QString problem = QStringLiteral("must be a number from %1 to %2").arg(lo).arg(hi);
        if (!note.isEmpty())
            problem += QStringLiteral(" (%1)").arg(note);
        fail(field, problem);
    }
    return d;
}

qint64 ConfigFields::credits(const QString &field, qint64 fallback, const QString &example,
                             const CreditRange &range) const
{
    const QJsonValue v = value(field);
    if (v.isUndefined())
        return fallback;
    const auto units = Money::parseCredits(v.toString());
    if (v.isString() && units && *units >= range.lo && *units <= range.hi)
        return *units;
    QString problem = QStringLiteral("must be a decimal string of credits");
    if (!range.per.isEmpty())
        problem += u' ' + range.per;
    const bool unbounded = range.hi == std::numeric_limits<qint64>::max();
    if (range.lo == 1 && unbounded)
        problem += QStringLiteral(" above zero");
    else if (range.lo != 0 || !unbounded)
        problem +=
            QStringLiteral(" from %1 to %2").arg(creditsText(range.lo), creditsText(range.hi));
    fail(field, problem + QStringLiteral(", e.g. \"%1\"").arg(example));
}

QString ConfigFields::httpUrl(const QString &field, const QString &fallback, bool publicBase) const
{
    const QJsonValue v = value(field);
    if (v.isUndefined())
        return fallback;
    const QUrl url(v.toString(), QUrl::StrictMode);
    if (!v.isString() || !url.isValid() || (url.scheme() != u"http" && url.scheme() != u"https") ||
        url.host().isEmpty() || (publicBase && (url.hasQuery() || url.hasFragment())))
        fail(field, publicBase ? QStringLiteral("must be an http or https URL without query, "
                                                "e.g. \"https://switchyard.example.com\"")
                               : QStringLiteral("must be an http or https URL"));
    QString out = v.toString();
    while (out.endsWith(u'/'))
        out.chop(1);
    return out;
}

QString ConfigFields::urlPath(const QString &field, const QString &fallback) const
{
    const QJsonValue v = value(field);
    if (v.isUndefined())
        return fallback;
    const QString s = v.toString();
    if (!v.isString() || !s.startsWith(u'/') || s.contains(u'?') || s.contains(u' '))
        fail(field, QStringLiteral("must be a path starting with /"));
    return s;
}

void ConfigFields::failChoice(const QString &field, const QStringList &names,
                              const QString &note) const
{
    QString problem =
        QStringLiteral("must be %1, not '%2'").arg(orJoined(names), shown(value(field)));
    if (!note.isEmpty())
        problem += QStringLiteral(" (%1)").arg(note);
    fail(field, problem);
}
