#include "ImageFakes.h"

#include <QCryptographicHash>
#include <QJsonValue>
#include <QStringList>
#include <QtEndian>

#include <array>
#include <cmath>

namespace ImageFakes {

namespace {

constexpr std::array<quint32, 256> kCrcTable = [] {
    std::array<quint32, 256> table{};
    for (quint32 n = 0; n < 256; ++n) {
        quint32 c = n;
        for (int k = 0; k < 8; ++k)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[n] = c;
    }
    return table;
}();

// OpenAI's wording of a JSON type in "Invalid type for 'X': expected ..., but got ... instead."
QString typeName(const QJsonValue &value)
{
    switch (value.type()) {
    case QJsonValue::String:
        return QStringLiteral("a string");
    case QJsonValue::Double:
        return std::trunc(value.toDouble()) == value.toDouble()
                   ? QStringLiteral("an integer")
                   : QStringLiteral("a decimal number");
    case QJsonValue::Bool:
        return QStringLiteral("a boolean");
    case QJsonValue::Array:
        return QStringLiteral("an array");
    case QJsonValue::Object:
        return QStringLiteral("an object");
    default:
        return QStringLiteral("null");
    }
}

Invalid wrongType(const char *name, const char *expected, const QJsonValue &value)
{
    return {QStringLiteral("Invalid type for '%1': expected %2, but got %3 instead.")
                .arg(QLatin1String(name), QLatin1String(expected), typeName(value)),
            name, "invalid_type"};
}

// "'a', 'b', and 'c'" / "'a' and 'b'", as OpenAI lists supported values.
QString supported(const QStringList &values)
{
    QStringList quoted;
    for (const QString &v : values)
        quoted << QLatin1Char('\'') + v + QLatin1Char('\'');
    if (quoted.size() == 2)
        return quoted.join(QLatin1String(" and "));
    const QString last = quoted.takeLast();
    return quoted.join(QLatin1String(", ")) + QStringLiteral(", and ") + last;
}

// An optional string field among `values`; absent or null leaves *out as it is.
std::optional<Invalid> oneOf(const QJsonObject &body, const char *name, const QStringList &values,
                             QString *out)
{
    const QJsonValue value = body.value(QLatin1String(name));
    if (value.isUndefined() || value.isNull())
        return std::nullopt;
    if (!value.isString())
        return wrongType(name, "a string", value);
    if (!values.contains(value.toString()))
        return Invalid{QStringLiteral("Invalid value: '%1'. Supported values are: %2.")
                           .arg(value.toString(), supported(values)),
                       name, "invalid_value"};
    *out = value.toString();
    return std::nullopt;
}

struct Rgb
{
    int r = 0;
    int g = 0;
    int b = 0;
};

Rgb rgbAt(const QByteArray &digest, int at)
{
    return {quint8(digest[at]), quint8(digest[at + 1]), quint8(digest[at + 2])};
}

// a + (b - a) * num / den, per channel.
Rgb mix(Rgb a, Rgb b, int num, int den)
{
    return {a.r + (b.r - a.r) * num / den, a.g + (b.g - a.g) * num / den,
            a.b + (b.b - a.b) * num / den};
}

void appendBigEndian(QByteArray &out, quint32 value)
{
    char bytes[4];
    qToBigEndian(value, bytes);
    out.append(bytes, 4);
}

void appendChunk(QByteArray &out, const char *type, const QByteArray &data)
{
    appendBigEndian(out, quint32(data.size()));
    const QByteArray typed = QByteArray(type, 4) + data;
    out += typed;
    appendBigEndian(out, crc32(typed));
}

} // namespace

quint32 crc32(const QByteArray &data)
{
    quint32 c = 0xFFFFFFFFu;
    for (const char byte : data)
        c = kCrcTable[(c ^ quint8(byte)) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

std::optional<Invalid> parseRequest(const QJsonObject &body, Request *request)
{
    static const QStringList known{"prompt",  "model",           "n",     "size",
                                   "quality", "response_format", "style", "user"};
    for (auto it = body.constBegin(); it != body.constEnd(); ++it) {
        if (!known.contains(it.key()))
            return Invalid{
                QStringLiteral("Unrecognized request argument supplied: %1").arg(it.key()), {}, {}};
    }

    const QJsonValue prompt = body.value(QLatin1String("prompt"));
    if (prompt.isUndefined())
        return Invalid{QStringLiteral("Missing required parameter: 'prompt'."), "prompt",
                       "missing_required_parameter"};
    if (!prompt.isString())
        return wrongType("prompt", "a string", prompt);
    request->prompt = prompt.toString();
    if (request->prompt.isEmpty())
        return Invalid{QStringLiteral("Invalid 'prompt': empty string. Expected a string with "
                                      "minimum length 1, but got an empty string instead."),
                       "prompt", "empty_string"};
    if (request->prompt.size() > kMaxPromptLength)
        return Invalid{QStringLiteral("Invalid 'prompt': string too long. Expected a string with "
                                      "maximum length %1, but got a string with length %2 "
                                      "instead.")
                           .arg(kMaxPromptLength)
                           .arg(request->prompt.size()),
                       "prompt", "string_above_max_length"};

    const QJsonValue model = body.value(QLatin1String("model"));
    if (!model.isUndefined() && !model.isNull() && !model.isString())
        return wrongType("model", "a string", model);
    request->model = model.toString();

    const QJsonValue n = body.value(QLatin1String("n"));
    if (!n.isUndefined() && !n.isNull()) {
        if (!n.isDouble() || std::trunc(n.toDouble()) != n.toDouble())
            return wrongType("n", "an integer", n);
        const double count = n.toDouble();
        if (count < 1)
            return Invalid{QStringLiteral("Invalid 'n': integer below minimum value. Expected a "
                                          "value >= 1, but got %1 instead.")
                               .arg(count, 0, 'f', 0),
                           "n", "integer_below_min_value"};
        if (count > kMaxImages)
            return Invalid{QStringLiteral("Invalid 'n': integer above maximum value. Expected a "
                                          "value <= %1, but got %2 instead.")
                               .arg(kMaxImages)
                               .arg(count, 0, 'f', 0),
                           "n", "integer_above_max_value"};
        request->n = int(count);
    }

    static const QStringList sizes{"256x256",   "512x512",   "1024x1024", "1536x1024",
                                   "1024x1536", "1792x1024", "1024x1792", "auto"};
    if (auto invalid = oneOf(body, "size", sizes, &request->size))
        return invalid;
    if (request->size != QLatin1String("auto")) {
        request->width = request->size.section(QLatin1Char('x'), 0, 0).toInt();
        request->height = request->size.section(QLatin1Char('x'), 1, 1).toInt();
    }
    static const QStringList qualities{"standard", "hd", "low", "medium", "high", "auto"};
    if (auto invalid = oneOf(body, "quality", qualities, &request->quality))
        return invalid;
    QString format = QStringLiteral("url");
    if (auto invalid = oneOf(body, "response_format", {"url", "b64_json"}, &format))
        return invalid;
    request->b64Json = format == QLatin1String("b64_json");
    QString style;
    if (auto invalid = oneOf(body, "style", {"vivid", "natural"}, &style))
        return invalid;
    const QJsonValue user = body.value(QLatin1String("user"));
    if (!user.isUndefined() && !user.isNull() && !user.isString())
        return wrongType("user", "a string", user);
    return std::nullopt;
}

QByteArray png(int width, int height, const QString &prompt, int index)
{
    const QByteArray digest = QCryptographicHash::hash(
        prompt.toUtf8() + '\0' + QByteArray::number(index), QCryptographicHash::Sha256);
    const auto at = [&digest](int i) { return int(quint8(digest[i])); };
    const Rgb top = rgbAt(digest, 0);
    const Rgb bottom = rgbAt(digest, 3);
    const Rgb tint = rgbAt(digest, 6);
    const Rgb disc = rgbAt(digest, 9);
    const int across = 3 + at(12) % 6; // 3 to 8 square tiles across
    const int tile = (width + across - 1) / across;
    const int phase = at(13) & 1;
    const int cx = at(14) * width / 255;
    const int cy = at(15) * height / 255;
    const int radius = qMin(width, height) * (10 + at(16) % 21) / 100;

    const qsizetype stride = 1 + qsizetype(width) * 3;
    QByteArray raw(stride * height, Qt::Uninitialized);
    for (int y = 0; y < height; ++y) {
        char *row = raw.data() + y * stride;
        row[0] = 0; // filter type None
        const Rgb plain = mix(top, bottom, y, qMax(1, height - 1));
        const Rgb tinted = mix(plain, tint, 1, 2);
        int discFrom = 0;
        int discTo = 0;
        const int dy = y - cy;
        if (dy * dy <= radius * radius) {
            const int half = int(std::sqrt(double(radius * radius - dy * dy)));
            discFrom = qMax(0, cx - half);
            discTo = qMin(width, cx + half + 1);
        }
        for (int x = 0; x < width; ++x) {
            const bool odd = ((x / tile + y / tile + phase) & 1) != 0;
            const Rgb c = x >= discFrom && x < discTo ? disc : odd ? tinted : plain;
            char *p = row + 1 + x * 3;
            p[0] = char(c.r);
            p[1] = char(c.g);
            p[2] = char(c.b);
        }
    }

    QByteArray header;
    appendBigEndian(header, quint32(width));
    appendBigEndian(header, quint32(height));
    header.append(char(8)); // bit depth
    header.append(char(2)); // colour type: RGB
    header.append(3, '\0'); // compression, filter method, interlace

    QByteArray out("\x89PNG\r\n\x1a\n", 8);
    appendChunk(out, "IHDR", header);
    // qCompress writes the uncompressed size (4 bytes) before a zlib stream.
    appendChunk(out, "IDAT", qCompress(raw, 6).mid(4));
    appendChunk(out, "IEND", {});
    return out;
}

void Store::put(const QByteArray &id, const QByteArray &png)
{
    if (!m_images.contains(id))
        m_order.enqueue(id);
    m_images.insert(id, png);
    while (m_order.size() > m_capacity)
        m_images.remove(m_order.dequeue());
}

} // namespace ImageFakes
