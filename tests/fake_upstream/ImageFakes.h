#pragma once

#include <QByteArray>
#include <QHash>
#include <QJsonObject>
#include <QQueue>
#include <QString>

#include <optional>

// What the fake's image endpoint produces (README.md, "Images"): OpenAI's request checks for
// POST /v1/images/generations and deterministic PNG files. Pure functions, and the bounded
// store behind GET /fake/images/<id>.png.
namespace ImageFakes {

// OpenAI's bounds: n from 1 to 10; prompts up to 32000 characters (gpt-image-1's limit).
constexpr int kMaxImages = 10;
constexpr int kMaxPromptLength = 32000;
// How many images of url answers the fake keeps for GET /fake/images/<id>.png.
constexpr int kStoredImages = 256;

// A request that passed the checks.
struct Request
{
    QString prompt;
    QString model; // empty when not sent
    int n = 1;
    QString size = QStringLiteral("1024x1024"); // as sent; "auto" is 1024x1024
    int width = 1024;
    int height = 1024;
    QString quality;      // empty when not sent
    bool b64Json = false; // response_format b64_json (default url)
};

// A 400 invalid_request_error as OpenAI words it; param empty: null.
struct Invalid
{
    QString message;
    QByteArray param;
    QByteArray code;
};

// Checks the JSON body as OpenAI does: unknown fields ("Unrecognized request argument
// supplied: X"), then prompt (required, non-empty string), model, n, size, quality,
// response_format, style, user (a null optional field counts as absent).
std::optional<Invalid> parseRequest(const QJsonObject &body, Request *request);

// A real PNG (8-bit RGB, no interlace, filter 0 rows, one zlib IDAT) of width x height: a
// vertical gradient, a checker of tiles and a disc, every colour and position derived from
// SHA-256(prompt, index). Same arguments, same bytes; another index, another picture.
QByteArray png(int width, int height, const QString &prompt, int index);

// CRC-32 (ISO-HDLC, as PNG and zlib use it).
quint32 crc32(const QByteArray &data);

// The last `capacity` images by id; older ones are forgotten.
class Store
{
public:
    explicit Store(int capacity) : m_capacity(capacity) {}
    void put(const QByteArray &id, const QByteArray &png);
    // Empty when the id is unknown or was evicted.
    QByteArray get(const QByteArray &id) const { return m_images.value(id); }
    int size() const { return int(m_images.size()); }

private:
    int m_capacity;
    QHash<QByteArray, QByteArray> m_images;
    QQueue<QByteArray> m_order;
};

} // namespace ImageFakes
