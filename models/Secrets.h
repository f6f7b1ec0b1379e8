#pragma once

#include <QByteArray>
#include <QString>

// API keys and control tokens: random values from the operating system's CSPRNG, stored only
// as SHA-256 hashes (they carry 256 bits of entropy, so a slow password hash adds nothing) with
// a short display prefix.
namespace Secrets {

inline constexpr QLatin1StringView kApiKeyPrefix{"sk-"};
inline constexpr QLatin1StringView kControlTokenPrefix{"lpc_"};

// prefix + 43 base64url characters (32 random bytes).
QString generate(QLatin1StringView prefix);

// Lowercase hex SHA-256 of the UTF-8 secret.
QByteArray hash(QStringView secret);

// What lists show: the type prefix and the first 6 random characters, then an ellipsis.
QString displayPrefix(QStringView secret);

// Compares two byte strings in time that depends only on their lengths.
bool constantTimeEquals(const QByteArray &a, const QByteArray &b);

// True when the value has the given prefix followed by 32 or more base64url characters.
bool looksValid(QStringView secret, QLatin1StringView prefix);

} // namespace Secrets
