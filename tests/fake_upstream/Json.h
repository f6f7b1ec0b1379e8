#pragma once

#include <QByteArray>
#include <QJsonValue>
#include <QString>

#include <type_traits>
#include <vector>

// A small JSON value that keeps members in insertion order and writes compact UTF-8, so the
// fake's output has the same field order as the real services (QJsonObject sorts keys) and is
// cheap to produce for a thousand concurrent streams.
class Json
{
public:
    Json() = default; // null
    Json(std::nullptr_t) {}
    Json(bool value) : m_kind(Kind::Bool), m_bool(value) {}
    template <typename T,
              std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
    Json(T value) : m_kind(Kind::Int), m_int(qint64(value))
    {
    }
    Json(const char *utf8) : m_kind(Kind::String), m_bytes(utf8) {}
    Json(const QByteArray &utf8) : m_kind(Kind::String), m_bytes(utf8) {}
    Json(const QString &text) : m_kind(Kind::String), m_bytes(text.toUtf8()) {}

    static Json object() { return Json(Kind::Object); }
    static Json array() { return Json(Kind::Array); }
    // Text that is already serialized JSON, written as is.
    static Json raw(const QByteArray &json);
    // A Qt JSON value (request fields echoed back), serialized compactly.
    static Json fromQt(const QJsonValue &value);

    // Appends a member to an object (no duplicate check: callers add each key once).
    Json &add(const char *key, Json value) &;
    Json &&add(const char *key, Json value) &&;
    // Appends the members of another object to this one.
    Json &extend(Json other) &;
    Json &&extend(Json other) &&;
    // Appends an element to an array.
    Json &push(Json value) &;
    Json &&push(Json value) &&;

    QByteArray toJson() const;
    void writeTo(QByteArray &out) const;

    static void writeString(QByteArray &out, const QByteArray &utf8);

private:
    enum class Kind : quint8
    {
        Null,
        Bool,
        Int,
        String,
        Raw,
        Object,
        Array
    };
    explicit Json(Kind kind) : m_kind(kind) {}

    Kind m_kind = Kind::Null;
    bool m_bool = false;
    qint64 m_int = 0;
    QByteArray m_bytes;             // String (UTF-8) or Raw
    std::vector<QByteArray> m_keys; // Object: one key per item
    std::vector<Json> m_items;      // Object values or Array elements
};
