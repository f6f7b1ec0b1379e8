#pragma once

#include <QStringList>

// The control-token scopes this server knows. Tokens can only be created with these.
namespace Scopes {

inline constexpr QLatin1StringView ApiKeysRead{"api_keys:read"};
inline constexpr QLatin1StringView ApiKeysWrite{"api_keys:write"};
inline constexpr QLatin1StringView CreditsRead{"credits:read"};
inline constexpr QLatin1StringView CreditsWrite{"credits:write"};
inline constexpr QLatin1StringView UsageRead{"usage:read"};
inline constexpr QLatin1StringView TokensRead{"tokens:read"};
inline constexpr QLatin1StringView TokensWrite{"tokens:write"};
inline constexpr QLatin1StringView EnvxWrite{"envx:write"};
inline constexpr QLatin1StringView ProvidersRead{"providers:read"};
inline constexpr QLatin1StringView ProvidersWrite{"providers:write"};

QStringList all();
bool isKnown(const QString &scope);

} // namespace Scopes
