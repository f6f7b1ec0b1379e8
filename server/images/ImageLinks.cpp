#include "ImageLinks.h"

#include <QMessageAuthenticationCode>

namespace ImageLinks {

QByteArray signature(const QByteArray &secret, const QString &fileId, qint64 expiresS)
{
    const QByteArray message = fileId.toUtf8() + '.' + QByteArray::number(expiresS);
    return QMessageAuthenticationCode::hash(message, secret, QCryptographicHash::Sha256)
        .toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
}

QString url(const QString &base, const QByteArray &secret, const QString &fileId,
            const QString &extension, qint64 expiresS)
{
    return QStringLiteral("%1/v1/images/files/%2.%3?expires=%4&signature=%5")
        .arg(base, fileId, extension, QString::number(expiresS),
             QString::fromLatin1(signature(secret, fileId, expiresS)));
}

Verdict verify(const QByteArray &secret, const QString &fileId, const QString &expires,
               const QString &given, qint64 nowS)
{
    bool ok = false;
    const qint64 expiresS = expires.toLongLong(&ok);
    if (!ok || expiresS <= 0 || given.isEmpty())
        return Verdict::Invalid;
    const QByteArray expected = signature(secret, fileId, expiresS);
    const QByteArray actual = given.toLatin1();
    // Constant time: the comparison does not stop at the first differing byte.
    unsigned diff = expected.size() ^ actual.size();
    for (qsizetype i = 0; i < expected.size(); ++i)
        diff |= unsigned(expected[i]) ^ unsigned(i < actual.size() ? actual[i] : 0);
    if (diff != 0)
        return Verdict::Invalid;
    return nowS >= expiresS ? Verdict::Expired : Verdict::Valid;
}

QString extensionFor(const QString &mime)
{
    if (mime == u"image/jpeg")
        return QStringLiteral("jpeg");
    if (mime == u"image/webp")
        return QStringLiteral("webp");
    if (mime == u"image/gif")
        return QStringLiteral("gif");
    return QStringLiteral("png");
}

QString sniffMime(const QByteArray &data)
{
    if (data.startsWith("\x89PNG\r\n\x1a\n"))
        return QStringLiteral("image/png");
    if (data.startsWith("\xff\xd8\xff"))
        return QStringLiteral("image/jpeg");
    if (data.size() >= 12 && data.startsWith("RIFF") && data.mid(8, 4) == "WEBP")
        return QStringLiteral("image/webp");
    if (data.startsWith("GIF87a") || data.startsWith("GIF89a"))
        return QStringLiteral("image/gif");
    return {};
}

} // namespace ImageLinks
