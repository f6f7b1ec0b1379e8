#include "UpstreamProvider.h"

#include "UpstreamClient.h"

#include <cmath>
#include <limits>
#include <QDateTime>
#include <QJsonArray>
#include <QUrl>
#include <stdexcept>

namespace {

[[noreturn]] void fail(const QString &message)
{
    throw std::runtime_error(("config: " + message).toStdString());
}

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

int UpstreamProvider::parseMs(const QJsonObject &o, const char *field, int fallback,
                              const QString &where)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (v.isUndefined())
        return fallback;
    if (!v.isDouble() || v.toDouble() < 0 || v.toDouble() > 24 * 3600 * 1000.0 ||
        v.toDouble() != std::floor(v.toDouble()))
        fail(QStringLiteral("%1.%2 must be a whole number of milliseconds")
                 .arg(where, QLatin1String(field)));
    return v.toInt();
}

void UpstreamProvider::parseShared(UpstreamProvider &p, const QJsonObject &o, const QString &where)
{
    if (o.contains("base_url")) {
        p.baseUrl = o.value("base_url").toString();
        const QUrl url(p.baseUrl);
        if (!url.isValid() || (url.scheme() != u"http" && url.scheme() != u"https") ||
            url.host().isEmpty())
            fail(QStringLiteral("%1.base_url must be an http or https URL").arg(where));
        while (p.baseUrl.endsWith(u'/'))
            p.baseUrl.chop(1);
    }
    if (o.contains("keys")) {
        if (!o.value("keys").isArray())
            fail(QStringLiteral("%1.keys must be an array of strings").arg(where));
        p.keys.clear();
        for (const QJsonValue &k : o.value("keys").toArray()) {
            if (!k.isString() || k.toString().trimmed().isEmpty())
                fail(QStringLiteral("%1.keys must be an array of non-empty strings").arg(where));
            p.keys.append(k.toString().trimmed());
        }
    }
    // An environment variable keeps the secret out of the file.
    if (o.contains("keys_env")) {
        p.keysEnv = o.value("keys_env").toString();
        p.envKeys.clear();
        const QByteArray env = qgetenv(p.keysEnv.toLatin1().constData());
        for (const QByteArray &k : env.split(','))
            if (!k.trimmed().isEmpty())
                p.envKeys.append(QString::fromUtf8(k.trimmed()));
    }
    const QJsonObject t = o.value("timeouts").toObject();
    const QString tw = where + QStringLiteral(".timeouts");
    p.connectTimeoutMs = parseMs(t, "connect_ms", p.connectTimeoutMs, tw);
    p.firstByteTimeoutMs = parseMs(t, "first_byte_ms", p.firstByteTimeoutMs, tw);
    p.idleTimeoutMs = parseMs(t, "idle_ms", p.idleTimeoutMs, tw);
    p.totalTimeoutMs = parseMs(t, "total_ms", p.totalTimeoutMs, tw);
    p.restMs = parseMs(o, "key_rest_ms", p.restMs, where);
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
