#include "UpstreamProvider.h"

#include "UpstreamClient.h"

#include <limits>
#include <QDateTime>
#include <QJsonArray>

namespace {

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

} // namespace

QString UpstreamProvider::maskKey(const QString &key)
{
    // Show at most a quarter of the key on each side, and never more than 4 characters.
    const qsizetype shown = qMin<qsizetype>(4, key.size() / 4);
    if (shown < 2)
        return QStringLiteral("••••");
    return key.left(shown) + QStringLiteral("••••") + key.right(shown);
}

void UpstreamProvider::parseShared(UpstreamProvider &p, const ConfigFields &o)
{
    p.baseUrl = o.httpUrl(QStringLiteral("base_url"), p.baseUrl);
    const QString keysShape = QStringLiteral("an array of non-empty strings");
    if (o.has(QStringLiteral("keys"))) {
        p.keys.clear();
        for (const QString &k : o.strings(QStringLiteral("keys"), {}, keysShape)) {
            if (k.trimmed().isEmpty())
                o.fail(QStringLiteral("keys"), QStringLiteral("must be ") + keysShape);
            p.keys.append(k.trimmed());
        }
    }
    // An environment variable keeps the secret out of the file.
    if (o.has(QStringLiteral("keys_env"))) {
        p.keysEnv = o.string(QStringLiteral("keys_env"), {});
        p.envKeys.clear();
        const QByteArray env = qgetenv(p.keysEnv.toLatin1().constData());
        for (const QByteArray &k : env.split(','))
            if (!k.trimmed().isEmpty())
                p.envKeys.append(QString::fromUtf8(k.trimmed()));
    }
    const ConfigFields t = o.section(QStringLiteral("timeouts"));
    p.connectTimeoutMs = t.ms(QStringLiteral("connect_ms"), p.connectTimeoutMs);
    p.firstByteTimeoutMs = t.ms(QStringLiteral("first_byte_ms"), p.firstByteTimeoutMs);
    p.idleTimeoutMs = t.ms(QStringLiteral("idle_ms"), p.idleTimeoutMs);
    p.totalTimeoutMs = t.ms(QStringLiteral("total_ms"), p.totalTimeoutMs);
    p.restMs = o.ms(QStringLiteral("key_rest_ms"), p.restMs);
}

UrlPolicy urlPolicyField(const ConfigFields &o, const QString &field, UrlPolicy base,
                         bool httpAllowed)
{
    const ConfigFields settings = o.section(field);
    o.within(field, [&] { base.applySettings(settings.json(), httpAllowed); });
    return base;
}

QJsonObject UpstreamProvider::sharedJson() const
{
    QJsonObject o{{"base_url", baseUrl},
                  {"keys", QJsonArray::fromStringList(keys)},
                  {"key_rest_ms", restMs},
                  {"timeouts", QJsonObject{{"connect_ms", connectTimeoutMs},
                                           {"first_byte_ms", firstByteTimeoutMs},
                                           {"idle_ms", idleTimeoutMs},
                                           {"total_ms", totalTimeoutMs}}}};
    if (!keysEnv.isEmpty())
        o.insert("keys_env", keysEnv);
    return o;
}

QString KeyRotation::pick(const UpstreamProvider &provider, const QStringList &tried)
{
    const QStringList keys = provider.allKeys();
    if (keys.isEmpty())
        return {};
    QMutexLocker lock(&m_mutex);
    State &st = m_states[provider.name];
    const qint64 now = nowMs();
    const int n = int(keys.size());
    QString fallback;
    qint64 fallbackUntil = std::numeric_limits<qint64>::max();
    for (int i = 0; i < n; ++i) {
        const QString &key = keys.at(int((st.next + quint64(i)) % quint64(n)));
        if (tried.contains(key))
            continue;
        const qint64 until = st.restedUntilMs.value(key, 0);
        if (until <= now) {
            st.next = (st.next + quint64(i) + 1) % quint64(n);
            return key;
        }
        if (until < fallbackUntil) {
            fallback = key;
            fallbackUntil = until;
        }
    }
    // Every untried key is resting: try the one that rests the shortest rather than fail.
    return fallback;
}

void KeyRotation::rest(const UpstreamProvider &provider, const QString &key)
{
    QMutexLocker lock(&m_mutex);
    m_states[provider.name].restedUntilMs.insert(key, nowMs() + provider.restMs);
}

QString UpstreamProvider::missingSetting(const QString &family, const QString &what,
                                         bool keyRequired) const
{
    if (baseUrl.isEmpty())
        return QStringLiteral("The %1 provider '%2' has no base URL: set %3.providers.%2.base_url "
                              "in the config file.")
            .arg(what, name, family);
    if (keyRequired && allKeys().isEmpty())
        return QStringLiteral("The %1 provider '%2' has no API key: set %3.providers.%2.keys (or "
                              "keys_env) in the config file.")
            .arg(what, name, family);
    return {};
}

void UpstreamProvider::applyTimeouts(UpstreamRequest &request) const
{
    request.connectTimeoutMs = connectTimeoutMs;
    request.firstByteTimeoutMs = firstByteTimeoutMs;
    request.idleTimeoutMs = idleTimeoutMs;
    request.totalTimeoutMs = totalTimeoutMs;
}
