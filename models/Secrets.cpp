#include "Secrets.h"

#include <QCryptographicHash>
#include <QRandomGenerator>

namespace Secrets {

QString generate(QLatin1StringView prefix)
{
    quint32 words[8];
    QRandomGenerator::system()->fillRange(words);
    const QByteArray raw(reinterpret_cast<const char *>(words), sizeof(words));
    return prefix + QString::fromLatin1(raw.toBase64(QByteArray::Base64UrlEncoding |
                                                     QByteArray::OmitTrailingEquals));
}

QByteArray hash(QStringView secret)
{
    return QCryptographicHash::hash(secret.toUtf8(), QCryptographicHash::Sha256).toHex();
}

QString displayPrefix(QStringView secret)
{
    const qsizetype typeLength = secret.startsWith(kControlTokenPrefix) ? 4 : 3;
    return secret.left(typeLength + 6).toString() + QStringLiteral("...");
}

bool constantTimeEquals(const QByteArray &a, const QByteArray &b)
{
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (qsizetype i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

bool looksValid(QStringView secret, QLatin1StringView prefix)
{
    if (!secret.startsWith(prefix) || secret.size() < prefix.size() + 32 || secret.size() > 256)
        return false;
    for (QChar c : secret.mid(prefix.size())) {
        const bool ok = (c >= u'a' && c <= u'z') || (c >= u'A' && c <= u'Z') ||
                        (c >= u'0' && c <= u'9') || c == u'-' || c == u'_';
        if (!ok)
            return false;
    }
    return true;
}

} // namespace Secrets
