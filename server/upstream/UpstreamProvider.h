#pragma once

#include "ConfigFields.h"
#include "UrlGuard.h"

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QMutex>
#include <QSet>
#include <QString>
#include <QStringList>

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
    // idle_ms, total_ms}. Absent fields keep p's values; a bad one throws ConfigError naming it
    // ("config: gateway.providers.openai.base_url must be an http or https URL").
    static void parseShared(UpstreamProvider &p, const ConfigFields &o);
    // The same fields as JSON (timeouts as an object), for writing a config back.
    QJsonObject sharedJson() const;
};

// The URL guard's settings (UrlPolicy::applySettings) in the object at o's field, applied on
// top of base; absent, base as it is. A bad setting throws ConfigError naming it: "config:
// images.webhooks.fetch.allow_http: this use requires https".
UrlPolicy urlPolicyField(const ConfigFields &o, const QString &field, UrlPolicy base,
                         bool httpAllowed);

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
// updates the provider of its name, or a new one made by fresh(), first with the shared fields
// (parseShared), then through apply(provider, fields) for the family's own (fields' path:
// "<section>.providers.<name>"). Errors throw ConfigError naming the field.
template <class P, class Fresh, class Apply>
void applyProviderSection(QList<P> &providers, const ConfigFields &section, Fresh fresh,
                          Apply apply)
{
    for (const ConfigFields &o : section.members(QStringLiteral("providers"),
                                                 QStringLiteral("an object of name: provider"))) {
        const P *existing = findProvider(providers, o.name());
        P p = existing ? *existing : fresh();
        p.name = o.name();
        UpstreamProvider::parseShared(p, o);
        apply(p, o);
        if (existing)
            providers[existing - providers.constData()] = p;
        else
            providers.append(p);
    }
}

// Applies a config section's "models" array ([{id, provider, upstream_model, owned_by, ...}]) to
// a family's list: an entry whose id is listed updates that model, another starts from fresh().
// read(model, fields, isNew) reads the family's own fields (prices, task); then provider
// (required, one of `providers`), upstream_model (default: the id) and owned_by (default: the
// provider). Errors throw ConfigError naming the field ("config: images.models[0].provider
// names no provider ('x')").
template <class M, class P, class Fresh, class Read>
void applyModelSection(QList<M> &models, const QList<P> &providers, const ConfigFields &section,
                       Fresh fresh, Read read)
{
    for (const ConfigFields &o :
         section.list(QStringLiteral("models"), QStringLiteral("an array of model entries"))) {
        const QString id = o.string(QStringLiteral("id"), {});
        if (id.isEmpty())
            o.fail(QStringLiteral("id"), QStringLiteral("is required"));
        M m = fresh();
        bool isNew = true;
        for (const M &existing : models)
            if (existing.id == id) {
                m = existing;
                isNew = false;
            }
        m.id = id;
        read(m, o, isNew);
        m.provider = o.string(QStringLiteral("provider"), m.provider);
        if (m.provider.isEmpty())
            o.fail(QStringLiteral("provider"), QStringLiteral("is required"));
        if (!findProvider(providers, m.provider))
            o.fail(QStringLiteral("provider"),
                   QStringLiteral("names no provider ('%1')").arg(m.provider));
        m.upstreamModel = o.string(QStringLiteral("upstream_model"),
                                   m.upstreamModel.isEmpty() ? m.id : m.upstreamModel);
        m.ownedBy =
            o.string(QStringLiteral("owned_by"), m.ownedBy.isEmpty() ? m.provider : m.ownedBy);
        upsertById(models, m);
    }
}
