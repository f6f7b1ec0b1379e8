#include "ModelCatalog.h"

#include "Money.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <stdexcept>

namespace {

// A token limit of a model entry: absent is 0 (not stated), else a positive whole number.
qint64 tokenLimit(const QJsonObject &o, const char *field, const QString &id)
{
    const QJsonValue v = o.value(QLatin1String(field));
    if (v.isUndefined() || v.isNull())
        return 0;
    const double d = v.toDouble();
    if (!v.isDouble() || d < 1 || d > double(ModelCatalog::kMaxTokenLimit) || d != qint64(d))
        throw std::runtime_error(QStringLiteral("model %1: %2 must be a positive whole number of "
                                                "tokens (at most %3)")
                                     .arg(id, QLatin1String(field))
                                     .arg(ModelCatalog::kMaxTokenLimit)
                                     .toStdString());
    return qint64(d);
}

} // namespace

ModelPrice ModelCatalog::priceFromJson(const QJsonObject &pricing, const QString &where)
{
    auto one = [&](const char *field) -> qint64 {
        const QJsonValue v = pricing.value(QLatin1String(field));
        if (v.isUndefined())
            return 0;
        const auto units = Money::parseCredits(v.toString());
        if (!v.isString() || !units || *units < 0)
            throw std::runtime_error(QStringLiteral("%1.%2 must be a non-negative decimal string "
                                                    "(credits per 1M tokens)")
                                         .arg(where, QLatin1String(field))
                                         .toStdString());
        return *units;
    };
    return {one("input"), one("output"), one("cache_read"), one("cache_write")};
}

QJsonObject ModelCatalog::priceToJson(const ModelPrice &p)
{
    return {{"input", Money::formatCredits(p.input)},
            {"output", Money::formatCredits(p.output)},
            {"cache_read", Money::formatCredits(p.cacheRead)},
            {"cache_write", Money::formatCredits(p.cacheWrite)}};
}

ModelCatalog ModelCatalog::fromJson(const QByteArray &json)
{
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        throw std::runtime_error("the model catalog is not a JSON object: " +
                                 err.errorString().toStdString());
    ModelCatalog c;
    const QJsonObject root = doc.object();
    for (const QJsonValue &v : root.value("models").toArray()) {
        const ModelEntry m = entryFromJson(v.toObject());
        if (c.m_index.contains(m.id))
            throw std::runtime_error("model " + m.id.toStdString() + " is listed twice");
        c.m_index.insert(m.id, c.m_models.size());
        c.m_models.append(m);
    }
    c.m_auto = root.value("auto").toString();
    if (!c.m_auto.isEmpty() && !c.m_index.contains(c.m_auto))
        throw std::runtime_error("'auto' names a model that is not in the catalog");
    return c;
}

ModelEntry ModelCatalog::entryFromJson(const QJsonObject &o)
{
    ModelEntry m;
    m.id = o.value("id").toString();
    if (m.id.isEmpty())
        throw std::runtime_error("a model in the catalog has no id");
    if (m.id.startsWith(QLatin1String("gateway/")))
        throw std::runtime_error("model " + m.id.toStdString() +
                                 ": gateway/* models come from a catalog provider's live list");
    m.ownedBy = o.value("owned_by").toString();
    m.provider = o.value("provider").toString();
    if (m.provider.isEmpty())
        throw std::runtime_error("model " + m.id.toStdString() + " names no provider");
    m.upstreamModel = o.value("upstream_model").toString(m.id);
    static const QStringList known = {QStringLiteral("chat.completions"),
                                      QStringLiteral("responses"), QStringLiteral("messages")};
    for (const QJsonValue &e : o.value("endpoints").toArray()) {
        if (!known.contains(e.toString()))
            throw std::runtime_error("model " + m.id.toStdString() + ": unknown endpoint '" +
                                     e.toString().toStdString() +
                                     "' (chat.completions, responses or messages)");
        m.endpoints.append(e.toString());
    }
    m.price =
        priceFromJson(o.value("pricing").toObject(), QStringLiteral("model %1: pricing").arg(m.id));
    m.maxOutputTokens = tokenLimit(o, "max_output_tokens", m.id);
    m.contextWindow = tokenLimit(o, "context_window", m.id);
    return m;
}

void ModelCatalog::applyLimitDefaults(qint64 maxOutputTokens, qint64 contextWindow)
{
    for (ModelEntry &m : m_models) {
        if (m.maxOutputTokens <= 0)
            m.maxOutputTokens = maxOutputTokens;
        if (m.contextWindow <= 0)
            m.contextWindow = contextWindow;
    }
}

void ModelCatalog::upsert(const ModelEntry &entry)
{
    const auto it = m_index.constFind(entry.id);
    if (it != m_index.constEnd()) {
        m_models[*it] = entry;
        return;
    }
    m_index.insert(entry.id, m_models.size());
    m_models.append(entry);
}

void ModelCatalog::setAutoModel(const QString &id)
{
    if (!m_index.contains(id))
        throw std::runtime_error("'auto' names " + id.toStdString() +
                                 ", which is not in the catalog");
    m_auto = id;
}

ModelCatalog ModelCatalog::builtin()
{
    QFile f(QStringLiteral(":/switchyard/catalog.json"));
    if (!f.open(QIODevice::ReadOnly))
        throw std::runtime_error("the built-in model catalog is missing");
    return fromJson(f.readAll());
}

std::optional<ModelEntry> ModelCatalog::find(const QString &id) const
{
    const auto it = m_index.constFind(id);
    if (it == m_index.constEnd())
        return std::nullopt;
    return m_models.at(*it);
}

namespace {

// The /v1/models shape: the price with its unit spelled out.
QJsonObject priceJson(const ModelPrice &p)
{
    QJsonObject o = ModelCatalog::priceToJson(p);
    o.insert("unit", "credits per 1M tokens");
    return o;
}

} // namespace

QJsonObject ModelCatalog::entryJson(const ModelEntry &m)
{
    QJsonObject o{{"id", m.id},
                  {"object", "model"},
                  {"created", 0},
                  {"owned_by", m.ownedBy},
                  {"endpoints", QJsonArray::fromStringList(m.endpoints)},
                  {"pricing", priceJson(m.price)}};
    if (m.maxOutputTokens > 0)
        o.insert("max_output_tokens", m.maxOutputTokens);
    if (m.contextWindow > 0)
        o.insert("context_window", m.contextWindow);
    return o;
}

QJsonArray ModelCatalog::toJson() const
{
    QJsonArray data;
    for (const ModelEntry &m : m_models)
        data.append(entryJson(m));
    if (auto target = find(m_auto)) {
        target->id = QStringLiteral("auto");
        target->ownedBy = QStringLiteral("switchyard");
        target->endpoints = {QStringLiteral("chat.completions")};
        QJsonObject o = entryJson(*target);
        o.insert("resolves_to", m_auto);
        data.append(o);
    }
    return data;
}
