#include "Scopes.h"

namespace Scopes {

QStringList all()
{
    return {ApiKeysRead, ApiKeysWrite, CreditsRead, CreditsWrite,  UsageRead,
            TokensRead,  TokensWrite,  EnvxWrite,   ProvidersRead, ProvidersWrite};
}

bool isKnown(const QString &scope)
{
    return all().contains(scope);
}

} // namespace Scopes
