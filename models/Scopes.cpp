#include "Scopes.h"

namespace Scopes {

QStringList core()
{
    return {ApiKeysRead, ApiKeysWrite, CreditsRead, CreditsWrite,
            UsageRead,   TokensRead,   TokensWrite, EnvxWrite};
}

} // namespace Scopes
