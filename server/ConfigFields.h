#pragma once

#include <initializer_list>
#include <limits>
#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>
#include <stdexcept>
#include <type_traits>
#include <utility>

// The config file's readers, shared by the server settings and every family's section.
//
// A ConfigFields is one JSON object of the file and its path there ("ocr.providers.local").
// Each reader returns a field's value, or the fallback when the field is absent, and refuses a
// value of the wrong type or out of range with a ConfigError naming the field's whole path:
// "config: ocr.providers.local.timeouts.idle_ms must be a whole number of milliseconds from 0
// to 86400000". Fields no reader asks for are ignored; onlyKnown() refuses them where a
// misspelt setting would otherwise go unnoticed.

// A configuration the program cannot start with. what() is "config: <path> <problem>" (or
// "config: <problem>" without a path); ServerSettings, every family's configure() and the
// window show it as it is.
class ConfigError : public std::runtime_error
{
public:
    ConfigError(const QString &path, const QString &problem);
    // what() is "config: <text>", the text naming the path itself.
    static ConfigError withText(const QString &path, const QString &text);
    // The bad field's path ("ocr.workers"); empty when the problem is not one field's.
    const QString &path() const { return m_path; }

private:
    struct Text
    {
    };
    ConfigError(Text, const QString &path, const QString &text);
    QString m_path;
};

// Throws ConfigError(path, problem).
[[noreturn]] void configFail(const QString &path, const QString &problem);

// The bounds of a whole-number field and how its message names them: "must be a whole number
// [of <unit>] from <lo> to <hi> [(<note>)]"; without an upper bound "..., <lo> or more" (or "a
// positive whole number" when lo is 1). The largest value is the reader's type's.
struct WholeRange
{
    static constexpr qint64 kNoLimit = std::numeric_limits<qint64>::max();
    qint64 lo = 0;
    qint64 hi = kNoLimit;
    QString unit = {};
    QString note = {};
};

// The bounds of a credit amount (in credit units) and how its message names them: "must be a
// decimal string of credits [<per>] [above zero | from <lo> to <hi>], e.g. "<example>"".
struct CreditRange
{
    qint64 lo = 0;
    qint64 hi = std::numeric_limits<qint64>::max();
    QString per = {}; // "per 1M tokens"
};

// Named options of a setting ({"openai", ProviderType::OpenAI}, ...): what choice() accepts,
// and the name a value is written back with (optionName()).
template <class T> using ConfigOptions = std::initializer_list<std::pair<const char *, T>>;

// The name of value among options; empty when none names it.
template <class T> QString optionName(ConfigOptions<T> options, T value)
{
    for (const auto &[name, option] : options)
        if (option == value)
            return QLatin1String(name);
    return {};
}

class ConfigFields
{
public:
    // `path` is where `object` sits in the file ("ocr"); empty for the file's root.
    explicit ConfigFields(QJsonObject object = {}, QString path = {}, QString name = {});

    const QJsonObject &json() const { return m_object; }
    const QString &path() const { return m_path; }
    // The key this object has in its parent (a provider's name), when read by members().
    const QString &name() const { return m_name; }
    // The path of one of its fields: "ocr.workers" ("workers" at the root).
    QString pathOf(const QString &field) const;
    bool has(const QString &field) const { return m_object.contains(field); }
    QJsonValue value(const QString &field) const { return m_object.value(field); }

    // Throws ConfigError naming the field: "config: <path>.<field> <problem>".
    [[noreturn]] void fail(const QString &field, const QString &problem) const;
    // Throws ConfigError about this object as a whole: "config: <path> <problem>".
    [[noreturn]] void failHere(const QString &problem) const;
    // Refuses a field not in `known`: "config: <path>.<field> is not a setting (<known>)".
    void onlyKnown(const QStringList &known) const;

    // The object at field (empty when absent), with its path; anything else fails "must be
    // <shape>".
    ConfigFields section(const QString &field, const QString &shape = {}) const;
    // The objects of the array at field, as "<field>[i]" (none when absent); anything but an
    // array fails "must be <shape>", an element that is not an object "must be an object".
    QList<ConfigFields> list(const QString &field, const QString &shape) const;
    // The members of the object at field, each an object named by its key (name()), as
    // "<field>.<key>" (none when absent). Anything but an object fails "must be <shape>"; a
    // member that is not an object fails "must be <memberShape>".
    QList<ConfigFields> members(const QString &field, const QString &shape,
                                const QString &memberShape = {}) const;

    // true or false.
    bool flag(const QString &field, bool fallback) const;
    // A string; anything else fails "must be <shape>" ("a string" unless given).
    QString string(const QString &field, const QString &fallback, const QString &shape = {}) const;
    // An array of strings; anything else fails "must be <shape>".
    QStringList strings(const QString &field, const QStringList &fallback,
                        const QString &shape = {}) const;
    // A whole number within range, of the fallback's type (int or qint64); JSON numbers with a
    // fraction are refused, not rounded.
    template <class Int>
    Int whole(const QString &field, Int fallback, const WholeRange &range) const
    {
        static_assert(std::is_integral_v<Int>);
        return Int(wholeWithin(field, fallback, range, std::numeric_limits<Int>::min(),
                               std::numeric_limits<Int>::max()));
    }
    // A duration: a whole number of milliseconds from 0 to 24 hours.
    int ms(const QString &field, int fallback) const;
    // Any number from lo to hi, fractions included: "must be a number from <lo> to <hi>".
    double number(const QString &field, double fallback, double lo, double hi,
                  const QString &note = {}) const;
    // A decimal string of credits (Money::parseCredits) within range, in credit units; a JSON
    // number is refused, as binary fractions are not exact.
    qint64 credits(const QString &field, qint64 fallback, const QString &example,
                   const CreditRange &range = {}) const;
    // An http or https URL with a host, trailing slashes dropped. With publicBase, also without
    // query or fragment (a base the server builds its own links from).
    QString httpUrl(const QString &field, const QString &fallback, bool publicBase = false) const;
    // A URL path starting with / and holding no query or space ("/api/v1/").
    QString urlPath(const QString &field, const QString &fallback) const;
    // One of the named options: "must be a, b or c, not 'x'[ (note)]".
    template <class T>
    T choice(const QString &field, T fallback, ConfigOptions<T> options,
             const QString &note = {}) const
    {
        if (!has(field))
            return fallback;
        const QJsonValue v = value(field);
        QStringList names;
        for (const auto &[name, option] : options) {
            if (v.isString() && v.toString() == QLatin1String(name))
                return option;
            names.append(QLatin1String(name));
        }
        failChoice(field, names, note);
    }

    // Runs parse() for the field, a parser of its own that throws std::exception with a message
    // relative to the field ("allow_http: must be true or false"); the message becomes a
    // ConfigError "config: <path>.<field><joint><message>". A ConfigError passes unchanged.
    template <class Parse>
    auto within(const QString &field, Parse &&parse,
                const QString &joint = QStringLiteral(".")) const
    {
        try {
            return parse();
        } catch (const ConfigError &) {
            throw;
        } catch (const std::exception &e) {
            throw ConfigError::withText(pathOf(field),
                                        pathOf(field) + joint + QString::fromUtf8(e.what()));
        }
    }

private:
    qint64 wholeWithin(const QString &field, qint64 fallback, const WholeRange &range,
                       qint64 typeMin, qint64 typeMax) const;
    // "must be <shape>", or <otherwise> when shape is empty.
    [[noreturn]] void failShape(const QString &field, const QString &shape,
                                const QString &otherwise) const;
    [[noreturn]] void failChoice(const QString &field, const QStringList &names,
                                 const QString &note) const;
    [[noreturn]] void failWhole(const QString &field, const WholeRange &range) const;

    QJsonObject m_object;
    QString m_path;
    QString m_name;
};

// Replaces the item of the same id in a config's list (its models), or appends it: a section's
// entries add to the defaults or replace them by id.
template <class T> void upsertById(QList<T> &items, const T &item)
{
    for (T &existing : items)
        if (existing.id == item.id) {
            existing = item;
            return;
        }
    items.append(item);
}
