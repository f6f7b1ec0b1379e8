#include "Scopes.h"

namespace Scopes {

QStringList core()
{
    return {ApiKeysRead, ApiKeysWrite, CreditsRead, CreditsWrite, UsageRead,
            TokensRead,  TokensWrite,  EnvxWrite,   MetricsRead};
}

} // namespace Scopes
