#pragma once

#include <QByteArray>
#include <QString>

// Signed, expiring links to a task's images (server/images/README.md, "Image links"):
//   {base}/v1/images/files/{file id}.{ext}?expires={unix seconds}&signature={base64url}
// where signature = HMAC-SHA256(secret, "{file id}.{expires}"). The secret is the family's,
// kept in the database (image_settings) so that every instance sharing it signs alike. Pure.
namespace ImageLinks {

QByteArray signature(const QByteArray &secret, const QString &fileId, qint64 expiresS);
QString url(const QString &base, const QByteArray &secret, const QString &fileId,
            const QString &extension, qint64 expiresS);

enum class Verdict
{
    Valid,
    Expired,
    Invalid // missing, malformed or altered
};
// Checks a link's query values for fileId at nowS, in constant time over the signature.
Verdict verify(const QByteArray &secret, const QString &fileId, const QString &expires,
               const QString &signature, qint64 nowS);

// "png", "jpeg", "webp" for a MIME type; "png" otherwise.
QString extensionFor(const QString &mime);
// The MIME type of image bytes by their signature (PNG, JPEG, WebP, GIF), or empty.
QString sniffMime(const QByteArray &data);

} // namespace ImageLinks
