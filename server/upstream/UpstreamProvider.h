#pragma once

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QMutex>
#include <QSet>
#include <QString>
#include <QStringList>
#include <stdexcept>

struct UpstreamRequest;

// What every upstream provider has, whatever it serves (text, audio, images): where it is, the
// keys used in rotation, and the timeouts. Families extend it with their own fields (the text
// gateway's ProviderConfig adds its type, the messages timeout and the live catalog).
struct UpstreamProvider
{
    QString name;
    QString baseUrl;     // includes the version path: https://api.openai.com/v1
    QStringList keys;    // from the file; used round-robin, a key answering 429/5xx rests
    QString keysEnv;     // an environment variable with more keys, comma-separated
    QStringList envKeys; // read from keysEnv at load; never written back to the file
    int connectTimeoutMs = 10'000;
    int firstByteTimeoutMs = 0;   // until the response head arrives (0: the total applies)
    int idleTimeoutMs = 60'000;   // longest silence inside a body or stream
    int totalTimeoutMs = 600'000; // whole call
    int restMs = 30'000;          // how long a failing key sits out

    // Empty when the provider has a base URL and (when keyRequired) a key; else a message that
    // names the setting: "The <what> provider 'x' has no API key: set
    // <family>.providers.x.keys (or keys_env) in the config file."
    QString missingSetting(const QString &family, const QString &what,
                           bool keyRequired = true) const;
    // Sets the provider's connect, first-byte, idle and total timeouts on a request.
    void applyTimeouts(UpstreamRequest &request) const;
    // Every key to use: the file's, then the environment's.
    QStringList allKeys() const { return keys + envKeys; }
    // Upstream keys shown after entry: at most the first and last 4 characters, fewer for
    // short keys.
    static QString maskKey(const QString &key);

    // Reads the shared fields of a provider object onto p: base_url (http or https; trailing
    // slashes dropped), keys, keys_env, key_rest_ms and timeouts {connect_ms, first_byte_ms,
    // idle_ms, total_ms}. Absent fields keep p's values. `where` names the object in errors
    // ("gateway.providers.openai"); throws std::runtime_error("config: <where>.<field> ...").
    static void parseShared(UpstreamProvider &p, const QJsonObject &o, const QString &where);
    // The same fields as JSON (timeouts as an object), for writing a config back.
    QJsonObject sharedJson() const;
    // A whole number of milliseconds from o[field] (0 to 24 h), or fallback when absent;
    // throws like parseShared.
    static int parseMs(const QJsonObject &o, const char *field, int fallback, const QString &where);
};

// Round-robin over a provider's keys, resting a key that answered 429 or 5xx for the provider's
// restMs. Thread-safe; one per family (the state is per provider name).
class KeyRotation
{
public:
    // The next key not in `tried` and not resting; when every untried key rests, the one
    // resting the shortest. Empty when the provider has no untried key.
    QString pick(const UpstreamProvider &provider, const QStringList &tried = {});
    void rest(const UpstreamProvider &provider, const QString &key);

private:
    struct State
    {
        quint64 next = 0;
        QHash<QString, qint64> restedUntilMs;
    };
    QMutex m_mutex;
    QHash<QString, State> m_states;
};

// The provider of that name in a family's list, or null.
template <class P> const P *findProvider(const QList<P> &providers, const QString &name)
{
    for (const P &p : providers)
        if (p.name == name)
            return &p;
    return nullptr;
}

// Applies a config section's "providers" object ({name: {...}}) to a family's list: each entry
// updates the provider of its name, or a new one made by fresh(), through
// apply(provider, object, where) (where: "<family>.providers.<name>"), after which the shared
// fields are read (parseShared). Errors throw std::runtime_error("config: <where>...").
template <class P, class Fresh, class Apply>
void applyProviderSection(QList<P> &providers, const QJsonObject &section, const QString &family,
                          Fresh fresh, Apply apply)
{
    const auto fail = [](const QString &message) {
        throw std::runtime_error(("config: " + message).toStdString());
    };
    const QJsonValue value = section.value(QLatin1String("providers"));
    if (!value.isUndefined() && !value.isObject())
        fail(family + QStringLiteral(".providers must be an object of name: provider"));
    const QJsonObject all = value.toObject();
    for (auto it = all.begin(); it != all.end(); ++it) {
        const QString where = QStringLiteral("%1.providers.%2").arg(family, it.key());
        if (!it.value().isObject())
            fail(where + QStringLiteral(" must be an object"));
        const P *existing = findProvider(providers, it.key());
        P p = existing ? *existing : fresh();
        p.name = it.key();
        apply(p, it.value().toObject(), where);
        UpstreamProvider::parseShared(p, it.value().toObject(), where);
        if (existing)
            providers[existing - providers.constData()] = p;
        else
            providers.append(p);
    }
}
