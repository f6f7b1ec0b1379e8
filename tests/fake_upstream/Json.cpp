#include "Json.h"

#include <QJsonArray>
#include <QJsonDocument>

Json Json::raw(const QByteArray &json)
{
    Json j(Kind::Raw);
    j.m_bytes = json;
    return j;
}

Json Json::fromQt(const QJsonValue &value)
{
    if (value.isUndefined() || value.isNull())
        return {};
    // Serializing inside a one-element array covers every value type, scalars included.
    QByteArray text = QJsonDocument(QJsonArray{value}).toJson(QJsonDocument::Compact);
    return raw(text.mid(1, text.size() - 2));
}

Json &Json::add(const char *key, Json value) &
{
    m_keys.emplace_back(key);
    m_items.push_back(std::move(value));
    return *this;
}

Json &&Json::add(const char *key, Json value) &&
{
    add(key, std::move(value));
    return std::move(*this);
}

Json &Json::extend(Json other) &
{
    for (size_t i = 0; i < other.m_items.size(); ++i) {
        m_keys.push_back(std::move(other.m_keys[i]));
        m_items.push_back(std::move(other.m_items[i]));
    }
    return *this;
}

Json &&Json::extend(Json other) &&
{
    extend(std::move(other));
    return std::move(*this);
}

Json &Json::push(Json value) &
{
    m_items.push_back(std::move(value));
    return *this;
}

Json &&Json::push(Json value) &&
{
    push(std::move(value));
    return std::move(*this);
}

QByteArray Json::toJson() const
{
    QByteArray out;
    out.reserve(256);
    writeTo(out);
    return out;
}

void Json::writeString(QByteArray &out, const QByteArray &utf8)
{
    static const char hex[] = "0123456789abcdef";
    out += '"';
    for (char c : utf8) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        default:
            if (u < 0x20) {
                out += "\\u00";
                out += hex[u >> 4];
                out += hex[u & 0xf];
            } else {
                out += c;
            }
        }
    }
    out += '"';
}

void Json::writeTo(QByteArray &out) const
{
    switch (m_kind) {
    case Kind::Null:
        out += "null";
        return;
    case Kind::Bool:
        out += m_bool ? "true" : "false";
        return;
    case Kind::Int:
        out += QByteArray::number(m_int);
        return;
    case Kind::String:
        writeString(out, m_bytes);
        return;
    case Kind::Raw:
        out += m_bytes;
        return;
    case Kind::Object:
        out += '{';
        for (size_t i = 0; i < m_items.size(); ++i) {
            if (i)
                out += ',';
            writeString(out, m_keys[i]);
            out += ':';
            m_items[i].writeTo(out);
        }
        out += '}';
        return;
    case Kind::Array:
        out += '[';
        for (size_t i = 0; i < m_items.size(); ++i) {
            if (i)
                out += ',';
            m_items[i].writeTo(out);
        }
        out += ']';
        return;
    }
}
