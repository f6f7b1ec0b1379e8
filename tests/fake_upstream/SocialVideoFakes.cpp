#include "SocialVideoFakes.h"

std::optional<QJsonObject> SocialVideoFakes::data(const QString &action, const QUrlQuery &query)
{
    Q_UNUSED(action);
    Q_UNUSED(query);
    return std::nullopt;
}
