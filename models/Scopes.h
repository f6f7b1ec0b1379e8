#pragma once

#include <QStringList>

// The control-token scopes of the core (credentials, credits, usage, metrics). Service families
// add their own (ServiceFamily::scopes); Services::scopes() is the full list a token may carry.
namespace Scopes {

inline constexpr QLatin1StringView ApiKeysRead{"api_keys:read"};
inline constexpr QLatin1StringView ApiKeysWrite{"api_keys:write"};
inline constexpr QLatin1StringView CreditsRead{"credits:read"};
inline constexpr QLatin1StringView CreditsWrite{"credits:write"};
inline constexpr QLatin1StringView UsageRead{"usage:read"};
inline constexpr QLatin1StringView TokensRead{"tokens:read"};
inline constexpr QLatin1StringView TokensWrite{"tokens:write"};
inline constexpr QLatin1StringView EnvxWrite{"envx:write"};
// GET /metrics when the server listens on more than loopback (and server.metrics_public is off).
inline constexpr QLatin1StringView MetricsRead{"metrics:read"};

QStringList core();

} // namespace Scopes
